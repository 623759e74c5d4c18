"""How the rows a query read become records: one per event, every field typed as the schema
declares it (see :mod:`btts.query.engine` for the record's shape and how reads are planned)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation

from transforms import schema as schema_lib
from transforms import table_model
from transforms.mutations import ReadCell, ReadRow
from transforms.scans import key_ranges, salted_reads

__all__ = [
    "Record",
    "decode_declared",
    "decode_table",
    "entity_fields",
    "field_column",
    "field_points",
    "int64",
    "map_entry_points",
    "rows_in_order",
]

Record = dict  # field name → value; see btts.query.engine's docstring


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


def whole_rows(table: schema_lib.TableSpec, latest: bool = False) -> bool:
    """Is a row one record (a state), rather than one event per cell time? Yes for a latest
    read, for aggregates and for short-wide rows (qualifiers made of times)."""
    return (
        latest
        or any(f.aggregate for f in table.decl.families)
        or any(isinstance(c.qualifier, tuple) and c.qualifier[0] == "time" for c in table.columns)
    )


def rows_in_order(decl, scans: list[list[ReadRow]]) -> list[ReadRow]:
    """The rows of a query's scans: a salted table's merged in time order, else in scan order."""
    if any(s.kind == "salt" for s in decl.key.segments):
        return salted_reads.merge_in_time_order(decl, scans)
    return [row for scan in scans for row in scan]


class _Decoder:
    """How one table's cells become record fields (built once per query)."""

    def __init__(self, schema: schema_lib.Schema, table: schema_lib.TableSpec) -> None:
        self.fields = schema.field_by_ref()
        self.proto_modules = schema.proto_modules  # where its protobuf messages may come from
        self.table = table
        # the fields that are the event time itself (a record has it once, as ``ts_ms``)
        self.times = {table.time or schema.time, *((table.time_else,) if table.time_else else ())}
        self.literal: dict[bytes, schema_lib.ColumnSpec] = {}
        per = table.rows_per
        self.per_value = ("field", per.value) if per is not None else None
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
        elif self.per_value is not None and col.value == self.per_value:
            # rows_per with the value in a column: the row's name field says whose value it is
            name = row_field.get(self.table.rows_per.name, col.value[1])
            record[name] = typed(self.fields.get(name), cell.value.decode("utf-8"), where)
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
        elif kind == "json":  # numbers stay exact, as the source wrote them (600.60)
            blob = json.loads(value.decode("utf-8"), parse_float=Decimal)
            record.update((k, v) for k, v in blob.items() if k not in self.times)
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
    skip = ("const", "salt", *table_model.TIME_KINDS)
    names = [s.field for s in table.decl.key.segments if s.field and s.kind not in skip]
    refs = schema.field_by_ref()
    for col in table.columns:
        rule = col.value or ()
        if rule[:1] == ("field",) and getattr(refs.get(rule[1]), "type", None) == "text":
            names.append(rule[1])
    return tuple(dict.fromkeys(names))


def _whole_record(decoder: _Decoder, decl, parts: dict, row_fields: dict, row) -> Record:
    """One row holding one state as one record: the newest cell of each column."""
    where = row.key.decode("utf-8", "replace")
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
    return decoder.ordered(_sorted_dicts(record))


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
    time_keys = {s.field for s in decl.key.segments if s.kind in table_model.TIME_KINDS}
    exact = {s.field for s in decl.key.segments if s.kind in ("epoch_ms", "reverse_ts")}
    per = table.rows_per.name if table.rows_per is not None else None
    rows = rows_in_order(decl, scans)
    out: list[Record] = []
    pivoted: dict[tuple, Record] = {}  # rows_per: (key fields, time) → the event's record
    row_keys: dict[tuple, list[str]] = {}  # … and the keys of the rows it is made of
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
            out.append(_whole_record(decoder, decl, parts, row_fields, row))
            continue
        by_time: dict[int, Record] = {}
        for cell in sorted(row.cells, key=lambda c: c.timestamp_us):
            ms = decl.event_ms(cell.timestamp_us)
            if ms not in by_time:
                if per is not None:  # one record per event across the field's rows
                    ident = (tuple(parts.items()), ms)
                    by_time[ms] = pivoted.setdefault(ident, {**parts, "ts_ms": ms})
                    row_keys.setdefault(ident, []).append(where)
                else:
                    by_time[ms] = {**parts, "ts_ms": ms}
            decoder.cell(by_time[ms], row_fields, cell, where)
        if per is None:
            for ms in sorted(by_time):
                by_time[ms]["key"] = where
                out.append(decoder.ordered(_sorted_dicts(by_time[ms])))
    if per is not None:  # a record put back together from several rows: every row's key
        for ident, record in pivoted.items():
            record["key"] = " ".join(row_keys[ident])
        out = [decoder.ordered(r) for r in sorted(pivoted.values(), key=lambda r: r["ts_ms"])]
    return out


def map_entry_points(
    schema: schema_lib.Schema,
    table_name: str,
    scans: list[list[ReadRow]],
    map_field: str,
    entry: str,
    tags: tuple[str, ...],
) -> dict[tuple, list[tuple[int, object]]] | None:
    """One map entry's values straight from the rows, without a record per event: ``{sorted
    (tag, text) pairs: [(ts_ms, value), ...]}`` in the order :func:`decode_table`'s records
    give them, each value what that record's ``map_field[entry]`` holds. Why: a dashboard
    reads thousands of rows of one entry, and building, typing and ordering a whole record per
    event cost as much as reading the rows. None when the rows hold anything else (another
    column) or the table is not one event per cell time: decode the records then."""
    table = schema.table(table_name)
    decoder = _Decoder(schema, table)
    owner, wanted = decoder.owner, entry.encode("utf-8")
    if (
        whole_rows(table)
        or table.rows_per is not None
        or owner is None
        or owner.each != map_field
        or wanted in decoder.literal
        or {map_field, "ts_ms", "key"} & set(tags)
    ):
        return None
    return _column_points(table.decl, scans, wanted, _loose, tags)


def field_column(table: schema_lib.TableSpec, field_name: str) -> schema_lib.ColumnSpec | None:
    """The one column of literal qualifier holding ``field_name`` per event (None: none, or
    the field is kept another way too)."""
    found = [
        c
        for c in table.columns
        if c.value == ("field", field_name)
        and isinstance(c.qualifier, str)
        and c.qualifier
        and not c.each
        and c.add is None
    ]
    return found[0] if len(found) == 1 else None


def field_points(
    schema: schema_lib.Schema,
    table_name: str,
    scans: list[list[ReadRow]],
    field_name: str,
    tags: tuple[str, ...],
) -> dict[tuple, list[tuple[int, object]]] | None:
    """One field's values straight from its column (see :func:`map_entry_points`), typed as
    declared; None when the table or the rows are not that simple."""
    table = schema.table(table_name)
    col = field_column(table, field_name)
    if (
        col is None
        or whole_rows(table)
        or table.rows_per is not None
        or {field_name, "ts_ms", "key"} & set(tags)
        or field_name in {table.time or schema.time, table.time_else}
    ):
        return None
    spec = schema.field_by_ref().get(field_name)
    where = f"{table_name} {field_name}"

    def convert(value: bytes) -> object:
        if spec is not None and spec.type == "integer":
            try:
                return int(value)  # digits as stored: the common case, without a detour
            except ValueError:
                pass
        return typed(spec, value.decode("utf-8"), where)

    return _column_points(table.decl, scans, col.qualifier.encode("utf-8"), convert, tags)


def _column_points(decl, scans, wanted: bytes, convert, tags) -> dict | None:
    """The points of one column (qualifier ``wanted``) per series of ``tags``; None when a
    row holds another column."""
    split, event_ms = key_ranges.split_key, decl.event_ms
    out: dict[tuple, list] = {}
    series: dict[bytes, list] = {}  # a key without its time → its series' points
    head = _series_head(decl)
    for row in rows_in_order(decl, scans):
        cells = row.cells
        if len(cells) == 1:  # one event per row (TS-COLS): no ordering to do
            if cells[0].qualifier != wanted:
                return None
            by_ms = {event_ms(cells[0].timestamp_us): cells[0].value}
        else:
            by_ms = {}
            for cell in sorted(cells, key=_stamp):
                if cell.qualifier != wanted:
                    return None
                by_ms[event_ms(cell.timestamp_us)] = cell.value
        own = head(row.key)
        points = series.get(own)  # a series' rows come together: its list, found once
        if points is None:
            parts = split(decl, row.key)
            values = tuple([parts.get(t, "") for t in tags])
            labels = tuple(sorted((t, str(v)) for t, v in zip(tags, values, strict=True)))
            points = series[own] = out.setdefault(labels, [])
        for ms in sorted(by_ms) if len(by_ms) > 1 else by_ms:
            points.append((ms, convert(by_ms[ms])))
    return out


def _series_head(decl) -> Callable[[bytes], bytes]:
    """What of a row key names its series: the key without its time when the time is its last
    segment (found by one search from the end), else the whole key."""
    segments = decl.key.segments
    if segments and segments[-1].kind in table_model.TIME_KINDS:
        delimiter = decl.key.delimiter.encode("utf-8")

        def head(key: bytes) -> bytes:
            return key[: key.rfind(delimiter)]

        return head
    return bytes


def _stamp(cell: ReadCell) -> int:
    return cell.timestamp_us
