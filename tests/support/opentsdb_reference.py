"""OpenTSDB 2.4's query iterators re-written for the tests, in their own shape: cursors with
``seek``/``has_next``/``next`` and the aggregation iterator's two slots per series (current and
next), computing in doubles as OpenTSDB does. ``btts.tsdb.series`` computes the same answers a
different way (a sweep over sorted times, exact decimals); the conformance suite runs both.

Read from OpenTSDB's ``TsdbQuery`` (scan bounds), ``Downsampler``, ``FillingDownsampler``,
``RateSpan``, ``AggregationIterator``, ``Aggregators`` and ``HttpJsonSerializer`` (the clip to
``[start, end]``); nothing here is used by the product.
"""

from __future__ import annotations

import math
import sys
from decimal import Decimal

NAN = float("nan")
END = 1 << 62  # the slot value of a series that has no next point (TIME_MASK)
ROW_S = 3600


def scan_bounds(start_ms: int, end_ms: int, interval_ms: int) -> tuple[int, int]:
    start = start_ms // 1000
    if interval_ms > 0:
        start = start - ((1000 * start) % interval_ms) // 1000
    start = start - start % ROW_S
    end = end_ms // 1000 + 1
    if interval_ms > 0:
        aligned = end + (interval_ms - (1000 * end) % interval_ms) // 1000
        end = aligned if aligned % ROW_S == 0 else aligned + ROW_S - aligned % ROW_S
    else:
        end = end + ROW_S - end % ROW_S
    return start * 1000, end * 1000


class ListView:
    def __init__(self, points):
        self.points = list(points)
        self.pos = 0

    def seek(self, ts):
        self.pos = next((i for i, (t, _) in enumerate(self.points) if t >= ts), len(self.points))

    def has_next(self):
        return self.pos < len(self.points)

    def next(self):
        self.pos += 1
        return self.points[self.pos - 1]


class Downsampled:
    """``Downsampler`` with its ``ValuesInInterval``."""

    def __init__(self, source, interval, agg, query_start, query_end, run_all=False):
        self.source, self.interval, self.agg = source, interval, agg
        self.query_start, self.query_end, self.run_all = query_start, query_end, run_all
        self.initialized = False
        self.has_value = False
        self.next_dp = None
        self.end_interval = query_end if run_all else interval

    def align(self, ts):
        return ts - ts % self.interval

    def _init(self):
        if not self.initialized:
            self.initialized = True
            if self.source.has_next():
                self._move()
                if not self.run_all:
                    self.end_interval = self.align(self.next_dp[0]) + self.interval

    def _move(self):
        if not self.source.has_next():
            self.has_value = False
            return
        self.has_value = True
        if not self.run_all:
            self.next_dp = self.source.next()
            return
        self.next_dp = None
        while self.source.has_next():
            dp = self.source.next()
            if dp[0] < self.query_start:
                continue
            self.next_dp = dp
            if dp[0] >= self.query_end:
                self.has_value = False
            break
        if self.next_dp is None:
            self.has_value = False

    def values_left(self):
        self._init()
        if self.run_all:
            return self.has_value
        return self.has_value and self.next_dp[0] < self.end_interval

    def take(self):
        value = self.next_dp[1]
        self._move()
        return value

    def interval_values(self):
        out = []
        while self.values_left():
            out.append(self.take())
        return out

    def move_to_next_interval(self):
        self._init()
        if self.has_value and not self.run_all:
            self.end_interval = self.align(self.next_dp[0]) + self.interval

    def interval_ts(self):
        return self.query_start if self.run_all else self.align(self.end_interval - self.interval)

    def seek(self, ts):
        if self.run_all:
            self.source.seek(ts)
        else:
            self.source.seek(self.align(ts + self.interval - 1))
        self.initialized = False

    def has_next(self):
        return self.values_left()

    def next(self):
        ts = self.interval_ts()
        value = run_double(self.agg, self.interval_values())
        self.move_to_next_interval()
        return (ts, value)


class Filled(Downsampled):
    """``FillingDownsampler``: every interval from the start of the read window to its end."""

    def __init__(self, source, interval, agg, fill, start, end, query_start, query_end):
        super().__init__(source, interval, agg, query_start, query_end, False)
        self.fill = fill
        self.ts = self.align(start)
        self.end_ts = self.align(end)

    def has_next(self):
        return self.ts < self.end_ts

    def next(self):
        self._init()
        actual = self.interval_ts() if self.values_left() else sys.maxsize
        while self.values_left() and actual < self.ts:
            self.interval_values()
            self.move_to_next_interval()
            actual = self.interval_ts()
        if actual == self.ts:
            value = run_double(self.agg, self.interval_values())
            self.move_to_next_interval()
        else:
            value = 0.0 if self.fill == "zero" else NAN
        self.ts += self.interval
        return (self.ts - self.interval, value)


class Rated:
    """``RateSpan``: the first rate is taken from (0, 0)."""

    def __init__(self, source, counter=False, counter_max=2**63 - 1, reset=0, drop=False):
        self.source = source
        self.counter, self.cmax, self.reset, self.drop = counter, counter_max, reset, drop
        self.initialized = False
        self.next_data = (0, 0.0)
        self.next_rate = None

    def seek(self, ts):
        self.source.seek(ts)
        self.initialized = False

    def _populate(self):
        while True:
            if not self.source.has_next():
                self.next_rate = None
                return
            prev = self.next_data
            self.next_data = self.source.next()
            (t0, v0), (t1, v1) = prev, self.next_data
            if t1 <= t0:
                raise ValueError("timestamps must grow")
            secs = (t1 - t0) / 1000.0
            diff = float(v1) - float(v0)
            if self.counter and diff < 0:
                if self.drop:
                    continue
                r = (self.cmax - float(v0) + float(v1)) / secs
                self.next_rate = (t1, 0.0 if self.reset > 0 and r > self.reset else r)
            else:
                self.next_rate = (t1, diff / secs)
            return

    def _init(self):
        if not self.initialized:
            self.initialized = True
            self.next_data = (0, 0.0)
            self._populate()

    def has_next(self):
        self._init()
        return self.next_rate is not None

    def next(self):
        self._init()
        out = self.next_rate
        self._populate()
        return out


METHODS = {
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


def aggregate(views, start, end, agg, rate, longs=None):
    """``AggregationIterator``: slot ``i`` is series i's current point, ``n + i`` its next.
    ``longs[i]``: series i holds longs; the aggregator runs on longs (``isInteger``) when every
    series with a live slot does, it is no rate and nothing was downsampled (None)."""
    n = len(views)
    longs = [False] * n if longs is None else longs
    ts = [0] * (2 * n)
    vs = [0.0] * (2 * n)
    method = METHODS.get(agg, "lerp")

    def end_reached(i):
        ts[n + i] = END
        views[i] = None

    def move_to_next(i):
        ts[i], vs[i] = ts[n + i], vs[n + i]
        if views[i].has_next():
            ts[n + i], vs[n + i] = views[i].next()
        else:
            end_reached(i)

    for i, it in enumerate(views):
        it.seek(start)
        dp = None
        while it.has_next():
            dp = it.next()
            if dp[0] >= start:
                break
            dp = None
        if dp is None:
            end_reached(i)
            continue
        ts[n + i], vs[n + i] = dp
        if rate:
            if it.has_next():
                move_to_next(i)
            else:
                end_reached(i)
    out, current = [], 0
    while any(ts[n + i] <= end for i in range(n)):
        for i in range(current, n):
            if ts[n + i] == END:
                ts[i] = 0
        current, low, multiple = -1, sys.maxsize, False
        for i in range(n):
            t = ts[n + i]
            if t <= end:
                if t < low:
                    low, current, multiple = t, i, False
                elif t == low:
                    multiple = True
        move_to_next(current)
        if multiple:
            for i in range(current + 1, n):
                if ts[n + i] == low:
                    move_to_next(i)
        x = ts[current]
        values = []
        for pos in range(n):
            if ts[pos] == 0:
                continue
            y0 = vs[pos]
            if pos == current or rate or ts[pos] == x:
                values.append(y0)
                continue
            x0, x1, y1 = ts[pos], ts[n + pos], vs[n + pos]
            if x == x1:
                values.append(y1)
            elif method == "lerp":
                values.append(y0 + (x - x0) * (y1 - y0) / (x1 - x0))
            elif method == "zim":
                values.append(0.0)
            elif method == "max":
                values.append(sys.float_info.max)
            elif method == "min":
                values.append(-sys.float_info.max)
            else:
                values.append(y0)
        integer = not rate and all(longs[i] for i in range(n) if ts[i] or ts[n + i] != END)
        out.append((x, run_double(agg, values, integer)))
    return out


def _percentile(p, values):
    ordered = sorted(values)
    n = len(ordered)
    pos = p * (n + 1) / 100
    if pos < 1:
        return ordered[0]
    if pos >= n:
        return ordered[-1]
    d = pos - math.floor(pos)
    low = ordered[int(pos) - 1]
    return low + d * (ordered[int(pos)] - low)


def is_integer(value) -> bool:
    """A value OpenTSDB stores as a long: an int, or a decimal written without a fraction."""
    if isinstance(value, Decimal):
        return value.as_tuple().exponent >= 0
    return isinstance(value, int)


def run_double(agg, values, longs=False):
    """``Aggregators``' ``runDouble``: the NaN rules of each. ``longs``: the values are longs,
    where ``ep…r3``/``ep…r7`` apply their estimation type (``runLong``; ``runDouble`` ignores
    it), without ``runLong``'s truncation (btts keeps exact values: compared as doubles)."""
    values = [float(v) for v in values]
    nums = [v for v in values if not math.isnan(v)]
    if agg in ("first", "none"):
        return values[0]
    if agg == "last":
        return values[-1]
    if agg == "count":
        return float(len(nums))
    if agg == "mult":
        return math.prod(values)
    if agg == "diff":
        if not nums:
            return NAN
        first = values.index(nums[0])
        return 0.0 if first == len(values) - 1 else values[-1] - nums[0]
    if not nums:
        return NAN
    if agg in ("sum", "zimsum", "pfsum"):
        return math.fsum(nums)
    if agg == "squareSum":
        return math.fsum(v * v for v in nums)
    if agg in ("min", "mimmin"):
        return min(nums)
    if agg in ("max", "mimmax"):
        return max(nums)
    if agg == "avg":
        return math.fsum(nums) / len(nums)
    if agg == "median":
        return sorted(nums)[len(nums) // 2]
    if agg == "dev":
        mean, m2 = nums[0], 0.0
        for k, x in enumerate(nums[1:], start=2):
            new = mean + (x - mean) / k
            m2 += (x - mean) * (x - new)
            mean = new
        return math.sqrt(m2 / len(nums)) if len(nums) > 1 else 0.0
    if agg.startswith("p"):
        return _percentile(float("99.9" if agg == "p999" else agg[1:]), nums)
    if agg.startswith("ep"):
        p = float("99.9" if agg[2:5] == "999" else agg[2:4])
        return _estimate(p / 100, agg[-2:], nums) if longs else _percentile(p, nums)
    raise KeyError(agg)


def _estimate(p, kind, values):
    """Commons Math ``Percentile.EstimationType`` R_3 / R_7: index, then the shared estimate."""
    ordered = sorted(values)
    n = len(ordered)
    if kind == "r3":
        pos = 0 if p <= 0.5 / n else round(n * p)
    else:
        pos = 0 if p == 0 else n if p == 1 else 1 + (n - 1) * p
    if pos < 1:
        return ordered[0]
    if pos >= n:
        return ordered[-1]
    base = math.floor(pos)
    return ordered[base - 1] + (pos - base) * (ordered[base] - ordered[base - 1])


def query(data, start, end, agg, downsample=None, rate=None, longs=frozenset()):
    """One sub-query's answer, as OpenTSDB computes it: ``data`` is ``{series: [(ts, v)…]}``
    (everything stored), ``downsample`` ``(interval_ms, agg, fill)`` (0 for ``0all``),
    ``rate`` a dict of ``counter``/``counter_max``/``reset``/``drop`` or None, ``longs`` the
    series whose values are all longs (a downsample makes doubles of them). Returns
    ``[{series keys…: dps}]`` as ``[(keys, [(ts, value)…])]`` clipped to ``[start, end]``."""
    interval = downsample[0] if downsample else 0
    ws, we = scan_bounds(start, end, interval)

    def view(points):
        it = ListView([(t, v) for t, v in points if ws <= t < we])
        if downsample:
            iv, dagg, fill = downsample
            if iv == 0:
                it = Downsampled(it, 1, dagg, start, end, run_all=True)
            elif fill == "none":
                it = Downsampled(it, iv, dagg, start, end)
            else:
                it = Filled(it, iv, dagg, fill, ws, we, start, end)
        if rate is not None:
            it = Rated(it, **rate)
        return it

    groups = [[k] for k in sorted(data)] if agg == "none" else [sorted(data)]
    out = []
    for keys in groups:
        integer = [k in longs and not downsample for k in keys]
        dps = aggregate([view(data[k]) for k in keys], ws, we, agg, rate is not None, integer)
        dps = [(t, v) for t, v in dps if start <= t <= end]
        if dps:
            out.append((keys, dps))
    return out
