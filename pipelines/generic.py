"""Any dataset described by a schema file → its tables, with no Python of its own.

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

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

from btts import config, errors
from pipelines import common
from pipelines.flags import generic as job_flags

__all__ = ["OPTION_CLASSES", "build", "run"]

NAME = "generic"


# What run() parses and --help shows.
OPTION_CLASSES = common.option_classes(NAME)


def job_for(options: PipelineOptions) -> common.JobSpec:
    own = options.view_as(common.options_class(job_flags.GROUP))
    if not own.schema:
        raise errors.ConfigError("pass --schema with the schema file describing the events")
    return common.schema_job(
        config.load_schema(own.schema, own.proto_module or ()),
        description=__doc__,
        tables=own.schema_table,
        tz=common.timezone(options),
        builtin=False,
    )


ENTRY = common.IngestEntry(NAME, __doc__, OPTION_CLASSES, job_for)
build, run = ENTRY.build, ENTRY.run

if __name__ == "__main__":
    ENTRY.main()
