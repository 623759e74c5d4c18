"""The generic builder: a schema file's event mapping turned into row mutations (no Python per
dataset). Pure: no Beam, no client.

``Builder(schema)(record)`` validates one record against ``event.fields`` (missing and
unexpected fields are errors, every value checked for its type and limits) and returns the rows
of every table the schema writes, raising :class:`InvalidEvent` with a precise reason
otherwise. Keys come from the same :class:`~transforms.schema.KeyRecipe` as everywhere else,
cells are stamped with the event time (or the start of its bucket for aggregates), values are
the source's text. The built-in datasets' schema files produce byte-identical rows to their
hand-written builders (tests/test_generic.py).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

from transforms import events, keys, timefmt
from transforms.battery import parse_time as parse_compact_time
from transforms.errors import InvalidEvent
from transforms.game_results import parse_date
from transforms.mutations import AddCell, Cell, RowMutation
from transforms.schema import bucket_start_ms
from transforms.schema_file import (
    ColumnSpec,
    FieldSpec,
    Schema,
    TableSpec,
    loads,
    message_class,
)

MAX_QUALIFIER_BYTES = 16 * 1024
_TEXT_SEGMENTS = ("text", "tenant", "space_pad", "reverse_id", "reverse_domain")
# JSON blobs keep numbers as the source wrote them (no float round trip); times as epoch ms.
_RAW_JSON = ("number", "integer", "time")


def _parse_time(spec: FieldSpec, value: object) -> int:
    if spec.format == "date":
        return parse_date({spec.name: value}, spec.name)
    if spec.format == "yyyymmddhhmmssmmm":
        if isinstance(value, str) and len(value) == 17 and value.isdigit():
            return parse_compact_time(value)
        return timefmt.parse_event_time(value, spec.name)
    if spec.format == "rfc3339" and not (isinstance(value, str) and not value.isdigit()):
        raise InvalidEvent(f"field {spec.name!r}: expected an RFC 3339 time, got {value!r}"[:200])
    if spec.format == "epoch_ms":
        value = events.as_number(value)
        if type(value) is not events.Num or not value.isdigit():
            raise InvalidEvent(f"field {spec.name!r}: expected epoch milliseconds")
    return timefmt.parse_event_time(value, spec.name)


def _check_bounds(spec: FieldSpec, number: str) -> None:
    if spec.minimum is None and spec.maximum is None:
        return
    try:
        value = Decimal(number)
    except InvalidOperation:
        raise InvalidEvent(f"field {spec.name!r}: {number!r} is not a number") from None
    if spec.minimum is not None and value < Decimal(spec.minimum):
        raise InvalidEvent(f"field {spec.name!r}: {number} is below its minimum {spec.minimum}")
    if spec.maximum is not None and value > Decimal(spec.maximum):
        raise InvalidEvent(f"field {spec.name!r}: {number} is above its maximum {spec.maximum}")


def _map_qualifier(spec: FieldSpec, name: object) -> bytes:
    if type(name) is not str or not name:
        raise InvalidEvent(f"field {spec.name!r}: entry name {name!r}: expected non-empty text")
    if not name.isprintable() or any(ch.isspace() for ch in name):
        raise InvalidEvent(
            f"field {spec.name!r}: entry {name[:80]!r} contains whitespace or a control character"
        )
    qualifier = (name.upper() if spec.qualifier == "upper" else name).encode("utf-8")
    if len(qualifier) > MAX_QUALIFIER_BYTES:
        raise InvalidEvent(f"field {spec.name!r}: entry {name[:40]!r}… is over 16 KiB")
    return qualifier


def parse_field(spec: FieldSpec, record: Mapping) -> object:
    """One field's checked value: text (str), number/integer/id (their source text, integers
    as int), boolean ("true"/"false"), time (epoch ms), map (((qualifier, value text), …))."""
    kind = spec.type
    name = spec.name
    if kind == "text":
        value = events.text_field(record, name, spec.max_length or 1024)
        if spec.whitespace == "trimmed" and value != value.strip():
            raise InvalidEvent(f"field {name!r}: {value!r} has leading or trailing whitespace")
        if spec.whitespace == "none" and any(ch.isspace() for ch in value):
            raise InvalidEvent(f"field {name!r}: {value[:40]!r} contains whitespace")
        if spec.case != "as_is":
            return value.lower() if spec.case == "lower" else value.upper()
        return value
    if kind == "number":
        value = str(events.number_field(record, name))
        if spec.max_length and len(value) > spec.max_length:
            raise InvalidEvent(f"field {name!r}: number longer than {spec.max_length} characters")
        _check_bounds(spec, value)
        return value
    if kind == "integer":
        number = events.int_field(record, name, minimum=-(2**63), maximum=2**63 - 1)
        _check_bounds(spec, str(number))
        return number
    if kind == "id":
        value = events.as_number(record[name])
        if type(value) is events.Num:
            if not (value.isascii() and value.isdigit()):
                raise InvalidEvent(
                    f"field {name!r}: expected a non-negative integer or a text id, got {value}"
                )
            text = str(value)
        else:
            text = events.text_field(record, name, spec.max_length or 1024)
        if spec.max_length and len(text) > spec.max_length:
            raise InvalidEvent(f"field {name!r}: longer than {spec.max_length} characters")
        return text
    if kind == "boolean":
        return "true" if events.bool_field(record, name) else "false"
    if kind == "time":
        return _parse_time(spec, record[name])
    if kind == "map":
        entries = record[name]
        if type(entries) is not dict:
            raise InvalidEvent(
                f"field {name!r}: expected an object, got {events.describe(entries)}"
            )
        if not entries:
            raise InvalidEvent(f"field {name!r}: empty; an event needs at least one entry")
        if spec.max_entries and len(entries) > spec.max_entries:
            raise InvalidEvent(f"field {name!r}: {len(entries)} entries, over {spec.max_entries}")
        out = []
        seen: dict[bytes, str] = {}
        for entry, value in entries.items():
            qualifier = _map_qualifier(spec, entry)
            if qualifier in seen:
                raise InvalidEvent(
                    f"field {name!r}: entry {entry!r} collides with {seen[qualifier]!r}"
                    + (" once upper-cased" if spec.qualifier == "upper" else "")
                )
            seen[qualifier] = entry
            number = events.as_number(value)
            if type(number) is not events.Num:
                raise InvalidEvent(
                    f"field {name!r}: entry {entry!r}: expected a number, got "
                    f"{events.describe(number)}"
                )
            out.append((qualifier, number.encode("ascii")))
        return tuple(out)
    raise AssertionError(f"unknown field type {kind}")


def _text(value: object) -> str:
    """A field value as cell text: times as 13-digit epoch ms, integers as digits."""
    if type(value) is int:
        return str(value)
    return value  # type: ignore[return-value]


class _Table:
    """One table's compiled rules."""

    def __init__(self, spec: TableSpec, schema: Schema) -> None:
        self.name = spec.name
        self.decl = spec.decl
        self.columns = spec.columns
        self.time = spec.time or schema.time
        self.time_else = spec.time_else
        self.cell_time = spec.cell_time
        self.rows_per = spec.rows_per
        refs = schema.field_by_ref()
        self.time_fields = {r for r, f in refs.items() if f.type == "time"}
        self.types = {r: f.type for r, f in refs.items()}
        self.text_keys = {
            s.field for s in spec.decl.key.segments if s.kind in _TEXT_SEGMENTS and s.field
        }

    def key_values(self, values: Mapping[str, object]) -> dict[str, object]:
        out = dict(values)
        for name in self.text_keys:
            if name in out and type(out[name]) is int:
                out[name] = str(out[name])
        return out

    def cell_value(self, value: tuple, values: Mapping[str, object]) -> bytes:
        kind = value[0]
        if kind == "const":
            return value[1].encode("utf-8")
        if kind == "field":
            got = values[value[1]]
            if value[1] in self.time_fields:
                return keys.epoch_ms(got).encode("ascii")
            return _text(got).encode("utf-8")
        if kind == "json":
            parts = []
            for name in sorted(value[1]):
                if name in values:
                    got = values[name]
                    raw = _text(got) if self.types[name] in _RAW_JSON else json.dumps(got)
                    parts.append(f"{json.dumps(name)}:{raw}")
            return ("{" + ",".join(parts) + "}").encode("utf-8")
        message = message_class(value[1])()
        for proto_field, name in value[2]:
            if name in values:
                got = values[name]
                target = type(getattr(message, proto_field))
                setattr(message, proto_field, target(got) if target is not str else _text(got))
        return message.SerializeToString(deterministic=True)

    def qualifier(self, rule: str | tuple, values: Mapping[str, object], ts_ms: int, tz) -> bytes:
        if isinstance(rule, str):
            return rule.encode("utf-8")
        if rule[0] == "field":
            text = _text(values[rule[1]])
            qualifier = text.encode("utf-8")
            if not qualifier:
                raise InvalidEvent(f"field {rule[1]!r}: empty, cannot name a column")
            if not text.isprintable():
                raise InvalidEvent(
                    f"field {rule[1]!r}: {text[:40]!r} contains a control or unprintable "
                    "character, and names a column"
                )
            if len(qualifier) > MAX_QUALIFIER_BYTES:
                raise InvalidEvent(f"field {rule[1]!r}: over Bigtable's 16 KiB qualifier limit")
            return qualifier
        if rule[1] == "hhmm":
            return timefmt.time_of_day(ts_ms, tz).encode("ascii")
        return str(timefmt.to_datetime(ts_ms, tz).day).encode("ascii")  # day_of_month

    def rows(self, values: dict[str, object], tz: dt.tzinfo) -> list[RowMutation]:
        if self.rows_per is None:
            return [self.row(values, tz)]
        out = []
        per = self.rows_per
        for name in per.fields:
            if name in values:
                out.append(self.row({**values, per.name: name, per.value: _text(values[name])}, tz))
        return out

    def row(self, values: dict[str, object], tz: dt.tzinfo) -> RowMutation:
        ts_ms = values[self.time] if self.time in values else values[self.time_else]
        stamp_ms = (
            ts_ms if self.cell_time == "event" else bucket_start_ms(ts_ms, self.cell_time, tz)
        )
        ts_us = timefmt.micros(stamp_ms)
        cells: list = []
        for col in self.columns:
            cells.extend(self.cells(col, values, ts_ms, ts_us, tz))
        key = self.decl.key.build(self.key_values(values), tz)
        return RowMutation(self.name, key, tuple(cells))

    def cells(self, col: ColumnSpec, values, ts_ms: int, ts_us: int, tz) -> list:
        if col.each:
            entries = values.get(col.each)
            if entries is None:
                return []
            return [Cell(col.family, q, v, ts_us) for q, v in entries]
        if col.value and col.value[0] == "field" and col.value[1] not in values:
            return []  # an optional field the event does not have
        if isinstance(col.add, str) and col.add not in values:
            return []
        qualifier = self.qualifier(col.qualifier, values, ts_ms, tz)
        if col.add is not None:
            amount = col.add if type(col.add) is int else values[col.add]
            return [AddCell(col.family, qualifier, amount, ts_us)]
        return [Cell(col.family, qualifier, self.cell_value(col.value, values), ts_us)]


class Builder:
    """The pipeline's builder for one schema (the tables it writes, or a chosen subset).

    Pickles as the schema's text, so a worker (or a template launch) needs no access to the
    file: the text is parsed again on unpickling."""

    def __init__(
        self,
        schema: Schema,
        tables: list[str] | None = None,
        tz: dt.tzinfo = timefmt.UTC,
    ) -> None:
        written = [t.name for t in schema.written()]
        chosen = list(tables) if tables else written
        unknown = [t for t in chosen if t not in written]
        if unknown:
            raise ValueError(
                f"schema {schema.dataset} writes no table {', '.join(unknown)} from events; "
                f"it writes {', '.join(written) or 'none'}"
            )
        if not chosen:
            raise ValueError(f"schema {schema.dataset}: no table is written from events")
        self.schema = schema
        self.tables = chosen
        self.tz = tz
        self._compile()

    def _compile(self) -> None:
        schema = self.schema
        self.required = tuple(f.name for f in schema.fields if not f.optional)
        self.optional = tuple(f.name for f in schema.fields if f.optional)
        self.fields = schema.fields
        self.map_fields = tuple(f.name for f in schema.fields if f.type == "map")
        # A field that is free text in any key of the schema is checked as a key segment
        # whichever tables this job writes: an event is valid or not whatever the layout.
        by_ref = {f.ref: f for f in schema.fields}
        self.key_text = tuple(
            sorted(
                {
                    (by_ref[s.field].name, s.field, t.decl.key.delimiter)
                    for t in schema.written()
                    for s in t.decl.key.segments
                    if s.kind in _TEXT_SEGMENTS
                    and s.field in by_ref
                    and by_ref[s.field].type == "text"
                }
            )
        )
        names = {f.ref: f.name for f in schema.fields}
        self.ordered = tuple(
            (f.name, f.ref, f.after, names[f.after]) for f in schema.fields if f.after
        )
        self.compiled = [_Table(schema.table(name), schema) for name in self.tables]

    def __getstate__(self) -> dict:
        return {
            "text": self.schema.text,
            "source": self.schema.source,
            "tables": self.tables,
            "tz": self.tz,
        }

    def __setstate__(self, state: dict) -> None:
        self.schema = loads(state["text"], state["source"])
        self.tables = state["tables"]
        self.tz = state["tz"]
        self._compile()

    def parse(self, record: dict) -> dict[str, object]:
        """The record's checked values, by the names keys and columns use."""
        events.check_fields(record, self.required, self.optional)
        values: dict[str, object] = {}
        for spec in self.fields:
            if spec.name in record:
                values[spec.ref] = parse_field(spec, record)
        for name, ref, delimiter in self.key_text:
            if ref in values:
                text = values[ref]
                if delimiter in text or not text.isprintable():
                    keys.check_segment(text, f"field {name!r}", delimiter)
        for name, ref, after, after_name in self.ordered:
            if ref in values and values[ref] <= values[after]:
                raise InvalidEvent(
                    f"field {name!r}: {record[name]} is not after field {after_name!r} "
                    f"({record[after_name]})"
                )
        return values

    def __call__(self, record: dict) -> list[RowMutation]:
        values = self.parse(record)
        out: list[RowMutation] = []
        for table in self.compiled:
            out.extend(table.rows(values, self.tz))
        return out

    def csv_adapter(self, record: dict) -> dict:
        """CSV is flat: with a map field, every column that is not another field is one of its
        entries (``hostname,timestamp,cpu,mem`` → ``metrics: {cpu, mem}``)."""
        if not self.map_fields:
            return record
        (target,) = self.map_fields[:1]
        named = {f.name for f in self.fields}
        out = {k: v for k, v in record.items() if k in named}
        out[target] = {k: v for k, v in record.items() if k not in named}
        return out

    def aggregate_tables(self) -> list[str]:
        return [t.name for t in self.compiled if any(f.aggregate for f in t.decl.families)]


# -- queries from the key recipe ---------------------------------------------------------------


def typed_values(schema: Schema, table: str, given: Mapping[str, str]) -> dict[str, object]:
    """Query values given as text (``--field device=dev-1``) typed like the event's: integers
    as int, times as epoch ms (RFC 3339 or epoch ms), the rest as text."""
    refs = schema.field_by_ref()
    key_fields = set(schema.table(table).decl.key.fields)
    out: dict[str, object] = {}
    for name, text in given.items():
        if name not in key_fields:
            raise ValueError(
                f"{table}: {name!r} is not a field of the key "
                f"{schema.table(table).decl.key.describe()}"
            )
        spec = refs.get(name)
        kind = spec.type if spec else "text"
        if kind == "integer":
            try:
                out[name] = int(text)
            except ValueError:
                raise ValueError(f"{name}: {text!r} is not an integer") from None
        elif kind == "time":
            out[name] = _parse_time(spec, text) if spec else int(text)
        else:
            out[name] = text
    return out


def plan_query(
    schema: Schema,
    table: str,
    given: Mapping[str, str],
    start_ms: int | None = None,
    end_ms: int | None = None,
    *,
    limit: int | None = None,
    latest_only: bool = False,
    tz: dt.tzinfo = timefmt.UTC,
):
    """The scan a schema's key recipe gives for these key values: one row when every key
    field is given, a time range when ``start_ms``/``end_ms`` are (the segment after the given
    ones must be a time), else the prefix the given leading fields fix."""
    import dataclasses

    from transforms import queries

    decl = schema.table(table).decl
    values = typed_values(schema, table, given)
    if (start_ms is None) != (end_ms is None):
        raise ValueError("give both a start and an end time, or neither")
    if start_ms is not None and end_ms is not None:
        scan = queries.time_scan(decl, values, start_ms, end_ms, tz, latest_only=latest_only)
    elif set(decl.key.fields) <= set(values) and all(
        set(s.of) <= set(values) for s in decl.key.segments if s.kind == "salt"
    ):
        scan = queries.row_scan(decl, [values], tz, latest_only=latest_only)
    else:
        return queries.prefix_scan(decl, values, tz, latest_only=latest_only, limit=limit)
    return dataclasses.replace(scan, limit=limit) if limit else scan
