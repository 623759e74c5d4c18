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

from transforms import schema as schema_lib
from transforms.schema import (
    AdvisorDerived,
    AdvisorFamily,
    AdvisorField,
    AdvisorSection,
    AdvisorWorkload,
    builtin_tables,
)

__all__ = ["NODE_WRITES_PER_S", "Hints", "Workload", "hints_for", "hints_from_advisor"]

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


def _family(load: AdvisorFamily) -> FamilyLoad:
    default = FamilyLoad()
    return FamilyLoad(
        cells_per_event=float(_given(load.cells_per_event, default.cells_per_event)),
        columns=None if load.columns == "unbounded" else int(_given(load.columns, 1)),
        qualifier_bytes=int(_given(load.qualifier_bytes, default.qualifier_bytes)),
        value_bytes=int(_given(load.value_bytes, default.value_bytes)),
        qualifiers=tuple(load.qualifiers or ()),
    )


def _given(value: object, default: object) -> object:
    return default if value is None else value


def _field(model: AdvisorField) -> FieldModel:
    default = FieldModel()
    return FieldModel(
        cardinality=_given(model.cardinality, default.cardinality),
        kind=model.kind,
        note=_given(model.note, default.note),
    )


def _derived(item: AdvisorDerived) -> DerivedTables:
    return DerivedTables(item.name, item.per_year, item.keep, item.guard, item.note or "")


def hints_from_advisor(advisor: AdvisorSection | None, table: str | None = None) -> Hints:
    """The hints a schema file's ``advisor:`` section gives ``table`` (checked by
    :func:`transforms.schema.load`; defaults where it is silent): the file-wide values with the
    table's own on top (``fields``, ``families`` and ``acknowledge`` merge by name; every other
    value is replaced)."""
    if not advisor:
        return Hints()
    base = advisor.defaults
    own = advisor.table(table) or AdvisorWorkload()
    if not base.given and not own.given:
        return Hints()

    def value(key: str) -> object:
        return getattr(own if key in own.given else base, key)

    def merged(key: str) -> dict:
        return {**dict(getattr(base, key) or ()), **dict(getattr(own, key) or ())}

    rate = value("events_per_second")
    workload = Workload(
        events_per_s=rate if rate is not None else DEFAULT_EVENTS_PER_S,
        fields={n: _field(m) for n, m in merged("fields").items()},
        families={n: _family(m) for n, m in merged("families").items()},
        query_fields=tuple(value("query_fields") or ()),
        derived=tuple(_derived(item) for item in value("derived") or ()),
        source=value("source") or "the schema file's advisor section",
    )
    return Hints(
        workload=workload,
        acknowledged=merged("acknowledge"),
        anti_pattern=value("anti_pattern") or "",
    )


def hints_for(table: str) -> Hints:
    """A built-in table's hints, from its declaration file's ``advisor:`` section (defaults for
    a table no file declares)."""
    dataset = builtin_tables.dataset_of(table)
    if dataset is None:
        return Hints()
    return hints_from_advisor(schema_lib.builtin(dataset).advisor, table)
