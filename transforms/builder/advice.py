"""What a refusal of a time before its field's earliest tells the user to declare: the text
after the refusal, worked out once per field when the builder is planned (never per record)."""

from __future__ import annotations

from transforms.schema import FieldSpec, Schema, builtin
from transforms.table_model import EPOCH_KEY_KINDS

__all__ = ["early_advice"]


def _is_builtin(schema: Schema) -> bool:
    """Whether ``schema`` is a built-in dataset's declaration (its text, wherever it was read)."""
    try:
        return builtin(schema.dataset).text == schema.text
    except (OSError, ValueError):  # no such built-in dataset (or it does not load)
        return False


def early_advice(schema: Schema, spec: FieldSpec) -> str:
    """What a user's schema file must declare to land a time of ``spec`` before its earliest
    (``{earliest}``: the first day of that time's year), following the refusal's text. None for
    a built-in dataset: its declaration is not the user's to change."""
    if spec.type != "time" or _is_builtin(schema):
        return ""
    named = f"field {spec.name!r}"
    if spec.earliest:
        return f"; declare an earlier earliest ({{earliest}} or before) on {named}"
    written = schema.written()
    epoch_keyed = [
        t.name
        for t in written
        if any(s.field == spec.ref and s.kind in EPOCH_KEY_KINDS for s in t.decl.key.segments)
    ]
    if epoch_keyed:
        return (
            f"; the key of table {', '.join(epoch_keyed)} holds {named} as epoch milliseconds, "
            "which hold no time before 1970: key it by a calendar label (time: "
            f"{spec.ref}, format: yyyymmdd, …) and declare earliest: {{earliest}} on {named} "
            "to land older times"
        )
    stamped = [
        t.name
        for t in written
        if spec.ref in (t.time or schema.time, t.time_else) and t.decl.cell_timestamp == "unix"
    ]
    tables = f", and cell_timestamp: offset on table {', '.join(stamped)}," if stamped else ""
    return f"; declare earliest: {{earliest}} (or earlier) on {named}{tables} to land older times"
