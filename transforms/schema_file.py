"""Schema files: a dataset's tables and event mapping declared in YAML (or JSON), no Python.

One file describes one source of events and every table it lands in (fan-out):

* ``event``: the source fields (type, limits, whether optional, the name keys and columns use
  for them) and which field is the event time;
* ``tables``: per table its column pattern, families with GC rules, the row-key recipe as an
  ordered list of segments, and the columns (which field feeds which qualifier);
* ``advisor`` (optional): the workload the schema advisor judges the keys against.

:func:`load` validates everything before any data is read and reports every problem with the
file's line number and the fix. The built-in datasets' declarations are schema files too
(``transforms/declarations/*.yaml``), so the format can say everything they say. The user guide
(``docs/user-guide.md``) documents every key; ``docs/schemas/`` has one worked file per pattern.
Pure: no Beam, no client.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import yaml

from transforms import keys, schema_file_queries, timefmt
from transforms.mutations import MAX_QUALIFIER_BYTES
from transforms.table_model import (
    BUCKET_UNITS,
    PATTERNS,
    TIME_FORMATS,
    Family,
    KeyRecipe,
    Segment,
    TableDecl,
)

# docs/user-guide.md's table of field types says what each accepts and keeps, and its options.
FIELD_TYPES = ("text", "number", "integer", "id", "boolean", "time", "map")
WHITESPACE = ("allow", "trimmed", "none")
CASES = ("as_is", "lower", "upper")
MAP_QUALIFIERS = ("upper", "as_is")
QUALIFIER_TIME_FORMATS = ("hhmm", "day_of_month")
CELL_TIMES = ("event", *BUCKET_UNITS)
AGGREGATES = ("sum",)
SEGMENT_KINDS = {
    "const": "a constant text (BATTERY)",
    "text": "a field's text as is (alias: field)",
    "tenant": "the tenant's id; must come first (multi-tenant tables)",
    "epoch_ms": "a time field as 13-digit epoch milliseconds",
    "reverse_ts": "a time field as Long.MAX_VALUE - ms (19 digits), newest first; "
    "bucket: hour|day|week|month reverses the bucket's start instead",
    "zero_pad": "an integer field zero-padded to width digits",
    "space_pad": "a text field right-padded with spaces to width characters",
    "time": "a time field as a calendar label; format: " + ", ".join(TIME_FORMATS),
    "salt": "a stable hash bucket (buckets: N) of the listed key fields",
    "reverse_id": "a sequential numeric id reversed (12345 → 54321)",
    "reverse_domain": "a domain name reversed (maps.google.com → com.google.maps)",
}
_SEGMENT_ALIASES = {"field": "text"}
_DURATION = re.compile(r"\s*([0-9]+)\s*([smhdw])\s*\Z")
_DURATION_UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# The advisor section (docs/user-guide.md §3): what the advisor judges keys against.
ADVISOR_KEYS = (
    "events_per_second",
    "source",
    "fields",
    "families",
    "query_fields",
    "derived",
    "acknowledge",
    "anti_pattern",
)
ADVISOR_FAMILY_KEYS = ("cells_per_event", "columns", "qualifier_bytes", "value_bytes", "qualifiers")
ADVISOR_FIELD_KINDS = {
    "label": "an identifier compared for equality only (text, or a number used as given)",
    "integer": "an integer whose numeric order matters: it must be zero-padded in keys",
    "sequential": "an integer assigned in increasing order; the newest values are the busiest",
    "monotonic": "a value that grows with time (a timestamp, a counter, a version)",
    "hash": "a hash of other values: no meaningful order",
    "bytes": "raw binary data",
    "pii": "personal data (e-mail, phone number, a person's name…)",
}
_ADVISOR_RATE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s+per\s+([0-9]+\s*[smhdw])\s*\Z")
_RULE_ID = re.compile(r"[A-Z]+(-[A-Z]+)+\Z")
_TABLE = re.compile(r"[_a-zA-Z0-9][-_.a-zA-Z0-9]{0,49}\Z")
_FAMILY = re.compile(r"[-_.a-zA-Z0-9]{1,64}\Z")
DECLARATIONS = Path(__file__).parent / "declarations"  # the built-in datasets' schema files


class SchemaError(ValueError):
    """A schema file that cannot be used; ``problems`` holds ``(line, message)`` pairs."""

    def __init__(self, source: str, problems: Sequence[tuple[int, str]]) -> None:
        self.source = source
        self.problems = list(problems)
        lines = [f"{source}:{line}: {message}" for line, message in self.problems]
        super().__init__(
            f"{len(self.problems)} problem(s) in schema {source}:\n  " + "\n  ".join(lines)
        )


# -- the model --------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldSpec:
    """One source field. ``name`` is the source's; ``alias`` the name keys and columns use."""

    name: str
    type: str
    alias: str = ""
    optional: bool = False
    max_length: int | None = None
    minimum: str | None = None  # decimal text: exact comparison
    maximum: str | None = None
    format: str = "auto"  # time fields
    whitespace: str = "allow"  # text fields
    qualifier: str = "upper"  # map fields
    max_entries: int | None = None  # map fields
    case: str = "as_is"  # text fields: lower|upper folds the value (domain names ignore case)
    after: str = ""  # time fields: the name of a time field this one must be later than
    timezone: str = ""  # time fields: the IANA zone of times written without an offset
    ambiguous: str = "error"  # time fields: the repeated hour of a DST change
    doc: str = ""
    line: int = field(default=0, compare=False)

    @property
    def ref(self) -> str:
        return self.alias or self.name


@dataclass(frozen=True)
class ColumnSpec:
    """One column rule of a table.

    ``qualifier``: literal text, or ``("field", NAME)`` (the qualifier is that field's text) or
    ``("time", FORMAT)`` (hhmm, day_of_month of the table's time). ``each``: a map field, one
    column per entry (qualifier from the entry's name). ``value``: ``("field", NAME)``,
    ``("const", TEXT)``, ``("protobuf", MESSAGE, ((proto field, NAME), …))`` or
    ``("json", (NAME, …))``. ``add``: AddToCell amount, an integer field name or a number.
    """

    family: str
    qualifier: str | tuple = ""
    value: tuple = ()
    each: str = ""
    add: str | int | None = None
    line: int = field(default=0, compare=False)


@dataclass(frozen=True)
class RowsPer:
    """One row per listed field (unpivot): the row sees ``name`` = the field's name and
    ``value`` = its text (TB-COL: one row per metric)."""

    fields: tuple[str, ...]
    name: str
    value: str


@dataclass(frozen=True)
class RollupRule:
    """An aggregate table the streaming rollup fills from another table's rows: per ``entity``
    (a key field of both tables) and hour, the sum and count of each value cell of ``source``
    (cells of literal-qualifier columns, such as an ID, are not values). ``metric`` names every
    value ``metric`` instead of its qualifier (a short-wide row's HHMM columns are one metric)."""

    source: str
    entity: str
    metric: str = ""


@dataclass(frozen=True)
class TableSpec:
    decl: TableDecl
    columns: tuple[ColumnSpec, ...] = ()
    time: str = ""  # the time field stamping cells (default: the event's)
    time_else: str = ""  # with an optional ``time``: the field stamping events without it
    cell_time: str = "event"
    rows_per: RowsPer | None = None
    written_by: str = ""  # another job writes it: declared here, not written from events
    rollup: RollupRule | None = None
    line: int = field(default=0, compare=False)

    @property
    def name(self) -> str:
        return self.decl.name


@dataclass(frozen=True)
class Schema:
    dataset: str
    time: str
    fields: tuple[FieldSpec, ...]
    tables: tuple[TableSpec, ...]
    doc: str = ""
    advisor: Mapping | None = field(default=None, compare=False, hash=False)
    example: str = ""  # one input line, for --help and the docs (tests build it)
    queries: tuple = ()  # schema_file_queries.QuerySpec: the named reads of ``btts query``
    source: str = field(default="", compare=False)
    text: str = field(default="", compare=False, repr=False)

    def table(self, name: str) -> TableSpec:
        for spec in self.tables:
            if spec.name == name:
                return spec
        raise KeyError(f"schema {self.dataset} has no table {name!r}; it has {self.table_names}")

    @property
    def table_names(self) -> list[str]:
        return [t.name for t in self.tables]

    def decls(self) -> dict[str, TableDecl]:
        return {t.name: t.decl for t in self.tables}

    def written(self) -> list[TableSpec]:
        """The tables events are written to (not the ones another job fills)."""
        return [t for t in self.tables if not t.written_by]

    def field_by_ref(self) -> dict[str, FieldSpec]:
        return {f.ref: f for f in self.fields}


# A field's keys in a file: its attributes (but its name, the entry's key), three renamed.
_FILE_KEYS = {"alias": "as", "minimum": "min", "maximum": "max"}
FIELD_KEYS = tuple(
    _FILE_KEYS.get(f.name, f.name)
    for f in dataclasses.fields(FieldSpec)
    if f.name not in ("name", "line")
)


# -- YAML with line numbers -------------------------------------------------------------------


class _Map(dict):
    line = 0
    lines: dict


class _Seq(list):
    line = 0
    lines: list


class _Loader(yaml.SafeLoader):
    """SafeLoader whose mappings and sequences remember the line of each entry, and which
    refuses duplicate keys (plain YAML keeps the last one silently)."""

    def construct_yaml_map(self, node):
        data = _Map()
        data.line = node.start_mark.line + 1
        data.lines = {}
        yield data
        self.flatten_mapping(node)
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) or key is None:
                raise _Problem(key_node.start_mark.line + 1, "a key must be plain text")
            if key in data:
                raise _Problem(
                    key_node.start_mark.line + 1,
                    f"duplicate key {key!r} (first on line {data.lines[key]}): keep one",
                )
            data[key] = self.construct_object(value_node, deep=True)
            data.lines[key] = value_node.start_mark.line + 1

    def construct_yaml_seq(self, node):
        data = _Seq()
        data.line = node.start_mark.line + 1
        data.lines = [n.start_mark.line + 1 for n in node.value]
        yield data
        data.extend(self.construct_object(n, deep=True) for n in node.value)


_Loader.add_constructor("tag:yaml.org,2002:map", _Loader.construct_yaml_map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _Loader.construct_yaml_seq)


class _Problem(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def _line(container: object, key: object = None, default: int = 0) -> int:
    if isinstance(container, _Map):
        return container.lines.get(key, container.line) if key is not None else container.line
    if isinstance(container, _Seq):
        if isinstance(key, int) and 0 <= key < len(container.lines):
            return container.lines[key]
        return container.line
    return default


def _suggest(word: object, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(str(word), list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


# -- validation -------------------------------------------------------------------------------


class _Checker:
    """Turns the parsed document into a :class:`Schema`, collecting every problem."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.problems: list[tuple[int, str]] = []

    def bad(self, line: int, message: str) -> None:
        self.problems.append((line, message))

    def keys(self, node: _Map, allowed: Mapping[str, str] | Sequence[str], what: str) -> None:
        for key in node:
            if key not in allowed:
                self.bad(
                    _line(node, key),
                    f"{what}: unknown key {key!r}{_suggest(key, allowed)}; "
                    f"allowed: {', '.join(allowed)}",
                )

    def mapping(self, node: object, what: str, line: int) -> _Map | None:
        if isinstance(node, _Map):
            return node
        self.bad(line, f"{what}: expected a mapping (key: value lines), got {_kind(node)}")
        return None

    def sequence(self, node: object, what: str, line: int) -> _Seq | None:
        if isinstance(node, _Seq):
            return node
        self.bad(line, f"{what}: expected a list (lines starting with '- '), got {_kind(node)}")
        return None

    def text(
        self, node: _Map, key: str, what: str, required: bool = False, default: str = ""
    ) -> str:
        if key not in node:
            if required:
                self.bad(node.line, f"{what}: missing {key!r}; add '{key}: …'")
            return default
        value = node[key]
        if isinstance(value, (int, float)) and not isinstance(value, bool) and key == "spec":
            return str(value)
        if not isinstance(value, str):
            self.bad(_line(node, key), f"{what}: {key!r} must be text, got {_kind(value)}")
            return default
        return value

    def integer(self, node: _Map, key: str, what: str, minimum: int = 1) -> int | None:
        if key not in node or node[key] is None:
            return None
        value = node[key]
        if type(value) is not int or value < minimum:
            self.bad(
                _line(node, key),
                f"{what}: {key!r} must be a whole number ≥ {minimum}, got {value!r}",
            )
            return None
        return value

    # -- top level ----------------------------------------------------------------------------

    def schema(self, doc: object) -> Schema | None:
        top = self.mapping(doc, "schema file", 1)
        if top is None:
            return None
        self.keys(top, ("dataset", "doc", "event", "tables", "queries", "advisor"), "schema file")
        dataset = self.text(top, "dataset", "schema file", required=True)
        if dataset and not _NAME.match(dataset):
            self.bad(_line(top, "dataset"), f"dataset {dataset!r}: use letters, digits and _")
        fields: tuple[FieldSpec, ...] = ()
        time = example = ""
        event = self.mapping(top["event"], "event", _line(top, "event")) if "event" in top else None
        if event is not None:
            self.keys(event, ("time", "fields", "example"), "event")
            fields = self.fields(event)
            time = self.event_time(event, fields)
            example = self.text(event, "example", "event")
        tables_node = self.sequence(top.get("tables"), "tables", _line(top, "tables", top.line))
        tables: list[TableSpec] = []
        if tables_node is not None:
            if not tables_node:
                self.bad(tables_node.line, "tables: empty; declare at least one table")
            for index, item in enumerate(tables_node):
                spec = self.table(item, _line(tables_node, index), fields, time)
                if spec is not None:
                    tables.append(spec)
        names = [t.name for t in tables]
        for spec in tables:
            if spec.rollup is not None:
                self.rollup_source(spec, {t.name: t for t in tables})
            if names.count(spec.name) > 1:
                self.bad(spec.line, f"table {spec.name}: declared more than once in this file")
        if "event" not in top and any(not t.written_by for t in tables):
            self.bad(
                top.line,
                "schema file: missing 'event': declare the source fields and the event time "
                "(only a file whose every table is 'written_by' another job may omit it)",
            )
        advisor = top.get("advisor")
        if advisor is not None:
            self.advisor(advisor, _line(top, "advisor"), tables)
        queries = ()
        if "queries" in top:
            queries = schema_file_queries.parse(self, top["queries"], _line(top, "queries"), tables)
        return Schema(
            queries=queries,
            dataset=dataset,
            time=time,
            fields=fields,
            tables=tuple(tables),
            doc=self.text(top, "doc", "schema file"),
            advisor=_plain(advisor) if advisor is not None else None,
            example=example,
        )

    # -- event --------------------------------------------------------------------------------

    def fields(self, event: _Map) -> tuple[FieldSpec, ...]:
        node = self.mapping(event.get("fields"), "event.fields", _line(event, "fields"))
        if node is None:
            return ()
        out = []
        for name, spec in node.items():
            line = _line(node, name)
            what = f"field {name!r}"
            if not isinstance(name, str) or not name:
                self.bad(line, f"{what}: a field name must be text")
                continue
            if isinstance(spec, str):  # shorthand: "bid: number"
                spec_map = _Map({"type": spec})
                spec_map.line, spec_map.lines = line, {"type": line}
                spec = spec_map
            spec = self.mapping(spec, what, line)
            if spec is None:
                continue
            self.keys(spec, FIELD_KEYS, what)
            kind = self.text(spec, "type", what, required=True)
            if kind and kind not in FIELD_TYPES:
                self.bad(
                    _line(spec, "type"),
                    f"{what}: unknown type {kind!r}{_suggest(kind, FIELD_TYPES)}; "
                    f"use one of {', '.join(FIELD_TYPES)}",
                )
            alias = self.text(spec, "as", what)
            if alias and not _NAME.match(alias):
                self.bad(_line(spec, "as"), f"{what}: 'as' {alias!r} must be a plain name")
            optional = spec.get("optional", False)
            if not isinstance(optional, bool):
                self.bad(_line(spec, "optional"), f"{what}: optional must be true or false")
                optional = False
            fmt = self.text(spec, "format", what, default="auto")
            if "format" in spec and kind != "time":
                self.bad(_line(spec, "format"), f"{what}: 'format' applies to time fields only")
            if fmt not in timefmt.NAMED_FORMATS and "%" not in fmt:
                self.bad(
                    _line(spec, "format"),
                    f"{what}: unknown time format {fmt!r}{_suggest(fmt, timefmt.NAMED_FORMATS)}; "
                    f"use one of {', '.join(timefmt.NAMED_FORMATS)} or a strptime pattern such as "
                    "'%Y/%m/%d %H:%M'",
                )
            elif fmt not in timefmt.NAMED_FORMATS and timefmt.strptime_problem(fmt):
                self.bad(_line(spec, "format"), f"{what}: {timefmt.strptime_problem(fmt)}")
            zone = self.text(spec, "timezone", what)
            if zone and kind != "time":
                self.bad(_line(spec, "timezone"), f"{what}: 'timezone' applies to time fields")
            elif zone and timefmt.zone(zone) is None:
                self.bad(_line(spec, "timezone"), f"{what}: unknown time zone {zone!r} (IANA)")
            elif zone and timefmt.has_offset(fmt) and fmt != "auto":
                self.bad(
                    _line(spec, "timezone"),
                    f"{what}: format {fmt!r} carries its own offset: 'timezone' would never apply",
                )
            ambiguous = self.text(spec, "ambiguous", what, default="error")
            if ambiguous not in timefmt.DST_CHOICES or ("ambiguous" in spec and not zone):
                self.bad(
                    _line(spec, "ambiguous"),
                    f"{what}: ambiguous is one of {', '.join(timefmt.DST_CHOICES)}, with timezone",
                )
            whitespace = self.text(spec, "whitespace", what, default="allow")
            if whitespace not in WHITESPACE:
                self.bad(_line(spec, "whitespace"), f"{what}: whitespace is one of {WHITESPACE}")
            case = self.text(spec, "case", what, default="as_is")
            if case not in CASES or ("case" in spec and kind != "text"):
                self.bad(_line(spec, "case"), f"{what}: case is one of {CASES}, for text fields")
            after = self.text(spec, "after", what)
            if after and kind != "time":
                self.bad(_line(spec, "after"), f"{what}: 'after' applies to time fields only")
            qualifier = self.text(spec, "qualifier", what, default="upper")
            if qualifier not in MAP_QUALIFIERS:
                self.bad(_line(spec, "qualifier"), f"{what}: qualifier is one of {MAP_QUALIFIERS}")
            bounds = {}
            for key in ("min", "max"):
                if key in spec:
                    value = spec[key]
                    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                        self.bad(_line(spec, key), f"{what}: {key} must be a number")
                        continue
                    text = str(value)
                    if not re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", text):
                        self.bad(_line(spec, key), f"{what}: {key} {value!r} is not a number")
                        continue
                    if kind not in ("number", "integer"):
                        self.bad(_line(spec, key), f"{what}: {key} applies to numbers only")
                    bounds[key] = text
            out.append(
                FieldSpec(
                    name=name,
                    type=kind,
                    alias=alias,
                    optional=optional,
                    max_length=self.integer(spec, "max_length", what),
                    minimum=bounds.get("min"),
                    maximum=bounds.get("max"),
                    format=fmt,
                    whitespace=whitespace,
                    qualifier=qualifier,
                    max_entries=self.integer(spec, "max_entries", what),
                    case=case,
                    after=after,
                    timezone=zone,
                    ambiguous=ambiguous,
                    doc=self.text(spec, "doc", what),
                    line=line,
                )
            )
        refs: dict[str, FieldSpec] = {}
        for spec in out:
            if spec.ref in refs:
                self.bad(
                    spec.line,
                    f"field {spec.name!r}: name {spec.ref!r} is already used by field "
                    f"{refs[spec.ref].name!r} (line {refs[spec.ref].line}); rename one with 'as'",
                )
            refs[spec.ref] = spec
        for spec in out:
            if spec.after:
                self.time_ref(spec.after, refs, spec.line, f"field {spec.name!r}: after", True)
        if not out:
            self.bad(node.line, "event.fields: empty; declare the source's fields")
        return tuple(out)

    def event_time(self, event: _Map, fields: tuple[FieldSpec, ...]) -> str:
        if "time" not in event:
            times = [f.ref for f in fields if f.type == "time"]
            hint = f"e.g. 'time: {times[0]}'" if times else "and a field of type time"
            self.bad(
                event.line,
                f"event: missing 'time', the field holding the event time (cell timestamps are "
                f"event times, never the wall clock); add {hint}",
            )
            return ""
        time = self.text(event, "time", "event")
        self.time_ref(time, {f.ref: f for f in fields}, _line(event, "time"), "event.time")
        return time

    def time_ref(
        self,
        name: str,
        refs: Mapping[str, FieldSpec],
        line: int,
        what: str,
        optional_ok: bool = False,
    ) -> None:
        spec = refs.get(name)
        if spec is None:
            self.bad(
                line,
                f"{what}: {name!r} is not a declared field{_suggest(name, refs)}; declare it "
                "under event.fields with 'type: time'",
            )
        elif spec.type != "time":
            self.bad(line, f"{what}: field {name!r} is {spec.type}, not time; give it type: time")
        elif spec.optional and not optional_ok:
            self.bad(line, f"{what}: field {name!r} is optional; an event time must be required")

    # -- tables -------------------------------------------------------------------------------

    def table(
        self, node: object, line: int, fields: tuple[FieldSpec, ...], event_time: str
    ) -> TableSpec | None:
        node = self.mapping(node, "table", line)
        if node is None:
            return None
        allowed = (
            "name",
            "pattern",
            "doc",
            "spec",
            "delimiter",
            "families",
            "key",
            "columns",
            "time",
            "cell_time",
            "rows_per",
            "written_by",
            "rollup",
        )
        name = self.text(node, "name", "table", required=True) or f"<table on line {line}>"
        what = f"table {name}"
        self.keys(node, allowed, what)
        if "name" in node and not _TABLE.match(name):
            self.bad(_line(node, "name"), f"{what}: a table id is 1-50 of [-_.a-zA-Z0-9]")
        pattern = self.text(node, "pattern", what, required=True).upper()
        if pattern and pattern not in PATTERNS:
            self.bad(
                _line(node, "pattern"),
                f"{what}: unknown pattern {node['pattern']!r}{_suggest(pattern, PATTERNS)}; "
                f"use one of {', '.join(PATTERNS)}",
            )
        written_by = self.text(node, "written_by", what)
        delimiter = self.text(node, "delimiter", what, default=keys.DELIMITER)
        if len(delimiter) != 1 or not delimiter.isprintable() or delimiter.isalnum():
            self.bad(_line(node, "delimiter"), f"{what}: the delimiter is one punctuation mark")
            delimiter = keys.DELIMITER
        families = self.families(node, what)
        by_ref = {f.ref: f for f in fields}
        rows_per = self.rows_per(node, what, by_ref) if "rows_per" in node else None
        row_names = dict(by_ref)
        if rows_per is not None:
            row_names[rows_per.name] = FieldSpec(rows_per.name, "text")
            row_names[rows_per.value] = FieldSpec(rows_per.value, "text")
        time, time_else = self.table_time(node, what, by_ref)
        segments = self.key(node, what, row_names, check_fields=not written_by)
        cell_time = self.text(node, "cell_time", what, default="event")
        if cell_time not in CELL_TIMES:
            self.bad(
                _line(node, "cell_time"),
                f"{what}: cell_time is one of {', '.join(CELL_TIMES)} (default: event)",
            )
        columns = self.columns(node, what, row_names, families, pattern, written_by)
        if pattern and not written_by and "columns" not in node:
            self.bad(
                node.line,
                f"{what}: no 'columns': say which fields feed which qualifiers, or mark the "
                "table 'written_by: <job>' when another job fills it",
            )
        if any(at >= line for at, _ in self.problems):  # this table has problems already
            return None
        try:
            decl = TableDecl(
                name,
                tuple(families),
                KeyRecipe(tuple(segments), delimiter),
                pattern,
                self.text(node, "doc", what),
                self.text(node, "spec", what),
            )
        except ValueError as err:
            self.bad(_line(node, "key"), f"{what}: {err}")
            return None
        for fam in families:
            if pattern == "TB-CELL" and fam.max_versions == 1:
                self.bad(
                    line,
                    f"{what}: TB-CELL adds a timestamped cell per event, but family "
                    f"{fam.name} keeps 1 version, so each event erases the previous one; "
                    "give it max_versions covering one bucket's events (e.g. 60 a minute "
                    "× 60 for an hour bucket)",
                )
        rollup = self.rollup(node, what, decl) if "rollup" in node else None
        return TableSpec(
            decl=decl,
            columns=tuple(columns),
            time=time if time != event_time or time_else else "",
            time_else=time_else,
            cell_time=cell_time,
            rows_per=rows_per,
            written_by=written_by,
            rollup=rollup,
            line=line,
        )

    def table_time(self, node: _Map, what: str, refs: Mapping[str, FieldSpec]) -> tuple[str, str]:
        """``time: FIELD``, or ``time: [OPTIONAL, REQUIRED]``: the first that an event has
        stamps its cells (a correction's time when there is one, else the close's)."""
        raw = node.get("time")
        line = _line(node, "time")
        if raw is None:
            return "", ""
        if isinstance(raw, str):
            self.time_ref(raw, refs, line, f"{what}: time")
            return raw, ""
        if not (isinstance(raw, list) and len(raw) == 2 and all(isinstance(r, str) for r in raw)):
            self.bad(line, f"{what}: time is a time field, or a list [optional field, field]")
            return "", ""
        self.time_ref(raw[0], refs, line, f"{what}: time", optional_ok=True)
        self.time_ref(raw[1], refs, line, f"{what}: time")
        first, then = raw
        if first in refs and not refs[first].optional:
            self.bad(
                line,
                f"{what}: time [{first}, {then}]: {first} is required, so {then} "
                "would never be used; give one field",
            )
        if then in refs and refs[then].optional:
            self.bad(line, f"{what}: time [{first}, {then}]: the last one must be required")
        return first, then

    def rollup(self, node: _Map, what: str, decl: TableDecl) -> RollupRule | None:
        spec = self.mapping(node["rollup"], f"{what}: rollup", _line(node, "rollup"))
        if spec is None:
            return None
        self.keys(spec, ("from", "entity", "metric"), f"{what}: rollup")
        source = self.text(spec, "from", f"{what}: rollup", required=True)
        entity = self.text(spec, "entity", f"{what}: rollup", required=True)
        metric = self.text(spec, "metric", f"{what}: rollup")
        aggregates = {f.name for f in decl.families if f.aggregate}
        if decl.pattern != "AGGREGATE" or aggregates != {"sum", "count"}:
            self.bad(
                spec.line,
                f"{what}: a rollup table is AGGREGATE with aggregate families sum and count",
            )
        if entity and entity not in decl.key.fields:
            self.bad(_line(spec, "entity"), f"{what}: rollup entity {entity!r} is not in its key")
        if not source or not entity:
            return None
        return RollupRule(source, entity, metric)

    def rollup_source(self, spec: TableSpec, tables: Mapping[str, TableSpec]) -> None:
        rule = spec.rollup
        source = tables.get(rule.source)
        if source is None or source.written_by:
            self.bad(
                spec.line,
                f"table {spec.name}: rollup from {rule.source!r}: no table of this file written "
                f"from events has that name{_suggest(rule.source, tables)}",
            )
        elif rule.entity not in source.decl.key.fields:
            self.bad(
                spec.line,
                f"table {spec.name}: rollup entity {rule.entity!r} is not a key field of "
                f"{rule.source}",
            )

    def families(self, node: _Map, what: str) -> list[Family]:
        seq = self.sequence(node.get("families"), f"{what}: families", _line(node, "families"))
        out: list[Family] = []
        if seq is None:
            return out
        if not seq:
            self.bad(seq.line, f"{what}: families is empty; declare at least one")
        for index, item in enumerate(seq):
            line = _line(seq, index)
            fam = self.mapping(item, f"{what}: family", line)
            if fam is None:
                continue
            name = self.text(fam, "name", f"{what}: family", required=True)
            where = f"{what}: family {name}"
            self.keys(fam, ("name", "max_versions", "max_age", "aggregate", "doc"), where)
            if name and not _FAMILY.match(name):
                self.bad(_line(fam, "name"), f"{where}: a family name is 1-64 of [-_.a-zA-Z0-9]")
            versions = self.integer(fam, "max_versions", where)
            if "max_versions" in fam and versions is None:
                self.bad(
                    _line(fam, "max_versions"),
                    f"{where}: bad GC rule: max_versions keeps the newest N cells of a column "
                    "(N ≥ 1); write e.g. 'max_versions: 1'",
                )
            age = parse_duration(fam["max_age"]) if "max_age" in fam else None
            if "max_age" in fam and age is None:
                self.bad(
                    _line(fam, "max_age"),
                    f"{where}: bad GC rule: max_age {fam['max_age']!r} is not a duration; "
                    "write a whole number and a unit s, m, h, d or w (e.g. '30d')",
                )
            aggregate = self.text(fam, "aggregate", where) or None
            if aggregate and aggregate not in AGGREGATES:
                self.bad(
                    _line(fam, "aggregate"),
                    f"{where}: bad GC rule: aggregate {aggregate!r} is not supported; use 'sum' "
                    "(int64)",
                )
            if aggregate and versions:
                self.bad(
                    _line(fam, "max_versions"),
                    f"{where}: an aggregate family keeps one merged cell; drop max_versions",
                )
            if not versions and age is None and not aggregate:
                self.bad(
                    line,
                    f"{where}: no GC rule: every version of every cell is kept forever; add "
                    "max_versions (1 for one value per cell) and/or max_age",
                )
            out.append(Family(name, versions, age, aggregate, self.text(fam, "doc", where)))
        names = [f.name for f in out]
        for index, name in enumerate(names):
            if name in names[:index]:
                self.bad(_line(seq, index), f"{what}: family {name} is declared twice")
        return out

    def key(
        self, node: _Map, what: str, refs: Mapping[str, FieldSpec], check_fields: bool
    ) -> list[Segment]:
        seq = self.sequence(node.get("key"), f"{what}: key", _line(node, "key", node.line))
        out: list[Segment] = []
        if seq is None:
            return out
        if not seq:
            self.bad(seq.line, f"{what}: the key is empty; list its segments")
        for index, item in enumerate(seq):
            line = _line(seq, index)
            seg = self.segment(item, line, what, refs, check_fields)
            if seg is not None:
                out.append(seg)
        key_fields = {s.field for s in out if s.field}
        for seg in out:
            for name in seg.of:  # only a salt lists fields it hashes
                if name not in key_fields:
                    self.bad(
                        seq.line,
                        f"{what}: the salt hashes {name!r}, which is not another segment "
                        "of the key; salt the text of key segments (e.g. the time)",
                    )
        return out

    def segment(
        self, item: object, line: int, what: str, refs: Mapping[str, FieldSpec], check: bool
    ) -> Segment | None:
        if isinstance(item, str) and check and item in refs:  # shorthand: "- hostname"
            item = _Map({"text": item})
        seg = self.mapping(item, f"{what}: key segment", line)
        if seg is None:
            return None
        kinds = [k for k in seg if k in SEGMENT_KINDS or k in _SEGMENT_ALIASES]
        if len(kinds) != 1:
            other = [k for k in seg if k not in ("width", "format", "buckets", "bucket")]
            self.bad(
                line,
                f"{what}: a key segment names one kind"
                f"{_suggest(other[0], SEGMENT_KINDS) if other else ''}, got {list(seg)}; "
                f"use one of {', '.join(SEGMENT_KINDS)}",
            )
            return None
        raw = kinds[0]
        kind = _SEGMENT_ALIASES.get(raw, raw)
        params = {"zero_pad": ("width",), "space_pad": ("width",), "time": ("format",)}
        params |= {"salt": ("buckets",), "reverse_ts": ("bucket",)}
        allowed = (raw, *params.get(kind, ()))
        where = f"{what}: segment {kind}"
        self.keys(seg, allowed, where)
        arg = seg[raw]
        if kind == "const":
            if not isinstance(arg, str) or not arg:
                self.bad(line, f"{where}: the constant must be non-empty text")
                return None
            return Segment("const", arg=arg)
        if kind == "salt":
            names = [arg] if isinstance(arg, str) else arg
            if not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
                self.bad(line, f"{where}: list the key fields it hashes, e.g. 'salt: [ts]'")
                return None
            buckets = self.integer(seg, "buckets", where, minimum=2)
            if buckets is None:
                self.bad(line, f"{where}: give the bucket count, e.g. 'buckets: 3' (2 or more)")
                return None
            return Segment("salt", width=buckets, of=tuple(names))
        if not isinstance(arg, str) or not arg:
            self.bad(line, f"{where}: name the field it reads, e.g. '{raw}: hostname'")
            return None
        if check:
            spec = refs.get(arg)
            if spec is None:
                self.bad(
                    line,
                    f"{where}: field {arg!r} is not declared{_suggest(arg, refs)}; declare it "
                    "under event.fields (or fix the name)",
                )
            else:
                self.segment_type(kind, spec, line, where)
        if kind in ("zero_pad", "space_pad"):
            width = self.integer(seg, "width", where)
            if width is None:
                self.bad(line, f"{where}: give its width, e.g. 'width: 10'")
                return None
            return Segment(kind, field=arg, width=width)
        if kind == "time":
            fmt = self.text(seg, "format", where, required=True)
            if fmt not in TIME_FORMATS:
                self.bad(
                    _line(seg, "format"),
                    f"{where}: unknown label format {fmt!r}{_suggest(fmt, TIME_FORMATS)}; use "
                    f"one of {', '.join(TIME_FORMATS)}",
                )
                return None
            return Segment("time", field=arg, arg=fmt)
        if kind == "reverse_ts":
            bucket = self.text(seg, "bucket", where) or None
            if bucket and bucket not in BUCKET_UNITS:
                self.bad(_line(seg, "bucket"), f"{where}: bucket is one of {BUCKET_UNITS}")
                return None
            return Segment("reverse_ts", field=arg, arg=bucket)
        return Segment(kind, field=arg)

    def segment_type(self, kind: str, spec: FieldSpec, line: int, where: str) -> None:
        if spec.optional:
            self.bad(line, f"{where}: field {spec.ref!r} is optional; a key field is required")
        wants = {
            "epoch_ms": ("time",),
            "reverse_ts": ("time",),
            "time": ("time",),
            "zero_pad": ("integer",),
            "reverse_id": ("integer", "id", "text"),
        }.get(kind, ("text", "id", "number", "integer", "boolean"))
        if spec.type not in wants:
            self.bad(
                line,
                f"{where}: field {spec.ref!r} is {spec.type}; this segment needs "
                f"{' or '.join(wants)}",
            )

    def rows_per(self, node: _Map, what: str, refs: Mapping[str, FieldSpec]) -> RowsPer | None:
        spec = self.mapping(node["rows_per"], f"{what}: rows_per", _line(node, "rows_per"))
        if spec is None:
            return None
        self.keys(spec, ("fields", "name", "value"), f"{what}: rows_per")
        names = spec.get("fields")
        if not isinstance(names, list) or not names:
            self.bad(spec.line, f"{what}: rows_per.fields lists the fields to unpivot")
            return None
        for name in names:
            if name not in refs:
                self.bad(_line(spec, "fields"), f"{what}: rows_per field {name!r} is not declared")
        out_name = self.text(spec, "name", what, required=True)
        out_value = self.text(spec, "value", what, required=True)
        for given in (out_name, out_value):
            if given in refs:
                self.bad(spec.line, f"{what}: rows_per name {given!r} clashes with a field")
        return RowsPer(tuple(names), out_name, out_value)

    def columns(
        self,
        node: _Map,
        what: str,
        refs: Mapping[str, FieldSpec],
        families: Sequence[Family],
        pattern: str,
        written_by: str,
    ) -> list[ColumnSpec]:
        if "columns" not in node:
            return []
        seq = self.sequence(node["columns"], f"{what}: columns", _line(node, "columns"))
        if seq is None:
            return []
        fams = {f.name: f for f in families}
        out: list[ColumnSpec] = []
        seen: dict[tuple[str, str], int] = {}
        for index, item in enumerate(seq):
            line = _line(seq, index)
            col = self.mapping(item, f"{what}: column", line)
            if col is None:
                continue
            where = f"{what}: column on line {line}"
            self.keys(col, ("family", "qualifier", "value", "each", "add"), where)
            family = self.text(col, "family", where, required=True)
            fam = fams.get(family)
            if family and fam is None:
                self.bad(
                    _line(col, "family"),
                    f"{where}: family {family!r} is not one of this table's families "
                    f"({', '.join(fams)}){_suggest(family, fams)}",
                )
            spec = self.column(col, where, refs, line, family)
            if spec is None:
                continue
            if isinstance(spec.qualifier, str) and spec.qualifier:
                previous = seen.get((family, spec.qualifier))
                if previous:
                    self.bad(
                        line,
                        f"{what}: duplicate qualifier {family}:{spec.qualifier} (also on line "
                        f"{previous}): two fields would write the same cell; rename one",
                    )
                seen[(family, spec.qualifier)] = line
            if fam is not None:
                if fam.aggregate and spec.add is None:
                    self.bad(line, f"{where}: family {family} is an aggregate: use 'add:'")
                if not fam.aggregate and spec.add is not None:
                    self.bad(line, f"{where}: 'add' needs an aggregate family (aggregate: sum)")
            out.append(spec)
        if pattern == "AGGREGATE" and any(c.add is None for c in out):
            self.bad(seq.line, f"{what}: AGGREGATE columns add into aggregate families ('add:')")
        if pattern == "TS-BLOB" and not any(c.value[:1] in (("protobuf",), ("json",)) for c in out):
            self.bad(
                seq.line,
                f"{what}: TS-BLOB stores the event serialized in one cell: give the column "
                "'value: {json: [fields…]}' or 'value: {protobuf: module.Message, fields: …}'",
            )
        if pattern == "TB-COL" and not any(
            isinstance(c.qualifier, tuple) and c.qualifier[0] == "field" for c in out
        ):
            self.bad(
                seq.line,
                f"{what}: TB-COL names each new column by the event's value: give a column "
                "'qualifier: {field: NAME}'",
            )
        if not seq and not written_by:
            self.bad(seq.line, f"{what}: columns is empty; say which fields feed which cells")
        return out

    def column(
        self, col: _Map, where: str, refs: Mapping[str, FieldSpec], line: int, family: str
    ) -> ColumnSpec | None:
        def need(name: object, key: str, types: Sequence[str] = ()) -> bool:
            if not isinstance(name, str) or name not in refs:
                self.bad(
                    _line(col, key),
                    f"{where}: {key} reads field {name!r}, which is not declared"
                    f"{_suggest(name, refs)}; declare it under event.fields",
                )
                return False
            if types and refs[name].type not in types:
                self.bad(
                    _line(col, key),
                    f"{where}: {key} needs a field of type {' or '.join(types)}; "
                    f"{name!r} is {refs[name].type}",
                )
                return False
            return True

        if "each" in col:
            each = col["each"]
            if not need(each, "each", ("map",)):
                return None
            if "qualifier" in col or "value" in col:
                self.bad(line, f"{where}: 'each' takes qualifier and value from the map entries")
            return ColumnSpec(family, each=each, line=line)
        qualifier: str | tuple = ""
        raw = col.get("qualifier")
        if isinstance(raw, str) and raw:
            if len(raw.encode()) > MAX_QUALIFIER_BYTES:
                self.bad(_line(col, "qualifier"), f"{where}: a qualifier is at most 16 KiB")
            qualifier = raw
        elif isinstance(raw, _Map) and len(raw) == 1 and "field" in raw:
            if not need(raw["field"], "qualifier"):
                return None
            qualifier = ("field", raw["field"])
        elif isinstance(raw, _Map) and len(raw) == 1 and "time" in raw:
            if raw["time"] not in QUALIFIER_TIME_FORMATS:
                self.bad(
                    _line(col, "qualifier"),
                    f"{where}: qualifier time format is one of {QUALIFIER_TIME_FORMATS}",
                )
                return None
            qualifier = ("time", raw["time"])
        else:
            self.bad(
                _line(col, "qualifier", line),
                f"{where}: give a qualifier: text (BID), {{field: NAME}} or {{time: hhmm}}",
            )
            return None
        if "add" in col:
            add = col["add"]
            if "value" in col:
                self.bad(line, f"{where}: an aggregate column has 'add', not 'value'")
            if type(add) is not int and not need(add, "add", ("integer",)):
                return None
            return ColumnSpec(family, qualifier, add=add, line=line)
        raw = col.get("value")
        if "value" not in col:
            self.bad(line, f"{where}: give a value: a field name, {{const: TEXT}}, {{json: …}}")
            return None
        if isinstance(raw, str):
            if not need(raw, "value"):
                return None
            value: tuple = ("field", raw)
        elif isinstance(raw, _Map) and set(raw) == {"const"} and isinstance(raw["const"], str):
            value = ("const", raw["const"])
        elif isinstance(raw, _Map) and set(raw) == {"json"} and isinstance(raw["json"], list):
            for name in raw["json"]:
                need(name, "value")
            value = ("json", tuple(raw["json"]))
        elif isinstance(raw, _Map) and set(raw) == {"protobuf", "fields"}:
            value = self.protobuf(raw, where, refs, need)
            if value is None:
                return None
        else:
            self.bad(
                _line(col, "value"),
                f"{where}: value is a field name, {{const: TEXT}}, {{json: [fields]}} or "
                "{protobuf: module.Message, fields: {proto_field: field}}",
            )
            return None
        return ColumnSpec(family, qualifier, value, line=line)

    def protobuf(self, raw: _Map, where: str, refs: Mapping, need) -> tuple | None:
        message = raw["protobuf"]
        mapping = raw["fields"]
        if not isinstance(message, str) or "." not in message or not isinstance(mapping, _Map):
            self.bad(raw.line, f"{where}: protobuf: module.Message and fields: {{proto: field}}")
            return None
        try:
            cls = message_class(message)
        except (ImportError, AttributeError) as err:
            self.bad(raw.line, f"{where}: cannot import protobuf message {message!r}: {err}")
            return None
        known = set(cls.DESCRIPTOR.fields_by_name)
        for proto_field, name in mapping.items():
            if proto_field not in known:
                self.bad(
                    _line(mapping, proto_field),
                    f"{where}: {message} has no field {proto_field!r}"
                    f"{_suggest(proto_field, known)}",
                )
            need(name, "value")
        return ("protobuf", message, tuple(mapping.items()))

    def advisor(self, node: object, line: int, tables: Sequence[TableSpec]) -> None:
        """The ``advisor:`` section: defaults for every table, ``tables:`` per table."""
        spec = self.mapping(node, "advisor", line)
        if spec is None:
            return
        self.keys(spec, (*ADVISOR_KEYS, "tables"), "advisor")
        families = {f.name for t in tables for f in t.decl.families}
        self.advisor_workload(spec, "advisor", families)
        node_tables = self.section(spec, "tables", "advisor")
        declared = {t.name: t for t in tables}
        for name, section in node_tables.items():
            where = f"advisor.tables.{name}"
            if name not in declared:
                self.bad(
                    _line(node_tables, name),
                    f"{where}: no table {name!r} in this file{_suggest(str(name), declared)}",
                )
                continue
            table = self.mapping(section, where, _line(node_tables, name))
            if table is not None:
                self.keys(table, ADVISOR_KEYS, where)
                own = {f.name for f in declared[name].decl.families}
                self.advisor_workload(table, where, own)

    def advisor_workload(self, spec: _Map, where: str, families: set[str]) -> None:
        if "events_per_second" in spec and advisor_rate(spec["events_per_second"]) is None:
            self.bad(
                _line(spec, "events_per_second"),
                f"{where}: events_per_second is a positive number or 'N per DURATION' "
                f"(100000 per 5s), got {spec['events_per_second']!r}",
            )
        for key in ("source", "anti_pattern"):
            self.text(spec, key, where)
        models = self.section(spec, "fields", where)
        for name, model in models.items():
            at = f"{where}.fields.{name}"
            model = self.mapping(model, at, _line(models, name))
            if model is None:
                continue
            self.keys(model, ("cardinality", "kind", "note"), at)
            self.integer(model, "cardinality", at)
            kind = model.get("kind")
            if kind is not None and (type(kind) is not str or kind not in ADVISOR_FIELD_KINDS):
                self.bad(
                    _line(model, "kind"),
                    f"{at}: kind {kind!r}{_suggest(str(kind), ADVISOR_FIELD_KINDS)}; "
                    f"use one of {', '.join(ADVISOR_FIELD_KINDS)}",
                )
            self.text(model, "note", at)
        loads = self.section(spec, "families", where)
        for name, load in loads.items():
            at = f"{where}.families.{name}"
            if name not in families:
                self.bad(
                    _line(loads, name),
                    f"{at}: no family {name!r} here{_suggest(str(name), families)}",
                )
            load = self.mapping(load, at, _line(loads, name))
            if load is None:
                continue
            self.keys(load, ADVISOR_FAMILY_KEYS, at)
            cells = load.get("cells_per_event")
            if cells is not None and not _positive_number(cells):
                self.bad(_line(load, "cells_per_event"), f"{at}: cells_per_event is a number > 0")
            if load.get("columns") != "unbounded":
                self.integer(load, "columns", f"{at} (or 'unbounded')")
            self.integer(load, "qualifier_bytes", at, minimum=0)
            self.integer(load, "value_bytes", at, minimum=0)
            self.text_list(load, "qualifiers", at)
        self.text_list(spec, "query_fields", where)
        acks = self.section(spec, "acknowledge", where)
        for rule, reason in acks.items():
            if not isinstance(rule, str) or not _RULE_ID.match(rule):
                self.bad(_line(acks, rule), f"{where}.acknowledge: {rule!r} is not a rule id")
            if not isinstance(reason, str) or not reason.strip():
                self.bad(
                    _line(acks, rule),
                    f"{where}.acknowledge.{rule}: give the reason the design is deliberate",
                )
        derived = spec.get("derived")
        if derived is not None:
            derived = self.sequence(derived, f"{where}.derived", _line(spec, "derived"))
        for index, item in enumerate(derived or ()):
            at = f"{where}.derived[{index}]"
            item = self.mapping(item, at, _line(derived, index))
            if item is None:
                continue
            self.keys(item, ("name", "per_year", "keep", "guard", "note"), at)
            self.text(item, "name", at, required=True)
            if not _positive_number(item.get("per_year")):
                self.bad(_line(item, "per_year"), f"{at}: per_year (tables a year) is a number > 0")
            self.integer(item, "keep", at, minimum=0)
            self.integer(item, "guard", at)
            self.text(item, "note", at)

    def section(self, spec: _Map, key: str, where: str) -> _Map:
        """``spec[key]``, an optional mapping: empty when absent (or not a mapping: reported)."""
        node = spec.get(key)
        if node is None:
            return _Map()
        return self.mapping(node, f"{where}.{key}", _line(spec, key)) or _Map()

    def text_list(self, spec: _Map, key: str, where: str) -> None:
        value = spec.get(key)
        if value is not None and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            self.bad(_line(spec, key), f"{where}: {key} is a list of names")


@cache
def message_class(path: str) -> type:
    """``protos.balloon_pb2.BalloonMeasurement`` → the generated message class."""
    import importlib

    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _kind(node: object) -> str:
    if isinstance(node, dict):
        return "a mapping"
    if isinstance(node, list):
        return "a list"
    if node is None:
        return "nothing"
    return f"{type(node).__name__} {node!r}"[:60]


def _plain(node: object) -> object:
    if isinstance(node, dict):
        return {k: _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node


def parse_duration(value: object) -> dt.timedelta | None:
    """``30d``, ``12h``, ``90m``, ``3600s``, ``2w`` (or a number of seconds) → a positive
    duration; None when it is not one."""
    if type(value) is int and value > 0:
        return dt.timedelta(seconds=value)
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match and int(match.group(1)) > 0:
            return dt.timedelta(seconds=int(match.group(1)) * _DURATION_UNITS[match.group(2)])
    return None


def _positive_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def advisor_rate(value: object) -> float | None:
    """An ``events_per_second`` value: a number, or ``N per DURATION`` (``100000 per 5s``,
    ``10000000 per 15m``) so a rate reads as the workload says it; None when it is neither."""
    if _positive_number(value):
        return float(value)
    if isinstance(value, str):
        match = _ADVISOR_RATE.match(value)
        if match:
            count = float(match.group(1))
            every = parse_duration(match.group(2).replace(" ", ""))
            if count > 0 and every is not None:
                return count / every.total_seconds()
    return None


def loads(text: str, source: str = "<schema>") -> Schema:
    """A :class:`Schema` from YAML or JSON text; :class:`SchemaError` lists every problem with
    its line and the fix."""
    try:
        document = yaml.load(text, Loader=_Loader)  # a SafeLoader subclass
    except _Problem as problem:
        raise SchemaError(source, [(problem.line, problem.message)]) from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark else 0
        raise SchemaError(source, [(line, f"not valid YAML: {err.problem or err}")]) from None
    except yaml.YAMLError as err:
        raise SchemaError(source, [(0, f"not valid YAML: {err}")]) from None
    broken = [
        (
            line,
            f"{value[:40]!r} is not valid Unicode text (a lone surrogate): write the "
            "character itself, not its UTF-16 escapes",
        )
        for line, value in _unencodable(document)
    ]
    if broken:  # e.g. "\ud83d" escapes: YAML does not pair surrogates as JSON does
        raise SchemaError(source, broken)
    checker = _Checker(source)
    schema = checker.schema(document)
    if checker.problems or schema is None:
        raise SchemaError(source, sorted(checker.problems, key=lambda p: p[0]))
    return dataclasses.replace(schema, source=source, text=text)


def _unencodable(node: object, line: int = 0):
    """Every text of the document that UTF-8 cannot encode, with its line."""
    if isinstance(node, str):
        try:
            node.encode("utf-8")
        except UnicodeEncodeError:
            yield line, node
    elif isinstance(node, dict):
        for key, value in node.items():
            at = _line(node, key, line)
            yield from _unencodable(key, at)
            yield from _unencodable(value, at)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _unencodable(value, _line(node, index, line))


def with_times(
    schema: Schema,
    formats: Mapping[str, str] | None = None,
    zone: str = "",
    ambiguous: str = "",
) -> Schema:
    """``schema`` with its time fields read another way (a job's --time_format,
    --input_timezone, --ambiguous_times): ``formats`` by source field name, ``zone`` for every
    time field whose format carries no offset. Validated like the file itself; the result's
    text is the changed schema, so a builder pickled from it keeps the change."""
    formats = dict(formats or {})
    times = {f.name for f in schema.fields if f.type == "time"}
    unknown = sorted(set(formats) - times)
    if unknown:
        raise SchemaError(
            schema.source,
            [(0, f"--time_format: {', '.join(unknown)} is not a time field; the time fields "
              f"are {', '.join(sorted(times)) or 'none'}")],
        )  # fmt: skip
    doc = yaml.safe_load(schema.text)  # the file's own data: only the time fields change
    fields = doc["event"]["fields"]
    for spec in schema.fields:
        if spec.type != "time":
            continue
        entry = fields[spec.name]
        if not isinstance(entry, dict):  # the shorthand "name: time"
            entry = fields[spec.name] = {"type": entry}
        fmt = entry["format"] = formats.get(spec.name, spec.format)
        if zone and not (timefmt.has_offset(fmt) and fmt != "auto"):
            entry["timezone"] = zone
        if ambiguous == "error":  # the default, which a file without a zone may not name
            entry.pop("ambiguous", None)
        elif ambiguous:
            entry["ambiguous"] = ambiguous
    return loads(json.dumps(doc, indent=1), schema.source)


def load(path: str | Path) -> Schema:
    """A schema file: a local path, or any path Beam's file systems read (``gs://…``)."""
    name = str(path)
    if "://" in name:
        from apache_beam.io.filesystems import FileSystems

        with FileSystems.open(name) as handle:
            return loads(handle.read().decode("utf-8"), name)
    return loads(Path(name).read_text(encoding="utf-8"), name)


@cache
def builtin(name: str) -> Schema:
    """The built-in dataset ``name``'s schema (``transforms/declarations/<name>.yaml``)."""
    return load(DECLARATIONS / f"{name}.yaml")


# -- describing the input -----------------------------------------------------------------------


def _field_line(spec: FieldSpec) -> str:
    limits = []
    if spec.max_length:
        limits.append(f"at most {spec.max_length} characters")
    if spec.minimum is not None or spec.maximum is not None:
        limits.append(f"{spec.minimum or ''}..{spec.maximum or ''}")
    if spec.type == "time" and spec.format != "auto":
        limits.append(f"format {spec.format}")
    if spec.max_entries:
        limits.append(f"at most {spec.max_entries} entries")
    if spec.optional:
        limits.append("optional")
    detail = f" ({', '.join(limits)})" if limits else ""
    doc = f": {spec.doc}" if spec.doc else ""
    return f"  {spec.name:<14} {spec.type}{detail}{doc}"


def describe_input(schema: Schema) -> str:
    """What one input record of ``schema`` holds, and an example line: the input section of a
    job's ``--help``, written from the schema so it never drifts from what the job accepts."""
    lines = ["Input: one event per JSON line (or CSV row), with the fields:"]
    lines += [_field_line(spec) for spec in schema.fields]
    if schema.example:
        lines += ["Example line:", f"  {schema.example}"]
    return "\n".join(lines)
