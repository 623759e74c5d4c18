"""The ``tables:`` section of a schema file: each table's name, pattern, families (GC rules),
row-key recipe (:mod:`.key_recipe`), columns (:mod:`.columns`), time and rollup."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from transforms.schema.columns import columns
from transforms.schema.era import table_era
from transforms.schema.event import time_ref
from transforms.schema.key_recipe import key
from transforms.schema.model import (
    AGGREGATES,
    CELL_TIMES,
    FieldSpec,
    IndexSpec,
    RollupRule,
    RowsPer,
    TableSpec,
)
from transforms.schema.problems import Problems, suggest
from transforms.schema.values import parse_duration
from transforms.schema.yaml_lines import Map, line_of
from transforms.table_model import PATTERNS, Family, KeyRecipe, TableDecl
from transforms.text import keys

__all__ = ["index", "rollup_source", "table"]

_TABLE = re.compile(r"[_a-zA-Z0-9][-_.a-zA-Z0-9]{0,49}\Z")
_FAMILY = re.compile(r"[-_.a-zA-Z0-9]{1,64}\Z")


_ALLOWED = (
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
    "cell_timestamp",
    "rows_per",
    "written_by",
    "rollup",
)


def table(
    problems: Problems,
    node: object,
    line: int,
    fields: tuple[FieldSpec, ...],
    event_time: str,
    proto_modules: Sequence[str] = (),
) -> TableSpec | None:
    """One entry of ``tables:`` (None when it has problems, all reported)."""
    node = problems.mapping(node, "table", line)
    if node is None:
        return None
    name = problems.text(node, "name", "table", required=True) or f"<table on line {line}>"
    what = f"table {name}"
    problems.keys(node, _ALLOWED, what)
    if "name" in node and not _TABLE.match(name):
        problems.bad(line_of(node, "name"), f"{what}: a table id is 1-50 of [-_.a-zA-Z0-9]")
    pattern = _pattern(problems, node, what)
    written_by = problems.text(node, "written_by", what)
    delimiter = _delimiter(problems, node, what)
    fams = families(problems, node, what)
    by_ref = {f.ref: f for f in fields}
    unpivot = rows_per(problems, node, what, by_ref) if "rows_per" in node else None
    row_names = _row_names(by_ref, unpivot)
    time, time_else = table_time(problems, node, what, by_ref)
    segments = key(problems, node, what, row_names, check_fields=not written_by)
    cell_time = _cell_time(problems, node, what)
    stamping = () if written_by else (by_ref.get(time or event_time), by_ref.get(time_else))
    cell_timestamp = table_era(problems, node, what, segments, by_ref, stamping)
    cols = columns(problems, node, what, row_names, fams, pattern, written_by, proto_modules)
    if pattern and not written_by and "columns" not in node:
        problems.bad(node.line, f"{what}: {_NO_COLUMNS}")
    if problems.since(line):  # this table has problems already
        return None
    try:
        decl = TableDecl(
            name,
            tuple(fams),
            KeyRecipe(tuple(segments), delimiter),
            pattern,
            problems.text(node, "doc", what),
            problems.text(node, "spec", what),
            cell_timestamp,
        )
    except ValueError as err:
        problems.bad(line_of(node, "key"), f"{what}: {err}")
        return None
    _check_versions(problems, line, what, pattern, fams)
    rule = rollup(problems, node, what, decl) if "rollup" in node else None
    return TableSpec(
        decl=decl,
        columns=tuple(cols),
        time=time if time != event_time or time_else else "",
        time_else=time_else,
        cell_time=cell_time,
        rows_per=unpivot,
        written_by=written_by,
        rollup=rule,
        line=line,
    )


_NO_COLUMNS = (
    "no 'columns': say which fields feed which qualifiers, or mark the "
    "table 'written_by: <job>' when another job fills it"
)


def _row_names(by_ref: dict[str, FieldSpec], unpivot: RowsPer | None) -> dict[str, FieldSpec]:
    """The names a row's key and columns can read: the event's fields and, in an unpivoted
    table, the name and value each row is made of."""
    row_names = dict(by_ref)
    if unpivot is not None:
        row_names[unpivot.name] = FieldSpec(unpivot.name, "text")
        row_names[unpivot.value] = FieldSpec(unpivot.value, "text")
    return row_names


def _pattern(problems: Problems, node: Map, what: str) -> str:
    """The table's pattern, upper-cased (an unknown one reported with the nearest name)."""
    pattern = problems.text(node, "pattern", what, required=True).upper()
    if pattern and pattern not in PATTERNS:
        problems.bad(
            line_of(node, "pattern"),
            f"{what}: unknown pattern {node['pattern']!r}{suggest(pattern, PATTERNS)}; "
            f"use one of {', '.join(PATTERNS)}",
        )
    return pattern


def _delimiter(problems: Problems, node: Map, what: str) -> str:
    """The key's delimiter: one punctuation mark (the default after a reported mistake, so
    the rest of the table is still checked)."""
    delimiter = problems.text(node, "delimiter", what, default=keys.DELIMITER)
    if len(delimiter) != 1 or not delimiter.isprintable() or delimiter.isalnum():
        problems.bad(line_of(node, "delimiter"), f"{what}: the delimiter is one punctuation mark")
        delimiter = keys.DELIMITER
    return delimiter


def _cell_time(problems: Problems, node: Map, what: str) -> str:
    cell_time = problems.text(node, "cell_time", what, default="event")
    if cell_time not in CELL_TIMES:
        problems.bad(
            line_of(node, "cell_time"),
            f"{what}: cell_time is one of {', '.join(CELL_TIMES)} (default: event)",
        )
    return cell_time


def _check_versions(
    problems: Problems, line: int, what: str, pattern: str, fams: list[Family]
) -> None:
    """TB-CELL adds a cell per event: a family keeping one version would erase them."""
    for fam in fams:
        if pattern == "TB-CELL" and fam.max_versions == 1:
            problems.bad(
                line,
                f"{what}: TB-CELL adds a timestamped cell per event, but family "
                f"{fam.name} keeps 1 version, so each event erases the previous one; "
                "give it max_versions covering one bucket's events (e.g. 60 a minute "
                "× 60 for an hour bucket)",
            )


def table_time(
    problems: Problems, node: Map, what: str, refs: Mapping[str, FieldSpec]
) -> tuple[str, str]:
    """``time: FIELD``, or ``time: [OPTIONAL, REQUIRED]``: the first that an event has
    stamps its cells (a correction's time when there is one, else the close's)."""
    raw = node.get("time")
    line = line_of(node, "time")
    if raw is None:
        return "", ""
    if isinstance(raw, str):
        time_ref(problems, raw, refs, line, f"{what}: time")
        return raw, ""
    if not (isinstance(raw, list) and len(raw) == 2 and all(isinstance(r, str) for r in raw)):
        problems.bad(line, f"{what}: time is a time field, or a list [optional field, field]")
        return "", ""
    time_ref(problems, raw[0], refs, line, f"{what}: time", optional_ok=True)
    time_ref(problems, raw[1], refs, line, f"{what}: time")
    first, then = raw
    if first in refs and not refs[first].optional:
        problems.bad(
            line,
            f"{what}: time [{first}, {then}]: {first} is required, so {then} "
            "would never be used; give one field",
        )
    if then in refs and refs[then].optional:
        problems.bad(line, f"{what}: time [{first}, {then}]: the last one must be required")
    return first, then


def rollup(problems: Problems, node: Map, what: str, decl: TableDecl) -> RollupRule | None:
    spec = problems.mapping(node["rollup"], f"{what}: rollup", line_of(node, "rollup"))
    if spec is None:
        return None
    problems.keys(spec, ("from", "entity", "metric"), f"{what}: rollup")
    source = problems.text(spec, "from", f"{what}: rollup", required=True)
    entity = problems.text(spec, "entity", f"{what}: rollup", required=True)
    metric = problems.text(spec, "metric", f"{what}: rollup")
    aggregates = {f.name for f in decl.families if f.aggregate}
    if decl.pattern != "AGGREGATE" or aggregates != {"sum", "count"}:
        problems.bad(
            spec.line,
            f"{what}: a rollup table is AGGREGATE with aggregate families sum and count",
        )
    if entity and entity not in decl.key.fields:
        problems.bad(line_of(spec, "entity"), f"{what}: rollup entity {entity!r} is not in its key")
    if not source or not entity:
        return None
    return RollupRule(source, entity, metric)


def index(problems: Problems, top: Map, tables: Sequence[TableSpec]) -> IndexSpec | None:
    """``index: {table: NAME}``: the table of the dataset's series index."""
    spec = problems.mapping(top["index"], "index", line_of(top, "index"))
    if spec is None:
        return None
    problems.keys(spec, ("table",), "index")
    name = problems.text(spec, "table", "index", required=True)
    if not name:
        return None
    if not _TABLE.match(name):
        problems.bad(line_of(spec, "table"), "index: a table id is 1-50 of [-_.a-zA-Z0-9]")
        return None
    if name in {t.name for t in tables}:
        problems.bad(
            line_of(spec, "table"),
            f"index: {name} is a table of this file; the index needs a table of its own "
            f"(e.g. {name}_SERIES)",
        )
        return None
    return IndexSpec(name, spec.line)


def rollup_source(problems: Problems, spec: TableSpec, tables: Mapping[str, TableSpec]) -> None:
    rule = spec.rollup
    source = tables.get(rule.source)
    if source is None or source.written_by:
        problems.bad(
            spec.line,
            f"table {spec.name}: rollup from {rule.source!r}: no table of this file written "
            f"from events has that name{suggest(rule.source, tables)}",
        )
    elif rule.entity not in source.decl.key.fields:
        problems.bad(
            spec.line,
            f"table {spec.name}: rollup entity {rule.entity!r} is not a key field of {rule.source}",
        )


def families(problems: Problems, node: Map, what: str) -> list[Family]:
    seq = problems.sequence(node.get("families"), f"{what}: families", line_of(node, "families"))
    out: list[Family] = []
    if seq is None:
        return out
    if not seq:
        problems.bad(seq.line, f"{what}: families is empty; declare at least one")
    for index, item in enumerate(seq):
        line = line_of(seq, index)
        fam = problems.mapping(item, f"{what}: family", line)
        if fam is None:
            continue
        name = problems.text(fam, "name", f"{what}: family", required=True)
        where = f"{what}: family {name}"
        problems.keys(fam, ("name", "max_versions", "max_age", "aggregate", "doc"), where)
        if name and not _FAMILY.match(name):
            problems.bad(line_of(fam, "name"), f"{where}: a family name is 1-64 of [-_.a-zA-Z0-9]")
        versions = problems.integer(fam, "max_versions", where)
        if "max_versions" in fam and versions is None:
            problems.bad(
                line_of(fam, "max_versions"),
                f"{where}: bad GC rule: max_versions keeps the newest N cells of a column "
                "(N ≥ 1); write e.g. 'max_versions: 1'",
            )
        age = parse_duration(fam["max_age"]) if "max_age" in fam else None
        if "max_age" in fam and age is None:
            problems.bad(
                line_of(fam, "max_age"),
                f"{where}: bad GC rule: max_age {fam['max_age']!r} is not a duration; "
                "write a whole number and a unit s, m, h, d or w (e.g. '30d')",
            )
        aggregate = problems.text(fam, "aggregate", where) or None
        if aggregate and aggregate not in AGGREGATES:
            problems.bad(
                line_of(fam, "aggregate"),
                f"{where}: bad GC rule: aggregate {aggregate!r} is not supported; use 'sum' "
                "(int64)",
            )
        if aggregate and versions:
            problems.bad(
                line_of(fam, "max_versions"),
                f"{where}: an aggregate family keeps one merged cell; drop max_versions",
            )
        if not versions and age is None and not aggregate:
            problems.bad(
                line,
                f"{where}: no GC rule: every version of every cell is kept forever; add "
                "max_versions (1 for one value per cell) and/or max_age",
            )
        out.append(Family(name, versions, age, aggregate, problems.text(fam, "doc", where)))
    names = [f.name for f in out]
    for index, name in enumerate(names):
        if name in names[:index]:
            problems.bad(line_of(seq, index), f"{what}: family {name} is declared twice")
    return out


def rows_per(
    problems: Problems, node: Map, what: str, refs: Mapping[str, FieldSpec]
) -> RowsPer | None:
    spec = problems.mapping(node["rows_per"], f"{what}: rows_per", line_of(node, "rows_per"))
    if spec is None:
        return None
    problems.keys(spec, ("fields", "name", "value"), f"{what}: rows_per")
    names = spec.get("fields")
    if not isinstance(names, list) or not names:
        problems.bad(spec.line, f"{what}: rows_per.fields lists the fields to unpivot")
        return None
    for name in names:
        if not isinstance(name, str) or name not in refs:  # a list or mapping is no name
            problems.bad(
                line_of(spec, "fields"), f"{what}: rows_per field {name!r} is not declared"
            )
    out_name = problems.text(spec, "name", what, required=True)
    out_value = problems.text(spec, "value", what, required=True)
    for given in (out_name, out_value):
        if given in refs:
            problems.bad(spec.line, f"{what}: rows_per name {given!r} clashes with a field")
    return RowsPer(tuple(names), out_name, out_value)
