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
from collections.abc import Iterable, Sequence

from btts.tsdb.errors import TooLarge
from btts.tsdb.planning import SubPlan
from btts.tsdb.request import TagFilter
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


def _too_many_points(points: int, max_points: int) -> TooLarge:
    return TooLarge(
        f"The query would compute {points} points (series x buckets), more than "
        f"--max_points={max_points}: use a longer downsample interval, fewer series or a "
        "shorter time range"
    )


def check_request(subs: Sequence[SubPlan], max_points: int) -> None:
    """Refuse, before any read, a request whose sub-queries (as asked) fix more than
    :data:`MAX_RANGES` key ranges with their literal tag values alone, or whose filled
    downsamples alone compute more than ``max_points`` points."""
    ranges = [key_ranges(sub.filters) for sub in subs]
    if sum(ranges) > MAX_RANGES:
        raise TooLarge(
            f"The query reads {sum(ranges)} key ranges (tag value combinations), more than "
            f"{MAX_RANGES}: give fewer values or group by the tag with *"
        )
    points = sum(sub.filled_buckets * n for sub, n in zip(subs, ranges, strict=True))
    if points > max_points:
        raise _too_many_points(points, max_points)


def check_series(sub: SubPlan, max_points: int) -> None:
    """Refuse a planned sub-query whose series (the key ranges it reads) make its filled
    downsample compute more than ``max_points`` points, before its rows are read."""
    planned = sub.series_read
    if planned is None:
        return
    points = sub.filled_buckets * max(len(planned.combos), 1)
    if points > max_points:
        raise _too_many_points(points, max_points)


def check_deadline(until: float) -> None:
    """A :class:`Timeout` once the request's deadline (a ``time.monotonic`` instant) has
    passed."""
    if time.monotonic() > until:
        raise Timeout("The query did not finish before the deadline: narrow the query")
