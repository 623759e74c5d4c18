"""One query engine for every schema file: plan a declared query from the table's key recipe,
read it with the Bigtable data client (emulator or a real instance), decode the rows into plain
records by the declared field types.

    from btts import admin, query_engine as q
    target = admin.resolve_target(None, None)            # the emulator
    q.ask(target, "server_metrics", "host_metrics", {"hostname": "server1.bbb.com"},
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
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Generic, TypeVar

from google.api_core import exceptions as gexc
from google.cloud.bigtable.data import BigtableDataClient, ReadRowsQuery, RowRange, row_filters

from btts import admin
from btts.admin import ReadCell, ReadRow, Target
from transforms import generic, key_ranges, salted_reads, timefmt
from transforms import schema as schema_lib
from transforms.key_ranges import Scan

__all__ = [
    "KEYS_ONLY",
    "UTC",
    "MissingTable",
    "Query",
    "R",
    "Record",
    "ask",
    "builtin_query",
    "count_rows",
    "declared",
    "declared_query",
    "decode_declared",
    "decode_table",
    "drop_tenant",
    "entity_fields",
    "execute",
    "int64",
    "number",
    "plan_declared",
    "read_query",
    "row_filter",
    "run",
    "salted_scans",
    "table_query",
    "typed",
    "typed_values",
    "whole_rows",
]

UTC = timefmt.UTC
R = TypeVar("R")
Record = dict  # field name → value; see the module docstring


class MissingTable(LookupError):
    """A query reads a table the instance does not have."""


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


def row_filter(scan: Scan) -> row_filters.RowFilter | None:
    """The server-side filter of a scan: its cell-time window, then newest cell per column."""
    parts: list[row_filters.RowFilter] = []
    if scan.start_ms is not None or scan.end_ms is not None:
        start, end = scan.cell_window()  # as the table stamps its cells
        parts.append(
            row_filters.TimestampRangeFilter(
                start=_micros_datetime(start) if start is not None else None,
                end=_micros_datetime(end) if end is not None else None,
            )
        )
    if scan.latest_only:
        parts.append(row_filters.CellsColumnLimitFilter(1))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else row_filters.RowFilterChain(filters=parts)


def _micros_datetime(micros: int) -> dt.datetime:
    """The datetime the client turns back into ``micros`` (the filter takes datetimes)."""
    return timefmt.EPOCH + dt.timedelta(microseconds=micros)


def read_query(scan: Scan) -> ReadRowsQuery | None:
    """The client query of a scan; None when it selects nothing."""
    if not scan.ranges and not scan.row_keys:
        return None
    whole = scan.ranges == (key_ranges.WHOLE_TABLE,)
    if whole and scan.row_keys:
        raise ValueError("a scan reads either the whole table or some rows, not both")
    ranges = None  # with no row keys either: the whole table
    if scan.ranges and not whole:
        ranges = [RowRange(start_key=s or None, end_key=e or None) for s, e in scan.ranges]
    return ReadRowsQuery(
        row_keys=list(scan.row_keys) or None,
        row_ranges=ranges,
        limit=scan.limit,
        row_filter=row_filter(scan),
    )


def execute(client: BigtableDataClient, target: Target, scan: Scan) -> list[ReadRow]:
    """The rows of one scan, in key order, cells as stored (newest first per column)."""
    query = read_query(scan)
    if query is None:
        return []
    table = client.get_table(target.instance, scan.table)
    try:
        rows = table.read_rows(query)
    except gexc.NotFound:
        raise MissingTable(
            f"table {scan.table} does not exist in {target.describe()}: run the job that "
            "writes it first"
        ) from None
    return [ReadRow.of(row) for row in rows]


def run(target: Target, query: Query[R]) -> list[R]:
    """Execute every scan of ``query`` (one client for all) and decode the rows."""
    with BigtableDataClient(project=target.project) as client:
        return query.decode([execute(client, target, scan) for scan in query.scans])


def count_rows(target: Target, table: str, span: tuple[bytes, bytes] | None = None) -> int:
    """How many rows a table holds, or its key range ``span`` (keys only travel: one stripped
    cell per row)."""
    ranges = [RowRange(*span)] if span is not None else None
    with BigtableDataClient(project=target.project) as client:
        handle = client.get_table(target.instance, table)
        try:
            return sum(
                1 for _ in handle.read_rows(ReadRowsQuery(row_ranges=ranges, row_filter=KEYS_ONLY))
            )
        except gexc.NotFound:
            raise MissingTable(f"table {table} does not exist in {target.describe()}") from None


# Keys only: the first cell of each row, its value stripped.
KEYS_ONLY = row_filters.RowFilterChain(
    filters=[row_filters.CellsRowLimitFilter(1), row_filters.StripValueTransformerFilter(True)]
)


# -- values -----------------------------------------------------------------------------------


def number(value: bytes, where: str = "value") -> Decimal:
    """A stored decimal text as an exact Decimal."""
    try:
        return Decimal(value.decode("ascii"))
    except (UnicodeDecodeError, InvalidOperation):
        raise ValueError(f"{where}: {value[:40]!r} is not a decimal number") from None


def int64(value: bytes) -> int:
    """An aggregate (int64 sum) cell: 8 bytes, big-endian, signed."""
    return int.from_bytes(value, "big", signed=True)


def typed(spec: schema_lib.FieldSpec | None, text: str, where: str) -> object:
    """A field's text as its declared type (what an event of that field held)."""
    kind = spec.type if spec is not None else ""
    if kind == "number":
        return number(text.encode("utf-8"), where)
    if kind in ("integer", "time") and text.lstrip("-").isdigit():
        return int(text)
    if kind == "boolean":
        if text not in ("true", "false"):
            raise ValueError(f"{where}: {text[:40]!r} is not true/false")
        return text == "true"
    return text


def _loose(value: bytes) -> object:
    """A value no declaration types (a map entry, an undeclared column): a number when it is
    one, else its text."""
    try:
        return number(value)
    except ValueError:
        return value.decode("utf-8", "replace")


# -- declared queries -------------------------------------------------------------------------


def declared(schema: schema_lib.Schema, name: str) -> schema_lib.QuerySpec:
    """The query ``name`` of ``schema``; a clear error naming the declared ones otherwise."""
    for spec in schema.queries:
        if spec.name == name:
            return spec
    known = ", ".join(s.name for s in schema.queries) or "none"
    raise ValueError(f"schema {schema.dataset} declares no query {name!r}; declared: {known}")


def whole_rows(table: schema_lib.TableSpec, latest: bool = False) -> bool:
    """Is a row one record (a state), rather than one event per cell time? Yes for a latest
    read, for aggregates and for short-wide rows (qualifiers made of times)."""
    return (
        latest
        or any(f.aggregate for f in table.decl.families)
        or any(isinstance(c.qualifier, tuple) and c.qualifier[0] == "time" for c in table.columns)
    )


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
        scans = salted_scans(decl, start_ms, end_ms, tz)
    elif spec.read == "time" and spec.per:
        scans = tuple(
            key_ranges.time_scan(decl, {**fixed, spec.per: f}, start_ms, end_ms, tz)
            for f in tspec.rows_per.fields
        )
    elif spec.read == "time" or (window and _time_follows(decl, fixed)):
        scans = (key_ranges.time_scan(decl, fixed, start_ms, end_ms, tz),)
    else:
        scans = (key_ranges.prefix_scan(decl, fixed, tz),)
    count = limit if limit is not None else spec.limit
    return tuple(
        replace(s, table=table or s.table, latest_only=latest, limit=count or s.limit)
        for s in scans
    )


def salted_scans(decl, start_ms: int, end_ms: int, tz: dt.tzinfo = timefmt.UTC) -> tuple[Scan, ...]:
    """A salted table's time window: one range per bucket (merged by :func:`_rows_in_order`)."""
    ranges = salted_reads.salted_time_ranges(decl, start_ms, end_ms, tz)
    return tuple(
        Scan(
            decl.name,
            ranges=(r,),
            start_ms=start_ms,
            end_ms=end_ms,
            cell_timestamp=decl.cell_timestamp,
        )
        for r in ranges
    )


def _rows_in_order(decl, scans: list[list[ReadRow]]) -> list[ReadRow]:
    """The rows of a query's scans: a salted table's merged in time order, else in scan order."""
    if any(s.kind == "salt" for s in decl.key.segments):
        return salted_reads.merge_in_time_order(decl, scans)
    return [row for scan in scans for row in scan]


def _time_follows(decl, fixed: Mapping[str, object]) -> bool:
    rest = [s for s in decl.key.segments if s.kind not in ("const", "salt")][len(fixed) :]
    return bool(rest) and rest[0].kind in key_ranges.TIME_KINDS


class _Decoder:
    """How one table's cells become record fields (built once per query)."""

    def __init__(self, schema: schema_lib.Schema, table: schema_lib.TableSpec) -> None:
        self.fields = schema.field_by_ref()
        self.proto_modules = schema.proto_modules  # where its protobuf messages may come from
        self.table = table
        # the fields that are the event time itself (a record has it once, as ``ts_ms``)
        self.times = {table.time or schema.time, *((table.time_else,) if table.time_else else ())}
        self.literal: dict[bytes, schema_lib.ColumnSpec] = {}
        self.data_named: list[schema_lib.ColumnSpec] = []  # qualifiers from data or time
        names = [s.field for s in table.decl.key.segments if s.field]
        names += ["ts_ms", *(table.rows_per.fields if table.rows_per else ())]
        for col in table.columns:
            if isinstance(col.qualifier, str) and col.qualifier and not col.each:
                self.literal[col.qualifier.encode("utf-8")] = col
            else:
                self.data_named.append(col)
            names += _column_fields(col)
        # the column whose qualifiers come from data (one per table, when declared)
        self.owner = self.data_named[0] if len(self.data_named) == 1 else None
        # record fields: the key's, ts_ms, the columns' in declaration order, the rest, key
        self.rank = {name: i for i, name in enumerate(dict.fromkeys(names))}
        self.rank["key"] = 1 << 30

    def ordered(self, record: Record) -> Record:
        rank = self.rank
        return {k: record[k] for k in sorted(record, key=lambda k: rank.get(k, 1 << 20))}

    def cell(self, record: Record, row_field: Mapping, cell: ReadCell, where: str) -> None:
        col = self.literal.get(cell.qualifier)
        qualifier = cell.qualifier.decode("utf-8", "replace")
        if col is None:
            self._data_named(record, row_field, qualifier, cell.value, where)
        elif col.add is not None:
            record[col.add if isinstance(col.add, str) else qualifier] = int64(cell.value)
        else:
            self._value(record, col.value, cell.value, qualifier, where)

    def _value(self, record: Record, rule: tuple, value: bytes, name: str, where: str) -> None:
        kind = rule[0] if rule else ""
        if kind == "field":
            if rule[1] not in self.times:
                record[rule[1]] = typed(self.fields.get(rule[1]), value.decode("utf-8"), where)
        elif kind == "protobuf":
            message = schema_lib.message_class(rule[1], self.proto_modules).FromString(value)
            for proto_field, field_name in rule[2]:
                if field_name not in self.times:
                    text = str(getattr(message, proto_field))
                    record[field_name] = typed(self.fields.get(field_name), text, where)
        elif kind == "json":
            record.update(
                (k, v) for k, v in json.loads(value.decode("utf-8")).items() if k not in self.times
            )
        else:  # a constant: the qualifier says it all
            record[name] = value.decode("utf-8", "replace")

    def _data_named(
        self, record: Record, row_field: Mapping, qualifier: str, value: bytes, where: str
    ) -> None:
        rows_per = self.table.rows_per
        col = self.owner
        if rows_per is not None and rows_per.name in row_field:  # TB-COL: the value is the name
            name = row_field[rows_per.name]
            record[name] = typed(self.fields.get(name), qualifier, where)
        elif col is not None and col.each:
            record.setdefault(col.each, {})[qualifier] = _loose(value)
        elif col is not None and col.value[:1] == ("field",):
            spec = self.fields.get(col.value[1])
            record.setdefault(col.value[1], {})[qualifier] = typed(
                spec, value.decode("utf-8"), where
            )
        else:
            record[qualifier] = _loose(value)


def _column_fields(col: schema_lib.ColumnSpec) -> list[str]:
    """The record fields one column rule fills."""
    if col.add is not None:
        return [col.add if isinstance(col.add, str) else col.qualifier]
    if col.each:
        return [col.each]
    kind = col.value[:1]
    if kind in (("field",), ("protobuf",)):
        return [col.value[1]] if kind == ("field",) else [name for _, name in col.value[2]]
    if kind == ("json",):
        return list(col.value[1])
    return [col.qualifier] if isinstance(col.qualifier, str) else []


def _sorted_dicts(record: Record) -> Record:
    """Data-named columns in key order, numbers by value (day ``9`` before ``10``)."""
    for name, value in record.items():
        if isinstance(value, dict):
            numeric = all(k.isdigit() for k in value)
            record[name] = dict(
                sorted(value.items(), key=lambda kv: (numeric and int(kv[0]), kv[0]))
            )
    return record


def decode_declared(
    schema: schema_lib.Schema,
    spec: schema_lib.QuerySpec,
    scans: list[list[ReadRow]],
) -> list[Record]:
    """The records of a declared query's rows (see the module docstring)."""
    return decode_table(schema, spec.table, scans, spec.latest)


def entity_fields(schema: schema_lib.Schema, table_name: str) -> tuple[str, ...]:
    """The fields that tell one entity's series from another's (``--plot``): the key's (no salt,
    constant or time), then text fields kept in columns (a user the key cannot hold)."""
    table = schema.table(table_name)
    skip = ("const", "salt", *key_ranges.TIME_KINDS)
    names = [s.field for s in table.decl.key.segments if s.field and s.kind not in skip]
    refs = schema.field_by_ref()
    for col in table.columns:
        rule = col.value or ()
        if rule[:1] == ("field",) and getattr(refs.get(rule[1]), "type", None) == "text":
            names.append(rule[1])
    return tuple(dict.fromkeys(names))


def decode_table(
    schema: schema_lib.Schema,
    table_name: str,
    scans: list[list[ReadRow]],
    latest: bool = False,
) -> list[Record]:
    """The records of rows read from one of the schema's tables, however they were selected
    (a declared query's, or ``btts query --schema FILE --table T``'s key range)."""
    table = schema.table(table_name)
    decl = table.decl
    decoder = _Decoder(schema, table)
    whole = whole_rows(table, latest)
    time_keys = {s.field for s in decl.key.segments if s.kind in key_ranges.TIME_KINDS}
    exact = {s.field for s in decl.key.segments if s.kind in ("epoch_ms", "reverse_ts")}
    per = table.rows_per.name if table.rows_per is not None else None
    rows = _rows_in_order(decl, scans)
    out: list[Record] = []
    pivoted: dict[tuple, Record] = {}  # rows_per: (key fields, time) → the event's record
    for row in rows:
        where = row.key.decode("utf-8", "replace")
        parts = key_ranges.split_key(decl, row.key)
        parts.pop("salt", None)
        row_fields = dict(parts)
        for name in exact if whole else time_keys:
            parts.pop(name, None)
        if per is not None:
            parts.pop(per, None)
        if whole:
            record: Record = {**parts, "ts_ms": 0}  # its place among the fields; set below
            seen: set[bytes] = set()
            newest: int | None = None
            for cell in row.cells:  # newest first per column
                if cell.qualifier not in seen:
                    seen.add(cell.qualifier)
                    ms = decl.event_ms(cell.timestamp_us)
                    newest = ms if newest is None else max(newest, ms)
                    decoder.cell(record, row_fields, cell, where)
            record["ts_ms"] = newest if newest is not None else 0
            record["key"] = where
            out.append(decoder.ordered(_sorted_dicts(record)))
            continue
        by_time: dict[int, Record] = {}
        for cell in sorted(row.cells, key=lambda c: c.timestamp_us):
            ms = decl.event_ms(cell.timestamp_us)
            if ms not in by_time:
                if per is not None:  # one record per event across the field's rows
                    ident = (tuple(parts.items()), ms)
                    by_time[ms] = pivoted.setdefault(ident, {**parts, "ts_ms": ms})
                else:
                    by_time[ms] = {**parts, "ts_ms": ms}
            decoder.cell(by_time[ms], row_fields, cell, where)
        if per is None:
            for ms in sorted(by_time):
                by_time[ms]["key"] = where
                out.append(decoder.ordered(_sorted_dicts(by_time[ms])))
    if per is not None:  # a record put back together from several rows has no single key
        out = [decoder.ordered(r) for r in sorted(pivoted.values(), key=lambda r: r["ts_ms"])]
    return out


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
        lambda rows: decode_declared(schema, spec, rows),
        entity_fields(schema, spec.table),
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
            out[name] = generic.field_parser(spec)(text)
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
        scans = salted_scans(decl, start_ms, end_ms, tz)
    elif start_ms is not None:
        scans = (key_ranges.time_scan(decl, values, start_ms, end_ms, tz),)
    elif set(decl.key.fields) <= set(values):  # a salt hashes key fields: it is known too
        scans = (key_ranges.row_scan(decl, [values], tz),)
    else:
        scans = (key_ranges.prefix_scan(decl, values, tz),)
    scans = tuple(replace(s, latest_only=latest_only, limit=limit or s.limit) for s in scans)
    return Query(
        f"{table} ({schema.dataset})", scans, lambda rows: _rows_in_order(decl, rows),
        entity_fields(schema, table),
    )  # fmt: skip


def builtin_query(dataset: str, name: str, *args, **kwargs) -> Query[Record]:
    """:func:`declared_query` of a built-in schema file (``transforms/declarations``)."""
    return declared_query(schema_lib.builtin(dataset), name, *args, **kwargs)


def ask(target: Target, dataset: str, name: str, *args, **kwargs) -> list[Record]:
    """Plan and run a built-in dataset's declared query: the records."""
    return run(target, builtin_query(dataset, name, *args, **kwargs))


# -- offboarding a tenant (docs/patterns.md §3 rule 11) ---------------------------------------


def drop_tenant(target: Target, tenant: str) -> int:
    """Offboard a tenant: drop the row range of its prefix ``TENANT#`` in DEVICE in one admin
    call (``acme`` never takes ``acme2``'s rows). Returns how many rows it held."""
    devices = schema_lib.builtin("devices")
    device = devices.table("DEVICE").decl
    (scan,) = plan_declared(devices, declared(devices, "tenant_rows"), {"tenant": tenant})
    ((start, end),) = scan.ranges
    count = count_rows(target, device.name, (start, end))
    admin.drop_tenant(target, device, tenant)  # the same prefix, never empty: never the whole table
    return count
