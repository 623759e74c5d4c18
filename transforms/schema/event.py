"""The ``event:`` section of a schema file: the source fields and the event time.

Each function reads one part of the parsed document (:mod:`.yaml_lines`) and reports every
mistake, with its line and the fix, into the file's :class:`~.problems.Problems`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from transforms.schema.csv_section import column_position
from transforms.schema.era import earliest_day
from transforms.schema.model import (
    CASES,
    FIELD_KEYS,
    FIELD_TYPES,
    MAP_QUALIFIERS,
    RECORD_NUMBER,
    WHITESPACE,
    FieldSpec,
)
from transforms.schema.problems import Problems, suggest
from transforms.schema.shape import (
    DERIVED_TIME_FORMAT,
    check_sources,
    missing_tokens,
    time_sources,
)
from transforms.schema.yaml_lines import Map, line_of
from transforms.text import decimal_year, timefmt

__all__ = ["NAME", "event_time", "fields", "time_ref"]

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")  # a dataset's or an alias's name


def fields(problems: Problems, event: Map) -> tuple[FieldSpec, ...]:
    node = problems.mapping(event.get("fields"), "event.fields", line_of(event, "fields"))
    if node is None:
        return ()
    out = [f for f in (_field(problems, node, name) for name in node) if f is not None]
    refs: dict[str, FieldSpec] = {}
    for spec in out:
        if spec.ref in refs:
            problems.bad(
                spec.line,
                f"field {spec.name!r}: name {spec.ref!r} is already used by field "
                f"{refs[spec.ref].name!r} (line {refs[spec.ref].line}); rename one with 'as'",
            )
        refs[spec.ref] = spec
    for spec in out:
        if spec.after:
            time_ref(problems, spec.after, refs, spec.line, f"field {spec.name!r}: after", True)
    check_sources(problems, tuple(out))
    if not out:
        problems.bad(node.line, "event.fields: empty; declare the source's fields")
    return tuple(out)


def _field(problems: Problems, node: Map, name: object) -> FieldSpec | None:
    """One entry of ``event.fields``, every option checked in the order the file reads."""
    line = line_of(node, name)
    what = f"field {name!r}"
    if not isinstance(name, str) or not name:
        problems.bad(line, f"{what}: a field name must be text")
        return None
    spec = node[name]
    if isinstance(spec, str):  # shorthand: "bid: number"
        spec_map = Map({"type": spec})
        spec_map.line, spec_map.lines = line, {"type": line}
        spec = spec_map
    spec = problems.mapping(spec, what, line)
    if spec is None:
        return None
    problems.keys(spec, FIELD_KEYS, what)
    kind = problems.text(spec, "type", what, required=True)
    if kind and kind not in FIELD_TYPES:
        problems.bad(
            line_of(spec, "type"),
            f"{what}: unknown type {kind!r}{suggest(kind, FIELD_TYPES)}; "
            f"use one of {', '.join(FIELD_TYPES)}",
        )
    alias = problems.text(spec, "as", what)
    if alias and not NAME.match(alias):
        problems.bad(line_of(spec, "as"), f"{what}: 'as' {alias!r} must be a plain name")
    optional = spec.get("optional", False)
    if not isinstance(optional, bool):
        problems.bad(line_of(spec, "optional"), f"{what}: optional must be true or false")
        optional = False
    times = _time_options(problems, spec, what, kind)
    text = _text_options(problems, spec, what, kind)
    bounds = _bounds(problems, spec, what, kind)
    missing = missing_tokens(problems, spec, what)
    if missing is not None and times["sources"]:
        problems.bad(line_of(spec, "missing"), f"{what}: a time made 'from' fields is never read")
    return FieldSpec(
        name=name,
        type=kind,
        alias=alias,
        optional=optional,
        max_length=problems.integer(spec, "max_length", what),
        minimum=bounds.get("min"),
        maximum=bounds.get("max"),
        max_entries=problems.integer(spec, "max_entries", what),
        doc=problems.text(spec, "doc", what),
        missing=missing,
        column=column_position(problems, spec, what),
        numbered=_numbered(problems, spec, what, kind, optional),
        line=line,
        **times,
        **text,
    )


def _numbered(problems: Problems, spec: Map, what: str, kind: str | None, optional: bool) -> bool:
    """``from: record_number``: the field is the record's number in its source file (1 is the
    first record), given by the reader, not read from the input; a whole number, never absent."""
    if spec.get("from") != RECORD_NUMBER:
        return False
    if kind != "integer" or optional:
        problems.bad(
            line_of(spec, "from"),
            f"{what}: from: {RECORD_NUMBER} is a whole number in every record: declare it "
            "{type: integer} (not optional)",
        )
    return True


def _time_options(problems: Problems, spec: Map, what: str, kind: str | None) -> dict:
    """``format``, ``timezone``, ``ambiguous``, ``earliest`` and ``from`` of a field."""
    fmt = problems.text(spec, "format", what, default="auto")
    if "format" in spec and kind != "time":
        problems.bad(line_of(spec, "format"), f"{what}: 'format' applies to time fields only")
    if fmt not in timefmt.NAMED_FORMATS and "%" not in fmt:
        problems.bad(
            line_of(spec, "format"),
            f"{what}: unknown time format {fmt!r}{suggest(fmt, timefmt.NAMED_FORMATS)}; "
            f"use one of {', '.join(timefmt.NAMED_FORMATS)} or a strptime pattern such as "
            "'%Y/%m/%d %H:%M'",
        )
    elif fmt not in timefmt.NAMED_FORMATS and timefmt.strptime_problem(fmt):
        problems.bad(line_of(spec, "format"), f"{what}: {timefmt.strptime_problem(fmt)}")
    zone = problems.text(spec, "timezone", what)
    if zone and kind != "time":
        problems.bad(line_of(spec, "timezone"), f"{what}: 'timezone' applies to time fields")
    elif zone and timefmt.zone(zone) is None:
        problems.bad(line_of(spec, "timezone"), f"{what}: unknown time zone {zone!r} (IANA)")
    elif zone and timefmt.has_offset(fmt) and fmt != "auto":
        problems.bad(
            line_of(spec, "timezone"),
            f"{what}: format {fmt!r} carries its own offset: 'timezone' would never apply",
        )
    ambiguous = problems.text(spec, "ambiguous", what, default="error")
    if ambiguous not in timefmt.DST_CHOICES or ("ambiguous" in spec and not zone):
        problems.bad(
            line_of(spec, "ambiguous"),
            f"{what}: ambiguous is one of {', '.join(timefmt.DST_CHOICES)}, with timezone",
        )
    earliest = ""
    if "earliest" in spec and kind != "time":
        problems.bad(line_of(spec, "earliest"), f"{what}: 'earliest' applies to time fields")
    elif "earliest" in spec:
        earliest, why = earliest_day(spec["earliest"], what)
        if why:
            problems.bad(line_of(spec, "earliest"), why)
    sources, constants = time_sources(problems, spec, what, kind)
    date_format = ""
    if sources:  # made by the shaper as a wall time, read like any other time
        date_format = _date_format(problems, spec, what, fmt, sources)
        fmt = DERIVED_TIME_FORMAT
    return {
        "format": fmt,
        "date_format": date_format,
        "timezone": zone,
        "ambiguous": ambiguous,
        "earliest": earliest,
        "sources": sources,
        "constants": constants,
        "round": _round(problems, spec, what, fmt),
    }


def _date_format(problems: Problems, spec: Map, what: str, fmt: str, sources) -> str:
    """A made time's ``format``: how its ``date`` part is written (a pattern such as
    ``"%m/%d/%Y"``; ``date`` or none: YYYY-MM-DD). Without a date part it has nothing to read."""
    if "format" not in spec or fmt == "date":
        return ""
    if "date" not in {role for role, _ in sources}:
        problems.bad(
            line_of(spec, "format"),
            f"{what}: a time made from: parts takes a format only for its date part",
        )
    elif "%" not in fmt:
        problems.bad(
            line_of(spec, "format"),
            f"{what}: the format of a from: date is a pattern such as '%m/%d/%Y', got {fmt!r}",
        )
    return fmt


def _round(problems: Problems, spec: Map, what: str, fmt: str) -> str:
    """``round``: the unit a ``decimal_year`` time is rounded to, which that format needs."""
    unit = problems.text(spec, "round", what)
    units = ", ".join(decimal_year.ROUND_UNITS)
    if "round" in spec and fmt != "decimal_year":
        problems.bad(line_of(spec, "round"), f"{what}: 'round' applies to format decimal_year")
    elif fmt == "decimal_year" and not unit:
        problems.bad(
            line_of(spec, "format"),
            f"{what}: format decimal_year needs round: the unit its times land on ({units}; "
            "a monthly R ts: month)",
        )
    elif unit and unit not in decimal_year.ROUND_UNITS:
        problems.bad(
            line_of(spec, "round"),
            f"{what}: round {unit!r}{suggest(unit, decimal_year.ROUND_UNITS)}; use one of {units}",
        )
    return unit


def _text_options(problems: Problems, spec: Map, what: str, kind: str | None) -> dict:
    """``whitespace``, ``case``, ``after`` and a map's ``qualifier``."""
    whitespace = problems.text(spec, "whitespace", what, default="allow")
    if whitespace not in WHITESPACE:
        problems.bad(line_of(spec, "whitespace"), f"{what}: whitespace is one of {WHITESPACE}")
    case = problems.text(spec, "case", what, default="as_is")
    if case not in CASES or ("case" in spec and kind != "text"):
        problems.bad(line_of(spec, "case"), f"{what}: case is one of {CASES}, for text fields")
    after = problems.text(spec, "after", what)
    if after and kind != "time":
        problems.bad(line_of(spec, "after"), f"{what}: 'after' applies to time fields only")
    qualifier = problems.text(spec, "qualifier", what, default="upper")
    if qualifier not in MAP_QUALIFIERS:
        problems.bad(line_of(spec, "qualifier"), f"{what}: qualifier is one of {MAP_QUALIFIERS}")
    return {"whitespace": whitespace, "case": case, "after": after, "qualifier": qualifier}


def _bounds(problems: Problems, spec: Map, what: str, kind: str | None) -> dict[str, str]:
    """``min`` and ``max`` of a number, as the text they were written with."""
    bounds = {}
    for key in ("min", "max"):
        if key in spec:
            value = spec[key]
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                problems.bad(line_of(spec, key), f"{what}: {key} must be a number")
                continue
            text = str(value)
            if not re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", text):
                problems.bad(line_of(spec, key), f"{what}: {key} {value!r} is not a number")
                continue
            if kind not in ("number", "integer"):
                problems.bad(line_of(spec, key), f"{what}: {key} applies to numbers only")
            bounds[key] = text
    return bounds


def event_time(problems: Problems, event: Map, fields: tuple[FieldSpec, ...]) -> str:
    if "time" not in event:
        times = [f.ref for f in fields if f.type == "time"]
        hint = f"e.g. 'time: {times[0]}'" if times else "and a field of type time"
        problems.bad(
            event.line,
            f"event: missing 'time', the field holding the event time (cell timestamps are "
            f"event times, never the wall clock); add {hint}",
        )
        return ""
    time = problems.text(event, "time", "event")
    time_ref(problems, time, {f.ref: f for f in fields}, line_of(event, "time"), "event.time")
    return time


def time_ref(
    problems: Problems,
    name: str,
    refs: Mapping[str, FieldSpec],
    line: int,
    what: str,
    optional_ok: bool = False,
) -> None:
    spec = refs.get(name)
    if spec is None:
        problems.bad(
            line,
            f"{what}: {name!r} is not a declared field{suggest(name, refs)}; declare it "
            "under event.fields with 'type: time'",
        )
    elif spec.type != "time":
        problems.bad(line, f"{what}: field {name!r} is {spec.type}, not time; give it type: time")
    elif spec.optional and not optional_ok:
        problems.bad(line, f"{what}: field {name!r} is optional; an event time must be required")
