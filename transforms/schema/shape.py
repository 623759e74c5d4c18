"""What an input record is before it is an event: ``event.extra_fields``, ``event.unpivot``
(wide files: columns become events) and time fields made ``from:`` several fields.

Each function checks one part of the parsed ``event:`` section and reports every mistake,
with its line and the fix, into the file's :class:`~.problems.Problems`.
"""

from __future__ import annotations

import re

from transforms.schema.model import RECORD_NUMBER, TIME_ROLES, FieldSpec, Unpivot
from transforms.schema.problems import Problems, suggest
from transforms.schema.yaml_lines import Map, line_of

__all__ = [
    "DERIVED_TIME_FORMAT",
    "check_sources",
    "extra_fields",
    "missing_tokens",
    "time_sources",
    "unpivot",
]

EXTRA_FIELDS = ("refuse", "ignore")
# How a time made from several fields reaches its field's parser: a wall time, so that the
# field's timezone, earliest and ambiguous apply as to any other time field.
DERIVED_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%f"
# the range of a constant part of a made time (``from: {year: 1973, ...}``)
_CONSTANT_RANGES = {
    "year": (1, 9999), "quarter": (1, 4), "month": (1, 12), "week": (1, 53), "day": (1, 31),
    "hour": (0, 23), "minute": (0, 59), "second": (0, 59),
}  # fmt: skip
_CLOCK = ("hour", "minute", "second")
COMBINATIONS = (
    "year (+ quarter, + week, or + month [+ day [+ time, or hour [+ minute [+ second]]]]) "
    "or date (+ time, or hour [+ minute [+ second]])"
)


def combination_problem(roles: set[str]) -> str:
    """Why ``roles`` make no time ("" when they do): a year (+ quarter, + week, or + month
    [+ day [+ a time of day]]) or a date [+ a time of day], where a time of day is ``time``
    (HH:MM[:SS]) or hour [+ minute [+ second]]."""
    if not roles & {"year", "date"}:
        if roles & {"month", "day", "quarter", "week"}:
            return (
                "has no year: add year: FIELD, or year: YYYY (a constant, e.g. year: 1973) when "
                "every event is of one year"
            )
        return "has no year or date"
    base = {"date"} if "date" in roles else {"year"}
    rest = roles - base
    if "date" in roles and rest & {"year", "quarter", "month", "week", "day"}:
        return "combines date with year, quarter, month, week or day"
    if len(rest & {"quarter", "month", "week"}) > 1:
        return "combines more than one of quarter, month and week"
    if rest & {"quarter", "week"} and rest - {"quarter", "week"}:
        return "combines quarter or week with finer parts"
    if "day" in rest and "month" not in rest:
        return "has a day but no month"
    clock = rest & {"time", *_CLOCK}
    if clock and "date" not in roles and "day" not in rest:
        return "has a time of day but no day"
    if "time" in clock and len(clock) > 1:
        return "combines time with hour, minute or second"
    for finer, coarser in (("minute", "hour"), ("second", "minute")):
        if finer in clock and coarser not in clock:
            return f"has a {finer} but no {coarser}"
    return ""


def extra_fields(problems: Problems, event: Map) -> str:
    """``refuse`` (the default: a typo must not drop data) or ``ignore``."""
    value = problems.text(event, "extra_fields", "event", default="refuse")
    if value not in EXTRA_FIELDS:
        problems.bad(
            line_of(event, "extra_fields"),
            f"event: extra_fields is refuse or ignore{suggest(value, EXTRA_FIELDS)}, got {value!r}",
        )
        return "refuse"
    return value


def unpivot(problems: Problems, event: Map, fields: tuple[FieldSpec, ...]) -> Unpivot | None:
    """``unpivot: {columns: [A, B] | match: REGEX, name: FIELD, value: FIELD}``."""
    if "unpivot" not in event:
        return None
    what = "event.unpivot"
    node = problems.mapping(event["unpivot"], what, line_of(event, "unpivot"))
    if node is None:
        return None
    problems.keys(node, ("columns", "match", "name", "value"), what)
    names = {f.name: f for f in fields}
    roles = {}
    for role in ("name", "value"):
        field = problems.text(node, role, what, required=True)
        if field and field not in names:
            problems.bad(
                line_of(node, role),
                f"{what}: {role} {field!r} is not a declared field{suggest(field, names)}; "
                "declare it under event.fields",
            )
        roles[role] = field
    if roles["name"] in names and names[roles["name"]].type not in ("text", "id"):
        problems.bad(line_of(node, "name"), f"{what}: field {roles['name']!r} must be text")
    columns = problems.text_list(node, "columns", what) if "columns" in node else ()
    pattern = problems.text(node, "match", what)
    if bool(columns) == bool(pattern):
        problems.bad(node.line, f"{what}: give either columns (a list) or match (a regex)")
    if pattern:
        try:
            re.compile(pattern)
        except re.error as err:
            problems.bad(line_of(node, "match"), f"{what}: match {pattern!r}: {err}")
    for column in columns or ():
        if column in names:
            problems.bad(
                line_of(node, "columns"),
                f"{what}: column {column!r} is also a declared field; an unpivoted column "
                "becomes the value of field "
                f"{roles['value']!r}, so remove it from event.fields",
            )
    return Unpivot(roles["name"], roles["value"], tuple(columns or ()), pattern or "")


def time_sources(
    problems: Problems, spec: Map, what: str, kind: str
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, int], ...]]:
    """A time field's ``from: {year: Y, quarter: Q}``: the roles and the fields giving them
    (checked against the declared fields once all are known: :func:`check_sources`), and the
    roles given as constants (a whole number: ``year: 1973``)."""
    if "from" not in spec or type(spec["from"]) is int or spec["from"] == RECORD_NUMBER:
        # (a CSV column: csv_section; the record number: event)
        return (), ()
    node = problems.mapping(spec["from"], f"{what}: from", line_of(spec, "from"))
    if node is None:
        return (), ()
    if kind != "time":
        problems.bad(line_of(spec, "from"), f"{what}: 'from' applies to time fields only")
        return (), ()
    problems.keys(node, TIME_ROLES, f"{what}: from")
    pairs, constants = [], []
    for role in TIME_ROLES:
        value = node.get(role)
        if value is None:
            continue
        if type(value) is int:
            low, high = _CONSTANT_RANGES.get(role, (0, -1))
            if not low <= value <= high:
                problems.bad(
                    line_of(node, role),
                    f"{what}: from: {role} {value} is not a constant {role}"
                    + (f" ({low}-{high})" if high >= low else "; name a field"),
                )
            constants.append((role, value))
        elif isinstance(value, str) and value:
            pairs.append((role, value))
        else:
            problems.bad(
                line_of(node, role),
                f"{what}: from: {role} is a field's name or a whole number, got {value!r}",
            )
    roles = {r for r, _ in pairs} | {r for r, _ in constants}
    why = combination_problem(roles)
    if why:
        named = ", ".join(r for r in TIME_ROLES if r in roles) or "nothing"
        fix = "" if "add year" in why else f"; combine {COMBINATIONS}"
        problems.bad(
            line_of(spec, "from"), f"{what}: from: {named} does not make a time: it {why}{fix}"
        )
    elif not pairs:
        problems.bad(
            line_of(spec, "from"),
            f"{what}: from: every part is a constant, so every event would have the same "
            "time; give at least one part as a field's name",
        )
    return tuple(pairs), tuple(constants)


def missing_tokens(problems: Problems, node: Map, what: str) -> tuple[str, ...] | None:
    """``missing: [NA, NaN, "null"]``: the texts that mean "no value" (None when not given).
    Each is text as written: a YAML null or number is refused (quote it), so that ``null``
    never silently becomes something else."""
    if "missing" not in node:
        return None
    value = node["missing"]
    line = line_of(node, "missing")
    if not isinstance(value, list):
        problems.bad(line, f"{what}: missing is a list of texts, e.g. missing: [NA, NaN]")
        return None
    out = []
    for token in value:
        if not isinstance(token, str):
            shown = "null" if token is None else str(token).lower()
            problems.bad(
                line, f'{what}: missing: {shown} is not text; quote it: missing: ["{shown}"]'
            )
        elif token not in out:
            out.append(token)
    return tuple(out)


def check_sources(problems: Problems, fields: tuple[FieldSpec, ...]) -> None:
    """Every field a made time comes from is a declared field, and no made time comes from
    another made time."""
    names = {f.name: f for f in fields}
    for spec in fields:
        for role, source in spec.sources:
            other = names.get(source)
            if other is None:
                problems.bad(
                    spec.line,
                    f"field {spec.name!r}: from: {role} {source!r} is not a declared field"
                    f"{suggest(source, names)}; declare it under event.fields",
                )
            elif other.sources:
                problems.bad(spec.line, f"field {spec.name!r}: {source!r} is itself made 'from'")
