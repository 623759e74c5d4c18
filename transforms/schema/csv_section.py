"""``event.csv``: the CSV dialect of the schema's files, and fields read by column position.

``btts init`` writes the section when the file is not the plain default (comma, ``"`` quotes,
UTF-8, header on line 1, numbers with a decimal point), so the ingest reads exactly what init
saw::

    event:
      csv: {delimiter: ";", decimal: ",", thousands: ".", encoding: cp1252, skip_lines: 1}
      fields:
        ISE: {type: number, from: 2}      # the second column, whatever the header names it
        ISE_2: {type: number, from: 3}

A repeated column that is no field of its own (an entry of a map field that takes every other
column, or a column an unpivot reads) is named by position in the section, ``names: {3:
ISE_2}``, so the header gives every column a name of its own.

Each function reports every mistake, with its line and the fix, into the file's
:class:`~.problems.Problems`.
"""

from __future__ import annotations

from transforms.schema.model import FieldSpec
from transforms.schema.problems import Problems, suggest
from transforms.schema.yaml_lines import Map, line_of
from transforms.text.csv_dialect import DEFAULT, DELIMITERS, ENCODINGS, QUOTES, CsvDialect

__all__ = ["column_position", "dialect", "written"]

CSV_KEYS = ("delimiter", "quote", "encoding", "skip_lines", "decimal", "thousands", "names")
_DECIMALS = (".", ",")
_THOUSANDS = ("", ".", ",", " ", "'")


def column_position(problems: Problems, spec: Map, what: str) -> int:
    """``from: N``: the field is the file's N-th CSV column (1 is the first), read by position
    whatever the header calls it (0: not given; a mapping ``from:`` is a made time's)."""
    value = spec.get("from")
    if type(value) is not int:
        return 0
    if value < 1:
        problems.bad(line_of(spec, "from"), f"{what}: from: {value}: a CSV column is 1 or more")
        return 0
    return value


def _choice(problems: Problems, node: Map, key: str, allowed: dict | tuple, default: str) -> str:
    if key not in node:
        return default
    value = node[key]
    if value in allowed:
        return allowed[value] if isinstance(allowed, dict) else value
    shown = ", ".join(repr(a) for a in allowed)
    hint = suggest(str(value), [a for a in allowed if a]) if isinstance(value, str) else ""
    problems.bad(line_of(node, key), f"event.csv: {key} {value!r}{hint}: use one of {shown}")
    return default


def dialect(problems: Problems, event: Map, fields: tuple[FieldSpec, ...]) -> CsvDialect:
    """The section's dialect (the default when absent), with the fields and the section's
    ``names`` read by position."""
    if "csv" not in event:
        return DEFAULT.with_columns(_columns(problems, fields, {}))
    node = problems.mapping(event["csv"], "event.csv", line_of(event, "csv"))
    if node is None:
        return DEFAULT.with_columns(_columns(problems, fields, {}))
    problems.keys(node, CSV_KEYS, "event.csv")
    columns = _columns(problems, fields, _names(problems, node), line_of(node, "names"))
    skip = problems.integer(node, "skip_lines", "event.csv", minimum=0) or 0
    out = CsvDialect(
        delimiter=_choice(problems, node, "delimiter", DELIMITERS, ","),
        quote=_choice(problems, node, "quote", QUOTES, '"'),
        encoding=_choice(problems, node, "encoding", ENCODINGS, "utf-8"),
        skip=skip,
        decimal=_choice(problems, node, "decimal", _DECIMALS, "."),
        thousands=_choice(problems, node, "thousands", _THOUSANDS, ""),
        columns=tuple(columns),
    )
    marks = {out.delimiter, out.decimal, out.thousands} - {""}
    if len(marks) < 2 + bool(out.thousands):
        problems.bad(
            node.line,
            f"event.csv: delimiter {out.delimiter!r}, decimal {out.decimal!r} and thousands "
            f"{out.thousands!r} must differ (a comma decimal needs another delimiter: ';')",
        )
    return out


def _names(problems: Problems, node: Map) -> dict[int, str]:
    """``names: {3: ISE_2}``: columns named by position (1 is the first), each a name of its
    own; a mistake is reported with its line and ignored."""
    if "names" not in node:
        return {}
    line = line_of(node, "names")
    names = problems.mapping(node["names"], "event.csv.names", line)
    out: dict[int, str] = {}
    for position, name in (names or {}).items():
        if type(position) is not int or position < 1 or not isinstance(name, str) or not name:
            problems.bad(
                line,
                f"event.csv.names: {position!r}: {name!r}: give a column's position (1 is the "
                "first) and its name, e.g. names: {3: ISE_2}",
            )
        elif name in out.values():
            problems.bad(line, f"event.csv.names: {name!r} is given to two columns")
        else:
            out[position] = name
    return out


def _columns(
    problems: Problems, fields: tuple[FieldSpec, ...], names: dict[int, str], line: int = 0
) -> list[tuple[int, str]]:
    """The fields read by position and the columns ``names`` names, each position once."""
    declared = {spec.name for spec in fields}
    for position, name in names.items():
        if name in declared:
            problems.bad(
                line,
                f"event.csv.names: {name!r} is a field's name: give the field from: {position} "
                "instead",
            )
    taken: dict[int, FieldSpec] = {}
    for spec in fields:
        if not spec.column:
            continue
        if spec.column in taken:
            problems.bad(
                spec.line,
                f"field {spec.name!r}: from: {spec.column} is also field "
                f"{taken[spec.column].name!r}'s column; give each field its own",
            )
        taken[spec.column] = spec
    for position in names:
        if position in taken:
            problems.bad(
                line,
                f"event.csv.names: column {position} is already field {taken[position].name!r} "
                f"(from: {position}); name it once",
            )
    out = {position: spec.name for position, spec in taken.items()}
    out.update((p, n) for p, n in names.items() if p not in out and n not in declared)
    return sorted(out.items())


def written(dialect: CsvDialect) -> dict:
    """The ``event.csv`` keys that say ``dialect`` (its columns are the fields' ``from: N`` or
    ``names``, which the draft writes), only those that differ from the default: ``{}`` for a
    plain CSV file."""
    out: dict = {}
    names = {"delimiter": {"\t": "tab"}, "quote": {"": "none"}}
    for key, attr in zip(
        CSV_KEYS[:6],
        ("delimiter", "quote", "encoding", "skip", "decimal", "thousands"),
        strict=True,
    ):
        value = getattr(dialect, attr)
        if value != getattr(DEFAULT, attr):
            out[key] = names.get(key, {}).get(value, value)
    return out
