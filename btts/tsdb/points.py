"""The rows of planned key ranges (:class:`btts.tsdb.reads.Plan`) read and turned into series.

Rows are read with the request's :class:`~btts.tsdb.reads.Reader` (ReadRows straight from
gRPC; many ranges as a few multi-range reads at once, each part turned into points while the
next is read) and decoded by the query engine's declared-query decoder, so every layout
(columns, blobs, one row per field) gives the same records as ``btts query``; a map entry's or
a field column's points are taken straight from its cells
(:func:`btts.query.records.map_entry_points`, ``field_points``: the same values without a
record per event), its column selected on the server by a column range, not a qualifier regex.
A rollup table's rows give each series' hourly sums and counts (:func:`read_rollup`). The
reads' failures are the Reader's: a ``Timeout``, ``Unavailable`` or
:class:`~btts.errors.MissingTable`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal

from google.cloud.bigtable.data import row_filters

from btts.query import records as query_records
from btts.tsdb.catalog import Source
from btts.tsdb.reads import Plan, Reader, SeriesKey
from btts.tsdb.request import TagFilter
from transforms import schema as schema_lib
from transforms.bigtable.filters import one_column
from transforms.rollup import core
from transforms.scans import key_ranges
from transforms.scans.key_ranges import Window

__all__ = ["read_points", "read_rollup"]

HOUR_MS = core.HOUR_MS


def _cells_filter(source: Source) -> row_filters.RowFilter | None:
    """Only the metric's own column travels: a map entry (in the map's families), or a field
    kept in one column of its own (a row of 13 metrics sends one)."""
    if source.entry:
        families = [c.family for c in source.table.columns if c.each == source.field]
        return one_column(families, source.entry.encode("utf-8"))
    col = query_records.field_column(source.table, source.field)
    if col is None or source.table.rows_per is not None:
        return None
    return one_column([col.family], col.qualifier.encode("utf-8"))


def read_points(
    reader: Reader, planned: Plan, filters: Sequence[TagFilter]
) -> dict[SeriesKey, list]:
    """Every series of the plan: ``{(tag, value)…: [(ts_ms, value), …]}`` in time order, each
    part of the reads turned into points while the next is read."""
    cells = _cells_filter(planned.source)
    out: dict[SeriesKey, list] = {}
    for rows in reader.scan_parts(planned.scans, cells):
        for labels, points in _part_points(planned.source, rows, filters).items():
            got = out.get(labels)
            if got is None:
                out[labels] = points
            else:
                got += points
        reader.check_deadline()
    for points in out.values():
        points.sort(key=_first)
    return out


def _part_points(source: Source, rows: list, filters: Sequence[TagFilter]) -> dict:
    """The points of one part of the rows (unsorted), per series passing the filters."""
    tags, name = source.tags, source.table.name
    if source.entry:
        found = query_records.map_entry_points(
            source.schema, name, rows, source.field, source.entry, tags
        )
    else:
        found = query_records.field_points(source.schema, name, rows, source.field, tags)
    if found is not None:
        return _kept(found, filters)
    spec = schema_lib.QuerySpec(name="tsdb", table=name)
    records = query_records.decode_declared(source.schema, spec, rows)
    out: dict[SeriesKey, list] = {}
    verdicts: dict[SeriesKey, bool] = {}  # the filters run once per series, not per row
    for record in records:
        value = record.get(source.field)
        if source.entry:
            value = value.get(source.entry) if isinstance(value, dict) else None
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            continue
        labels = tuple(sorted((t, str(record.get(t, ""))) for t in tags))
        passed = verdicts.get(labels)
        if passed is None:
            passed = verdicts[labels] = _passes(dict(labels), filters)
        if not passed:
            continue
        out.setdefault(labels, []).append((record["ts_ms"], value))
    return out


def _kept(found: dict[SeriesKey, list], filters: Sequence[TagFilter]) -> dict[SeriesKey, list]:
    """The series of :func:`query_records.map_entry_points` (or ``field_points``) that pass
    the filters, their numbers only (what :func:`read_points` keeps of the records)."""
    out: dict[SeriesKey, list] = {}
    for labels, points in found.items():
        if not _passes(dict(labels), filters):
            continue
        kept = [p for p in points if type(p[1]) in _NUMBERS]  # _loose gives Decimal or text
        if kept:
            out[labels] = kept
    return out


_NUMBERS = frozenset((int, Decimal))


def _first(point: tuple) -> int:
    return point[0]


def _passes(labels: Mapping[str, str], filters: Sequence[TagFilter]) -> bool:
    return all(f.match(labels.get(f.tagk, "")) for f in filters)


def read_rollup(reader: Reader, planned: Plan, filters, hours: Window) -> dict[SeriesKey, list]:
    """``{series: [(hour start, sum, count), …]}`` of the ``hours`` from a rollup table: the
    exact_* totals (latest cell) when the rollup wrote them, else the AddToCell sum/count."""
    source = planned.source
    cells = row_filters.RowFilterChain(
        filters=[
            one_column([f.name for f in source.table.decl.families], source.qualifier),
            row_filters.CellsColumnLimitFilter(1),
        ]
    )
    decl = source.table.decl
    entity = source.table.rollup.entity
    out: dict[SeriesKey, list] = {}
    verdicts: dict[SeriesKey, bool] = {}
    for rows in reader.scan_all(planned.scans, cells):
        for row in rows:
            got: dict[str, tuple[int, int]] = {}
            for cell in row.cells:
                stamp = decl.event_ms(cell.timestamp_us)  # as the table holds times
                got[cell.family] = (query_records.int64(cell.value), stamp)
            total = got.get(core.EXACT_SUM_FAMILY) or got.get(core.SUM_FAMILY)
            count = got.get(core.EXACT_COUNT_FAMILY) or got.get(core.COUNT_FAMILY)
            if total is None or count is None:
                continue
            hour = total[1] - total[1] % HOUR_MS
            if not hours.start_ms <= hour < hours.end_ms:
                continue
            labels = ((entity, str(key_ranges.split_key(decl, row.key)[entity])),)
            if labels not in verdicts:
                verdicts[labels] = _passes(dict(labels), filters)
            if verdicts[labels]:
                out.setdefault(labels, []).append((hour, core.unscale(total[0]), count[0]))
    for parts in out.values():
        parts.sort(key=lambda p: p[0])
    return out
