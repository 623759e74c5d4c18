"""Reading a source file's records with the standard library (never with the code under test),
to compare with what ``btts query`` reads back after ``btts init`` and an ingest: for
tests/btts/draft/test_drafts_of_public_files.py and the larger run of tests/init_datasets.py."""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

__all__ = ["record_values", "source_records"]


def source_records(path: Path) -> list[dict]:
    """The file's records, each value as its source text (read without the code under test)."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if raw[:4] == b"PAR1":
        import pyarrow.parquet as pq

        rows = pq.read_table(path).to_pylist()
        return [{k: v for k, v in r.items() if v is not None} for r in rows]
    text = raw.decode("utf-8")
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")):
        items = (
            json.loads(text, parse_float=str, parse_int=str)
            if stripped.startswith("[")
            else [json.loads(line, parse_float=str, parse_int=str) for line in text.splitlines()]
        )
        return [{k: v for k, v in item.items() if v is not None} for item in items]
    rows = csv.DictReader(io.StringIO(text))
    return [{k.strip(): v for k, v in row.items() if v != ""} for row in rows]


def _text(value: object) -> str:
    if isinstance(value, float):
        return repr(value)
    return value if isinstance(value, str) else json.dumps(value)


def record_values(record: dict, skip: set[str]) -> tuple:
    """A record's values as sorted (name, text) pairs, a map's entries as fields of their own."""
    flat = {}
    for name, value in record.items():
        if name in skip:
            continue
        if isinstance(value, dict):
            flat.update({k: _text(v) for k, v in value.items()})
        else:
            flat[name] = _text(value)
    return tuple(sorted(flat.items()))
