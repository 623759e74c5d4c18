"""The schema builder: a schema file's event mapping compiled into the builder every job runs.
Pure: no Beam, no client.

``Builder(schema)(record)`` validates one record against ``event.fields`` (missing and
unexpected fields are errors, every value checked for its type and limits) and returns the rows
of every table the schema writes, raising :class:`InvalidEvent` with a precise reason
otherwise. The built-in datasets are schema files too, so this is the only builder.

It is the hot path of every job, so the schema is compiled once per worker (the builder pickles
as the schema's text and compiles again on unpickling). This module makes the general rules as
closures specialised per field (:mod:`transforms.builder.fields`), per key segment and per
column: qualifiers encoded once, the checked qualifiers of a map field's name list cached (a
fleet reports the same names over and over), calendar labels cached per hour. It states them
as a :class:`~transforms.builder.codegen.BuildPlan`, and :mod:`transforms.builder.codegen` writes
the function that runs them (common cases inline, keys made only of text cached per entity, one
tuple of cells shared by the tables that hold the same cells, as METRIC and CURRENT_METRIC do).
No text of the schema file ever becomes code: names and values are constants and closures.
Keys come from the same :class:`~transforms.table_model.KeyRecipe` as queries and table creation;
cells are stamped with the event time (or the start of its bucket for aggregates); values are
the source's text (``600.60`` stays ``600.60``).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Collection, Mapping
from functools import lru_cache

from transforms import official
from transforms.builder import codegen, interpreted, shaping
from transforms.builder.advice import early_advice
from transforms.builder.codegen import BuildPlan, FieldPlan, OrderCheck, TablePlan
from transforms.builder.fields import field_parser, map_columns_parser
from transforms.builder.fold_source import TableFold
from transforms.errors import InvalidEvent
from transforms.limits import MAX_QUALIFIER_BYTES
from transforms.mutations import AddCell, Cell, RowMutation
from transforms.schema import (
    ColumnSpec,
    Schema,
    TableSpec,
    loads,
    message_class,
)
from transforms.table_model import (
    EPOCH_KEY_KINDS,
    FREE_TEXT_KINDS,
    bucket_start_ms,
    segment_builder,
)
from transforms.text import csv_dialect, keys, timefmt

__all__ = ["Builder"]

# JSON blobs keep numbers as the source wrote them (no float round trip); times as epoch ms.
_RAW_JSON = ("number", "integer", "time")
_NUMBERS = ("number", "integer")  # the fields a CSV dialect's decimal marks apply to
_new = tuple.__new__  # NamedTuple construction without its Python-level __new__


def _named(cell: tuple) -> tuple:
    """A plain set-cell tuple as a :class:`Cell`; named cells as they are."""
    return _new(Cell, cell) if type(cell) is tuple else cell


Values = dict  # field ref → checked value


def _text(value: object) -> str:
    """A field value as cell text: integers as digits."""
    if type(value) is int:
        return str(value)
    return value  # type: ignore[return-value]


# -- keys -----------------------------------------------------------------------------------------


def _key_builder(spec: TableSpec, schema: Schema, tz: dt.tzinfo):
    """``values → row key`` for a table whose key the generated source does not write out
    (:mod:`.codegen` leaves salted and unpivoted tables to it): the recipe's own builder, which
    checks every free-text segment; an integer only a free-text segment gets as its digits."""
    build = spec.decl.key.build
    integers = frozenset(f.ref for f in schema.fields if f.type == "integer")
    as_text = frozenset(
        s.field for s in spec.decl.key.segments if s.kind in FREE_TEXT_KINDS and s.field in integers
    )

    def key(values: Values) -> bytes:
        return build(
            {k: (str(v) if type(v) is int and k in as_text else v) for k, v in values.items()},
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
    if kind == "float64":
        return lambda value: value  # the parser's 8 bytes
    return lambda value: value.encode("utf-8")


def _cell_value(
    value: tuple, types: Mapping[str, str], proto_modules: tuple[str, ...] = ()
) -> Callable[[Values], bytes]:
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
    message_type = message_class(value[1], proto_modules)
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
            """Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
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


def _cells_fn(
    spec: TableSpec, types: Mapping[str, str], tz: dt.tzinfo, proto_modules: tuple[str, ...] = ()
) -> CellsFn:
    """``(values, event ms, stamp µs) → list of cells`` for one table's columns."""
    makers = [_column(col, types, tz, proto_modules) for col in spec.columns]

    def cells(values: Values, ts_ms: int, ts_us: int) -> list:
        out: list = []
        for make in makers:
            make(values, ts_ms, ts_us, out)
        return out

    return cells


def _column(
    col: ColumnSpec, types: Mapping[str, str], tz: dt.tzinfo, proto_modules: tuple[str, ...] = ()
):
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
    compute = _cell_value(col.value, types, proto_modules)

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
        self.micros = spec.decl.cell_micros  # event ms → this table's cell timestamp
        self.rows_per = spec.rows_per
        types = {f.ref: f.type for f in schema.fields}
        if spec.rows_per is not None:
            types[spec.rows_per.name] = "text"
            types[spec.rows_per.value] = "text"
        self.key = _key_builder(spec, schema, tz)
        self.cells = _cells_fn(spec, types, tz, schema.proto_modules)
        self.tz = tz
        self.types = types
        self.checked = checked
        # Tables with the same columns and stamps share one tuple of cells per event.
        self.signature = (
            spec.columns,
            self.time,
            self.time_else,
            self.cell_time,
            spec.decl.cell_timestamp,
            spec.rows_per,
        )

    def segment_part(self, seg) -> Callable[[object], str]:
        """One key segment as a function of its field's value (for the generated builder).
        Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
        name = seg.field
        delimiter = self.spec.decl.key.delimiter
        free = seg.kind in FREE_TEXT_KINDS and name not in self.checked
        field_name = f"field {name!r}"
        if seg.kind == "space_pad":
            width = seg.width

            def space_pad(value: str) -> str:
                """Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
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
            return ts_ms, self.micros(ts_ms)
        return ts_ms, self.micros(bucket_start_ms(ts_ms, self.cell_time, self.tz))

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

    def plan(self) -> TablePlan:
        """What the generated builder needs of this table (its closures as values)."""
        segments = self.spec.decl.key.segments
        general = self.rows_per is not None or any(seg.kind == "salt" for seg in segments)
        parts = (
            ()
            if general
            else tuple(None if seg.kind == "const" else self.segment_part(seg) for seg in segments)
        )
        return TablePlan(
            name=self.name,
            spec=self.spec,
            time=self.time,
            time_else=self.time_else,
            cell_time=self.cell_time,
            checked=self.checked,
            signature=self.signature,
            key=self.key,
            cells=self.cells,
            stamp=self.stamp,
            rows=self.rows,
            segment_parts=parts,
        )


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


def _after_failure(name: str, after_name: str) -> Callable[[dict], None]:
    """Raises for a field that must be later than another and is not."""

    def fail(record: dict) -> None:
        """Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
        raise InvalidEvent(
            f"field {name!r}: {record[name]} is not after field {after_name!r} "
            f"({record[after_name]})"
        )

    return fail


def build_plan(schema: Schema, tables: list[str], tz: dt.tzinfo) -> BuildPlan:
    """The code generator's input for ``tables`` of ``schema``: every field's parser, the order
    checks, and each table's general closures (:mod:`.codegen` writes the rest)."""
    key_fields = _checked_key_fields(schema)
    names = {f.ref: f.name for f in schema.fields}
    checked = frozenset(key_fields)
    advice = {f.ref: early_advice(schema, f) for f in schema.fields if f.type == "time"}
    return BuildPlan(
        label=schema.dataset,
        tz=tz,
        fields=tuple(
            FieldPlan(
                f,
                field_parser(f, key_fields.get(f.ref, ""), advice.get(f.ref, "")),
                key_fields.get(f.ref, ""),
                advice.get(f.ref, ""),
                map_columns_parser(f) if f.type == "map" else None,
            )
            for f in schema.fields
        ),
        ordered=tuple(
            OrderCheck(f.ref, f.after, _after_failure(f.name, names[f.after]))
            for f in schema.fields
            if f.after
        ),
        tables=tuple(_Table(schema.table(n), schema, tz, checked).plan() for n in tables),
    )


@lru_cache(maxsize=16)
def _unpickled_schema(text: str, source: str, proto_modules: tuple[str, ...] = ()) -> Schema:
    """A worker unpickles a job's builder once per step that uses it: parse its schema once
    (a Schema is frozen, so the steps can share it)."""
    return loads(text, source, proto_modules)


def _shaped(shape: Callable, build: Callable) -> Callable[[dict], list]:
    """``build`` over each event a record makes (:mod:`transforms.builder.shaping`)."""

    def rows(record: dict) -> list:
        out: list = []
        for event in shape(record):
            out += build(event)
        return out

    return rows


def _shaped_framed(shape: Callable, frame: Callable) -> Callable[[dict, list, list], None]:
    """The framed builder over each event a record makes: all of them or, if one is bad, none
    (the record is one dead letter)."""

    def frame_into(record: dict, rows: list, entries: list) -> None:
        made_rows: list = []
        made_entries: list = []
        for event in shape(record):
            frame(event, made_rows, made_entries)
        rows += made_rows
        entries += made_entries

    return frame_into


class Builder:
    """The pipeline's builder for one schema (the tables it writes, or a chosen subset). Pickles
    as the schema's text, so a worker (or a template launch) needs no access to the file."""

    def __init__(
        self, schema: Schema, tables: list[str] | None = None, tz: dt.tzinfo = timefmt.UTC
    ) -> None:
        chosen = schema.tables_to_write(tables)
        self.schema = schema
        self.tables = chosen
        self.tz = tz
        self.required = tuple(f.name for f in schema.fields if not f.optional)
        self.optional = tuple(f.name for f in schema.fields if f.optional)
        self.map_fields = tuple(f.name for f in schema.fields if f.type == "map")
        self.key_delimiters = _checked_key_fields(schema)
        self._shape = shaping.shaper(schema)  # None: records are events as they come
        self._csv_numbers = csv_dialect.numbers_in_place(schema.csv)  # None: plain decimals
        self._number_fields = tuple(f.name for f in schema.fields if f.type in _NUMBERS)
        # the generated source, or (BTTS_OFFICIAL=builder) the plain loop over the same rules
        self._compiler = interpreted if official.uses("builder") else codegen
        self._call = self._compiler.build_function(build_plan(schema, chosen, tz))
        if self._shape is not None:
            self._call = _shaped(self._shape, self._call)
        self._framed: Callable | None = None  # compiled when first asked for
        self._lean: dict[frozenset[str], Callable] = {}  # framers of lean rows, by their tables

    def __getstate__(self) -> dict:
        return {
            "text": self.schema.text,
            "source": self.schema.source,
            "proto_modules": self.schema.proto_modules,
            "tables": self.tables,
            "tz": self.tz,
        }

    def __setstate__(self, state: dict) -> None:
        schema = _unpickled_schema(state["text"], state["source"], state["proto_modules"])
        self.__init__(schema, state["tables"], state["tz"])  # compiled again, as when made

    def rows(self, record: dict) -> list[tuple]:
        """The hot path: rows as plain tuples ``(table, key, cells)``, cells as plain
        ``(family, qualifier, value, timestamp_us)`` (or :class:`AddCell`). Plain tuples of
        bytes and numbers cost a third of named ones to build, and the garbage collector
        stops tracking them, which matters when a bundle holds many rows."""
        return self._call(record)

    def framed(self, record: dict) -> tuple[list[tuple], list[bytes | None]]:
        """:meth:`rows` and, for each row, its framed ``MutateRowsRequest`` entry made while
        building it (None where the writer encodes the row itself): the job's hot path, which
        spares the writer a second walk over every cell (bytes identical, tests compare)."""
        rows: list[tuple] = []
        entries: list[bytes | None] = []
        self.frame_into(record, rows, entries)
        return rows, entries

    def frame_into(self, record: dict, rows: list, entries: list) -> None:
        """:meth:`framed` appending to a batch's lists (what the job's build step runs): a bad
        record raises and appends nothing."""
        self.framer()(record, rows, entries)

    def framer(self, lean: Collection[str] = ()) -> Callable[[dict, list, list], None]:
        """The compiled function behind :meth:`frame_into`, compiled on first use: the build
        step calls it per record without a method call in between (one call per event less).
        ``lean``: tables whose rows are lean where their entry is made (cells' count and stamp,
        no cell tuples: :mod:`transforms.mutations`), for a step whose later steps read nothing
        else of those rows; only the generated builder makes them."""
        lean = frozenset(lean)
        if lean and self._compiler is codegen and not official.uses("wire"):
            if lean not in self._lean:
                plan = build_plan(self.schema, self.tables, self.tz)
                framer = codegen.build_function(plan, framed=True, lean=lean)
                shape = self._shape
                self._lean[lean] = framer if shape is None else _shaped_framed(shape, framer)
            return self._lean[lean]
        if self._framed is None:
            plan = build_plan(self.schema, self.tables, self.tz)
            if self._compiler is codegen:  # entries made while building, unless the protobuf
                entries = not official.uses("wire")  # runtime must write them (BTTS_OFFICIAL)
                self._framed = codegen.build_function(plan, framed=True, entries=entries)
            else:
                self._framed = interpreted.build_function(plan, framed=True)
            if self._shape is not None:
                self._framed = _shaped_framed(self._shape, self._framed)
        return self._framed

    def folding_framer(
        self, tables: Collection[str], lean: Collection[str] = ()
    ) -> tuple[Callable, list[TableFold]]:
        """A fresh :meth:`framer` that also folds each valid record's rows of ``tables`` into
        the series index's accumulators it returns with it (a fresh one per call: one per
        build step, which drains them per bundle); a table missing there is not folded (the
        generated source does not write its cells out, or records are shaped into several
        events or built by the plain loop: ``BTTS_OFFICIAL=builder``). ``lean`` as for
        :meth:`framer`, less the tables of ``tables`` it does not fold (folded from their
        rows' cells)."""
        if self._shape is not None or self._compiler is not codegen or not tables:
            return self.framer(frozenset(lean) - frozenset(tables)), []
        plan = build_plan(self.schema, self.tables, self.tz)
        entries = not official.uses("wire")
        function = codegen.build_function(plan, True, entries, frozenset(tables), frozenset(lean))
        return function, list(function.folds)

    def stamp_in_key(self) -> dict[str, bool]:
        """Per table built (SetCell tables only, not aggregates): whether its row key holds the
        exact time its cells are stamped with (an ``epoch_ms`` or ``reverse_ts`` segment of the
        stamping field, cells at event time), so that the key alone tells its rows' cells apart
        in time: the overwrite check then needs no stamp (:mod:`transforms.ingest.fingerprints`)."""
        out = {}
        for name in self.tables:
            spec = self.schema.table(name)
            if any(f.aggregate for f in spec.decl.families):
                continue
            time = spec.time or self.schema.time
            out[name] = (
                spec.cell_time == "event"
                and not spec.time_else
                and any(
                    seg.kind in EPOCH_KEY_KINDS and seg.field == time
                    for seg in spec.decl.key.segments
                )
            )
        return out

    def take_empty_cells(self) -> int:
        """Unpivoted cells without a value since the last call (no event, not a dead letter):
        what the job counts as ``empty_cells``."""
        return self._shape.take_empty() if self._shape is not None else 0

    def __call__(self, record: dict) -> list[RowMutation]:
        """The same rows as :class:`RowMutation` and :class:`Cell` named tuples (equal to
        the plain ones), for readers and tests."""
        return [
            RowMutation(table, key, tuple(_named(c) for c in cells))
            for table, key, cells in self._call(record)
        ]

    def csv_adapter(self, record: dict) -> dict:
        """CSV is flat: with a map field, every column that is not another field is one of its
        entries (``hostname,timestamp,cpu,mem`` → ``metrics: {cpu, mem}``). Numbers with a
        decimal comma or thousands marks (``event.csv``) become plain decimals, once per value."""
        target = self.map_fields[0] if self.map_fields else ""
        named = {f.name for f in self.schema.fields} if target else set()
        return csv_dialect.as_fields(record, self._csv_numbers, self._number_fields, named, target)
