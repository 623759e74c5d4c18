"""Query records as a text table, JSON or CSV (``btts query --format table|json|csv``, the
demo).

Records are dicts, field name → value (:mod:`btts.query.engine`). In every format ``ts_ms``
gains a readable ``time`` (UTC, ISO 8601);
decimals keep their exact text (JSON strings, since a JSON number would go through a float in
most readers); the row key is shown in JSON and CSV, and in tables with ``show_keys``. CSV has
one column per entry of a dict field (``metrics.CPU/CPU1_USR``), so a spreadsheet gets numbers.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from decimal import Decimal

from transforms.text.timefmt import iso

__all__ = ["to_csv", "to_json", "to_table", "wide_grids"]

MAX_WIDTH = 60
MAX_DICT_COLUMNS = 8  # a dict field with more keys is summarised in one column


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "-"
    return str(value)


def _json_value(value: object) -> object:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    return value


def as_json_object(record: Mapping[str, object]) -> dict:
    """One record as a JSON-ready dict (``time`` added after ``ts_ms``)."""
    out: dict[str, object] = {}
    for name, value in record.items():
        out[name] = _json_value(value)
        if name == "ts_ms":
            out["time"] = iso(value)
    return out


def to_json(records: Sequence[Mapping[str, object]]) -> str:
    return json.dumps([as_json_object(r) for r in records], indent=2, ensure_ascii=False)


_ISO = object()  # the CSV column that shows ts_ms as ISO 8601


def _csv_text(value: object) -> str:
    return "" if value is None else _text(value)


def to_csv(records: Sequence[Mapping[str, object]]) -> str:
    """RFC 4180 CSV with a header: the records' fields in order (``time`` after ``ts_ms``),
    each dict field spread into ``field.ENTRY`` columns; an empty answer is the header only."""
    fields: dict[str, dict[str, None] | None] = {}  # field → its dict entries (None: a value)
    for record in records:
        for name, value in record.items():
            if isinstance(value, dict):
                entries = fields.setdefault(name, {}) or {}
                entries.update(dict.fromkeys(map(str, value)))
                fields[name] = entries
            else:
                fields.setdefault(name, None)
    columns: dict[str, tuple[str, object]] = {}  # header → (field, dict entry, None or _ISO)
    for name, entries in fields.items():
        if entries is None:
            columns[name] = (name, None)
            if name == "ts_ms":
                columns["time"] = (name, _ISO)
        else:
            columns.update((f"{name}.{k}", (name, k)) for k in entries)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for record in records:
        row = []
        for name, entry in columns.values():
            value = record.get(name)
            if entry is _ISO:
                row.append(iso(value) if value is not None else "")
            elif entry is None:
                row.append(_csv_text(value))
            else:
                found = {str(k): v for k, v in (value or {}).items()}
                row.append(_csv_text(found.get(entry)))
        writer.writerow(row)
    return out.getvalue()


def _summary(values: dict) -> str:
    """``96 values: 0000=12.34, 0015=13.45 … 2345=28.90``."""
    items = [f"{k}={_text(v)}" for k, v in values.items()]
    if len(items) <= 3:
        return f"{len(items)} values: {', '.join(items)}"
    return f"{len(items)} values: {items[0]}, {items[1]} … {items[-1]}"


def _clip(text: str) -> str:
    return text if len(text) <= MAX_WIDTH else text[: MAX_WIDTH - 1] + "…"


def to_table(records: Sequence[Mapping[str, object]], show_keys: bool = False) -> str:
    """A fixed-width table, one line per record; dict fields become columns (or a summary)."""
    if not records:
        return "(no rows)"
    fields = [f for f in dict.fromkeys(k for r in records for k in r) if show_keys or f != "key"]
    columns: list[tuple[str, Callable[[Mapping], str]]] = []  # (header, a record's cell text)
    for name in fields:
        sample = next(r[name] for r in records if name in r)
        if isinstance(sample, dict):
            keys = list(dict.fromkeys(k for r in records for k in r.get(name, {})))
            if len(keys) <= MAX_DICT_COLUMNS:
                columns += [
                    (str(k), lambda r, n=name, k=k: _text((r.get(n) or {}).get(k))) for k in keys
                ]
            else:
                columns.append((name, lambda r, n=name: _clip(_summary(r.get(n)))))
        elif name == "ts_ms":
            columns.append(("time", lambda r: iso(r.get("ts_ms"))))
        else:
            columns.append((name, lambda r, n=name: _clip(_text(r.get(n)))))
    headers = [h for h, _ in columns]
    lines = [[cell(record) for _, cell in columns] for record in records]
    widths = [max(len(h), *(len(row[i]) for row in lines)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(headers), "  ".join("-" * w for w in widths), *map(line, lines)])


def wide_grids(records: Sequence[Mapping[str, object]], per_line: int = 6) -> Iterator[str]:
    """Every entry of a lone record's dict fields too wide for :func:`to_table` (a meter's 96
    readings, a garden's month), several per line: one grid per field."""
    lone = records[0] if len(records) == 1 else {}
    for value in lone.values():
        if isinstance(value, dict) and len(value) > MAX_DICT_COLUMNS:
            items = [f"{k}={_text(v)}" for k, v in value.items()]
            width = max(len(i) for i in items)
            yield "\n".join(
                "  ".join(i.ljust(width) for i in items[n : n + per_line]).rstrip()
                for n in range(0, len(items), per_line)
            )
