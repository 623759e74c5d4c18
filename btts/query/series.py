"""Reading the series index (:mod:`transforms.scans.series_index`): a metric's series with their
first and last times, the tag values, the map entries of each table, whether tag values exist.

Every read is a key range of the index, never of the data: a dashboard's suggest or lookup
reads the narrow ranges between the index's directory keys until it has the rows it shows
(a range read costs the emulator every row in it, so never the whole range for a few), and
the ``*`` of a query reads one row per series. ``read(table, query)`` is the caller's read
(``btts serve`` passes its deadline-bounded one): rows in key order, an iterable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from google.cloud.bigtable.data import ReadRowsQuery, RowRange, row_filters

from transforms.bigtable.filters import KEYS_ONLY
from transforms.bigtable.rows_stream import SpanQuery
from transforms.mutations import ReadRow
from transforms.scans import series_index
from transforms.text import keys

__all__ = ["metrics", "present_values", "series", "tag_values"]

Read = Callable[[str, ReadRowsQuery | SpanQuery], Iterable[ReadRow]]
DIRECTORY_READ = 4  # directory keys read at a time: ranges of about 64 index rows each
# a limit up to this is a few rows wanted (suggest, lookup): read between directory keys; a
# larger one only bounds a * that wants them all (one read of the range, not 1 per 64 rows)
DIRECTED_UP_TO = 1000
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
    read: Read, index: str, spans: Sequence[tuple[bytes, bytes]], row_filter
) -> Iterator[ReadRow]:
    """Every row of ``spans`` in key order, in one multi-range read."""
    if spans:
        yield from read(index, SpanQuery(list(spans), row_filter))


def _directed(
    read: Read, index: str, spans: Sequence[tuple[bytes, bytes]], row_filter
) -> Iterator[ReadRow]:
    """The rows of ``spans`` in key order, each span read between successive keys of the
    index's directory (:func:`series_index.sampled`): narrow reads, as many as the caller takes."""
    for start, end in spans:
        cursor = start
        while True:
            bounds = _directory(read, index, cursor, end)
            for bound in [*bounds, end] if len(bounds) < DIRECTORY_READ else bounds:
                query = ReadRowsQuery(
                    row_ranges=[RowRange(start_key=cursor, end_key=bound or None)],
                    row_filter=row_filter,
                )
                yield from read(index, query)
                cursor = bound
            if len(bounds) < DIRECTORY_READ:
                break


def _directory(read: Read, index: str, cursor: bytes, end: bytes) -> list[bytes]:
    """The next directory keys after ``cursor`` (before ``end``), as index keys."""
    head = series_index.DIRECTORY
    query = ReadRowsQuery(
        row_ranges=[
            RowRange(
                start_key=head + cursor,
                end_key=head + end if end else keys.prefix_end(head),
                start_is_inclusive=False,
            )
        ],
        row_filter=KEYS_ONLY,
        limit=DIRECTORY_READ,
    )
    return [row.key[len(head) :] for row in read(index, query)]


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
    values), seen in ``[window_us)`` (cell timestamps) when given, at most ``limit`` (0: all;
    up to :data:`DIRECTED_UP_TO`, read a directory range at a time, else in one read)."""
    prefix = series_index.series_prefix(table, metric)
    heads = sorted({prefix + series_index.encode(v) for v in leading}) if leading else [prefix]
    spans = [(h, keys.prefix_end(h)) for h in heads]
    few = 0 < limit <= DIRECTED_UP_TO
    rows = (_directed if few else _pages)(read, index, spans, NEWEST)
    out: list[Series] = []
    cut = len(prefix)
    for row in rows:
        values = tuple(series_index.decode(row.key[cut:]))
        if keep is not None and not keep(values):
            continue
        span = series_index.seen(row.cells)
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
    head = series_index.value_prefix(scope)
    start = head + prefix.encode("utf-8").replace(b"\x00", b"\x00\xff")
    spans = [(start, keys.prefix_end(start))]
    out = []
    for row in _directed(read, index, spans, KEYS_ONLY):
        out.append(series_index.decode(row.key[len(head) :])[0])
        if limit and len(out) >= limit:
            break
    return out


def metrics(read: Read, index: str, tables: Sequence[str], scope: str) -> dict[str, list]:
    """Per table, the metrics its rows hold values of: ``[(field, map entry or ""), …]``."""
    spans = []
    for table in sorted(set(tables)):
        head = series_index.metric_prefix(table, scope)
        spans.append((head, keys.prefix_end(head)))
    out: dict[str, list] = {t: [] for t in tables}
    for row in _pages(read, index, spans, KEYS_ONLY):
        parts = series_index.decode(row.key)
        if len(parts) == 5 and parts[1] in out:
            out[parts[1]].append((parts[3], parts[4]))
    return out


def present_values(read: Read, index: str, scope: str, values: Iterable[str]) -> set[str]:
    """Which of ``values`` some series has as a tag value."""
    wanted = {series_index.value_key(scope, v): v for v in values}
    if not wanted:
        return set()
    query = ReadRowsQuery(row_keys=sorted(wanted), row_filter=KEYS_ONLY)
    return {wanted[row.key] for row in read(index, query) if row.key in wanted}
