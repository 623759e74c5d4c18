"""A row key written out in the generated builder (:mod:`transforms.builder.codegen`): each
segment's text from its field's local (free text checked when parsed, epoch digits, calendar
labels) or the segment's own function, leading entity segments cached as one prefix, a key of
text only cached whole. Constants and names are bound values (``src.const``), never source.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

from transforms.builder.source import SourceWriter
from transforms.table_model import TIME_FORMATS
from transforms.text import keys

if TYPE_CHECKING:
    from transforms.table_model import Segment

__all__ = ["Head", "key_expression", "salted"]

# the local holding a key's text before its time, and the bytes of delimiter its end holds
Head = tuple[str, int]


def salted(table) -> bool:
    """Is a key segment of ``table`` (a codegen TablePlan) a salt (the recipe builds it)?"""
    return any(s.kind == "salt" for s in table.spec.decl.key.segments)


def key_expression(
    src: SourceWriter, table, local: dict, types: dict, tz: dt.tzinfo, index: int
) -> tuple[str, Head | None]:
    """An expression of ``table``'s row key (bytes; may define ``key{index}`` first; a salted
    key is the recipe's own builder), and its :data:`Head` when the source has it at hand."""
    if salted(table):
        return f"{src.const(table.key, 'K')}(values)", None
    recipe = table.spec.decl.key
    delimiter = src.const(recipe.delimiter, "D")
    parts: list[str] = []
    text_only = True
    segments = recipe.segments
    part_fns = table.segment_parts
    lead = _cached_lead(segments, types)
    if lead:
        # Entity segments (padded names, constants) before a time: few distinct values, so their
        # text is cached, and computed once for every table that shares them.
        prefix = _key_prefix(src, table, segments[:lead], part_fns[:lead], local)
        text_only = False
        segments = segments[lead:]
        part_fns = part_fns[lead:]
    else:
        prefix = None
    for seg, part_fn in zip(segments, part_fns, strict=True):
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
            fn = src.const(part_fn, "P")
            parts.append(f"{fn}({local[ref]})")
    joined = f" + {delimiter} + ".join(parts)
    if prefix:
        joined = f"{prefix} + {joined}"
    if text_only and any(p in local.values() for p in parts):
        # Only fields' text and constants: the same entity always has the same key.
        cached = src.const(lru_cache(maxsize=65536)(_encoded_key), "KC")
        return f"{cached}({joined})", None
    src.add(f"key{index} = ({joined}).encode()")
    src.add(f"if len(key{index}) > MAX_KEY:")
    src.add(f"check_key_size(key{index})", 2)
    return f"key{index}", _head(recipe, types, prefix, parts)


def _head(recipe, types: dict, prefix: str | None, parts: list[str]) -> Head | None:
    """The key's text before its time, when that is one local (a field's text or the cached
    prefix) and the time's text (epoch digits, a sign before 1970) never holds the delimiter:
    ``key.rpartition(delimiter)[0]`` is then that text encoded, without the prefix's delimiter."""
    last = recipe.segments[-1]
    delimiter = recipe.delimiter
    if last.kind != "epoch_ms" or types.get(last.field) != "time" or len(recipe.segments) < 2:
        return None
    if "-" in delimiter or any(ch.isdigit() for ch in delimiter):
        return None
    before = ([prefix] if prefix else []) + parts[:-1]
    if len(before) != 1 or not before[0].isidentifier():
        return None
    return before[0], len(delimiter.encode("utf-8")) if prefix else 0


def _cached_lead(segments: tuple[Segment, ...], types: dict) -> int:
    """How many leading segments form a cacheable prefix (0: none worth caching)."""
    lead = 0
    for seg in segments:
        if seg.kind == "const" or (seg.kind == "space_pad" and types.get(seg.field) == "text"):
            lead += 1
        else:
            break
    worth = any(seg.kind == "space_pad" for seg in segments[:lead])
    return lead if worth and lead < len(segments) else 0


def _key_prefix(
    src: SourceWriter,
    table,
    segments: tuple[Segment, ...],
    part_fns: tuple[Callable[[object], str] | None, ...],
    local: dict,
) -> str:
    """A local holding the key text of ``segments`` and the delimiter after them."""
    delimiter = table.spec.decl.key.delimiter
    signature = ("key prefix", delimiter, tuple(segments))
    name = src.shared.get(signature)
    if name is not None:
        return name
    # A constant's text, or the function of its field's value that makes the segment's text.
    parts = [
        keys.check_segment(seg.arg or "", "constant", delimiter) if seg.kind == "const" else fn
        for seg, fn in zip(segments, part_fns, strict=True)
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
