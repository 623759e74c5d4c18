"""The schema compiler: a schema file's event mapping compiled into the builder every job runs.
Pure: no Beam, no client.

``Builder(schema)(record)`` validates one record against ``event.fields`` (missing and
unexpected fields are errors, every value checked for its type and limits) and returns the rows
of every table the schema writes, raising :class:`InvalidEvent` with a precise reason
otherwise. The built-in datasets are schema files too, so this is the only builder.

It is the hot path of every job, so the schema is compiled once per worker (the builder pickles
as the schema's text and compiles again on unpickling) into closures specialised per field, per
key segment and per column: type checks written for the one type a field has, qualifiers encoded
once, the checked qualifiers of a map field's name list cached (a fleet reports the same names
over and over), keys made only of text cached per entity, calendar labels cached per hour, and
one tuple of cells shared by the tables that hold the same cells (METRIC and CURRENT_METRIC).
No text of the schema file ever becomes code: names and values are closure constants.
Keys come from the same :class:`~transforms.table_model.KeyRecipe` as queries and table creation;
cells are stamped with the event time (or the start of its bucket for aggregates); values are
the source's text (``600.60`` stays ``600.60``).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from transforms import compiler, events, keys, timefmt
from transforms.errors import InvalidEvent
from transforms.events import CsvText, Num
from transforms.mutations import MAX_QUALIFIER_BYTES, AddCell, Cell, RowMutation
from transforms.schema_file import ColumnSpec, FieldSpec, Schema, TableSpec, loads, message_class
from transforms.table_model import FREE_TEXT_KINDS, bucket_start_ms, segment_builder

# JSON blobs keep numbers as the source wrote them (no float round trip); times as epoch ms.
_RAW_JSON = ("number", "integer", "time")
_INT64 = (-(2**63), 2**63 - 1)
_CACHED_NAMES = 64  # a map's name lists longer than this are checked without being cached
_new = tuple.__new__  # NamedTuple construction without its Python-level __new__


def _named(cell: tuple) -> tuple:
    """A plain set-cell tuple as a :class:`Cell`; named cells as they are."""
    return _new(Cell, cell) if type(cell) is tuple else cell


_describe = events.describe
_NUMBERS_ONLY = {Num}
_encode = str.encode

Values = dict  # field ref → checked value
FieldParser = Callable[[object], object]


# -- fields -------------------------------------------------------------------------------------


def _bounds_check(spec: FieldSpec) -> Callable[[str], None] | None:
    """The min/max check of a number field (exact: decimal text compared as Decimal)."""
    if spec.minimum is None and spec.maximum is None:
        return None
    name = spec.name
    low = Decimal(spec.minimum) if spec.minimum is not None else None
    high = Decimal(spec.maximum) if spec.maximum is not None else None

    def check(number: str) -> None:
        try:
            value = Decimal(number)
        except InvalidOperation:
            raise InvalidEvent(f"field {name!r}: {number!r} is not a number") from None
        if low is not None and value < low:
            raise InvalidEvent(f"field {name!r}: {number} is below its minimum {spec.minimum}")
        if high is not None and value > high:
            raise InvalidEvent(f"field {name!r}: {number} is above its maximum {spec.maximum}")

    return check


def _text_parser(spec: FieldSpec, key_delimiters: str) -> FieldParser:
    name = spec.name
    limit = spec.max_length or 1024
    whitespace = spec.whitespace
    case = spec.case
    delimiters = tuple(key_delimiters)

    def text(value: object) -> str:
        if type(value) is not str:
            if type(value) is not CsvText:
                raise InvalidEvent(f"field {name!r}: expected a string, got {_describe(value)}")
            value = str(value)
        if not value:
            raise InvalidEvent(f"field {name!r}: empty")
        if len(value) > limit:
            raise InvalidEvent(f"field {name!r}: longer than {limit} characters")
        if whitespace != "allow":
            if whitespace == "trimmed" and value != value.strip():
                raise InvalidEvent(f"field {name!r}: {value!r} has leading or trailing whitespace")
            if whitespace == "none" and value.split() != [value]:
                raise InvalidEvent(f"field {name!r}: {value[:40]!r} contains whitespace")
        if case != "as_is":
            value = value.lower() if case == "lower" else value.upper()
        # A key field is checked here, whichever of the schema's tables a job writes: an event
        # is valid or not whatever the layout.
        for delimiter in delimiters:
            if delimiter in value or not value.isprintable():
                keys.check_segment(value, f"field {name!r}", delimiter)
        return value

    return text


def _number_parser(spec: FieldSpec) -> FieldParser:
    name = spec.name
    limit = spec.max_length
    bounds = _bounds_check(spec)

    def number(value: object) -> str:
        if type(value) is not Num:
            value = events.as_number(value)
            if type(value) is not Num:
                raise InvalidEvent(f"field {name!r}: expected a number, got {_describe(value)}")
        if limit and len(value) > limit:
            raise InvalidEvent(f"field {name!r}: number longer than {limit} characters")
        if bounds is not None:
            bounds(value)
        return str(value)

    return number


def _integer_parser(spec: FieldSpec) -> FieldParser:
    name = spec.name
    bounds = _bounds_check(spec)
    low, high = _INT64

    def integer(value: object) -> int:
        if type(value) is not Num:
            value = events.as_number(value)
        if type(value) is not Num or not value.lstrip("-").isdigit():
            raise InvalidEvent(
                f"field {name!r}: expected an integer, got {_describe(value)} {value!r}"
            )
        number = int(value)
        if not low <= number <= high:
            raise InvalidEvent(f"field {name!r}: {number} is outside {low}..{high}")
        if bounds is not None:
            bounds(value)
        return number

    return integer


def _id_parser(spec: FieldSpec, key_delimiters: str) -> FieldParser:
    name = spec.name
    limit = spec.max_length
    as_text = _text_parser(
        FieldSpec(name, "text", max_length=spec.max_length or 1024), key_delimiters
    )

    def ident(value: object) -> str:
        value = events.as_number(value)
        if type(value) is not Num:
            return as_text(value)  # which checks the same max_length
        if not (value.isascii() and value.isdigit()):
            raise InvalidEvent(
                f"field {name!r}: expected a non-negative integer or a text id, got {value}"
            )
        if limit and len(value) > limit:
            raise InvalidEvent(f"field {name!r}: longer than {limit} characters")
        return str(value)

    return ident


def _boolean_parser(spec: FieldSpec) -> FieldParser:
    name = spec.name

    def boolean(value: object) -> str:
        if value is True or value is False:
            return "true" if value else "false"
        if type(value) is CsvText and value in ("true", "false"):
            return str(value)
        raise InvalidEvent(f"field {name!r}: expected true or false, got {_describe(value)}")

    return boolean


def _time_parser(spec: FieldSpec) -> FieldParser:
    if spec.format == "auto" and not spec.timezone:  # the common case: one C call inside
        name = spec.name
        parse = timefmt.parse_event_time
        return lambda value: parse(value, name)
    zone = timefmt.zone(spec.timezone) if spec.timezone else None
    return timefmt.make_parser(spec.format, spec.name, zone, spec.ambiguous)


def _check_names(name: str, upper: bool, names: tuple) -> tuple[bytes, ...]:
    """A map field's entry names → their qualifiers, every one checked, collisions refused."""
    out = []
    seen: dict[bytes, str] = {}
    for entry in names:
        if type(entry) is not str or not entry:
            raise InvalidEvent(f"field {name!r}: entry name {entry!r}: expected non-empty text")
        if not entry.isprintable() or entry.split() != [entry]:
            raise InvalidEvent(
                f"field {name!r}: entry {entry[:80]!r} contains whitespace or a control character"
            )
        qualifier = (entry.upper() if upper else entry).encode("utf-8")
        if len(qualifier) > MAX_QUALIFIER_BYTES:
            raise InvalidEvent(f"field {name!r}: entry {entry[:40]!r}… is over 16 KiB")
        if qualifier in seen:
            raise InvalidEvent(
                f"field {name!r}: entry {entry!r} collides with {seen[qualifier]!r}"
                + (" once upper-cased" if upper else "")
            )
        seen[qualifier] = entry
        out.append(qualifier)
    return tuple(out)


def _map_parser(spec: FieldSpec) -> FieldParser:
    name = spec.name
    upper = spec.qualifier == "upper"
    most = spec.max_entries

    @lru_cache(maxsize=4096)  # a source reports the same few name lists over and over
    def cached(names: tuple) -> tuple[bytes, ...]:
        return _check_names(name, upper, names)

    def slow_values(entries: dict) -> list[bytes]:
        out = []
        for entry, value in entries.items():
            number = events.as_number(value)
            if type(number) is not Num:
                raise InvalidEvent(
                    f"field {name!r}: entry {entry!r}: expected a number, got {_describe(number)}"
                )
            out.append(number.encode("ascii"))
        return out

    def mapping(entries: object) -> tuple[tuple[bytes, bytes], ...]:
        if type(entries) is not dict:
            raise InvalidEvent(f"field {name!r}: expected an object, got {_describe(entries)}")
        if not entries:
            raise InvalidEvent(f"field {name!r}: empty; an event needs at least one entry")
        if most and len(entries) > most:
            raise InvalidEvent(f"field {name!r}: {len(entries)} entries, over {most}")
        names = tuple(entries)
        if len(names) <= _CACHED_NAMES:
            qualifiers = cached(names)
        else:
            qualifiers = _check_names(name, upper, names)
        values = entries.values()
        if set(map(type, values)) == _NUMBERS_ONLY:  # the common case, in C
            return tuple(zip(qualifiers, map(_encode, values), strict=True))
        return tuple(zip(qualifiers, slow_values(entries), strict=True))

    return mapping


def field_parser(spec: FieldSpec, key_delimiters: str = "") -> FieldParser:
    """The checked value of one field from its raw value: text (str), number/id (their source
    text), integer (int), boolean ("true"/"false"), time (epoch ms), map (((qualifier, value
    text), …)). ``key_delimiters``: the delimiters of the keys a text field is part of."""
    if spec.type in ("text", "id"):  # the two that may be key text
        return (_text_parser if spec.type == "text" else _id_parser)(spec, key_delimiters)
    return _PARSERS[spec.type](spec)


_PARSERS = {
    "number": _number_parser,
    "integer": _integer_parser,
    "boolean": _boolean_parser,
    "time": _time_parser,
    "map": _map_parser,
}


def _text(value: object) -> str:
    """A field value as cell text: integers as digits."""
    if type(value) is int:
        return str(value)
    return value  # type: ignore[return-value]


# -- keys -----------------------------------------------------------------------------------------


def _key_builder(spec: TableSpec, schema: Schema, tz: dt.tzinfo):
    """``values → row key`` for a table whose key the generated source does not write out
    (transforms/compiler.py: salted or unpivoted tables): the recipe's own builder, which
    checks every free-text segment; integers are given as their digits."""
    build = spec.decl.key.build
    times = frozenset(f.ref for f in schema.fields if f.type == "time")

    def key(values: Values) -> bytes:
        return build(
            {k: (str(v) if type(v) is int and k not in times else v) for k, v in values.items()},
            tz,
        )

    return key


# -- cells ----------------------------------------------------------------------------------------

CellsFn = Callable[[Values, int, int], list]  # (values, event ms, stamp µs) → cells


def _encoder(kind: str) -> Callable[[object], bytes]:
    if kind == "time":
        return lambda value: b"%013d" % value
    if kind == "integer":
        return lambda value: str(value).encode("ascii")
    return lambda value: value.encode("utf-8")


def _cell_value(value: tuple, types: Mapping[str, str]) -> Callable[[Values], bytes]:
    """A computed value: a constant, a JSON object of fields, or a protobuf message."""
    kind = value[0]
    if kind == "const":
        data = value[1].encode("utf-8")
        return lambda values: data
    if kind == "json":
        names = sorted(value[1])
        quoted = {n: json.dumps(n) for n in names}

        def as_json(values: Values) -> bytes:
            parts = []
            for name in names:
                if name in values:
                    got = values[name]
                    raw = _text(got) if types[name] in _RAW_JSON else json.dumps(got)
                    parts.append(f"{quoted[name]}:{raw}")
            return ("{" + ",".join(parts) + "}").encode("utf-8")

        return as_json
    message_type = message_class(value[1])
    pairs = tuple(value[2])

    def as_protobuf(values: Values) -> bytes:
        message = message_type()
        for proto_field, name in pairs:
            if name in values:
                got = values[name]
                target = type(getattr(message, proto_field))
                setattr(message, proto_field, target(got) if target is not str else _text(got))
        return message.SerializeToString(deterministic=True)

    return as_protobuf


def _qualifier(rule: str | tuple, tz: dt.tzinfo) -> Callable[[Values, int], bytes] | bytes:
    """Literal qualifiers are encoded once; computed ones become a function."""
    if isinstance(rule, str):
        return rule.encode("utf-8")
    if rule[0] == "field":
        name = rule[1]

        def from_field(values: Values, ts_ms: int) -> bytes:
            text = _text(values[name])
            qualifier = text.encode("utf-8")
            if not qualifier:
                raise InvalidEvent(f"field {name!r}: empty, cannot name a column")
            if not text.isprintable():
                raise InvalidEvent(
                    f"field {name!r}: {text[:40]!r} contains a control or unprintable "
                    "character, and names a column"
                )
            if len(qualifier) > MAX_QUALIFIER_BYTES:
                raise InvalidEvent(f"field {name!r}: over Bigtable's 16 KiB qualifier limit")
            return qualifier

        return from_field
    if rule[1] == "hhmm":
        if tz is timefmt.UTC:
            table = timefmt.HHMM_BYTES
            return lambda values, ts_ms: table[ts_ms // 60_000 % 1440]
        return lambda values, ts_ms: timefmt.time_of_day(ts_ms, tz).encode("ascii")
    return lambda values, ts_ms: str(timefmt.to_datetime(ts_ms, tz).day).encode("ascii")


def _cells_fn(spec: TableSpec, types: Mapping[str, str], tz: dt.tzinfo) -> CellsFn:
    """``(values, event ms, stamp µs) → list of cells`` for one table's columns."""
    makers = [_column(col, types, tz) for col in spec.columns]

    def cells(values: Values, ts_ms: int, ts_us: int) -> list:
        out: list = []
        for make in makers:
            make(values, ts_ms, ts_us, out)
        return out

    return cells


def _column(col: ColumnSpec, types: Mapping[str, str], tz: dt.tzinfo):
    family = col.family
    if col.each:
        each = col.each

        def each_cell(values: Values, ts_ms: int, ts_us: int, out: list) -> None:
            entries = values.get(each)
            if entries is not None:
                out.extend([(family, q, v, ts_us) for q, v in entries])

        return each_cell
    qualifier = _qualifier(col.qualifier, tz)
    fixed = qualifier if isinstance(qualifier, bytes) else None
    if col.add is not None:
        add = col.add

        def add_cell(values: Values, ts_ms: int, ts_us: int, out: list) -> None:
            if type(add) is int:
                amount = add
            elif add in values:
                amount = values[add]
            else:
                return
            q = fixed if fixed is not None else qualifier(values, ts_ms)
            out.append(AddCell(family, q, amount, ts_us))

        return add_cell
    if col.value[0] == "field":
        ref = col.value[1]
        encode = _encoder(types[ref])

        def field_cell(values: Values, ts_ms: int, ts_us: int, out: list) -> None:
            if ref in values:  # an optional field the event does not have writes no cell
                q = fixed if fixed is not None else qualifier(values, ts_ms)
                out.append((family, q, encode(values[ref]), ts_us))

        return field_cell
    compute = _cell_value(col.value, types)

    def computed_cell(values: Values, ts_ms: int, ts_us: int, out: list) -> None:
        q = fixed if fixed is not None else qualifier(values, ts_ms)
        out.append((family, q, compute(values), ts_us))

    return computed_cell


# -- tables ---------------------------------------------------------------------------------------


class _Table:
    """One table's compiled rules: its key builder, its cells and how they are stamped."""

    def __init__(self, spec: TableSpec, schema: Schema, tz: dt.tzinfo, checked: frozenset) -> None:
        self.name = spec.name
        self.spec = spec
        self.time = spec.time or schema.time
        self.time_else = spec.time_else
        self.cell_time = spec.cell_time
        self.rows_per = spec.rows_per
        types = {f.ref: f.type for f in schema.fields}
        if spec.rows_per is not None:
            types[spec.rows_per.name] = "text"
            types[spec.rows_per.value] = "text"
        self.key = _key_builder(spec, schema, tz)
        self.cells = _cells_fn(spec, types, tz)
        self.tz = tz
        self.types = types
        self.checked = checked
        # Tables with the same columns and stamps share one tuple of cells per event.
        self.signature = (spec.columns, self.time, self.time_else, self.cell_time, spec.rows_per)

    def segment_part(self, seg) -> Callable[[object], str]:
        """One key segment as a function of its field's value (for the generated builder)."""
        name = seg.field
        delimiter = self.spec.decl.key.delimiter
        free = seg.kind in FREE_TEXT_KINDS and name not in self.checked
        field_name = f"field {name!r}"
        if seg.kind == "space_pad":
            width = seg.width

            def space_pad(value: str) -> str:
                if len(value) > width:
                    raise InvalidEvent(f"{field_name}: {value!r} is longer than {width} characters")
                if not value or delimiter in value or not value.isprintable():
                    keys.check_segment(value, field_name, delimiter)
                return value.ljust(width)

            return space_pad
        if seg.kind == "zero_pad":
            width = seg.width
            return lambda value: keys.zero_pad(value, width)
        one = segment_builder(seg)
        as_text = self.types.get(name) == "integer" and seg.kind in FREE_TEXT_KINDS
        tz = self.tz

        def part(value: object) -> str:
            text = one({name: str(value) if as_text else value}, tz)
            if free and (not text or delimiter in text or not text.isprintable()):
                keys.check_segment(text, field_name, delimiter)
            return text

        return part

    def stamp(self, values: Values) -> tuple[int, int]:
        """The event time of this table's cells and their timestamp in µs."""
        ts_ms = values[self.time] if self.time in values else values[self.time_else]
        if self.cell_time == "event":
            return ts_ms, ts_ms * 1000
        return ts_ms, bucket_start_ms(ts_ms, self.cell_time, self.tz) * 1000

    def rows(self, values: Values) -> list[RowMutation]:
        """The slow, general path: unpivoted tables (one row per listed field)."""
        per = self.rows_per
        out = []
        for name in per.fields:
            if name in values:
                row_values = {**values, per.name: name, per.value: _text(values[name])}
                ts_ms, ts_us = self.stamp(row_values)
                cells = tuple(self.cells(row_values, ts_ms, ts_us))
                out.append((self.name, self.key(row_values), cells))
        return out


def _checked_key_fields(schema: Schema) -> dict[str, str]:
    """Field ref → the delimiters of the keys (of any table written from events) that hold it
    as free text: such a field is checked as a key segment when it is parsed."""
    types = {f.ref: f.type for f in schema.fields}
    out: dict[str, str] = {}
    for table in schema.written():
        delimiter = table.decl.key.delimiter
        for seg in table.decl.key.segments:
            known = out.get(seg.field, "")
            if seg.kind in ("text", "tenant") and types.get(seg.field) in ("text", "id"):
                out[seg.field] = known if delimiter in known else known + delimiter
    return out


@lru_cache(maxsize=16)
def _unpickled_schema(text: str, source: str) -> Schema:
    """A worker unpickles a job's builder once per step that uses it: parse its schema once
    (a Schema is frozen, so the steps can share it)."""
    return loads(text, source)


class Builder:
    """The pipeline's builder for one schema (the tables it writes, or a chosen subset). Pickles
    as the schema's text, so a worker (or a template launch) needs no access to the file."""

    def __init__(
        self, schema: Schema, tables: list[str] | None = None, tz: dt.tzinfo = timefmt.UTC
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
        self.required = tuple(f.name for f in schema.fields if not f.optional)
        self.optional = tuple(f.name for f in schema.fields if f.optional)
        self.map_fields = tuple(f.name for f in schema.fields if f.type == "map")
        key_fields = self.key_delimiters = _checked_key_fields(schema)
        self._steps = tuple(
            (f.name, f.ref, field_parser(f, key_fields.get(f.ref, ""))) for f in schema.fields
        )
        names = {f.ref: f.name for f in schema.fields}
        self._ordered = tuple(
            (f.name, f.ref, f.after, names[f.after]) for f in schema.fields if f.after
        )
        checked = frozenset(key_fields)
        self.compiled = [_Table(schema.table(name), schema, tz, checked) for name in chosen]
        self._call = compiler.generate(self)

    def _after_failure(self, name: str, after_name: str) -> Callable[[dict], None]:
        """Raises for a field that must be later than another and is not."""

        def fail(record: dict) -> None:
            raise InvalidEvent(
                f"field {name!r}: {record[name]} is not after field {after_name!r} "
                f"({record[after_name]})"
            )

        return fail

    def __getstate__(self) -> dict:
        return {
            "text": self.schema.text,
            "source": self.schema.source,
            "tables": self.tables,
            "tz": self.tz,
        }

    def __setstate__(self, state: dict) -> None:
        schema = _unpickled_schema(state["text"], state["source"])
        self.__init__(schema, state["tables"], state["tz"])  # compiled again, as when made

    def rows(self, record: dict) -> list[tuple]:
        """The hot path: rows as plain tuples ``(table, key, cells)``, cells as plain
        ``(family, qualifier, value, timestamp_us)`` (or :class:`AddCell`). Plain tuples of
        bytes and numbers cost a third of named ones to build, and the garbage collector
        stops tracking them, which matters when a bundle holds many rows."""
        return self._call(record)

    def __call__(self, record: dict) -> list[RowMutation]:
        """The same rows as :class:`RowMutation` and :class:`Cell` named tuples (equal to
        the plain ones), for readers and tests."""
        return [
            RowMutation(table, key, tuple(_named(c) for c in cells))
            for table, key, cells in self._call(record)
        ]

    def csv_adapter(self, record: dict) -> dict:
        """CSV is flat: with a map field, every column that is not another field is one of its
        entries (``hostname,timestamp,cpu,mem`` → ``metrics: {cpu, mem}``)."""
        if not self.map_fields:
            return record
        target = self.map_fields[0]
        named = {f.name for f in self.schema.fields}
        out = {k: v for k, v in record.items() if k in named}
        out[target] = {k: v for k, v in record.items() if k not in named}
        return out
