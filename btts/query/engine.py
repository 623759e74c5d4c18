"""One query engine for every schema file: plan a declared query from the table's key recipe,
read it from Bigtable (emulator or a real instance), decode the rows into plain records by the
declared field types. Rows are read with :mod:`transforms.bigtable.rows_stream` (ReadRows
straight from gRPC, on the endpoint and credentials the data client would use): the same rows
in the same order as the data client's ``read_rows``, without its objects per cell.

    from btts import admin
    from btts import config
    from btts.query import engine
    target = config.resolve_target(None, None)            # the emulator
    engine.ask(target, "server_metrics", "host_metrics", {"hostname": "server1.bbb.com"},
               start_ms, end_ms)

A query is declared in its schema file's ``queries:`` section (name, table, the key fields
that select the rows, how a time window maps to keys: :mod:`transforms.schema.queries`);
nothing here knows a dataset. A record speaks the schema's field names, whatever the layout
(docs/user-guide.md, "Queries"):

* the key's fields (``hostname``, ``meter``, …; a salt is left out), then ``ts_ms``, the cell
  time of the event (the newest cell's, for a record that is a whole row);
* each column's field, decoded by its declared type: ``number`` as an exact
  :class:`~decimal.Decimal` (``600.60`` stays ``600.60``), ``integer`` as int, ``boolean`` as
  bool, AddToCell sums as int64, protobuf and JSON blobs spread into their fields;
* columns whose qualifier is data (a map's entries, a time of day, a day of month) as one dict
  per field, ``{qualifier: value}``;
* ``key``, the row key as text.

A row is one record when it holds one state (a ``latest`` query, aggregates, a short-wide row
whose qualifiers are times); otherwise every cell time of a row is one event, one record, and
the key's time bucket is left out, so that the four column layouts of one event stream give
the same records. A table with ``rows_per`` (one row per field, the value in the qualifier)
is put back together: one record per event with every field.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from google.api_core import exceptions as gexc
from google.cloud.bigtable.data import ReadRowsQuery, RowRange, row_filters

from btts import admin
from btts.config import Target
from btts.errors import MissingTable
from btts.query import records as query_records
from btts.query.records import Record
from transforms import schema as schema_lib
from transforms import table_model
from transforms.bigtable import rows_stream
from transforms.bigtable.filters import KEYS_ONLY, read_query
from transforms.builder import fields
from transforms.mutations import ReadRow
from transforms.scans import key_ranges
from transforms.scans.key_ranges import Scan, Window
from transforms.text import timefmt

__all__ = [
    "Query",
    "ask",
    "builtin_query",
    "count_rows",
    "declared",
    "declared_query",
    "offboard_tenant",
    "read_rows",
    "run",
    "table_query",
    "typed_values",
]

UTC = timefmt.UTC
R = TypeVar("R")


# -- planning and running ---------------------------------------------------------------------


@dataclass(frozen=True)
class Query(Generic[R]):
    """A planned query: its scans (pure data from the declarations) and how the rows they
    return (one list per scan) become records."""

    title: str
    scans: tuple[Scan, ...]
    decode: Callable[[list[list[ReadRow]]], list[R]]
    entity: tuple[str, ...] = ()  # the fields naming a series (``hostname``): see entity_fields

    def describe(self) -> str:
        return "\n".join(scan.describe() for scan in self.scans)


# as long as the data client's read_rows allows a read by default
READ_TIMEOUT_S = 600.0


def _read(
    target: Target, table: str, query: ReadRowsQuery, missing: str = "", collect: Callable = list
):
    """``collect`` of the rows of ``query`` in ``table`` as they come, in key order, cells as
    stored; a missing table is :class:`MissingTable` (``missing``: what to do about it)."""
    reader = rows_stream.shared_reader()  # the data client's default endpoint, or the emulator
    request = rows_stream.request_of(target.table_path(table), query)
    try:
        return collect(reader.stream(request, READ_TIMEOUT_S))
    except gexc.NotFound:
        raise MissingTable(
            f"table {table} does not exist in {target.describe()}{missing}"
        ) from None


def execute(target: Target, scan: Scan) -> list[ReadRow]:
    """The rows of one scan, in key order, cells as stored (newest first per column)."""
    query = read_query(scan)
    if query is None:
        return []
    return _read(target, scan.table, query, ": run the job that writes it first")


def run(target: Target, query: Query[R]) -> list[R]:
    """Execute every scan of ``query`` (one channel for all) and decode the rows."""
    return query.decode([execute(target, scan) for scan in query.scans])


def count_rows(target: Target, table: str, span: tuple[bytes, bytes] | None = None) -> int:
    """How many rows a table holds, or its key range ``span`` (keys only travel: one stripped
    cell per row)."""
    ranges = [RowRange(*span)] if span is not None else None
    query = ReadRowsQuery(row_ranges=ranges, row_filter=KEYS_ONLY)
    return _read(target, table, query, collect=lambda rows: sum(1 for _ in rows))


# -- declared queries -------------------------------------------------------------------------


def declared(schema: schema_lib.Schema, name: str) -> schema_lib.QuerySpec:
    """The query ``name`` of ``schema``; a clear error naming the declared ones otherwise."""
    for spec in schema.queries:
        if spec.name == name:
            return spec
    known = ", ".join(s.name for s in schema.queries) or "none"
    raise ValueError(f"schema {schema.dataset} declares no query {name!r}; declared: {known}")


def plan_declared(
    schema: schema_lib.Schema,
    spec: schema_lib.QuerySpec,
    values: Mapping[str, object],
    start_ms: int | None = None,
    end_ms: int | None = None,
    tz: dt.tzinfo = UTC,
    *,
    limit: int | None = None,
    table: str | None = None,
) -> tuple[Scan, ...]:
    """The scans of a declared query, from the same key recipe that built the keys.

    A select field may hold a list (several rows of a ``row`` read). A ``prefix`` read given a
    window narrows to it when a time follows the selected fields. ``table`` reads a copy with
    the same declaration (the nightly job's ``SENSOR_YYYYMMDD``)."""
    tspec = schema.table(spec.table)
    decl = tspec.decl
    missing = [f for f in spec.select if f not in values]
    if missing:
        raise ValueError(f"query {spec.name}: give {', '.join('--' + m for m in missing)}")
    fixed = {f: values[f] for f in spec.select}
    # a table keeping one version per column holds only its latest state
    latest = spec.latest or all(f.max_versions == 1 for f in decl.families)
    window = start_ms is not None and end_ms is not None
    salted = any(s.kind == "salt" for s in decl.key.segments)
    if spec.read == "time" and not window:
        raise ValueError(f"query {spec.name}: give --start and --end")
    if spec.read == "table":
        scans = (Scan(decl.name, ranges=(key_ranges.WHOLE_TABLE,)),)
    elif spec.read == "row":
        many = [v if isinstance(v, list) else [v] for v in fixed.values()]
        rows = [dict(zip(fixed, combo, strict=True)) for combo in zip(*many, strict=True)]
        scans = (key_ranges.row_scan(decl, rows, tz),)
    elif spec.read == "time" and salted:
        scans = key_ranges.salted_scans(decl, Window(start_ms, end_ms), tz)
    elif spec.read == "time" and spec.per:
        scans = tuple(
            key_ranges.time_scan(decl, {**fixed, spec.per: f}, Window(start_ms, end_ms), tz)
            for f in tspec.rows_per.fields
        )
    elif spec.read == "time" or (window and _time_follows(decl, fixed)):
        scans = (key_ranges.time_scan(decl, fixed, Window(start_ms, end_ms), tz),)
    else:
        scans = (key_ranges.prefix_scan(decl, fixed, tz),)
    count = limit if limit is not None else spec.limit
    return tuple(
        replace(s, table=table or s.table, latest_only=latest, limit=count or s.limit)
        for s in scans
    )


def _time_follows(decl, fixed: Mapping[str, object]) -> bool:
    rest = [s for s in decl.key.segments if s.kind not in ("const", "salt")][len(fixed) :]
    return bool(rest) and rest[0].kind in table_model.TIME_KINDS


def declared_query(
    schema: schema_lib.Schema,
    name: str,
    values: Mapping[str, object] | None = None,
    start_ms: int | None = None,
    end_ms: int | None = None,
    tz: dt.tzinfo = UTC,
    *,
    limit: int | None = None,
    table: str | None = None,
) -> Query[Record]:
    """A named query of a schema file, planned and ready for :func:`run`."""
    spec = declared(schema, name)
    values = dict(values or {})
    scans = plan_declared(schema, spec, values, start_ms, end_ms, tz, limit=limit, table=table)
    shown = ", ".join(f"{f}={values[f]}" for f in spec.select)
    window = (
        f" in [{timefmt.iso(start_ms)}, {timefmt.iso(end_ms)})"
        if start_ms is not None and end_ms is not None
        else ""
    )
    return Query(
        f"{name}({shown}){window} from {table or spec.table}",
        scans,
        lambda rows: query_records.decode_declared(schema, spec, rows),
        query_records.entity_fields(schema, spec.table),
    )


def typed_values(schema: schema_lib.Schema, table: str, given: Mapping[str, str]) -> dict:
    """Key values given as text (``--field device=dev-1``) typed like the event's: integers
    as int, times as epoch ms (RFC 3339 or epoch ms), the rest as text."""
    refs = schema.field_by_ref()
    key = schema.table(table).decl.key
    out: dict[str, object] = {}
    for name, text in given.items():
        if name not in key.fields:
            raise ValueError(f"{table}: {name!r} is not a field of the key {key.describe()}")
        spec = refs.get(name)
        kind = spec.type if spec else "text"
        if kind == "integer":
            try:
                out[name] = int(text)
            except ValueError:
                raise ValueError(f"{name}: {text!r} is not an integer") from None
        elif kind == "time":
            out[name] = fields.field_parser(spec)(text)
        else:
            out[name] = text
    return out


def table_query(
    schema: schema_lib.Schema,
    table: str,
    given: Mapping[str, str],
    start_ms: int | None = None,
    end_ms: int | None = None,
    *,
    limit: int | None = None,
    latest_only: bool = False,
    tz: dt.tzinfo = UTC,
) -> Query[ReadRow]:
    """A read of any table by its key recipe, rows as stored (``btts query --schema FILE
    --table T``): one row when every key field is given, a time range when ``start_ms`` and
    ``end_ms`` are (a time must follow the given fields; a salted table reads one range per
    bucket, merged), else the prefix the given leading fields fix."""
    decl = schema.table(table).decl
    values = typed_values(schema, table, given)
    if (start_ms is None) != (end_ms is None):
        raise ValueError("give both a start and an end time, or neither")
    salted = any(s.kind == "salt" for s in decl.key.segments)
    if start_ms is not None and salted and not values:
        scans = key_ranges.salted_scans(decl, Window(start_ms, end_ms), tz)
    elif start_ms is not None:
        scans = (key_ranges.time_scan(decl, values, Window(start_ms, end_ms), tz),)
    elif set(decl.key.fields) <= set(values):  # a salt hashes key fields: it is known too
        scans = (key_ranges.row_scan(decl, [values], tz),)
    else:
        scans = (key_ranges.prefix_scan(decl, values, tz),)
    scans = tuple(replace(s, latest_only=latest_only, limit=limit or s.limit) for s in scans)
    return Query(
        f"{table} ({schema.dataset})", scans, lambda rows: query_records.rows_in_order(decl, rows),
        query_records.entity_fields(schema, table),
    )  # fmt: skip


def builtin_query(dataset: str, name: str, *args, **kwargs) -> Query[Record]:
    """:func:`declared_query` of a built-in schema file (``transforms/declarations``)."""
    return declared_query(schema_lib.builtin(dataset), name, *args, **kwargs)


def ask(target: Target, dataset: str, name: str, *args, **kwargs) -> list[Record]:
    """Plan and run a built-in dataset's declared query: the records."""
    return run(target, builtin_query(dataset, name, *args, **kwargs))


# -- offboarding a tenant (docs/patterns.md §3 rule 11) ---------------------------------------


def offboard_tenant(target: Target, tenant: str) -> int:
    """Offboard a tenant of the devices dataset: count its rows in DEVICE, then drop them with
    :func:`btts.admin.drop_tenant` (one admin call on the prefix ``TENANT#``). Returns how many
    rows it held."""
    devices = schema_lib.builtin("devices")
    device = devices.table("DEVICE").decl
    (scan,) = plan_declared(devices, declared(devices, "tenant_rows"), {"tenant": tenant})
    ((start, end),) = scan.ranges
    count = count_rows(target, device.name, (start, end))
    admin.drop_tenant(target, device, tenant)  # the same prefix, never empty: never the whole table
    from btts.query import index_rebuild  # its series go from the index too

    index_rebuild.forget_tenant(target, devices, tenant)
    return count


def read_rows(
    target: Target,
    table: str,
    start: bytes | None = None,
    end: bytes | None = None,
    latest_only: bool = False,
    limit: int | None = None,
) -> list[ReadRow]:
    """Rows of ``[start, end)`` (the whole table by default), cells as stored."""
    query = ReadRowsQuery(
        row_ranges=RowRange(start_key=start, end_key=end) if (start or end) else None,
        row_filter=row_filters.CellsColumnLimitFilter(1) if latest_only else None,
        limit=limit,
    )
    return _read(target, table, query)
