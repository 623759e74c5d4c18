"""Code generation: one straight-line Python function per schema (and chosen tables and zone),
as ``dataclasses`` and ``attrs`` generate ``__init__``.

Why: a loop over column rules pays a call, a tuple unpack and a branch per cell; the generated
function reads each field once into a local and writes every cell as one tuple, which is what a
hand-written builder does.

One direction: :class:`transforms.builder.builder.Builder` states what it needs as a
:class:`BuildPlan` (plain frozen values: the schema's field and table declarations, and the general
closures of :mod:`transforms.builder.builder` for what the fast path does not cover),
:func:`build_function` turns the plan into a function. This module never sees the builder.
:class:`SourceWriter` is the generated source and its namespace, shared with
:mod:`transforms.builder.wire`'s encoders.

Safety: **no text of the schema file is ever part of the source**. Field names, table names,
families, qualifiers, delimiters and constants are values in the function's namespace, under
names this module makes up (``n0``, ``q3``, ``D1``…); the source holds only those names,
integers this module computed and fixed templates. Anything the fast path does not cover
(computed values, qualifiers from data, salted or unpivoted tables) calls the plan's closures,
so every schema compiles.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from transforms import limits
from transforms.builder import wire
from transforms.builder.fold_source import FoldSource
from transforms.builder.key_source import key_expression, salted
from transforms.builder.source import SourceWriter
from transforms.errors import InvalidEvent
from transforms.mutations import RowMutation
from transforms.table_model import bucket_start_ms
from transforms.text import events, isotime, keys, timefmt

if TYPE_CHECKING:
    from transforms.schema import FieldSpec, TableSpec

__all__ = ["BuildPlan", "FieldPlan", "OrderCheck", "TablePlan", "build_function"]

_ENCODE = {  # how a parsed value of each type becomes cell bytes, as an expression template
    "time": "b'%013d' % {v}",
    "integer": "b'%d' % {v}",
    "integer_text": "{v}.encode()",  # an integer only written as a cell: kept as its digits
    "text": "{v}.encode()",
    "id": "{v}.encode()",
    "number": "{v}.encode()",
    "boolean": "{v}.encode()",
    "float64": "{v}",  # the parser's 8 bytes already
}


# -- the plan: what the builder hands over ----------------------------------------------------


@dataclass(frozen=True)
class FieldPlan:
    """One event field: its declaration, its general parser (every check, every error text)
    and the delimiters of the keys it is free text of."""

    spec: FieldSpec
    parse: Callable[[object], object]
    delimiters: str = ""
    advice: str = ""  # a time field's: how to land a time before its earliest
    parse_columns: Callable[[object], tuple] | None = None  # a map's: (value, its qualifiers)


@dataclass(frozen=True)
class OrderCheck:
    """Field ``ref`` must be later than field ``after``; ``fail(record)`` raises the error."""

    ref: str
    after: str
    fail: Callable[[dict], None]


@dataclass(frozen=True)
class TablePlan:
    """One written table: its declaration, how its cells are stamped, and the general closures
    the generated source calls for what it does not write out."""

    name: str
    spec: TableSpec
    time: str  # the field ref of the cells' event time
    time_else: str | None  # used when ``time`` is absent
    cell_time: str  # "event", or the bucket whose start stamps the cells
    checked: frozenset[str]  # fields already checked as key text when parsed
    signature: tuple  # equal for tables whose cells are the same (they share one tuple)
    key: Callable[[dict], bytes]  # values → row key (salted keys)
    cells: Callable[[dict, int, int], list]  # (values, event ms, stamp µs) → cells
    stamp: Callable[[dict], tuple[int, int]]  # values → (event ms, stamp µs)
    rows: Callable[[dict], list]  # values → rows (unpivoted tables)
    # per key segment: its field's value → the segment's text (None: a constant or salt)
    segment_parts: tuple[Callable[[object], str] | None, ...] = ()


@dataclass(frozen=True)
class BuildPlan:
    """Everything :func:`build_function` needs: fields in declaration order, the order checks,
    the tables in the order their rows come out, and the zone of calendar labels."""

    label: str  # for the code object's file name (made safe here)
    tz: dt.tzinfo
    fields: tuple[FieldPlan, ...]
    ordered: tuple[OrderCheck, ...]
    tables: tuple[TablePlan, ...]


# -- the source -----------------------------------------------------------------------------


_BUILD_NAMESPACE = {
    "InvalidEvent": InvalidEvent,
    "_fromiso": isotime.fromisoformat,  # 3.11's reading on every Python (a Z on 3.10)
    "_EPOCH": timefmt.EPOCH,  # the fast path of timefmt.parse_event_time, inlined
    "_MS": timefmt.MILLISECOND,
    "MAX_MS": timefmt.MAX_EPOCH_MS,
    "check_fields": events.check_fields,
    "check_key_size": keys.check_key_size,
    "MAX_KEY": limits.MAX_ROW_KEY_BYTES,
}


def build_function(
    plan: BuildPlan,
    framed: bool = False,
    entries: bool = True,
    fold: frozenset[str] = frozenset(),
    lean: frozenset[str] = frozenset(),
) -> Callable[[dict], list[RowMutation]]:
    """``record → rows`` for ``plan``: every field checked, then every table's row.

    ``framed``: ``(record, out, ent) → None`` that appends the rows to ``out`` and to ``ent``
    each row's framed request entry made while building it
    (:class:`transforms.builder.wire.MutationSource`; None for every row without ``entries``), or
    None where the writer must encode the row itself; both only once nothing can fail any more
    (a bad record appends nothing). ``fold`` (framed): tables whose rows the function also folds
    into the series index's accumulators, listed as its ``folds``
    (:class:`~transforms.builder.fold_source.TableFold`; a table it cannot fold is not there).
    ``lean`` (framed): tables whose rows, where their entry is made, are lean rows
    (:func:`transforms.mutations.cell_count`: their cells' count and stamp, no cell tuples);
    of those, only tables whose cells it writes out, and folds when ``fold`` asks it to."""

    src = SourceWriter(_BUILD_NAMESPACE)
    fields = [f.spec for f in plan.fields]
    local = {f.ref: f"v{i}" for i, f in enumerate(fields)}
    types = {f.ref: f.type for f in fields}
    optional = {f.ref for f in fields if f.optional}
    digits = _digits_only(plan, types, optional)
    types.update(dict.fromkeys(digits, "integer_text"))
    src.add("def build(record, out, ent):" if framed else "def build(record):", 0)
    folder = FoldSource(src, fold) if framed and fold else None
    _add_field_checks(src, plan, local, digits, folder.maps(plan.tables) if folder else set())
    if any(not _fast_table(t, types) or salted(t) for t in plan.tables):
        pairs = ", ".join(f"{src.const(ref, 'r')}: {local[ref]}" for ref in local)
        src.add(f"values = {{{pairs}}}")
        if optional:
            src.add("values = {k: v for k, v in values.items() if v is not None}")
    scope = _Scope(src, plan.tz, local, types, optional)
    if framed:
        mut = wire.MutationSource(src) if entries else None
        lean = _leaner(plan.tables, types, lean, fold, folder) if mut else frozenset()
        _add_framed_rows(scope, plan.tables, mut, folder, lean)
    else:
        _add_rows(scope, plan.tables)
    function = src.function("build", f"<btts build {_safe_label(plan.label)}>")
    function.folds = folder.folds if folder else []
    return function  # type: ignore[return-value]


@dataclass(frozen=True)
class _Scope:
    """What every table's source is written against: the writer, the zone, each field's local
    name, its type (as written out) and which fields are optional."""

    src: SourceWriter
    tz: dt.tzinfo
    local: dict[str, str]
    types: dict[str, str]
    optional: set[str]


def _add_field_checks(
    src: SourceWriter, plan: BuildPlan, local: dict[str, str], digits: set[str], maps: set[str]
) -> None:
    """The record's set of fields (one C comparison first; check_fields says precisely what is
    wrong), each field parsed into its local, then the order checks between fields; a map
    field of ``maps`` also into its qualifiers' local (``v3q``: () when it is absent)."""
    fields = [f.spec for f in plan.fields]
    required = tuple(f.name for f in fields if not f.optional)
    optional_names = tuple(f.name for f in fields if f.optional)
    names_req = src.const(required, "R")
    names_opt = src.const(optional_names, "O")
    every = src.const(frozenset(required), "S")
    if optional_names:
        allowed = src.const(frozenset(required + optional_names), "S")
        src.add(f"if not ({every} <= record.keys() <= {allowed}):")
    else:
        src.add(f"if record.keys() != {every}:")
    src.add(f"check_fields(record, {names_req}, {names_opt})", 2)
    for field in plan.fields:
        spec = field.spec
        fn = src.const(field.parse, "p")
        key = src.const(spec.name, "n")
        value = local[spec.ref]
        target = value
        if spec.ref in maps:  # the qualifiers too, one cached tuple per name list
            fn = src.const(field.parse_columns, "pc")
            target = f"{value}, {value}q"
            src.add(f"{value}q = ()")
        if spec.optional:  # absent, or a JSON null: no value (a Parquet null is never read)
            src.add(f"{value} = record.get({key})")
            src.add(f"if {value} is not None:")
            src.add(f"{target} = {fn}({value})", 2)
            continue
        src.add(f"{value} = record[{key}]")
        if target != value:
            src.add(f"{target} = {fn}({value})")
            continue
        _parse_inline(src, spec, value, fn, field.delimiters, spec.ref in digits, field.advice)
    for check in plan.ordered:
        fail = src.const(check.fail, "A")
        later, earlier = local[check.ref], local[check.after]
        src.add(f"if {later} is not None and {later} <= {earlier}:")
        src.add(f"{fail}(record)", 2)


def _add_rows(scope: _Scope, tables: tuple[TablePlan, ...]) -> None:
    """The plain builder's rows: each table's row appended to ``out`` as it is made."""
    src = scope.src
    src.add("out = []")
    for index, table in enumerate(tables):
        if table.spec.rows_per is not None:  # unpivoted: the general closure makes every row
            src.add(f"out.extend({src.const(table.rows, 'U')}(values))")
            continue
        cells, _mutations = _table_cells(scope, table, index, None)
        key, _head = key_expression(src, table, scope.local, scope.types, scope.tz, index)
        name = src.const(table.name, "T")
        src.add(f"out.append(({name}, {key}, {cells}))")
    src.add("return out")


def _leaner(
    tables: tuple[TablePlan, ...],
    types: dict,
    lean: frozenset[str],
    fold: frozenset[str],
    folder: FoldSource | None,
) -> frozenset[str]:
    """The tables of ``lean`` whose rows can be lean: cells written out here (the general
    closures' rows are encoded by the writer), and folded here if ``fold`` asks for them
    (the rows of one folded apart are folded from their cells)."""
    return frozenset(
        t.name
        for t in tables
        if t.name in lean
        and _fast_table(t, types)
        and (t.name not in fold or (folder is not None and folder.wanted(t)))
    )


def _add_framed_rows(
    scope: _Scope,
    tables: tuple[TablePlan, ...],
    mut: wire.MutationSource | None,
    folder: FoldSource | None = None,
    lean: frozenset[str] = frozenset(),
) -> None:
    """The framed builder's rows and entries: kept in locals and added to the caller's lists
    at the end, when nothing can raise any more (and then folded, ``folder``). A row of a
    ``lean`` table is lean where its entry is made, else whole: its cells are then written out
    in the row itself, unless another table's row holds the same cells whole anyway."""
    src = scope.src
    rows_out: list[str] = []
    entries_out: list[str] = []
    forms: dict[str, tuple[str, str]] = {}  # cells local → (cells written out, their count)
    whole = {t.signature for t in tables if t.name not in lean}  # cells some row holds
    for index, table in enumerate(tables):
        if table.spec.rows_per is not None:  # unpivoted: the writer encodes those rows
            src.add(f"up{index} = {src.const(table.rows, 'U')}(values)")
            rows_out.append(f"*up{index}")
            entries_out.append(f"*[None] * len(up{index})")
            continue
        kept = table.signature in whole
        cells, mutations = _table_cells(scope, table, index, mut, forms, kept)
        key, head = key_expression(src, table, scope.local, scope.types, scope.tz, index)
        name = src.const(table.name, "T")
        src.add(f"rk{index} = {key}")
        key = f"rk{index}"
        stamp = f"u{cells[len('cells') :]}"  # the stamp of the (maybe shared) fast cells
        if folder and _fast_table(table, scope.types) and folder.wanted(table):
            folder.table(table, key, head, stamp, scope.local, scope.optional)
        entry = mut.framed(mutations, key, f"re{index}") if mutations else "None"
        entries_out.append(entry)
        row = f"({name}, {key}, {cells})"
        if table.name in lean:  # (fast cells; a row without an entry goes whole: the writer
            written, count = forms[cells]  # encodes it from its cells)
            row = row if kept else f"({name}, {key}, {written})"
            row = f"(({name}, {key}, {count}, {stamp}) if {entry} is not None else {row})"
        rows_out.append(row)
    src.add(f"out += ({', '.join(rows_out)},)")
    src.add(f"ent += ({', '.join(entries_out)},)")
    if folder:
        folder.emit()


def _table_cells(
    scope: _Scope,
    table: TablePlan,
    index: int,
    mut: wire.MutationSource | None,
    forms: dict[str, tuple[str, str]] | None = None,
    kept: bool = True,
) -> tuple[str, str | None]:
    """The expression of a table's cells tuple, and (framed) the local of their Mutations
    bytes, None where the general closures make the cells and the writer encodes them. Cells
    written out: their local's ``forms`` (the tuple as one expression, their count), the local
    itself only set when ``kept`` (a row holds those cells whole)."""
    src = scope.src
    if not _fast_table(table, scope.types):  # cells from the general closures
        stamp = src.const(table.stamp, "S")
        cells = f"tuple({src.const(table.cells, 'C')}(values, *{stamp}(values)))"
        if mut:
            src.add(f"cells{index} = {cells}")
            cells = f"cells{index}"
        return cells, None
    cells = src.shared.get(("cells", table.signature))
    if cells is None:  # tables with the same columns and stamps share one cells tuple
        _stamp(src, table, scope.local, scope.tz, index)
        form = _cells(scope, table, index, mut, kept)
        cells = src.shared[("cells", table.signature)] = f"cells{index}"
        if forms is not None:
            forms[cells] = form
    return cells, (f"m{cells[len('cells') :]}" if mut else None)


def _digits_only(plan: BuildPlan, types: dict, optional: set) -> set:
    """Integer fields that only ever become cell values (not keys, order checks or general
    tables): their JSON digits are already the cell's text, so they are never made ints."""
    if any(not _fast_table(t, types) for t in plan.tables):
        return set()
    used = {seg.field for t in plan.tables for seg in t.spec.decl.key.segments}
    used |= {ref for check in plan.ordered for ref in (check.ref, check.after)}
    return {
        f.spec.ref
        for f in plan.fields
        if f.spec.type == "integer"
        and f.spec.ref not in used
        and f.spec.ref not in optional
        and _plain_int(f.spec)
    }


def _plain_int(spec: FieldSpec) -> bool:
    """An integer whose only checks are 'digits, under 19 of them' on its common path."""
    return spec.maximum is None and (
        spec.minimum is None or (spec.minimum.lstrip("-").isdigit() and int(spec.minimum) <= 0)
    )


def _parse_inline(
    src: SourceWriter,
    spec: FieldSpec,
    value: str,
    fn: str,
    delimiters: str,
    as_text: bool = False,
    advice: str = "",
) -> None:
    """The field's check, its common case written out (no call), the rest by its parser.
    ``as_text``: an integer kept as its canonical digits (the parser's int made text);
    ``advice``: a time field's, for a time before 1970."""
    kind = spec.type
    if kind == "number" and spec.minimum is None and spec.maximum is None and not spec.max_length:
        num = src.const(events.Num, "N")
        src.add(f"if type({value}) is not {num}:")
        src.add(f"{value} = {fn}({value})", 2)
    elif kind == "integer" and _plain_int(spec):
        _inline_integer(src, value, fn, as_text)
    elif kind == "text":
        _inline_text(src, spec, value, fn, delimiters)
    elif kind == "time" and spec.format == "auto" and not spec.timezone and not spec.earliest:
        _inline_time(src, spec, value, advice)
    else:
        src.add(f"{value} = {fn}({value})")


def _inline_integer(src: SourceWriter, value: str, fn: str, as_text: bool) -> None:
    """Digits only: non-negative, and under 19 digits always inside int64."""
    num = src.const(events.Num, "N")
    if as_text:  # canonical digits (no leading 0) are already the int's text
        src.add(
            f"if not (type({value}) is {num} and {value}.isdigit() and len({value}) < 19 "
            f"and ({value}[0] != '0' or len({value}) == 1)):"
        )
        src.add(f"{value} = str({fn}({value}))", 2)
        return
    src.add(f"if type({value}) is {num} and {value}.isdigit() and len({value}) < 19:")
    src.add(f"{value} = int({value})", 2)
    src.add("else:")
    src.add(f"{value} = {fn}({value})", 2)


def _inline_text(src: SourceWriter, spec: FieldSpec, value: str, fn: str, delimiters: str) -> None:
    """The common case, valid as it stands; anything else (and every error) goes to the
    parser, which returns the same value for what passes here."""
    limit = spec.max_length or 1024
    test = f"type({value}) is not str or not {value} or len({value}) > {limit}"
    if delimiters:
        marks = " or ".join(f"{src.const(d, 'D')} in {value}" for d in delimiters)
        test += f" or {marks}"
    if delimiters or spec.whitespace != "allow":
        test += f" or not {value}.isprintable()"  # printable: no whitespace but ' '
    if spec.whitespace != "allow":
        space = src.const(" ", "W")
        if spec.whitespace == "none":
            test += f" or {space} in {value}"
        else:  # trimmed
            test += f" or {value}[0] == {space} or {value}[-1] == {space}"
    if spec.case != "as_is":
        test += f" or {value} != {value}.{'lower' if spec.case == 'lower' else 'upper'}()"
    src.add(f"if {test}:")
    src.add(f"{value} = {fn}({value})", 2)


def _inline_time(src: SourceWriter, spec: FieldSpec, value: str, advice: str) -> None:
    """timefmt.parse_event_time's fast path written out: an RFC 3339 text with an offset.
    Anything else (epoch numbers, no offset, out of range, errors) goes to the parser.
    (A field declaring times before 1970 takes its parser: 0 <= ms is the 1970 rule.)"""
    plain = timefmt.parse_event_time
    parse = src.const(partial(plain, advice=advice) if advice else plain, "PT")
    name = src.const(spec.name, "n")
    src.add("try:")
    src.add(f"ms = (_fromiso({value}) - _EPOCH) // _MS", 2)
    src.add("except (TypeError, ValueError):")
    src.add(f"{value} = {parse}({value}, {name})", 2)
    src.add("else:")
    src.add(f"if 0 <= ms <= MAX_MS and len({value}) <= 40:", 2)
    src.add(f"{value} = ms", 3)
    src.add("else:", 2)
    src.add(f"{value} = {parse}({value}, {name})", 3)


def _safe_label(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in text)[:40]


def _fast_table(table: TablePlan, types: dict) -> bool:
    """Whether a table's cells can be written out in the generated source."""
    spec = table.spec
    if spec.rows_per is not None:
        return False
    for col in spec.columns:
        if col.add is not None:
            return False
        if col.each:
            continue
        if not isinstance(col.qualifier, str) and col.qualifier[0] != "time":
            return False
        if not col.value or col.value[0] != "field" or types.get(col.value[1]) not in _ENCODE:
            return False
    return True


def _stamp(src: SourceWriter, table: TablePlan, local: dict, tz: dt.tzinfo, index: int) -> None:
    """Defines ``t{index}`` (the event ms of the table's cells) and ``u{index}`` (their µs)."""
    first = local[table.time]
    if table.time_else:
        src.add(f"t{index} = {first} if {first} is not None else {local[table.time_else]}")
    else:
        src.add(f"t{index} = {first}")
    decl = table.spec.decl
    if decl.cell_timestamp != "unix":  # µs since another origin: the table's own conversion
        micros = decl.cell_micros
        if table.cell_time == "event":
            src.add(f"u{index} = {src.const(micros, 'M')}(t{index})")
        else:
            unit = table.cell_time
            start = src.const(lambda ms: micros(bucket_start_ms(ms, unit, tz)), "B")
            src.add(f"u{index} = {start}(t{index})")
    elif table.cell_time == "event":  # TableDecl.cell_micros of unix, written out
        src.add(f"u{index} = t{index} * 1000")
    else:
        start = src.const(lambda ms, unit=table.cell_time: bucket_start_ms(ms, unit, tz), "B")
        src.add(f"u{index} = {start}(t{index}) * 1000")


def _cells(
    scope: _Scope, table: TablePlan, index: int, mut=None, kept: bool = True
) -> tuple[str, str]:
    """Defines ``cells{index}`` (unless not ``kept``): the table's cells in column order,
    stamped by :func:`_stamp` (and ``m{index}``, their Mutations' bytes, when ``mut`` is a
    wire.MutationSource). Returns the cells as one expression and the expression of their
    count (an int: what a lean row holds of them)."""
    src, local, optional_refs = scope.src, scope.local, scope.optional
    ts = f"t{index}"
    us = f"u{index}"
    parts: list[tuple[str, str | None]] = []  # (expression, optional field's local or None)
    counted = [0]  # the fixed cells' number, then what varies: a map's entries, optional cells
    for col in table.spec.columns:
        family = src.const(col.family, "F")
        if col.each:
            entries = local[col.each]
            if col.each in optional_refs:
                entries = f"({entries} or ())"
            parts.append((f"*[({family}, q, x, {us}) for q, x in {entries}]", None))
            counted.append(f"len({entries})")
            if mut:
                mut.each(col.family, entries)
            continue
        ref = col.value[1]
        value = _ENCODE[scope.types[ref]].format(v=local[ref])
        if ref not in optional_refs:  # encoded once for every cell (of any table) it fills
            encoded = src.shared.get(("encoded", ref))
            if encoded is None:
                encoded = src.shared[("encoded", ref)] = f"e{local[ref]}"
                src.add(f"{encoded} = {value}")
            value = encoded
        if isinstance(col.qualifier, str):
            qualifier = src.const(col.qualifier.encode("utf-8"), "q")
        else:
            qualifier = _time_qualifier(src, col.qualifier[1], scope.tz, ts)
        optional = local[ref] if ref in optional_refs else None
        parts.append((f"({family}, {qualifier}, {value}, {us})", optional))
        if optional:
            counted.append(f"({optional} is not None)")
        else:
            counted[0] += 1
        if mut:
            fixed = col.qualifier.encode("utf-8") if isinstance(col.qualifier, str) else None
            mut.cell(col.family, fixed, qualifier, value, optional)
    if mut:
        mut.mutations(f"m{index}", us)
    if kept:
        _cells_statements(src, f"cells{index}", parts)
    return _cells_expression(parts), " + ".join(map(str, counted))


def _cells_statements(src: SourceWriter, out: str, parts: list[tuple[str, str | None]]) -> None:
    """Sets local ``out`` to the cells tuple of ``parts`` (see :func:`_cells`)."""
    if not any(optional for _, optional in parts):
        src.add(f"{out} = ({', '.join(item for item, _ in parts)},)")
        return
    src.add(f"{out} = []")
    for item, optional in parts:
        if item.startswith("*"):
            src.add(f"{out}.extend({item[1:]})")
        elif optional:
            src.add(f"if {optional} is not None:")
            src.add(f"{out}.append({item})", 2)
        else:
            src.add(f"{out}.append({item})")
    src.add(f"{out} = tuple({out})")


def _cells_expression(parts: list[tuple[str, str | None]]) -> str:
    """The cells tuple of ``parts`` as one expression: the same tuple
    :func:`_cells_statements` makes, evaluated only where it is needed (a lean table's row
    whose entry was not made)."""
    items = [
        item if optional is None else f"*(({item},) if {optional} is not None else ())"
        for item, optional in parts
    ]
    return f"({', '.join(items)},)" if items else "()"


def _time_qualifier(src: SourceWriter, fmt: str, tz: dt.tzinfo, ts: str) -> str:
    if fmt == "hhmm" and tz is timefmt.UTC:
        return f"{src.const(timefmt.HHMM_BYTES, 'H')}[{ts} // 60000 % 1440]"
    if fmt == "hhmm":
        fn = src.const(lambda ms: timefmt.time_of_day(ms, tz).encode("ascii"), "H")
    else:
        fn = src.const(lambda ms: str(timefmt.to_datetime(ms, tz).day).encode("ascii"), "H")
    return f"{fn}({ts})"
