"""What an input record is before it is an event: ``event.extra_fields``, ``event.unpivot``
(wide files: columns become events) and time fields made ``from:`` several fields.

Each function checks one part of the parsed ``event:`` section and reports every mistake,
with its line and the fix, into the file's :class:`~.problems.Problems`.
"""

from __future__ import annotations

import re

from transforms.schema.model import TIME_ROLES, FieldSpec, Unpivot
from transforms.schema.problems import Problems, suggest
from transforms.schema.yaml_lines import Map, line_of

__all__ = ["DERIVED_TIME_FORMAT", "check_sources", "extra_fields", "time_sources", "unpivot"]

EXTRA_FIELDS = ("refuse", "ignore")
# How a time made from several fields reaches its field's parser: a wall time, so that the
# field's timezone, earliest and ambiguous apply as to any other time field.
DERIVED_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%f"
# the roles a time made of several fields may combine (year or date first)
_COMBINATIONS = (
    {"year"},
    {"year", "quarter"},
    {"year", "month"},
    {"year", "month", "day"},
    {"year", "month", "day", "time"},
    {"date"},
    {"date", "time"},
)


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
) -> tuple[tuple[str, str], ...]:
    """A time field's ``from: {year: Y, quarter: Q}``: the roles and the fields giving them
    (checked against the declared fields once all are known: :func:`check_sources`)."""
    if "from" not in spec:
        return ()
    node = problems.mapping(spec["from"], f"{what}: from", line_of(spec, "from"))
    if node is None:
        return ()
    if kind != "time":
        problems.bad(line_of(spec, "from"), f"{what}: 'from' applies to time fields only")
        return ()
    problems.keys(node, TIME_ROLES, f"{what}: from")
    pairs = tuple(
        (role, str(node[role])) for role in TIME_ROLES if role in node and node[role] is not None
    )
    if set(dict(pairs)) not in _COMBINATIONS:
        problems.bad(
            line_of(spec, "from"),
            f"{what}: from: {', '.join(r for r, _ in pairs) or 'nothing'} does not make a "
            "time; combine year (+ quarter, or + month [+ day [+ time]]) or date (+ time)",
        )
    return pairs


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
