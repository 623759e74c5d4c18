"""What one ``/api/query`` request may cost, checked from its plan before the work (pure).

A refusal after the work protects nothing: the reads and the arithmetic have already spent the
CPU and the memory. So the key ranges a request reads and the points its filled downsamples
compute (series × buckets) are counted from the request and its plan, and a request over
budget is refused (:class:`TooLarge`) before its first read; the deadline covers the
arithmetic between reads too.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable

from btts.tsdb import series
from btts.tsdb.errors import TooLarge
from btts.tsdb.request import TagFilter, TsQuery
from btts.tsdb.series import Downsample, Window
from transforms.errors import Timeout

__all__ = ["check_deadline", "check_request", "check_series"]

MAX_RANGES = 2000  # key ranges (literal tag-value combinations) one request may read


def key_ranges(filters: Iterable[TagFilter]) -> int:
    """The combinations of literal tag values a sub-query fixes: the key ranges it reads
    (at least one; a tag enumerated from the keys is counted when its values are known)."""
    per_tag: dict[str, int] = {}
    for f in filters:
        values = f.literals()
        if values is not None:
            count = len(set(values))
            per_tag[f.tagk] = min(per_tag.get(f.tagk, count), count)
    return math.prod(per_tag.values()) if per_tag else 1


def planned_points(downsample: Downsample | None, shown: Window, n_series: int) -> int:
    """The points a filled downsample computes over the ``shown`` range for ``n_series``
    series (every bucket of every series holds a value or the fill); 0 when the data decides
    (no fill)."""
    if downsample is None or downsample.fill == "none" or not downsample.interval_ms:
        return 0
    first, last = shown.start_ms, shown.end_ms
    return n_series * series.bucket_count(first, last, downsample.interval_ms)


def _too_many_points(points: int, max_points: int) -> TooLarge:
    return TooLarge(
        f"The query would compute {points} points (series x buckets), more than "
        f"--max_points={max_points}: use a longer downsample interval, fewer series or a "
        "shorter time range"
    )


def check_request(ts_query: TsQuery, max_points: int) -> None:
    """Refuse, before any read, a request whose literal tag values alone make more than
    :data:`MAX_RANGES` key ranges, or whose filled downsamples alone compute more than
    ``max_points`` points."""
    ranges = [key_ranges(sub_query.filters) for sub_query in ts_query.queries]
    if sum(ranges) > MAX_RANGES:
        raise TooLarge(
            f"The query reads {sum(ranges)} key ranges (tag value combinations), more than "
            f"{MAX_RANGES}: give fewer values or group by the tag with *"
        )
    shown = Window(ts_query.start_ms, ts_query.end_ms)
    points = sum(
        planned_points(sub_query.downsample, shown, n)
        for sub_query, n in zip(ts_query.queries, ranges, strict=True)
    )
    if points > max_points:
        raise _too_many_points(points, max_points)


def check_series(
    downsample: Downsample | None, shown: Window, n_series: int, max_points: int
) -> None:
    """Refuse a sub-query whose plan (its enumerated series) makes its filled downsample
    compute more than ``max_points`` points, before its rows are read."""
    points = planned_points(downsample, shown, n_series)
    if points > max_points:
        raise _too_many_points(points, max_points)


def check_deadline(until: float) -> None:
    """A :class:`Timeout` once the request's deadline (a ``time.monotonic`` instant) has
    passed."""
    if time.monotonic() > until:
        raise Timeout("The query did not finish before the deadline: narrow the query")
