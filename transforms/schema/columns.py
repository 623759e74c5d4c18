"""A table's ``columns:``: which field feeds which qualifier, and how its value is written
(a field, a constant, JSON or a protobuf message of :mod:`.protobuf`'s allowed modules)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from transforms.limits import MAX_QUALIFIER_BYTES
from transforms.schema.model import QUALIFIER_TIME_FORMATS, ColumnSpec, FieldSpec
from transforms.schema.problems import Problems, suggest
from transforms.schema.protobuf import ProtoRefused, message_class, refusal
from transforms.schema.yaml_lines import Map, line_of
from transforms.table_model import Family

__all__ = ["columns"]


def columns(
    problems: Problems,
    node: Map,
    what: str,
    refs: Mapping[str, FieldSpec],
    families: Sequence[Family],
    pattern: str,
    written_by: str,
    proto_modules: Sequence[str] = (),
) -> list[ColumnSpec]:
    if "columns" not in node:
        return []
    seq = problems.sequence(node["columns"], f"{what}: columns", line_of(node, "columns"))
    if seq is None:
        return []
    fams = {f.name: f for f in families}
    out: list[ColumnSpec] = []
    seen: dict[tuple[str, str], int] = {}
    for index, item in enumerate(seq):
        line = line_of(seq, index)
        col = problems.mapping(item, f"{what}: column", line)
        if col is None:
            continue
        where = f"{what}: column on line {line}"
        problems.keys(col, ("family", "qualifier", "value", "each", "add"), where)
        family = problems.text(col, "family", where, required=True)
        fam = fams.get(family)
        if family and fam is None:
            problems.bad(
                line_of(col, "family"),
                f"{where}: family {family!r} is not one of this table's families "
                f"({', '.join(fams)}){suggest(family, fams)}",
            )
        spec = column(problems, col, where, refs, line, family, proto_modules)
        if spec is None:
            continue
        _check_in_table(problems, spec, what, where, fam, seen)
        out.append(spec)
    _check_pattern(problems, seq.line, what, pattern, out)
    if not seq and not written_by:
        problems.bad(seq.line, f"{what}: columns is empty; say which fields feed which cells")
    return out


def _check_in_table(
    problems: Problems,
    spec: ColumnSpec,
    what: str,
    where: str,
    fam: Family | None,
    seen: dict[tuple[str, str], int],
) -> None:
    """A column against the table's others (no two write one cell) and its family (an
    aggregate family takes ``add:`` columns only)."""
    family, line = spec.family, spec.line
    if isinstance(spec.qualifier, str) and spec.qualifier:
        previous = seen.get((family, spec.qualifier))
        if previous:
            problems.bad(
                line,
                f"{what}: duplicate qualifier {family}:{spec.qualifier} (also on line "
                f"{previous}): two fields would write the same cell; rename one",
            )
        seen[(family, spec.qualifier)] = line
    if fam is not None:
        if fam.aggregate and spec.add is None:
            problems.bad(line, f"{where}: family {family} is an aggregate: use 'add:'")
        if not fam.aggregate and spec.add is not None:
            problems.bad(line, f"{where}: 'add' needs an aggregate family (aggregate: sum)")


def _check_pattern(
    problems: Problems, line: int, what: str, pattern: str, out: list[ColumnSpec]
) -> None:
    """What the table's pattern needs of its columns taken together."""
    if pattern == "AGGREGATE" and any(c.add is None for c in out):
        problems.bad(line, f"{what}: AGGREGATE columns add into aggregate families ('add:')")
    if pattern == "TS-BLOB" and not any(c.value[:1] in (("protobuf",), ("json",)) for c in out):
        problems.bad(
            line,
            f"{what}: TS-BLOB stores the event serialized in one cell: give the column "
            "'value: {json: [fields…]}' or 'value: {protobuf: module.Message, fields: …}'",
        )
    if pattern == "TB-COL" and not any(
        isinstance(c.qualifier, tuple) and c.qualifier[0] == "field" for c in out
    ):
        problems.bad(
            line,
            f"{what}: TB-COL names each new column by the event's value: give a column "
            "'qualifier: {field: NAME}'",
        )


class _Need:
    """``need(name, key, types)``: whether the column's ``key`` reads a declared field (of one
    of ``types``), reporting it when not."""

    def __init__(self, problems: Problems, col: Map, where: str, refs: Mapping[str, FieldSpec]):
        self.problems, self.col, self.where, self.refs = problems, col, where, refs

    def __call__(self, name: object, key: str, types: Sequence[str] = ()) -> bool:
        refs = self.refs
        if not isinstance(name, str) or name not in refs:
            self.problems.bad(
                line_of(self.col, key),
                f"{self.where}: {key} reads field {name!r}, which is not declared"
                f"{suggest(name, refs)}; declare it under event.fields",
            )
            return False
        if types and refs[name].type not in types:
            self.problems.bad(
                line_of(self.col, key),
                f"{self.where}: {key} needs a field of type {' or '.join(types)}; "
                f"{name!r} is {refs[name].type}",
            )
            return False
        return True


def column(
    problems: Problems,
    col: Map,
    where: str,
    refs: Mapping[str, FieldSpec],
    line: int,
    family: str,
    proto_modules: Sequence[str] = (),
) -> ColumnSpec | None:
    need = _Need(problems, col, where, refs)
    if "each" in col:
        each = col["each"]
        if not need(each, "each", ("map",)):
            return None
        if "qualifier" in col or "value" in col:
            problems.bad(line, f"{where}: 'each' takes qualifier and value from the map entries")
        return ColumnSpec(family, each=each, line=line)
    qualifier = _qualifier(problems, col, where, line, need)
    if qualifier is None:
        return None
    if "add" in col:
        add = col["add"]
        if "value" in col:
            problems.bad(line, f"{where}: an aggregate column has 'add', not 'value'")
        if type(add) is not int and not need(add, "add", ("integer",)):
            return None
        return ColumnSpec(family, qualifier, add=add, line=line)
    if "value" not in col:
        problems.bad(line, f"{where}: give a value: a field name, {{const: TEXT}}, {{json: …}}")
        return None
    value = _value(problems, col, where, need, proto_modules)
    if value is None:
        return None
    return ColumnSpec(family, qualifier, value, line=line)


def _qualifier(
    problems: Problems, col: Map, where: str, line: int, need: _Need
) -> str | tuple | None:
    """A text qualifier, ``("field", NAME)`` or ``("time", FORMAT)``; None when it is wrong."""
    raw = col.get("qualifier")
    if isinstance(raw, str) and raw:
        if len(raw.encode()) > MAX_QUALIFIER_BYTES:
            problems.bad(line_of(col, "qualifier"), f"{where}: a qualifier is at most 16 KiB")
        return raw
    if isinstance(raw, Map) and len(raw) == 1 and "field" in raw:
        if not need(raw["field"], "qualifier"):
            return None
        return ("field", raw["field"])
    if isinstance(raw, Map) and len(raw) == 1 and "time" in raw:
        if raw["time"] not in QUALIFIER_TIME_FORMATS:
            problems.bad(
                line_of(col, "qualifier"),
                f"{where}: qualifier time format is one of {QUALIFIER_TIME_FORMATS}",
            )
            return None
        return ("time", raw["time"])
    problems.bad(
        line_of(col, "qualifier", line),
        f"{where}: give a qualifier: text (BID), {{field: NAME}} or {{time: hhmm}}",
    )
    return None


def _value(
    problems: Problems, col: Map, where: str, need: _Need, proto_modules: Sequence[str]
) -> tuple | None:
    """What the cell holds: a field, a constant, fields as JSON or as a protobuf message."""
    raw = col.get("value")
    if isinstance(raw, str):
        return ("field", raw) if need(raw, "value") else None
    if isinstance(raw, Map) and set(raw) == {"const"} and isinstance(raw["const"], str):
        return ("const", raw["const"])
    if isinstance(raw, Map) and set(raw) == {"json"} and isinstance(raw["json"], list):
        for name in raw["json"]:
            need(name, "value")
        return ("json", tuple(raw["json"]))
    if isinstance(raw, Map) and set(raw) == {"protobuf", "fields"}:
        return protobuf(problems, raw, where, need, proto_modules)
    problems.bad(
        line_of(col, "value"),
        f"{where}: value is a field name, {{const: TEXT}}, {{json: [fields]}} or "
        "{protobuf: module.Message, fields: {proto_field: field}}",
    )
    return None


def protobuf(
    problems: Problems, raw: Map, where: str, need, proto_modules: Sequence[str] = ()
) -> tuple | None:
    """``{protobuf: module.Message, fields: {proto field: field}}``: the message only from an
    allowed module (:mod:`.protobuf`), every proto field one it has."""
    message = raw["protobuf"]
    mapping = raw["fields"]
    if not isinstance(message, str) or "." not in message or not isinstance(mapping, Map):
        problems.bad(raw.line, f"{where}: protobuf: module.Message and fields: {{proto: field}}")
        return None
    why = refusal(message, proto_modules)
    if why:
        problems.bad(raw.line, f"{where}: protobuf message {message!r} refused: {why}")
        return None
    try:
        cls = message_class(message, proto_modules)
    except ProtoRefused as err:
        problems.bad(raw.line, f"{where}: protobuf message {message!r} refused: {err}")
        return None
    except (ImportError, AttributeError) as err:
        problems.bad(raw.line, f"{where}: cannot import protobuf message {message!r}: {err}")
        return None
    known = set(cls.DESCRIPTOR.fields_by_name)
    for proto_field, name in mapping.items():
        if proto_field not in known:
            problems.bad(
                line_of(mapping, proto_field),
                f"{where}: {message} has no field {proto_field!r}{suggest(proto_field, known)}",
            )
        need(name, "value")
    return ("protobuf", message, tuple(mapping.items()))
