"""The input formats a job reads, named apart from the readers so that a job's ``--help`` can
list them without importing Beam."""

from __future__ import annotations

__all__ = ["INPUT_FORMATS"]

FORMATS = ("jsonl", "json_array", "csv", "parquet", "avro")
INPUT_FORMATS = ("auto", *FORMATS, "json")  # json: JSON lines (its first name)
