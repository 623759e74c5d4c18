"""OpenTSDB 2.x's arithmetic on time series, as pure functions.

A series is a list of ``(ts_ms, value)`` in time order. Values read from the tables are exact
:class:`~decimal.Decimal` s (``0.02`` stays ``0.02``); ``sum``, ``min``, ``max``, ``first``,
``last``, ``count``, ``avg`` and linear interpolation keep them exact (OpenTSDB computes in
doubles, or in truncating longs for integer series: the deliberate difference), ``dev``,
percentiles and rates go to float. A missing value (an empty bucket filled with ``nan`` or
``null``) is a float NaN inside, as in OpenTSDB; only the rendering tells the two apart.

The order and the edges are OpenTSDB's (``TsdbQuery``, ``SpanGroup``, ``AggregationIterator``):
a query reads the whole window :func:`scan_window` (the hours around the range, aligned to the
downsample interval), downsamples each series over it, takes rates, aggregates across the
series of a group interpolating each series between its points (downsampled or not), and only
then clips the answer to ``[start, end]`` with the end included (:func:`clip`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from btts.tsdb.calendar import Calendar
from transforms.scans.key_ranges import Window

__all__ = [
    "AGGREGATORS",
    "Downsample",
    "Rate",
    "aggregate",
    "bucket_count",
    "clip",
    "downsample",
    "downsample_partials",
    "rate_span",
    "render_number",
    "scan_window",
]

Value = Decimal | float | int | None
Series = list[tuple[int, Value]]
NAN = float("nan")
ROW_MS = 3_600_000  # OpenTSDB's row: one hour (Const.MAX_TIMESPAN)


@dataclass(frozen=True)
class Rate:
    """A sub-query's ``rate`` and its ``rateOptions`` (OpenTSDB's ``RateOptions``)."""

    counter: bool = False
    counter_max: float | None = None
    reset_value: float = 0
    drop_resets: bool = False


@dataclass(frozen=True)
class Downsample:
    """A sub-query's ``downsample``: ``interval_ms`` 0 is one bucket for the whole range
    (``0all``); with a ``calendar`` the buckets follow it and the interval is nominal."""

    interval_ms: int
    aggregator: str
    fill: str = "none"
    calendar: Calendar | None = field(default=None, compare=False)

    @property
    def text(self) -> str:
        return f"{self.interval_ms}ms-{self.aggregator}-{self.fill}"


def is_nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _nums(values: Sequence[Value]) -> list:
    return [v for v in values if v is not None and not is_nan(v)]


def _exact(values) -> bool:
    return all(isinstance(v, (Decimal, int)) for v in values)


def _sum(values):
    return sum(values, Decimal(0)) if _exact(values) else sum(float(v) for v in values)


def _avg(values):
    total = _sum(values)
    return total / len(values)


def _dev(values):
    """Population standard deviation (OpenTSDB's Welford loop divides by n)."""
    floats = [float(v) for v in values]
    mean = sum(floats) / len(floats)
    return math.sqrt(sum((x - mean) ** 2 for x in floats) / len(floats))


def percentile(p: float) -> Callable:
    """Apache Commons Math's default estimate (what OpenTSDB's p50…p999 use)."""

    def run(values):
        ordered = sorted(values)
        n = len(ordered)
        pos = p * (n + 1) / 100
        if pos < 1:
            return ordered[0]
        if pos >= n:
            return ordered[-1]
        low = int(pos)
        lower, upper = float(ordered[low - 1]), float(ordered[low])
        return lower + (pos - low) * (upper - lower)

    return run


def estimate(p: float, kind: str) -> Callable:
    """Apache Commons Math's ``R_3`` (nearest rank) and ``R_7`` (linear, as spreadsheets)
    estimates: OpenTSDB's ``ep…r3`` and ``ep…r7``."""

    def run(values):
        ordered = sorted(float(v) for v in values)
        n, quantile = len(ordered), p / 100
        if kind == "r3":
            pos = 0.0 if quantile <= 0.5 / n else float(round(n * quantile))  # rint: halves to even
        else:
            pos = float(n) if quantile == 1 else 1 + (n - 1) * quantile
        if pos < 1:
            return ordered[0]
        if pos >= n:
            return ordered[-1]
        low = int(pos)
        return ordered[low - 1] + (pos - low) * (ordered[low] - ordered[low - 1])

    return run


def _mult(values):
    out = Decimal(1) if _exact(values) else 1.0
    for v in values:
        out = out * (v if isinstance(out, Decimal) else float(v))
    return out


def _diff(values):
    last, first = values[-1], values[0]
    return last - first if _exact(values) else float(last) - float(first)


def _square_sum(values):
    return _sum([v * v if isinstance(v, (Decimal, int)) else float(v) ** 2 for v in values])


# Every aggregator of OpenTSDB 2.4; they see values without NaN.
AGGREGATORS: dict[str, Callable] = {
    "sum": _sum,
    "zimsum": _sum,
    "pfsum": _sum,
    "count": len,
    "avg": _avg,
    "min": min,
    "mimmin": min,
    "max": max,
    "mimmax": max,
    "dev": _dev,
    "median": lambda values: sorted(values)[len(values) // 2],
    "mult": _mult,
    "diff": _diff,
    "squareSum": _square_sum,
    "first": lambda values: values[0],
    "last": lambda values: values[-1],
    "none": lambda values: values[0],
    **{f"p{p}": percentile(p) for p in (50, 75, 90, 95, 99)},
    "p999": percentile(99.9),
    **{
        f"ep{name}{kind}": estimate(p, kind)
        for name, p in (("50", 50), ("75", 75), ("90", 90), ("95", 95), ("99", 99), ("999", 99.9))
        for kind in ("r3", "r7")
    },
}
# How a series without a point at a time counts there (Aggregators.Interpolation).
INTERPOLATION = {
    "zimsum": "zim",
    "count": "zim",
    "first": "zim",
    "last": "zim",
    "none": "zim",
    "squareSum": "zim",
    "mimmin": "max",
    "mimmax": "min",
    "pfsum": "prev",
}


# PercentileAgg.runDouble ignores the estimation type: over doubles ep50r3… are p50…
AS_DOUBLES = {
    f"ep{name}{kind}": percentile(p)
    for name, p in (("50", 50), ("75", 75), ("90", 90), ("95", 95), ("99", 99), ("999", 99.9))
    for kind in ("r3", "r7")
}


def is_long(value: Value) -> bool:
    """True for a value OpenTSDB would hold as a long: an integer, or a decimal written
    without a fraction (``42``, not ``42.0``)."""
    if isinstance(value, Decimal):
        return value.is_finite() and value.as_tuple().exponent >= 0
    return isinstance(value, int) and not isinstance(value, bool)


def run_aggregator(name: str, values: Sequence[Value]) -> Value:
    """The aggregator over the values that are numbers, as a downsample runs it (OpenTSDB's
    ``Downsampler`` always calls ``runDouble``); None when there are none."""
    nums = _nums(values)
    return AS_DOUBLES.get(name, AGGREGATORS[name])(nums) if nums else None


def combine(name: str, values: Sequence[Value], longs: bool | None = None) -> Value:
    """One aggregated value from the series' values at one time, NaN as OpenTSDB treats it:
    skipped by every aggregator (all NaN gives NaN, ``count`` gives 0) but ``first``/``last``/
    ``mult``/``diff``, which take the value they find. ``longs``: whether OpenTSDB would run
    the aggregator on longs (every value an integer; by default judged from ``values``), the
    only case where ``ep…r3``/``ep…r7`` use their estimation type."""
    if name in AS_DOUBLES:
        nums = _nums(values)
        if not nums:
            return NAN
        longs = all(is_long(v) for v in nums) if longs is None else longs
        return (AGGREGATORS if longs else AS_DOUBLES)[name](nums)
    if name in ("first", "last", "none"):
        return values[0] if name != "last" else values[-1]
    nums = _nums(values)
    if name == "count":
        return len(nums)
    if not nums:
        return NAN
    if name == "mult" and len(nums) != len(values):
        return NAN
    if name == "diff":  # the first number, then whatever comes last
        start = next(i for i, v in enumerate(values) if not is_nan(v) and v is not None)
        rest = values[start:]
        return NAN if is_nan(rest[-1]) else AGGREGATORS[name](rest)
    return AGGREGATORS[name](nums)


def fill_value(fill: str) -> Value:
    """The value of an empty bucket: NaN for ``nan`` and ``null`` (they differ only when
    written), 0 for ``zero``, None for ``none`` (no bucket)."""
    return {"nan": NAN, "null": NAN, "zero": Decimal(0)}.get(fill)


# -- the window a query reads -----------------------------------------------------------------


def scan_window(start_ms: int, end_ms: int, interval_ms: int = 0) -> tuple[int, int]:
    """``[first, last)`` ms OpenTSDB reads for a query over ``[start_ms, end_ms]``: whole rows
    (hours) around it, the start first aligned down to the downsample interval and the end past
    the interval holding it (``TsdbQuery.getScanStartTimeSeconds``/``…EndTimeSeconds``)."""
    start_s = start_ms // 1000
    end_s = end_ms // 1000 + 1  # an end in ms is bumped a second
    row_s = ROW_MS // 1000
    if interval_ms > 0:
        start_s -= ((1000 * start_s) % interval_ms) // 1000
        end_s += (interval_ms - (1000 * end_s) % interval_ms) // 1000
        end_s += (-end_s) % row_s
    else:
        end_s += row_s - end_s % row_s
    start_s -= start_s % row_s
    return start_s * 1000, end_s * 1000


def clip(points: Series, start_ms: int, end_ms: int) -> Series:
    """The points an answer shows: ``start <= ts <= end`` (OpenTSDB includes the end)."""
    return [(t, v) for t, v in points if start_ms <= t <= end_ms]


def buckets(start_ms: int, end_ms: int, interval_ms: int) -> tuple[int, int]:
    """The first and last bucket start of a query over ``[start_ms, end_ms]``."""
    if interval_ms == 0:
        return start_ms, start_ms
    return start_ms + (-start_ms) % interval_ms, end_ms - end_ms % interval_ms


def bucket_count(start_ms: int, end_ms: int, interval_ms: int) -> int:
    first, last = buckets(start_ms, end_ms, interval_ms)
    return 1 if interval_ms == 0 else max(0, (last - first) // interval_ms + 1)


# -- per series -------------------------------------------------------------------------------


def downsample(
    points: Series, downsampling: Downsample, window: Window, span: Window | None = None
) -> Series:
    """One value per bucket of ``downsampling`` over the read ``window`` (``[start, end)``): buckets
    start at the first interval boundary at or after its start (``Downsampler``'s seek); an
    empty bucket is left out (fill ``none``) or holds the fill value, up to the last whole
    interval of the window (``FillingDownsampler``), only inside ``span`` when given (the
    buckets an answer can show and the one before: a millisecond fill over the hours around
    a range would be millions). An interval of 0 (``0all``): one bucket at the window's start
    over the points in the window."""
    start_ms, end_ms = window.start_ms, window.end_ms
    if downsampling.interval_ms == 0:
        inside = [v for t, v in points if start_ms <= t < end_ms]
        return [(start_ms, run_aggregator(downsampling.aggregator, inside))] if inside else []
    if downsampling.calendar is not None:
        return _calendar_downsample(points, downsampling, window, span)
    interval_ms = downsampling.interval_ms
    first = start_ms + (-start_ms) % interval_ms
    grouped: dict[int, list] = {}
    for ts, value in points:
        if ts >= first:
            grouped.setdefault(ts - ts % interval_ms, []).append(value)
    out = {b: run_aggregator(downsampling.aggregator, vals) for b, vals in grouped.items()}
    if downsampling.fill != "none":
        last = end_ms - end_ms % interval_ms  # exclusive
        out = {b: v for b, v in out.items() if b < last}
        _fill(out, downsampling.fill, range(first, last, interval_ms), span)
    return sorted(out.items())


def _fill(out: dict, fill: str, grid: range, span: Window | None) -> None:
    """Empty buckets of ``grid`` take the fill value: only around ``span``, from two empty
    buckets before it to two after the data that follows it (a rate dropping resets reads back
    past a run of buckets with data, and a series lasts as long as its rates do)."""
    if span is not None and grid:
        step = grid.step
        lo = max(grid.start, grid.start + -(-(span.start_ms - grid.start) // step) * step)
        while lo > grid.start and (lo in out or lo - step in out):
            lo -= step  # two empty buckets in a row: the rate between them is not a reset
        hi = lo + max(0, (span.end_ms - lo) // step) * step
        lo = max(grid.start, lo - step)
        while hi + step in out:
            hi += step
        grid = range(lo, min(grid.stop, hi + 3 * step), step)
    value = fill_value(fill)
    for b in grid:
        out.setdefault(b, value)


def _calendar_downsample(
    points: Series, downsampling: Downsample, window: Window, span: Window | None
) -> Series:
    """:func:`downsample` into calendar buckets (``1dc``; ``useCalendar`` and ``timezone``)."""
    calendar, aggregator, fill = downsampling.calendar, downsampling.aggregator, downsampling.fill
    start_ms, end_ms = window.start_ms, window.end_ms
    first = calendar.ceil(start_ms)
    grouped: dict[int, list] = {}
    origin = None
    for ts, value in points:
        if ts >= first:
            origin = calendar.floor(ts) if origin is None else origin
            grouped.setdefault(calendar.stepped(ts, origin), []).append(value)
    out = {b: run_aggregator(aggregator, vals) for b, vals in grouped.items()}
    if fill != "none":
        last = calendar.floor(end_ms)
        if last == calendar.floor(start_ms):
            last = calendar.add(last)
        out = {b: v for b, v in out.items() if b < last}
        b = first if span is None else max(first, calendar.floor(span.start_ms))
        while b > first and b in out:  # as _fill: from an empty bucket before the span
            b = calendar.add(b, -1)
        stop = last
        if span is not None:  # to two buckets after the data that follows the span
            hi = calendar.floor(span.end_ms)
            while calendar.add(hi) in out:
                hi = calendar.add(hi)
            stop = min(last, calendar.add(hi, 3))
        while b < stop:
            out.setdefault(b, fill_value(fill))
            b = calendar.add(b)
    return sorted(out.items())


def downsample_partials(
    partials: Sequence[tuple[int, Decimal, int]],
    downsampling: Downsample,
    window: Window,
    span: Window | None = None,
) -> Series:
    """:func:`downsample` from per-hour ``(hour start, sum, count)`` (a rollup table's cells):
    ``sum``, ``count`` and ``avg`` of buckets that are whole multiples of an hour."""
    interval_ms, aggregator, fill = (
        downsampling.interval_ms,
        downsampling.aggregator,
        downsampling.fill,
    )
    start_ms, end_ms = window.start_ms, window.end_ms
    grouped: dict[int, list] = {}
    first = start_ms if interval_ms == 0 else start_ms + (-start_ms) % interval_ms
    for ts, total, count in partials:
        if ts < first or (interval_ms == 0 and ts >= end_ms):
            continue
        key = start_ms if interval_ms == 0 else ts - ts % interval_ms
        acc = grouped.setdefault(key, [Decimal(0), 0])
        acc[0] += total
        acc[1] += count
    out: dict[int, Value] = {}
    for b, (total, count) in grouped.items():
        if count:
            out[b] = {"sum": total, "count": count}.get(aggregator, total / count)
    if fill != "none" and interval_ms:
        last = end_ms - end_ms % interval_ms
        out = {b: v for b, v in out.items() if b < last}
        _fill(out, fill, range(first, last, interval_ms), span)
    return sorted(out.items())


def rate_span(points: Series, rate: Rate = Rate()) -> Series:
    """OpenTSDB's ``RateSpan``: the per-second change into each point, the first one taken
    from time zero and value zero (OpenTSDB's start; a point at or before 1970 gets NaN there,
    where OpenTSDB fails). A NaN value makes its rate and the next NaN. A counter that goes
    down (``rate.counter``) wrapped at ``counter_max`` (default 2^63-1), unless ``drop_resets``
    drops that point; a rate above a non-zero ``reset_value`` is a reset and reads 0."""
    out: Series = []
    prev: tuple[int, Value] = (0, 0)
    counter, drop_resets, reset_value = rate.counter, rate.drop_resets, rate.reset_value
    cmax = 2**63 - 1 if rate.counter_max is None else rate.counter_max
    for ts, value in points:
        y = NAN if value is None else value
        if ts <= prev[0]:
            out.append((ts, NAN))
            prev = (ts, y)
            continue
        seconds = (ts - prev[0]) / 1000
        exact = _exact((prev[1], y))  # longs stay exact, as OpenTSDB's
        diff = y - prev[1] if exact else float(y) - float(prev[1])
        if counter and diff < 0:
            if drop_resets:
                prev = (ts, y)
                continue
            if exact and isinstance(cmax, int):
                r = float(cmax - prev[1] + y) / seconds
            else:
                r = (float(cmax) - float(prev[1]) + float(y)) / seconds
            if reset_value and r > reset_value:
                r = 0.0
        else:
            r = float(diff) / seconds
        out.append((ts, r))
        prev = (ts, y)
    return out


# -- across series ----------------------------------------------------------------------------


def _between(method: str, t: int, p0: tuple[int, Value], p1: tuple[int, Value]) -> Value:
    """A series' value at ``t`` strictly between its points ``p0`` and ``p1``."""
    if method == "zim":
        return Decimal(0)
    if method == "max":
        return sys.float_info.max
    if method == "min":
        return -sys.float_info.max
    (t0, v0), (t1, v1) = p0, p1
    if method == "prev":
        return v0
    if is_nan(v0) or is_nan(v1) or v0 is None or v1 is None:
        return NAN
    if isinstance(v0, (Decimal, int)) and isinstance(v1, (Decimal, int)):
        return v0 + Decimal(t - t0) * (v1 - v0) / Decimal(t1 - t0)
    return float(v0) + (t - t0) * (float(v1) - float(v0)) / (t1 - t0)


def aggregate(
    group: Sequence[Series], aggregator: str, rates: bool = False, doubles: bool = False
) -> Series:
    """Many series into one, as ``AggregationIterator``: at every time some series has a
    point, the aggregator over each series that has begun and not ended there, a series
    without a point at that time counting as its interpolation (``INTERPOLATION``: linear
    unless the aggregator says otherwise). Rates are not interpolated: a series counts with its
    latest rate, from its first (taken from time zero) on; that first one is no time of its
    own. ``doubles`` (downsampled series, rates): OpenTSDB aggregates them as doubles;
    otherwise as longs when every point it reads there is an integer."""
    method = INTERPOLATION.get(aggregator, "lerp")
    members = [s for s in group if len(s) > (1 if rates else 0)]
    if len(members) == 1 and not rates:  # what the loop below makes of one series
        if aggregator in ("none", "first", "last"):
            return _last_of_each_time(members[0])
        return _one_series(members[0], aggregator, not doubles)
    times = sorted({t for s in members for t, _ in (s[1:] if rates else s)})
    cursor = [0] * len(members)
    out: Series = []
    for t in times:
        values: list[Value] = []
        longs = not (doubles or rates)
        for k, s in enumerate(members):
            i = cursor[k]
            while i + 1 < len(s) and s[i + 1][0] <= t:
                i += 1
            cursor[k] = i
            if t > s[-1][0]:
                continue  # this series has ended
            # its two slots (the point at or before t, the next) hold longs
            longs = longs and is_long(s[i][1]) and (i + 1 == len(s) or is_long(s[i + 1][1]))
            if rates or s[i][0] == t:  # a rate holds until the next one
                values.append(s[i][1])
            elif s[i][0] < t:
                values.append(_between(method, t, s[i], s[i + 1]))
        out.append((t, combine(aggregator, values, longs)))
    return out


def _last_of_each_time(points: Series) -> Series:
    """One series (in time order) under an aggregator that gives the value it gets (``none``,
    ``first``, ``last``): its points, the last of each time. Why: a ``*`` with ``none`` (one
    answer series per stored one) aggregated each point through the general loop, the
    answer's main cost after the read."""
    last = len(points) - 1
    return [p for i, p in enumerate(points) if i == last or points[i + 1][0] != p[0]]


def _one_series(points: Series, aggregator: str, longs: bool) -> Series:
    """One series (in time order, no rates) under any other aggregator: at each of its times
    the aggregator over its last point there, as longs when that point and the next are
    (the loop's two slots). Why: a ``*`` grouped by every tag (a ``sum`` per host) is as
    many groups of one, and the loop's union of times and cursors cost more than the
    aggregator itself."""
    out: Series = []
    last = len(points) - 1
    for i, (t, value) in enumerate(points):
        if i < last and points[i + 1][0] == t:
            continue
        as_long = longs and is_long(value) and (i == last or is_long(points[i + 1][1]))
        out.append((t, combine(aggregator, [value], as_long)))
    return out


# -- writing ----------------------------------------------------------------------------------


def render_number(value: Value, fill: str = "nan") -> str:
    """A value as JSON text: decimals exactly as stored (no exponent); NaN as OpenTSDB writes
    it (``"NaN"``, a string: valid JSON) or ``null`` when the fill policy is ``null``."""
    if type(value) is int:  # the common case first: integers as stored
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, Decimal):
        if value == value.to_integral():
            return format(value.quantize(Decimal(1)), "f")
        return format(value, "f")
    if isinstance(value, float):
        if math.isnan(value):
            return "null" if fill == "null" else '"NaN"'
        if math.isinf(value):
            return "null"
        return repr(value)
    return str(int(value))
