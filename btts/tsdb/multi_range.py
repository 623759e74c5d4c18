"""Many scans of one table as one multi-range ``ReadRows``.

A literal list of tag values, the enumerated values of a ``*`` tag and the buckets of a salt
each give a scan that differs from the others only in its key ranges. Bigtable serves any
number of ranges in one ``ReadRows`` stream, in key order, so the request costs one round trip
and one stream instead of one per value (a 999-value ``literal_or`` was 999 reads). The rows
are handed back per scan, as separate reads would have returned them.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, as_completed

from google.cloud.bigtable.data import ReadRowsQuery, row_filters

from transforms.bigtable import filters
from transforms.bigtable.rows_stream import SpanQuery
from transforms.mutations import ReadRow
from transforms.scans import key_ranges
from transforms.scans.key_ranges import Scan

__all__ = ["mergeable", "read_parts", "read_ranges"]

RANGES_PER_READ = 4000  # the most key ranges one ReadRows of a part asks for
MIN_PART = 256  # fewer ranges than this per part are not worth another stream


def _window(scan: Scan) -> tuple:
    return (scan.table, scan.start_ms, scan.end_ms, scan.latest_only, scan.cell_timestamp)


def mergeable(scans: Sequence[Scan]) -> bool:
    """True when the scans read one table with one filter over key ranges that do not
    overlap, so one multi-range read returns each row once, for exactly one scan."""
    if not scans:
        return False
    window = _window(scans[0])
    for s in scans:
        if s.row_keys or s.limit is not None or not s.ranges or _window(s) != window:
            return False
        if key_ranges.WHOLE_TABLE in s.ranges:
            return False
    spans = sorted(r for s in scans for r in s.ranges)
    return all(end and end <= nxt for (_, end), (nxt, _) in itertools.pairwise(spans))


def read_ranges(
    read: Callable[[str, ReadRowsQuery | SpanQuery], list[ReadRow]],
    scans: Sequence[Scan],
    cells: row_filters.RowFilter | None,
) -> list[list[ReadRow]]:
    """The rows of every scan (see :func:`mergeable`) from one ``ReadRows``, split back per
    scan by the range each key falls in. ``read(table, query)``: the reader's bounded read."""
    owners = sorted((start, end, i) for i, s in enumerate(scans) for start, end in s.ranges)
    query = SpanQuery([(a, b) for a, b, _ in owners], filters.row_filter(scans[0], cells))
    out: list[list[ReadRow]] = [[] for _ in scans]
    starts = [a for a, _, _ in owners]
    for row in read(scans[0].table, query):
        at = bisect_right(starts, row.key) - 1
        if at >= 0:
            out[owners[at][2]].append(row)
    return out


def parts(scans: Sequence[Scan], streams: int) -> list[list[int]]:
    """The scans (by index) split into at most ``streams`` parts of neighbouring key ranges
    (fewer when the parts would be small, more when one would ask for more than
    :data:`RANGES_PER_READ` ranges): each part is one multi-range read."""
    order = sorted(range(len(scans)), key=lambda i: scans[i].ranges[0])
    ranges = sum(len(s.ranges) for s in scans)
    count = max(1, min(streams, ranges // MIN_PART), -(-ranges // RANGES_PER_READ))
    size = -(-len(order) // count)
    return [order[at : at + size] for at in range(0, len(order), size)]


def read_parts(
    read: Callable[[str, ReadRowsQuery | SpanQuery], list[ReadRow]],
    scans: Sequence[Scan],
    cells: row_filters.RowFilter | None,
    pool: Executor,
    streams: int,
) -> Iterator[list[list[ReadRow]]]:
    """The rows of every scan (see :func:`mergeable`), read as a few multi-range reads at once
    (:func:`parts`), each part handed over as soon as it is read: the rows of each of its
    scans. The caller works on one part while the others are still read."""
    groups = parts(scans, streams)
    if len(groups) == 1:
        yield read_ranges(read, scans, cells)
        return
    futures = [pool.submit(read_ranges, read, [scans[i] for i in g], cells) for g in groups]
    try:
        for done in as_completed(futures):
            yield done.result()
    finally:
        for f in futures:
            f.cancel()
