"""The workload a table's keys are judged against, read from its schema file's ``advisor:``.

A :class:`~transforms.table_model.TableDecl` holds a table's key recipe and families, but not how
hard it is written, how many distinct values each key field takes, whether a numeric field is
assigned sequentially, how many columns a row holds, or which findings are deliberate. The schema
file says so in its ``advisor:`` section (docs/user-guide.md §3): values at the top of the section
apply to every table of the file, ``tables: {NAME: …}`` overrides them per table. The built-in
datasets carry theirs in ``transforms/declarations/*.yaml``, with the source of every number.

Field cardinality is *nested*: the number of distinct values of a field under one value of the key
fields before it (50 balloons per location), so the product over a key's fields is the number of
distinct rows alive at one moment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from transforms import builtin_tables, schema_file
from transforms.schema_file import advisor_rate

__all__ = [
    "DEFAULT_CARDINALITY",
    "DEFAULT_EVENTS_PER_S",
    "NODE_WRITES_PER_S",
    "DerivedTables",
    "FamilyLoad",
    "FieldModel",
    "Hints",
    "Workload",
    "hints_for",
    "hints_from_advisor",
]

# Writes per second one SSD node sustains (Bigtable's published figure for small rows).
NODE_WRITES_PER_S = 14_000

DEFAULT_EVENTS_PER_S = 1000.0
DEFAULT_CARDINALITY = 1000


@dataclass(frozen=True)
class FieldModel:
    """One key field: how many distinct values it takes (under one value of the fields before
    it) and what kind of value it is (``None``: guessed from its name)."""

    cardinality: int = DEFAULT_CARDINALITY
    kind: str | None = None
    note: str = ""


@dataclass(frozen=True)
class FamilyLoad:
    """What one event writes into a family, and how many columns a row of it can hold
    (``columns=None``: unbounded, the qualifiers are data)."""

    cells_per_event: float = 1.0
    columns: int | None = 1
    qualifier_bytes: int = 8
    value_bytes: int = 8
    qualifiers: tuple[str, ...] = ()


@dataclass(frozen=True)
class DerivedTables:
    """Tables a job creates from a declaration over time (one per day, per tenant…)."""

    name: str
    per_year: float
    keep: int | None
    guard: int | None
    note: str = ""


@dataclass(frozen=True)
class Workload:
    """How a table is written: events per second, its key fields, its families' cells."""

    events_per_s: float = DEFAULT_EVENTS_PER_S
    fields: Mapping[str, FieldModel] = field(default_factory=dict)
    families: Mapping[str, FamilyLoad] = field(default_factory=dict)
    # Fields every main query of the table knows, so they could lead the key (promotion).
    query_fields: tuple[str, ...] = ()
    derived: tuple[DerivedTables, ...] = ()
    source: str = "assumed: no advisor section"

    def field(self, name: str) -> FieldModel:
        return self.fields.get(name, FieldModel())

    def family(self, name: str) -> FamilyLoad:
        return self.families.get(name, FamilyLoad())


@dataclass(frozen=True)
class Hints:
    """A table's workload, the findings it accepts (rule id → reason) and, for a documented
    anti-pattern kept for demonstrations, why it exists."""

    workload: Workload = field(default_factory=Workload)
    acknowledged: Mapping[str, str] = field(default_factory=dict)
    anti_pattern: str = ""


def _section(advisor: Mapping | None, table: str | None) -> dict:
    """The file-wide values with the table's own on top (``fields`` and ``families`` merge by
    name; every other key is replaced)."""
    base = {k: v for k, v in (advisor or {}).items() if k != "tables"}
    own = ((advisor or {}).get("tables") or {}).get(table) or {} if table else {}
    merged = {**base, **own}
    for key in ("fields", "families", "acknowledge"):
        if key in base and key in own:
            merged[key] = {**(base[key] or {}), **(own[key] or {})}
    return merged


def _family(model: Mapping) -> FamilyLoad:
    columns = model.get("columns", 1)
    return FamilyLoad(
        cells_per_event=float(model.get("cells_per_event", 1.0)),
        columns=None if columns == "unbounded" else int(columns),
        qualifier_bytes=int(model.get("qualifier_bytes", 8)),
        value_bytes=int(model.get("value_bytes", 8)),
        qualifiers=tuple(model.get("qualifiers") or ()),
    )


def hints_from_advisor(advisor: Mapping | None, table: str | None = None) -> Hints:
    """The hints a schema file's ``advisor:`` section gives ``table`` (validated by
    :func:`transforms.schema_file.load`; defaults where it is silent)."""
    section = _section(advisor, table)
    if not section:
        return Hints()
    rate = advisor_rate(section.get("events_per_second", DEFAULT_EVENTS_PER_S))
    # The section's field and derived-table entries have exactly these classes' keys.
    workload = Workload(
        events_per_s=rate if rate is not None else DEFAULT_EVENTS_PER_S,
        fields={n: FieldModel(**m) for n, m in (section.get("fields") or {}).items()},
        families={n: _family(m or {}) for n, m in (section.get("families") or {}).items()},
        query_fields=tuple(section.get("query_fields") or ()),
        derived=tuple(DerivedTables(**item) for item in section.get("derived") or ()),
        source=section.get("source") or "the schema file's advisor section",
    )
    return Hints(
        workload=workload,
        acknowledged=dict(section.get("acknowledge") or {}),
        anti_pattern=section.get("anti_pattern") or "",
    )


def hints_for(table: str) -> Hints:
    """A built-in table's hints, from its declaration file's ``advisor:`` section (defaults for
    a table no file declares)."""
    dataset = builtin_tables.dataset_of(table)
    if dataset is None:
        return Hints()
    return hints_from_advisor(schema_file.builtin(dataset).advisor, table)
