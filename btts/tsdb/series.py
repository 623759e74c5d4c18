"""OpenTSDB's arithmetic on time series, as pure functions.

A series is a list of ``(ts_ms, value)`` in time order. Values read from the tables are exact
:class:`~decimal.Decimal` s (``0.02`` stays ``0.02``); ``sum``, ``min``, ``max``, ``first``,
``last``, ``count`` keep them exact, ``avg`` divides in decimal, ``dev`` and rates go to float.
A downsample's fill policy leaves ``None`` (``null``) or ``float('nan')`` (``nan``) in a
bucket without points; aggregation skips both.

The order is OpenTSDB 2.x's: per series downsample, then rate, then aggregation across the
series of a group, interpolating linearly between a series' points when the series were not
downsampled (``zimsum``/``mimmin``/``mimmax`` never interpolate).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable, Sequence
from decimal import Decimal

__all__ = [
    "AGGREGATORS",
    "aggregate",
    "bucket_count",
    "downsample",
    "downsample_partials",
    "fill_value",
    "rate",
    "render_number",
]

Value = Decimal | float | int | None
Series = list[tuple[int, Value]]


def _nums(values: Sequence[Value]) -> list:
    return [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]


def _avg(values):
    return _sum(values) / len(values)


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


def _exact(values) -> bool:
    return all(isinstance(v, (Decimal, int)) for v in values)


def _sum(values):
    return sum(values, Decimal(0)) if _exact(values) else sum(float(v) for v in values)


AGGREGATORS: dict[str, Callable] = {
    "sum": _sum,
    "zimsum": _sum,
    "count": len,
    "avg": _avg,
    "min": min,
    "mimmin": min,
    "max": max,
    "mimmax": max,
    "dev": _dev,
    "first": lambda values: values[0],
    "last": lambda values: values[-1],
    "none": lambda values: values[0],
    **{f"p{p}": percentile(p) for p in (50, 75, 90, 95, 99)},
    "p999": percentile(99.9),
}
NO_INTERPOLATION = ("zimsum", "mimmin", "mimmax", "none")


def run_aggregator(name: str, values: Sequence[Value]) -> Value:
    nums = _nums(values)
    return AGGREGATORS[name](nums) if nums else None


def fill_value(fill: str) -> Value:
    return {"nan": float("nan"), "null": None, "zero": 0}.get(fill)


def buckets(start_ms: int, end_ms: int, interval_ms: int) -> tuple[int, int]:
    """The first and last bucket start of ``[start_ms, end_ms)`` (epoch-aligned)."""
    if interval_ms == 0:
        return start_ms, start_ms
    return start_ms - start_ms % interval_ms, (end_ms - 1) - (end_ms - 1) % interval_ms


def bucket_count(start_ms: int, end_ms: int, interval_ms: int) -> int:
    first, last = buckets(start_ms, end_ms, interval_ms)
    return 1 if interval_ms == 0 else (last - first) // interval_ms + 1


def downsample(
    points: Series, interval_ms: int, aggregator: str, fill: str, start_ms: int, end_ms: int
) -> Series:
    """One value per bucket of ``interval_ms`` (``0``: one for the whole range, at its start);
    an empty bucket is left out (``none``) or holds the fill value."""
    grouped: dict[int, list] = {}
    for ts, value in points:
        key = start_ms if interval_ms == 0 else ts - ts % interval_ms
        grouped.setdefault(key, []).append(value)
    out = {b: run_aggregator(aggregator, vals) for b, vals in grouped.items()}
    if fill != "none" and interval_ms:
        first, last = buckets(start_ms, end_ms, interval_ms)
        for b in range(first, last + 1, interval_ms):
            out.setdefault(b, fill_value(fill))
    return sorted(out.items())


def downsample_partials(
    partials: Sequence[tuple[int, Decimal, int]],
    interval_ms: int,
    aggregator: str,
    fill: str,
    start_ms: int,
    end_ms: int,
) -> Series:
    """:func:`downsample` from per-hour ``(hour start, sum, count)`` (a rollup table's cells):
    ``sum``, ``count`` and ``avg`` of buckets that are whole multiples of an hour."""
    grouped: dict[int, list] = {}
    for ts, total, count in partials:
        key = start_ms if interval_ms == 0 else ts - ts % interval_ms
        acc = grouped.setdefault(key, [Decimal(0), 0])
        acc[0] += total
        acc[1] += count
    out: dict[int, Value] = {}
    for b, (total, count) in grouped.items():
        if count:
            out[b] = {"sum": total, "count": count}.get(
                aggregator, total / count if count else None
            )
    if fill != "none" and interval_ms:
        first, last = buckets(start_ms, end_ms, interval_ms)
        for b in range(first, last + 1, interval_ms):
            out.setdefault(b, fill_value(fill))
    return sorted(out.items())


def rate(
    points: Series,
    counter: bool = False,
    counter_max: float | None = None,
    reset_value: float = 0,
    drop_resets: bool = False,
) -> Series:
    """Per-second change between consecutive points (the first point has none). A counter
    that goes down wrapped at ``counter_max`` (default 2^63-1), unless ``drop_resets`` drops
    that point; a rate above a non-zero ``reset_value`` is a reset and reads 0."""
    out: Series = []
    prev: tuple[int, float] | None = None
    cmax = float(2**63 - 1) if counter_max is None else counter_max
    for ts, value in points:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        y = float(value)
        if prev is not None and ts > prev[0]:
            seconds = (ts - prev[0]) / 1000
            if counter and y < prev[1]:
                if drop_resets:
                    prev = (ts, y)
                    continue
                r = (cmax - prev[1] + y) / seconds
                if reset_value and r > reset_value:
                    r = 0.0
            else:
                r = (y - prev[1]) / seconds
            out.append((ts, r))
        prev = (ts, y)
    return out


def _at(series: Series, times: list[int], ts: int, interpolate: bool) -> Value:
    """The value of ``series`` at ``ts``: its own point, else a linear interpolation between
    its neighbours when ``ts`` lies inside it, else None (it does not contribute)."""
    i = bisect_left(times, ts)
    if i < len(times) and times[i] == ts:
        return series[i][1]
    if not interpolate or i == 0 or i == len(times):
        return None
    (t0, v0), (t1, v1) = series[i - 1], series[i]
    if v0 is None or v1 is None or any(isinstance(v, float) and math.isnan(v) for v in (v0, v1)):
        return None
    if isinstance(v0, Decimal) and isinstance(v1, Decimal):
        return v0 + (v1 - v0) * Decimal(ts - t0) / Decimal(t1 - t0)
    return float(v0) + (float(v1) - float(v0)) * (ts - t0) / (t1 - t0)


def aggregate(
    group: Sequence[Series], aggregator: str, interpolate: bool, fill: Value = None
) -> Series:
    """Many series into one: at every time any series has a point, the aggregator over each
    series' value there (see :func:`_at`). A time where every value is a fill keeps ``fill``."""
    if len(group) == 1 and aggregator != "count":
        return list(group[0])
    interpolate = interpolate and aggregator not in NO_INTERPOLATION
    indexed = [(s, [t for t, _ in s]) for s in group]
    out: Series = []
    for ts in sorted({t for s in group for t, _ in s}):
        values = [_at(s, times, ts, interpolate) for s, times in indexed]
        result = run_aggregator(aggregator, values)
        out.append((ts, fill if result is None else result))
    return out


def render_number(value: Value) -> str:
    """A value as JSON number text: decimals exactly as stored (no exponent), NaN as OpenTSDB
    writes it, a missing value as null."""
    if value is None:
        return "null"
    if isinstance(value, Decimal):
        text = (
            format(value.normalize(), "f") if value == value.to_integral() else format(value, "f")
        )
        return text
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "null"
        return repr(value)
    return str(int(value))
