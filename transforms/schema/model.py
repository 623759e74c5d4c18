"""The schema model: what a loaded schema file says, as frozen values.

Every value here is built by the validators of this package (:mod:`.event`, :mod:`.tables`,
:mod:`.key_recipe`, :mod:`.columns`, :mod:`.queries`, :mod:`.advisor`) once the file has passed
every check, so a reader never meets a half-checked schema. Pure: no YAML, no Beam, no client.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from transforms.errors import Undeclared
from transforms.table_model import (
    BUCKET_UNITS,
    TIME_FORMATS,
    Family,
    KeyRecipe,
    Segment,
    TableDecl,
)
from transforms.text import timefmt
from transforms.text.csv_dialect import DEFAULT as CSV_DEFAULT
from transforms.text.csv_dialect import CsvDialect

__all__ = [
    "ADVISOR_FAMILY_KEYS",
    "ADVISOR_FIELD_KINDS",
    "ADVISOR_KEYS",
    "AGGREGATES",
    "CASES",
    "CELL_TIMES",
    "DECLARATIONS",
    "FIELD_KEYS",
    "FIELD_TYPES",
    "INDEX_FAMILY",
    "MAP_QUALIFIERS",
    "QUALIFIER_TIME_FORMATS",
    "RECORD_NUMBER",
    "SEGMENT_KINDS",
    "TIME_ROLES",
    "WHITESPACE",
    "AdvisorDerived",
    "AdvisorFamily",
    "AdvisorField",
    "AdvisorSection",
    "AdvisorWorkload",
    "ColumnSpec",
    "FieldSpec",
    "IndexSpec",
    "QuerySpec",
    "RollupRule",
    "RowsPer",
    "Schema",
    "TableSpec",
    "Unpivot",
]

# docs/user-guide.md's table of field types says what each accepts and keeps, and its options.
RECORD_NUMBER = "record_number"  # ``from: record_number``: the record's number in its file
FIELD_TYPES = ("text", "number", "integer", "id", "boolean", "time", "map", "float64")
# what a field (or a constant) gives a time made of several (``from: {year: Y, quarter: Q}``)
TIME_ROLES = ("year", "quarter", "month", "week", "day", "hour", "minute", "second", "date", "time")
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
DECLARATIONS = Path(__file__).parent.parent / "declarations"  # the built-in datasets' files


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
    earliest: str = ""  # time fields: the first day (YYYY-MM-DD) it may hold; "": 1970-01-01
    # a time made from other fields, ((role, field name), ...): not in the input (``from:``)
    sources: tuple[tuple[str, str], ...] = ()
    # the constant parts of such a time, ((role, number), ...): ``from: {year: 1973, ...}``
    constants: tuple[tuple[str, int], ...] = ()
    # such a time's ``format:``: how its ``date`` part is written ("": YYYY-MM-DD)
    date_format: str = ""
    round: str = ""  # time fields of format decimal_year: the unit their times are rounded to
    # texts that mean "no value" in this field (None: the event's ``missing``)
    missing: tuple[str, ...] | None = None
    doc: str = ""
    # a CSV file's column read by position (1 is the first), whatever its header says
    # (``from: N``: two columns of one name are two fields)
    column: int = 0
    # the record's number in its source file (``from: record_number``): not in the input, given
    # by the reader to each record (1 is the file's first record)
    numbered: bool = False
    line: int = field(default=0, compare=False)

    @property
    def ref(self) -> str:
        return self.alias or self.name

    @property
    def earliest_ms(self) -> int:
        """Epoch ms of the first instant (UTC) this time field may hold: 0 unless declared."""
        return timefmt.day_ms(self.earliest) if self.earliest else 0


# A field's keys in a file: its attributes (but its name, the entry's key), four renamed.
_FILE_KEYS = {"alias": "as", "minimum": "min", "maximum": "max", "sources": "from"}
FIELD_KEYS = tuple(
    _FILE_KEYS.get(f.name, f.name)
    for f in dataclasses.fields(FieldSpec)
    # (constants, a column's position and the record number are written in ``from``; a made
    # time's date format is its ``format``)
    if f.name not in ("name", "line", "constants", "column", "date_format", "numbered")
)


@dataclass(frozen=True)
class Unpivot:
    """``event.unpivot``: each listed (or ``match``-ing) input column becomes one event, its
    name in field ``name`` and its value in field ``value``; other columns go to every event."""

    name: str
    value: str
    columns: tuple[str, ...] = ()
    match: str = ""  # a regular expression a whole column name matches


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
class IndexSpec:
    """``index:``: the table of the dataset's series index (one row per metric and tag set,
    with when it was first and last seen), written by every ingest job beside its rows and read
    by ``btts serve`` to list series without reading data (:mod:`transforms.scans.series_index`
    says what it holds)."""

    table: str
    line: int = field(default=0, compare=False)

    def decl(self) -> TableDecl:
        """The index table's declaration: one family keeping one version of each column (the
        first and last times, written idempotently as cell timestamps)."""
        family = Family(INDEX_FAMILY, max_versions=1, doc="first/last seen, as cell timestamps")
        key = KeyRecipe((Segment("const", arg="SERIES"),))
        return TableDecl(self.table, (family,), key, "SERIES-INDEX", doc=_INDEX_DOC)


INDEX_FAMILY = "s"
_INDEX_DOC = (
    "The series index: per metric and tag set (and per tag value, per metric) the first and last "
    "time seen; written beside the rows by every ingest job, rebuilt by `btts index rebuild`."
)


@dataclass(frozen=True)
class QuerySpec:
    """One declared query of ``queries:`` (:mod:`transforms.schema.queries` says what each
    field means)."""

    name: str
    table: str
    select: tuple[str, ...] = ()
    read: str = "prefix"
    latest: bool = False
    limit: int | None = None
    per: str = ""
    doc: str = ""
    line: int = field(default=0, compare=False)


# -- the advisor section: every value as the file gives it, None where it is silent ----------


@dataclass(frozen=True)
class AdvisorField:
    """``advisor.fields.NAME``: a key field's nested cardinality, kind and a note."""

    cardinality: int | None = None
    kind: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class AdvisorFamily:
    """``advisor.families.NAME``: what one event writes into a family. ``columns`` is a count
    or ``"unbounded"``."""

    cells_per_event: float | None = None
    columns: int | str | None = None
    qualifier_bytes: int | None = None
    value_bytes: int | None = None
    qualifiers: tuple[str, ...] | None = None


@dataclass(frozen=True)
class AdvisorDerived:
    """``advisor.derived[i]``: tables a job creates from a declaration over time."""

    name: str
    per_year: float
    keep: int | None = None
    guard: int | None = None
    note: str | None = None


@dataclass(frozen=True)
class AdvisorWorkload:
    """The values of one level of the advisor section (the file-wide defaults, or one table's
    own). ``given`` names the keys the file wrote at this level, in order: a table's own value
    replaces the default only where it is given."""

    given: tuple[str, ...] = ()
    events_per_second: float | None = None  # already per second (``N per DURATION`` divided)
    source: str | None = None
    fields: tuple[tuple[str, AdvisorField], ...] | None = None
    families: tuple[tuple[str, AdvisorFamily], ...] | None = None
    query_fields: tuple[str, ...] | None = None
    derived: tuple[AdvisorDerived, ...] | None = None
    acknowledge: tuple[tuple[str, str], ...] | None = None
    anti_pattern: str | None = None


@dataclass(frozen=True)
class AdvisorSection:
    """A schema file's ``advisor:`` section: values for every table, ``tables`` per table."""

    defaults: AdvisorWorkload = AdvisorWorkload()
    tables: tuple[tuple[str, AdvisorWorkload], ...] = ()

    def table(self, name: str | None) -> AdvisorWorkload | None:
        """``name``'s own values (None when the section says nothing of it)."""
        return dict(self.tables).get(name) if name else None


@dataclass(frozen=True)
class Schema:
    dataset: str
    time: str
    fields: tuple[FieldSpec, ...]
    tables: tuple[TableSpec, ...]
    doc: str = ""
    advisor: AdvisorSection | None = field(default=None, compare=False, hash=False)
    example: str = ""  # one input line, for --help and the docs (tests build it)
    queries: tuple[QuerySpec, ...] = ()  # the named reads of ``btts query``
    source: str = field(default="", compare=False)
    text: str = field(default="", compare=False, repr=False)
    # modules besides the project's ``protos`` package the file's protobuf messages may come from
    proto_modules: tuple[str, ...] = field(default=(), compare=False)
    extra_fields: str = "refuse"  # or "ignore": input fields the event does not declare
    unpivot: Unpivot | None = None
    index: IndexSpec | None = None  # the series index ``btts serve`` lists series from
    missing: tuple[str, ...] = ()  # texts that mean "no value" in any field (``event.missing``)
    csv: CsvDialect = CSV_DEFAULT  # how its CSV files are written (``event.csv``)

    def table(self, name: str) -> TableSpec:
        """Raises Undeclared (a UserError naming the names there are)."""
        for spec in self.tables:
            if spec.name == name:
                return spec
        raise Undeclared(f"schema {self.dataset} has no table {name!r}; it has {self.table_names}")

    @property
    def table_names(self) -> list[str]:
        return [t.name for t in self.tables]

    def decls(self) -> dict[str, TableDecl]:
        return {t.name: t.decl for t in self.tables}

    def written(self) -> list[TableSpec]:
        """The tables events are written to (not the ones another job fills)."""
        return [t for t in self.tables if not t.written_by]

    def tables_to_write(self, tables: Sequence[str] | None = None) -> list[str]:
        """The tables a builder of this schema writes: ``tables``, each one written from
        events, or all of those; a ValueError names one it cannot write. A job knows them
        before (and without) compiling its builder."""
        written = [t.name for t in self.written()]
        chosen = list(tables) if tables else written
        unknown = [t for t in chosen if t not in written]
        if unknown:
            raise ValueError(
                f"schema {self.dataset} writes no table {', '.join(unknown)} from events; "
                f"it writes {', '.join(written) or 'none'}"
            )
        if not chosen:
            raise ValueError(f"schema {self.dataset}: no table is written from events")
        return chosen

    def field_by_ref(self) -> dict[str, FieldSpec]:
        return {f.ref: f for f in self.fields}

    @property
    def record_number(self) -> str:
        """The name of the field that holds each record's number in its file (declared
        ``from: record_number``), or "" when none does."""
        return next((f.name for f in self.fields if f.numbered), "")
