"""``btts index rebuild``: the series index of a schema made again from its tables.

Why: data landed before the schema declared ``index:`` (or by a job that did not write it), or
data gone since (a tenant dropped, cells past their ``max_age``), leaves the index short or
stale. A rebuild scans every table the index lists (each row's keys and cell timestamps; the
values only of JSON blob columns, which say which fields an event had), folds the rows exactly
as the ingest jobs fold them (:func:`transforms.scans.series_fold.fold`), then makes the index
hold exactly that: every index row rewritten in one atomic mutation (its cells deleted, the two
new ones set) and every row the scan did not find deleted. A job writing meanwhile only
widens what it writes, so run the rebuild while no job writes the dataset, or once more after.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from google.api_core import exceptions as gexc
from google.cloud.bigtable.data import (
    BigtableDataClient,
    DeleteAllFromFamily,
    DeleteAllFromRow,
    ReadRowsQuery,
    RowMutationEntry,
    RowRange,
    SetCell,
    row_filters,
)

from btts import admin
from btts.config import Target
from btts.errors import MissingTable
from transforms import schema as schema_lib
from transforms.bigtable import rows_stream
from transforms.bigtable.filters import KEYS_ONLY
from transforms.scans import series_fold, series_index
from transforms.text import keys

__all__ = ["forget_tenant", "rebuild"]

READ_TIMEOUT_S = 3600.0
BATCH = 1000  # index rows per MutateRows request
STRIPPED = row_filters.StripValueTransformerFilter(True)


@dataclass
class Rebuilt:
    """What a rebuild found and did."""

    index: str
    rows_scanned: dict[str, int] = field(default_factory=dict)
    series: dict[str, int] = field(default_factory=dict)
    skipped: int = 0  # rows whose key is not their table's shape
    written: int = 0
    deleted: int = 0
    seconds: float = 0.0


def _stream(target: Target, table: str, row_filter) -> Iterable:
    reader = rows_stream.shared_reader()
    query = ReadRowsQuery(row_filter=row_filter)
    return reader.stream(rows_stream.request_of(target.table_path(table), query), READ_TIMEOUT_S)


def scan_series(
    target: Target, schema: schema_lib.Schema, table: schema_lib.TableSpec
) -> tuple[dict, int, int]:
    """One table's series folded from a scan: ``(accumulator, rows, rows skipped)``.
    Raises MissingTable (a UserError)."""
    spec = series_index.TableSeries(schema, table)
    acc: dict = {}
    rows = skipped = 0
    try:
        for row in _stream(target, table.name, None if spec.blobs else STRIPPED):
            rows += 1
            if not series_fold.fold(acc, spec, row.key, row.cells):
                skipped += 1
    except gexc.NotFound:
        raise MissingTable(f"table {table.name} does not exist in {target.describe()}") from None
    folded, bad = series_fold.spans(spec, acc)
    return folded, rows, skipped + bad


def rebuild(
    target: Target, schema: schema_lib.Schema, say: Callable[[str], None] = lambda _: None
) -> Rebuilt:
    """Make ``schema``'s index (created when missing) exactly what its tables hold; a table
    not created yet holds no series."""
    if schema.index is None:
        raise ValueError(f"schema {schema.dataset} declares no index ('index: {{table: NAME}}')")
    started = time.monotonic()
    decl = schema.index.decl()
    report = Rebuilt(decl.name)
    with admin.Admin(target) as api:
        for line in api.ensure(decl):
            say(line)
    rows: dict[bytes, list[int]] = {}
    for table in series_index.indexed_tables(schema):
        try:
            acc, scanned, skipped = scan_series(target, schema, table)
        except MissingTable:
            say(f"{table.name}: not created yet, no series")
            continue
        series_fold.index_rows(series_index.TableSeries(schema, table), acc, rows)
        report.rows_scanned[table.name] = scanned
        report.series[table.name] = len(acc)
        report.skipped += skipped
        say(f"{table.name}: {scanned:,} rows, {len(acc):,} series")
    report.written, report.deleted = _replace(target, decl.name, rows)
    report.seconds = time.monotonic() - started
    return report


def _replace(target: Target, index: str, rows: dict[bytes, list[int]]) -> tuple[int, int]:
    """The index table made to hold exactly ``rows``: (rows written, rows deleted)."""
    stale = [r.key for r in _stream(target, index, KEYS_ONLY) if r.key not in rows]
    family = series_index.cells(0, 0)[0].family
    entries = [RowMutationEntry(key, [DeleteAllFromRow()]) for key in stale]
    for key, (first, last) in sorted(rows.items()):
        cells = series_index.cells(first, last)
        mutations = [DeleteAllFromFamily(family)]
        mutations += [SetCell(c.family, c.qualifier, c.value, c.timestamp_us) for c in cells]
        entries.append(RowMutationEntry(key, mutations))
    client = BigtableDataClient(project=target.project)
    try:
        table = client.get_table(target.instance, index)
        for at in range(0, len(entries), BATCH):
            table.bulk_mutate_rows(entries[at : at + BATCH])
    finally:
        client.close()
    return len(rows), len(stale)


def forget_tenant(target: Target, schema: schema_lib.Schema, tenant: str) -> int:
    """Drop what ``schema``'s index holds of ``tenant`` (its series, metrics and tag values in
    its own scope) once its rows are dropped: the row ranges of their prefixes. The values and
    metrics it shared in the global scope stay until a rebuild. Returns the prefixes dropped."""
    if schema.index is None:
        return 0
    index = schema.index.table
    tables = [t.name for t in series_index.indexed_tables(schema) if series_index.tenant_keyed(t)]
    prefixes = [series_index.value_prefix(tenant)]
    for table in tables:
        head = series_index.metric_prefix(table, tenant)
        prefixes.append(head)
        query = ReadRowsQuery(
            row_ranges=[RowRange(start_key=head, end_key=keys.prefix_end(head))],
            row_filter=KEYS_ONLY,
        )
        try:
            rows = list(
                rows_stream.shared_reader().stream(
                    rows_stream.request_of(target.table_path(index), query), READ_TIMEOUT_S
                )
            )
        except gexc.NotFound:
            return 0
        for row in rows:
            field_name, entry = series_index.decode(row.key)[3:5]
            prefixes.append(
                series_index.series_prefix(table, (field_name, entry))
                + series_index.encode([tenant])
            )
    prefixes += [series_index.DIRECTORY + p for p in prefixes if not p.startswith(b"m")]
    with admin.Admin(target) as api:
        for prefix in prefixes:
            api.api.drop_row_range(
                request={"name": target.table_path(index), "row_key_prefix": prefix}
            )
    return len(prefixes)
