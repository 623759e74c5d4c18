"""A drafted schema as a YAML file whose comments give each decision's reason.

Written by hand rather than by a YAML dumper: one field, segment or column per line, in flow
style, with its comment beside it, in the order the user guide documents the keys. Scalars are
plain where YAML reads them back as the same text, JSON-quoted otherwise. Pure.
"""

from __future__ import annotations

import json
import re
import textwrap
from decimal import Decimal

from btts.draft.model import Choice, DraftSchema

__all__ = ["render"]

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*\Z")
_RESERVED = {"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"}
_WIDTH = 99
INDEX_NOTE = (
    "The series index: btts serve lists the metrics, tag values and series from it (suggest, "
    "lookup, the * of a query) without reading data; every ingest job writes it beside the "
    "rows, `btts index rebuild` remakes it from the table."
)


def scalar(value: object) -> str:
    """One YAML scalar (or flow collection) that reads back as ``value``."""
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):  # never an exponent: YAML 1.1 reads 1e-07 as text
        return format(Decimal(repr(value)), "f")
    if isinstance(value, list):
        return "[" + ", ".join(scalar(v) for v in value) + "]"
    if isinstance(value, dict):
        return flow(value)
    text = str(value)
    if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text):
        return text  # a day, as the user guide writes `earliest:`
    if _PLAIN.match(text) and text.lower() not in _RESERVED:
        return text
    return json.dumps(text, ensure_ascii=False)


def flow(mapping: dict) -> str:
    return "{" + ", ".join(f"{scalar(k)}: {scalar(v)}" for k, v in mapping.items()) + "}"


def _comment(lines: list[str], text: str, indent: str) -> None:
    for line in textwrap.wrap(text, _WIDTH - len(indent) - 2, break_on_hyphens=False):
        lines.append(f"{indent}# {line}")


def _item(lines: list[str], indent: str, head: str, choice: Choice) -> None:
    """A line with its comment above it (long) or beside it (short)."""
    body = f"{indent}{head}{flow(choice.value) if head.endswith('- ') else ''}"
    if choice.comment and len(body) + 3 + len(choice.comment) <= _WIDTH:
        lines.append(f"{body}  # {choice.comment}")
        return
    if choice.comment:
        _comment(lines, choice.comment, indent)
    lines.append(body)


def _fields(lines: list[str], draft: DraftSchema) -> None:
    lines.append("event:")
    if draft.time_comment:
        _comment(lines, draft.time_comment, "  ")
    lines.append(f"  time: {scalar(draft.time)}")
    if draft.csv is not None:
        _comment(lines, draft.csv.comment, "  ")
        lines.append(f"  csv: {flow(draft.csv.value)}")
    if draft.unpivot is not None:
        _comment(lines, draft.unpivot.comment, "  ")
        lines.append(f"  unpivot: {flow(draft.unpivot.value)}")
    if draft.missing is not None:
        _comment(lines, draft.missing.comment, "  ")
        lines.append(f"  missing: {scalar(draft.missing.value['missing'])}")
    lines.append("  fields:")
    for name, choice in draft.fields.items():
        body = f"    {scalar(name)}: {flow(choice.value)}"
        if choice.comment and len(body) + 3 + len(choice.comment) <= _WIDTH:
            lines.append(f"{body}  # {choice.comment}")
        else:
            if choice.comment:
                _comment(lines, choice.comment, "    ")
            lines.append(body)


def _table(lines: list[str], draft: DraftSchema) -> None:
    lines.append("tables:")
    lines.append(f"  - name: {draft.table}")
    if draft.pattern_comment:
        _comment(lines, draft.pattern_comment, "    ")
    lines.append(f"    pattern: {draft.pattern}")
    if draft.cell_timestamp is not None:
        _comment(lines, draft.cell_timestamp.comment, "    ")
        lines.append(f"    cell_timestamp: {draft.cell_timestamp.value['cell_timestamp']}")
    for section, items in (("families", draft.families), ("key", draft.key)):
        lines.append(f"    {section}:")
        for choice in items:
            _item(lines, "      ", "- ", choice)
    lines.append("    columns:")
    for choice in draft.columns:
        _item(lines, "      ", "- ", choice)


def _advisor(lines: list[str], draft: DraftSchema) -> None:
    notes = draft.advisor_comments
    lines.append("advisor:")
    for key, value in draft.advisor.items():
        if notes.get(key):
            _comment(lines, notes[key], "  ")
        if key == "fields":
            lines.append("  fields:")
            for name, spec in value.items():
                lines.append(f"    {scalar(name)}: {flow(spec)}")
        else:
            lines.append(f"  {key}: {scalar(value)}")


def render(draft: DraftSchema) -> str:
    """The schema file's text."""
    lines: list[str] = []
    for text in draft.header:
        if text:
            _comment(lines, text, "")
        else:
            lines.append("#")
    lines.append(f"dataset: {draft.dataset}")
    lines.append(f"doc: {scalar(draft.doc)}")
    _fields(lines, draft)
    _table(lines, draft)
    if draft.queries:
        lines.append("queries:")
        for choice in draft.queries:
            _item(lines, "  ", "- ", choice)
    _comment(lines, INDEX_NOTE, "")
    lines.append(f"index: {{table: {draft.dataset.upper()[:43]}_SERIES}}")
    _advisor(lines, draft)
    return "\n".join(lines) + "\n"
