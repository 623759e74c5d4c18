"""Reading the series index (:mod:`transforms.scans.series_index`): a metric's series with their
first and last times, the tag values, the map entries of each table, whether tag values exist.

Every read is a key range of the index, never of the data: a dashboard's suggest or lookup
reads at most the rows it shows (a page at a time while a filter leaves most of them out),
and the ``*`` of a query reads one row per series. ``read(table, query)`` is the caller's read
(``btts serve`` passes its deadline-bounded one): rows in key order, an iterable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from google.cloud.bigtable.data import ReadRowsQuery, RowRange, row_filters

from transforms.bigtable.filters import KEYS_ONLY
from transforms.mutations import ReadRow
from transforms.scans import series_index as layout
from transforms.text import keys

__all__ = ["metrics", "present_values", "series", "tag_values"]

Read = Callable[[str, ReadRowsQuery], Iterable[ReadRow]]
PAGE = 2000  # index rows per read while a filter decides which are kept
# the first and last cells of each row, values stripped (they are empty anyway)
NEWEST = row_filters.RowFilterChain(
    filters=[row_filters.CellsColumnLimitFilter(1), row_filters.StripValueTransformerFilter(True)]
)


@dataclass(frozen=True)
class Series:
    """One series of a metric: its tag values (in the table's tag order) and the first and last
    cell timestamps seen (as its table stores times)."""

    values: tuple[str, ...]
    first_us: int
    last_us: int


def _pages(
    read: Read, index: str, spans: Sequence[tuple[bytes, bytes]], row_filter, page: int
) -> Iterator[ReadRow]:
    """The rows of ``spans`` in key order, ``page`` rows in the first read and twice as many
    in each next one, up to :data:`PAGE` (0: all in one read)."""
    if not spans:
        return
    ranges = [RowRange(start_key=a, end_key=b or None) for a, b in spans]
    if not page:
        yield from read(index, ReadRowsQuery(row_ranges=ranges, row_filter=row_filter))
        return
    while ranges:
        got = 0
        last = None
        for row in read(index, ReadRowsQuery(row_ranges=ranges, row_filter=row_filter, limit=page)):
            got += 1
            last = row.key
            yield row
        if got < page or last is None:
            return
        ranges = _after(ranges, last)
        page = min(2 * page, max(page, PAGE))


def _after(ranges: list[RowRange], last: bytes) -> list[RowRange]:
    """The part of ``ranges`` after key ``last``."""
    out = []
    for r in ranges:
        if r.end_key is not None and r.end_key <= last:
            continue
        start = r.start_key or b""
        if start <= last:
            out.append(RowRange(start_key=last, end_key=r.end_key, start_is_inclusive=False))
        else:
            out.append(r)
    return out


def series(
    read: Read,
    index: str,
    table: str,
    metric: tuple[str, str],
    leading: Sequence[Sequence[str]] = (),
    keep: Callable[[tuple[str, ...]], bool] | None = None,
    window_us: tuple[int, int] | None = None,
    limit: int = 0,
) -> list[Series]:
    """The series of ``metric`` of ``table`` (in tag-value order): under the ``leading`` tag
    values (each a tuple of the first tags' values; none: all), kept by ``keep`` (their tag
    values), seen in ``[window_us)`` (cell timestamps) when given, at most ``limit`` (0: all)."""
    prefix = layout.series_prefix(table, metric)
    heads = sorted({prefix + layout.encode(v) for v in leading}) if leading else [prefix]
    spans = [(h, keys.prefix_end(h)) for h in heads]
    sifted = keep is not None or window_us is not None
    page = max(2 * limit, 64) if sifted and limit else limit
    out: list[Series] = []
    cut = len(prefix)
    for row in _pages(read, index, spans, NEWEST, page):
        values = tuple(layout.decode(row.key[cut:]))
        if keep is not None and not keep(values):
            continue
        span = layout.seen(row.cells)
        if span is None:
            continue
        if window_us is not None and (span[1] < window_us[0] or span[0] >= window_us[1]):
            continue
        out.append(Series(values, span[0], span[1]))
        if limit and len(out) >= limit:
            break
    return out


def tag_values(read: Read, index: str, scope: str, prefix: str, limit: int) -> list[str]:
    """The first ``limit`` tag values starting with ``prefix`` (every tag's, as OpenTSDB's
    suggest lists them), in order."""
    head = layout.value_prefix(scope)
    start = head + prefix.encode("utf-8").replace(b"\x00", b"\x00\xff")
    query = ReadRowsQuery(
        row_ranges=[RowRange(start_key=start, end_key=keys.prefix_end(start) or None)],
        row_filter=KEYS_ONLY,
        limit=limit or None,
    )
    return [layout.decode(row.key[len(head) :])[0] for row in read(index, query)]


def metrics(read: Read, index: str, tables: Sequence[str], scope: str) -> dict[str, list]:
    """Per table, the metrics its rows hold values of: ``[(field, map entry or ""), …]``."""
    spans = []
    for table in sorted(set(tables)):
        head = layout.metric_prefix(table, scope)
        spans.append((head, keys.prefix_end(head)))
    out: dict[str, list] = {t: [] for t in tables}
    for row in _pages(read, index, spans, KEYS_ONLY, 0):
        parts = layout.decode(row.key)
        if len(parts) == 5 and parts[1] in out:
            out[parts[1]].append((parts[3], parts[4]))
    return out


def present_values(read: Read, index: str, scope: str, values: Iterable[str]) -> set[str]:
    """Which of ``values`` some series has as a tag value."""
    wanted = {layout.value_key(scope, v): v for v in values}
    if not wanted:
        return set()
    query = ReadRowsQuery(row_keys=sorted(wanted), row_filter=KEYS_ONLY)
    return {wanted[row.key] for row in read(index, query) if row.key in wanted}
