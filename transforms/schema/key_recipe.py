"""A table's ``key:``: the row-key recipe as an ordered list of segments, each checked against
the fields it reads."""

from __future__ import annotations

from collections.abc import Mapping

from transforms.schema.model import SEGMENT_KINDS, FieldSpec
from transforms.schema.problems import Problems, suggest
from transforms.schema.yaml_lines import Map, line_of
from transforms.table_model import BUCKET_UNITS, TIME_FORMATS, Segment

__all__ = ["key"]

SEGMENT_ALIASES = {"field": "text"}


def key(
    problems: Problems, node: Map, what: str, refs: Mapping[str, FieldSpec], check_fields: bool
) -> list[Segment]:
    seq = problems.sequence(node.get("key"), f"{what}: key", line_of(node, "key", node.line))
    out: list[Segment] = []
    if seq is None:
        return out
    if not seq:
        problems.bad(seq.line, f"{what}: the key is empty; list its segments")
    for index, item in enumerate(seq):
        line = line_of(seq, index)
        seg = segment(problems, item, line, what, refs, check_fields)
        if seg is not None:
            out.append(seg)
    key_fields = {s.field for s in out if s.field}
    for seg in out:
        for name in seg.of:  # only a salt lists fields it hashes
            if name not in key_fields:
                problems.bad(
                    seq.line,
                    f"{what}: the salt hashes {name!r}, which is not another segment "
                    "of the key; salt the text of key segments (e.g. the time)",
                )
    return out


# the parameters each kind of segment takes besides its own key
_PARAMS = {
    "zero_pad": ("width",),
    "space_pad": ("width",),
    "time": ("format",),
    "salt": ("buckets",),
    "reverse_ts": ("bucket",),
}


def segment(
    problems: Problems,
    item: object,
    line: int,
    what: str,
    refs: Mapping[str, FieldSpec],
    check: bool,
) -> Segment | None:
    if isinstance(item, str) and check and item in refs:  # shorthand: "- hostname"
        item = Map({"text": item})
    seg = problems.mapping(item, f"{what}: key segment", line)
    if seg is None:
        return None
    raw = _kind(problems, seg, line, what)
    if raw is None:
        return None
    kind = SEGMENT_ALIASES.get(raw, raw)
    where = f"{what}: segment {kind}"
    problems.keys(seg, (raw, *_PARAMS.get(kind, ())), where)
    arg = seg[raw]
    if kind == "const":
        if not isinstance(arg, str) or not arg:
            problems.bad(line, f"{where}: the constant must be non-empty text")
            return None
        return Segment("const", arg=arg)
    if kind == "salt":
        return _salt(problems, seg, line, where, arg)
    if not isinstance(arg, str) or not arg:
        problems.bad(line, f"{where}: name the field it reads, e.g. '{raw}: hostname'")
        return None
    if check:
        spec = refs.get(arg)
        if spec is None:
            problems.bad(
                line,
                f"{where}: field {arg!r} is not declared{suggest(arg, refs)}; declare it "
                "under event.fields (or fix the name)",
            )
        else:
            segment_type(problems, kind, spec, line, where)
    return _field_segment(problems, seg, line, where, kind, arg)


def _kind(problems: Problems, seg: Map, line: int, what: str) -> str | None:
    """The one kind a segment names, as written (an alias included); None when it names
    none or several (reported with the nearest kind)."""
    kinds = [k for k in seg if k in SEGMENT_KINDS or k in SEGMENT_ALIASES]
    if len(kinds) == 1:
        return kinds[0]
    other = [k for k in seg if k not in ("width", "format", "buckets", "bucket")]
    problems.bad(
        line,
        f"{what}: a key segment names one kind"
        f"{suggest(other[0], SEGMENT_KINDS) if other else ''}, got {list(seg)}; "
        f"use one of {', '.join(SEGMENT_KINDS)}",
    )
    return None


def _salt(problems: Problems, seg: Map, line: int, where: str, arg: object) -> Segment | None:
    """A salt: the key fields it hashes and its bucket count (2 or more)."""
    names = [arg] if isinstance(arg, str) else arg
    if not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
        problems.bad(line, f"{where}: list the key fields it hashes, e.g. 'salt: [ts]'")
        return None
    buckets = problems.integer(seg, "buckets", where, minimum=2)
    if buckets is None:
        problems.bad(line, f"{where}: give the bucket count, e.g. 'buckets: 3' (2 or more)")
        return None
    return Segment("salt", width=buckets, of=tuple(names))


def _field_segment(
    problems: Problems, seg: Map, line: int, where: str, kind: str, arg: str
) -> Segment | None:
    """A segment reading field ``arg``, with the parameter its kind needs checked."""
    if kind in ("zero_pad", "space_pad"):
        width = problems.integer(seg, "width", where)
        if width is None:
            problems.bad(line, f"{where}: give its width, e.g. 'width: 10'")
            return None
        return Segment(kind, field=arg, width=width)
    if kind == "time":
        fmt = problems.text(seg, "format", where, required=True)
        if fmt not in TIME_FORMATS:
            problems.bad(
                line_of(seg, "format"),
                f"{where}: unknown label format {fmt!r}{suggest(fmt, TIME_FORMATS)}; use "
                f"one of {', '.join(TIME_FORMATS)}",
            )
            return None
        return Segment("time", field=arg, arg=fmt)
    if kind == "reverse_ts":
        bucket = problems.text(seg, "bucket", where) or None
        if bucket and bucket not in BUCKET_UNITS:
            problems.bad(line_of(seg, "bucket"), f"{where}: bucket is one of {BUCKET_UNITS}")
            return None
        return Segment("reverse_ts", field=arg, arg=bucket)
    return Segment(kind, field=arg)


def segment_type(problems: Problems, kind: str, spec: FieldSpec, line: int, where: str) -> None:
    if spec.optional:
        problems.bad(line, f"{where}: field {spec.ref!r} is optional; a key field is required")
    wants = {
        "epoch_ms": ("time",),
        "reverse_ts": ("time",),
        "time": ("time",),
        "zero_pad": ("integer",),
        "reverse_id": ("integer", "id", "text"),
    }.get(kind, ("text", "id", "number", "integer", "boolean"))
    if spec.type not in wants:
        problems.bad(
            line,
            f"{where}: field {spec.ref!r} is {spec.type}; this segment needs {' or '.join(wants)}",
        )
