"""The generic job's own flags: which schema file describes the events and
their tables."""

from __future__ import annotations

from pipelines.flags.spec import Flag, Group

__all__ = ["GROUP"]

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
