"""Code generation for the schema builder: one straight-line Python function per schema (and
chosen tables and zone), as ``dataclasses`` and ``attrs`` generate ``__init__``.

Why: a loop over column rules pays a call, a tuple unpack and a branch per cell; the generated
function reads each field once into a local and writes every cell as one tuple, which is what a
hand-written builder does. Safety: **no text of the schema file is ever part of the source**.
Field names, table names, families, qualifiers, delimiters and constants are values in the
function's namespace, under names this module makes up (``n0``, ``q3``, ``D1``…); the source
holds only those names, integers this module computed and fixed templates. Anything the fast
path does not cover (computed values, qualifiers from data, salted or unpivoted tables) calls the
general closures of :mod:`transforms.generic`, so every schema compiles.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from functools import lru_cache

from transforms import events, keys, timefmt
from transforms.errors import InvalidEvent
from transforms.mutations import RowMutation
from transforms.table_model import TIME_FORMATS, bucket_start_ms

_ENCODE = {  # how a parsed value of each type becomes cell bytes, as an expression template
    "time": "b'%013d' % {v}",
    "integer": "b'%d' % {v}",
    "integer_text": "{v}.encode()",  # an integer only written as a cell: kept as its digits
    "text": "{v}.encode()",
    "id": "{v}.encode()",
    "number": "{v}.encode()",
    "boolean": "{v}.encode()",
}


class _Source:
    """The generated function's lines and the constants its names stand for."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.namespace: dict[str, object] = {
            "InvalidEvent": InvalidEvent,
            "_fromiso": dt.datetime.fromisoformat,
            "_EPOCH": timefmt._EPOCH,  # the fast path of timefmt.parse_event_time, inlined
            "_MS": timefmt._MS,
            "MAX_MS": timefmt.MAX_EPOCH_MS,
            "check_fields": events.check_fields,
            "check_key_size": keys.check_key_size,
            "MAX_KEY": keys.MAX_ROW_KEY_BYTES,
        }
        self._count = 0
        self.shared: dict[tuple, str] = {}  # locals computed once for several tables

    def const(self, value: object, prefix: str = "k") -> str:
        """A fresh name bound to ``value`` (never the value's text in the source)."""
        name = f"{prefix}{self._count}"
        self._count += 1
        self.namespace[name] = value
        return name

    def add(self, line: str, indent: int = 1) -> None:
        self.lines.append("    " * indent + line)


def generate(builder) -> Callable[[dict], list[RowMutation]]:
    """The build function of a compiled :class:`transforms.generic.Builder`."""
    src = _Source()
    schema = builder.schema
    tz = builder.tz
    fields = schema.fields
    local = {f.ref: f"v{i}" for i, f in enumerate(fields)}
    types = {f.ref: f.type for f in fields}
    optional = {f.ref for f in fields if f.optional}
    digits = _digits_only(builder, types, optional)
    types.update(dict.fromkeys(digits, "integer_text"))
    src.add("def build(record):", 0)
    # The set of fields: one C comparison first; check_fields says precisely what is wrong.
    names_req = src.const(builder.required, "R")
    names_opt = src.const(builder.optional, "O")
    every = src.const(frozenset(builder.required), "S")
    if builder.optional:
        allowed = src.const(frozenset(builder.required + builder.optional), "S")
        src.add(f"if not ({every} <= record.keys() <= {allowed}):")
    else:
        src.add(f"if record.keys() != {every}:")
    src.add(f"check_fields(record, {names_req}, {names_opt})", 2)
    key_fields = builder.key_delimiters
    for (name, ref, parse), spec in zip(builder._steps, fields, strict=True):
        fn = src.const(parse, "p")
        key = src.const(name, "n")
        value = local[ref]
        if spec.optional:
            src.add(f"{value} = {fn}(record[{key}]) if {key} in record else None")
            continue
        src.add(f"{value} = record[{key}]")
        _parse_inline(src, spec, value, fn, key_fields.get(ref, ""), ref in digits)
    for name, ref, after, after_name in builder._ordered:
        fail = src.const(builder._after_failure(name, after_name), "A")
        src.add(f"if {local[ref]} is not None and {local[ref]} <= {local[after]}:")
        src.add(f"{fail}(record)", 2)
    if any(not _fast_table(t, types) or _salted(t) for t in builder.compiled):
        pairs = ", ".join(f"{src.const(ref, 'r')}: {local[ref]}" for ref in local)
        src.add(f"values = {{{pairs}}}")
        if optional:
            src.add("values = {k: v for k, v in values.items() if v is not None}")
    src.add("out = []")
    for index, table in enumerate(builder.compiled):
        if table.rows_per is not None:  # unpivoted: the general closure makes every row
            src.add(f"out.extend({src.const(table.rows, 'U')}(values))")
            continue
        if not _fast_table(table, types):  # cells from the general closures
            stamp = src.const(table.stamp, "S")
            cells = f"tuple({src.const(table.cells, 'C')}(values, *{stamp}(values)))"
        else:
            cells = src.shared.get(("cells", table.signature))
            if cells is None:  # tables with the same columns and stamps share one cells tuple
                _stamp(src, table, local, tz, index)
                _cells(src, table, local, types, optional, tz, index)
                cells = src.shared[("cells", table.signature)] = f"cells{index}"
        key = _key(src, table, local, types, tz, index)
        name = src.const(table.name, "T")
        src.add(f"out.append(({name}, {key}, {cells}))")
    src.add("return out")
    code = compile("\n".join(src.lines), f"<btts build {_safe_label(schema.dataset)}>", "exec")
    exec(code, src.namespace)  # the source holds generated names only (module docstring)
    build = src.namespace["build"]
    build.source = "\n".join(src.lines)  # for reading what was generated (tests, debugging)
    return build  # type: ignore[return-value]


def _digits_only(builder, types, optional) -> set:
    """Integer fields that only ever become cell values (not keys, order checks or general
    tables): their JSON digits are already the cell's text, so they are never made ints."""
    if any(not _fast_table(t, types) for t in builder.compiled):
        return set()
    used = {seg.field for t in builder.compiled for seg in t.spec.decl.key.segments}
    used |= {ref for _n, ref, after, _a in builder._ordered for ref in (ref, after)}
    return {
        f.ref
        for f in builder.schema.fields
        if f.type == "integer" and f.ref not in used and f.ref not in optional and _plain_int(f)
    }


def _plain_int(spec) -> bool:
    """An integer whose only checks are 'digits, under 19 of them' on its common path."""
    return spec.maximum is None and (
        spec.minimum is None or (spec.minimum.lstrip("-").isdigit() and int(spec.minimum) <= 0)
    )


def _parse_inline(
    src: _Source, spec, value: str, fn: str, delimiters: str, as_text: bool = False
) -> None:
    """The field's check, its common case written out (no call), the rest by its parser.
    ``as_text``: an integer kept as its canonical digits (the parser's int made text)."""
    kind = spec.type
    if kind == "number" and spec.minimum is None and spec.maximum is None and not spec.max_length:
        num = src.const(events.Num, "N")
        src.add(f"if type({value}) is not {num}:")
        src.add(f"{value} = {fn}({value})", 2)
        return
    if kind == "integer" and _plain_int(spec):
        # digits only: non-negative, and under 19 digits always inside int64
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
        return
    if kind == "text":
        # The common case, valid as it stands; anything else (and every error) goes to the
        # parser, which returns the same value for what passes here.
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
        return
    if kind == "time" and spec.format == "auto" and not spec.timezone:
        # timefmt.parse_event_time's fast path written out: an RFC 3339 text with an offset.
        # Anything else (epoch numbers, no offset, out of range, errors) goes to the parser.
        parse = src.const(timefmt.parse_event_time, "PT")
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
        return
    src.add(f"{value} = {fn}({value})")


def _safe_label(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in text)[:40]


def _fast_table(table, types) -> bool:
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


def _salted(table) -> bool:
    return any(s.kind == "salt" for s in table.spec.decl.key.segments)


def _stamp(src: _Source, table, local, tz: dt.tzinfo, index: int) -> None:
    """Defines ``t{index}`` (the event ms of the table's cells) and ``u{index}`` (their µs)."""
    first = local[table.time]
    if table.time_else:
        src.add(f"t{index} = {first} if {first} is not None else {local[table.time_else]}")
    else:
        src.add(f"t{index} = {first}")
    if table.cell_time == "event":
        src.add(f"u{index} = t{index} * 1000")
    else:
        start = src.const(lambda ms, unit=table.cell_time: bucket_start_ms(ms, unit, tz), "B")
        src.add(f"u{index} = {start}(t{index}) * 1000")


def _cells(src: _Source, table, local, types, optional_refs, tz, index: int) -> None:
    """Defines ``cells{index}``: the table's cells in column order, stamped by :func:`_stamp`."""
    out = f"cells{index}"
    ts = f"t{index}"
    us = f"u{index}"
    parts: list[tuple[str, str | None]] = []  # (expression, optional field's local or None)
    for col in table.spec.columns:
        family = src.const(col.family, "F")
        if col.each:
            entries = local[col.each]
            if col.each in optional_refs:
                entries = f"({entries} or ())"
            parts.append((f"*[({family}, q, x, {us}) for q, x in {entries}]", None))
            continue
        ref = col.value[1]
        value = _ENCODE[types[ref]].format(v=local[ref])
        if ref not in optional_refs:  # encoded once for every cell (of any table) it fills
            encoded = src.shared.get(("encoded", ref))
            if encoded is None:
                encoded = src.shared[("encoded", ref)] = f"e{local[ref]}"
                src.add(f"{encoded} = {value}")
            value = encoded
        if isinstance(col.qualifier, str):
            qualifier = src.const(col.qualifier.encode("utf-8"), "q")
        else:
            qualifier = _time_qualifier(src, col.qualifier[1], tz, ts)
        optional = local[ref] if ref in optional_refs else None
        parts.append((f"({family}, {qualifier}, {value}, {us})", optional))
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


def _time_qualifier(src: _Source, fmt: str, tz: dt.tzinfo, ts: str) -> str:
    if fmt == "hhmm" and tz is timefmt.UTC:
        return f"{src.const(timefmt.HHMM_BYTES, 'H')}[{ts} // 60000 % 1440]"
    if fmt == "hhmm":
        fn = src.const(lambda ms: timefmt.time_of_day(ms, tz).encode("ascii"), "H")
    else:
        fn = src.const(lambda ms: str(timefmt.to_datetime(ms, tz).day).encode("ascii"), "H")
    return f"{fn}({ts})"


def _key(src: _Source, table, local, types, tz: dt.tzinfo, index: int) -> str:
    """An expression of the table's row key (bytes); may define ``key{index}`` first. A salted
    key is the recipe's own builder."""
    if _salted(table):
        return f"{src.const(table.key, 'K')}(values)"
    recipe = table.spec.decl.key
    delimiter = src.const(recipe.delimiter, "D")
    parts: list[str] = []
    text_only = True
    segments = recipe.segments
    lead = _cached_lead(segments, types)
    if lead:
        # Entity segments (padded names, constants) before a time: few distinct values, so their
        # text is cached, and computed once for every table that shares them.
        prefix = _key_prefix(src, table, segments[:lead], local)
        text_only = False
        segments = segments[lead:]
    else:
        prefix = None
    for seg in segments:
        ref = seg.field
        if seg.kind == "const":
            parts.append(src.const(keys.check_segment(seg.arg or "", "constant", recipe.delimiter)))
            continue
        if seg.kind == "text" and ref in table.checked and types.get(ref) in ("text", "id"):
            parts.append(local[ref])
            continue
        text_only = False
        if seg.kind == "epoch_ms" and types.get(ref) == "time":
            parts.append(f"'%013d' % {local[ref]}")
        elif seg.kind == "time" and types.get(ref) == "time":
            label = TIME_FORMATS[seg.arg]
            zone = src.const(tz, "Z")
            parts.append(f"{src.const(label, 'L')}({local[ref]}, {zone})")
        else:  # the general segment builder, on a dict of the one field it reads
            fn = src.const(table.segment_part(seg), "P")
            parts.append(f"{fn}({local[ref]})")
    joined = f" + {delimiter} + ".join(parts)
    if prefix:
        joined = f"{prefix} + {joined}"
    if text_only and any(p in local.values() for p in parts):
        # Only fields' text and constants: the same entity always has the same key.
        cached = src.const(lru_cache(maxsize=65536)(_encoded_key), "KC")
        return f"{cached}({joined})"
    src.add(f"key{index} = ({joined}).encode()")
    src.add(f"if len(key{index}) > MAX_KEY:")
    src.add(f"check_key_size(key{index})", 2)
    return f"key{index}"


def _cached_lead(segments, types) -> int:
    """How many leading segments form a cacheable prefix (0: none worth caching)."""
    lead = 0
    for seg in segments:
        if seg.kind == "const" or (seg.kind == "space_pad" and types.get(seg.field) == "text"):
            lead += 1
        else:
            break
    worth = any(seg.kind == "space_pad" for seg in segments[:lead])
    return lead if worth and lead < len(segments) else 0


def _key_prefix(src: _Source, table, segments, local) -> str:
    """A local holding the key text of ``segments`` and the delimiter after them."""
    delimiter = table.spec.decl.key.delimiter
    signature = ("key prefix", delimiter, tuple(segments))
    name = src.shared.get(signature)
    if name is not None:
        return name
    # A constant's text, or the function of its field's value that makes the segment's text.
    parts = [
        keys.check_segment(seg.arg or "", "constant", delimiter)
        if seg.kind == "const"
        else table.segment_part(seg)
        for seg in segments
    ]
    refs = [seg.field for seg in segments if seg.kind != "const"]

    def prefix(*values: str) -> str:
        given = iter(values)
        texts = [part if type(part) is str else part(next(given)) for part in parts]
        return delimiter.join(texts) + delimiter

    fn = src.const(lru_cache(maxsize=65536)(prefix), "KP")
    name = src.shared[signature] = f"kp{len(src.shared)}"
    src.add(f"{name} = {fn}({', '.join(local[r] for r in refs)})")
    return name


def _encoded_key(text: str) -> bytes:
    return keys.check_key_size(text.encode("utf-8"))
