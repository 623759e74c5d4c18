"""The generic job's description and own flags: which schema file describes the events and
their tables."""

from __future__ import annotations

from pipelines.flags.spec import Flag, Group

__all__ = ["DESCRIPTION", "GROUP"]

DESCRIPTION = """\
Any dataset described by a schema file → its tables, with no Python of its own.

The schema file (YAML or JSON, see docs/user-guide.md) declares the source fields, the event
time, and every table the events fan out to: families with GC rules, the row-key recipe, the
column pattern and which fields feed which qualifiers. It is read and validated at launch,
before any data is read (a local path or gs://; a template launch passes --schema). Bad events
go to the dead letters with their reason; aggregate tables are written with AddToCell.

    python -m pipelines.generic --schema my_dataset.yaml --input 'events/*.jsonl' --create_tables
    btts ingest --schema my_dataset.yaml --input 'events/*.jsonl' --create_tables
    btts ingest --schema my_dataset.yaml --input_subscription projects/P/subscriptions/S \\
        --dead_letter_topic projects/P/topics/T                         # streaming
"""

GROUP = Group.of(
    "generic",
    "Schema",
    Flag(
        "--schema",
        help="The schema file (YAML or JSON; a local path or gs://) declaring the events "
        "and the tables they land in. Required. Read and validated at launch.",
    ),
    Flag(
        "--schema_table",
        action="append",
        help="Write only this table of the schema (repeatable). Default: every table the "
        "schema writes from events.",
    ),
    Flag(
        "--proto_module",
        action="append",
        help="A Python module the schema's protobuf messages may come from, besides the "
        "project's protos package (repeatable). A schema file cannot name one itself.",
    ),
)
