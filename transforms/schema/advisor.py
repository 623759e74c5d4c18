"""The ``advisor:`` section of a schema file: the workload the schema advisor judges the keys
against (docs/user-guide.md §3), checked and turned into an :class:`AdvisorSection`.

Values at the top of the section apply to every table of the file; ``tables: {NAME: …}`` holds
a table's own. What the file leaves out stays None, so the reader
(:mod:`btts.advisor.workload`) applies its own defaults.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from transforms.schema.model import (
    ADVISOR_FAMILY_KEYS,
    ADVISOR_FIELD_KINDS,
    ADVISOR_KEYS,
    AdvisorDerived,
    AdvisorFamily,
    AdvisorField,
    AdvisorSection,
    AdvisorWorkload,
    TableSpec,
)
from transforms.schema.problems import Problems, suggest
from transforms.schema.values import advisor_rate, positive_number
from transforms.schema.yaml_lines import Map, line_of

__all__ = ["advisor"]

_RULE_ID = re.compile(r"[A-Z]+(-[A-Z]+)+\Z")


def advisor(
    problems: Problems, node: object, line: int, tables: Sequence[TableSpec]
) -> AdvisorSection | None:
    """The ``advisor:`` section (on ``line``) of a file declaring ``tables``: defaults for every
    table, ``tables:`` per table. None when it is not a mapping (reported)."""
    spec = problems.mapping(node, "advisor", line)
    if spec is None:
        return None
    problems.keys(spec, (*ADVISOR_KEYS, "tables"), "advisor")
    families = {f.name for t in tables for f in t.decl.families}
    defaults = advisor_workload(problems, spec, "advisor", families)
    node_tables = problems.section(spec, "tables", "advisor")
    declared = {t.name: t for t in tables}
    own: list[tuple[str, AdvisorWorkload]] = []
    for name, section in node_tables.items():
        where = f"advisor.tables.{name}"
        if name not in declared:
            problems.bad(
                line_of(node_tables, name),
                f"{where}: no table {name!r} in this file{suggest(str(name), declared)}",
            )
            continue
        table = problems.mapping(section, where, line_of(node_tables, name))
        if table is not None:
            problems.keys(table, ADVISOR_KEYS, where)
            families_here = {f.name for f in declared[name].decl.families}
            own.append((name, advisor_workload(problems, table, where, families_here)))
    return AdvisorSection(defaults, tuple(own))


def advisor_workload(
    problems: Problems, spec: Map, where: str, families: set[str]
) -> AdvisorWorkload:
    """One level of the section (``where``): its values, every mistake reported."""
    rate = None
    if "events_per_second" in spec:
        rate = advisor_rate(spec["events_per_second"])
        if rate is None:
            problems.bad(
                line_of(spec, "events_per_second"),
                f"{where}: events_per_second is a positive number or 'N per DURATION' "
                f"(100000 per 5s), got {spec['events_per_second']!r}",
            )
    source, anti_pattern = (problems.text(spec, key, where) for key in ("source", "anti_pattern"))
    fields = _fields(problems, problems.section(spec, "fields", where), f"{where}.fields")
    loads = _families(problems, problems.section(spec, "families", where), where, families)
    query_fields = problems.text_list(spec, "query_fields", where)
    acks = problems.section(spec, "acknowledge", where)
    for rule, reason in acks.items():
        if not isinstance(rule, str) or not _RULE_ID.match(rule):
            problems.bad(line_of(acks, rule), f"{where}.acknowledge: {rule!r} is not a rule id")
        if not isinstance(reason, str) or not reason.strip():
            problems.bad(
                line_of(acks, rule),
                f"{where}.acknowledge.{rule}: give the reason the design is deliberate",
            )
    derived = spec.get("derived")
    if derived is not None:
        derived = problems.sequence(derived, f"{where}.derived", line_of(spec, "derived"))
    given = tuple(k for k in ADVISOR_KEYS if k in spec)
    return AdvisorWorkload(
        given=given,
        events_per_second=rate,
        source=source if "source" in spec else None,
        fields=fields if "fields" in spec else None,
        families=loads if "families" in spec else None,
        query_fields=query_fields,
        derived=_derived(problems, derived, where) if "derived" in spec else None,
        acknowledge=tuple(acks.items()) if "acknowledge" in spec else None,
        anti_pattern=anti_pattern if "anti_pattern" in spec else None,
    )


def _fields(problems: Problems, models: Map, where: str) -> tuple[tuple[str, AdvisorField], ...]:
    out = []
    for name, model in models.items():
        at = f"{where}.{name}"
        model = problems.mapping(model, at, line_of(models, name))
        if model is None:
            continue
        problems.keys(model, ("cardinality", "kind", "note"), at)
        cardinality = problems.integer(model, "cardinality", at)
        kind = model.get("kind")
        if kind is not None and (type(kind) is not str or kind not in ADVISOR_FIELD_KINDS):
            problems.bad(
                line_of(model, "kind"),
                f"{at}: kind {kind!r}{suggest(str(kind), ADVISOR_FIELD_KINDS)}; "
                f"use one of {', '.join(ADVISOR_FIELD_KINDS)}",
            )
        note = problems.text(model, "note", at)
        out.append((name, AdvisorField(cardinality, kind, note if "note" in model else None)))
    return tuple(out)


def _families(
    problems: Problems, loads: Map, where: str, families: set[str]
) -> tuple[tuple[str, AdvisorFamily], ...]:
    out = []
    for name, load in loads.items():
        at = f"{where}.families.{name}"
        if name not in families:
            problems.bad(
                line_of(loads, name),
                f"{at}: no family {name!r} here{suggest(str(name), families)}",
            )
        load = problems.mapping(load, at, line_of(loads, name))
        if load is None:
            continue
        problems.keys(load, ADVISOR_FAMILY_KEYS, at)
        cells = load.get("cells_per_event")
        if cells is not None and not positive_number(cells):
            problems.bad(line_of(load, "cells_per_event"), f"{at}: cells_per_event is a number > 0")
        columns = load.get("columns")
        if columns != "unbounded":
            columns = problems.integer(load, "columns", f"{at} (or 'unbounded')")
        family = AdvisorFamily(
            cells_per_event=cells,
            columns=columns,
            qualifier_bytes=problems.integer(load, "qualifier_bytes", at, minimum=0),
            value_bytes=problems.integer(load, "value_bytes", at, minimum=0),
            qualifiers=problems.text_list(load, "qualifiers", at),
        )
        out.append((name, family))
    return tuple(out)


def _derived(problems: Problems, derived: object, where: str) -> tuple[AdvisorDerived, ...]:
    out = []
    for index, item in enumerate(derived or ()):
        at = f"{where}.derived[{index}]"
        item = problems.mapping(item, at, line_of(derived, index))
        if item is None:
            continue
        problems.keys(item, ("name", "per_year", "keep", "guard", "note"), at)
        name = problems.text(item, "name", at, required=True)
        per_year = item.get("per_year")
        if not positive_number(per_year):
            problems.bad(
                line_of(item, "per_year"), f"{at}: per_year (tables a year) is a number > 0"
            )
        keep = problems.integer(item, "keep", at, minimum=0)
        guard = problems.integer(item, "guard", at)
        note = problems.text(item, "note", at)
        out.append(AdvisorDerived(name, per_year, keep, guard, note if "note" in item else None))
    return tuple(out)
