"""Any dataset described by a schema file → its tables, with no Python of its own.

The schema file (YAML or JSON, see docs/user-guide.md) declares the source fields, the event
time, and every table the events fan out to: families with GC rules, the row-key recipe, the
column pattern and which fields feed which qualifiers. It is read and validated at launch,
before any data is read (a local path or gs://; a template launch passes --schema). Bad events
go to the dead letters with their reason; aggregate tables are written with AddToCell.

    python -m pipelines.generic --schema my_dataset.yaml --input 'events/*.jsonl' --create_tables
    btts ingest --schema my_dataset.yaml --input 'events/*.jsonl' --create_tables
    btts ingest --schema my_dataset.yaml --input_subscription projects/P/subscriptions/S \
        --dead_letter_topic projects/P/topics/T                         # streaming
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.runner import PipelineResult

from btts import admin
from pipelines import common
from transforms import generic
from transforms.schema_file import Schema, SchemaError, load

NAME = "generic"


class GenericOptions(PipelineOptions):
    """Which schema file describes the events and their tables."""

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("Schema")
        group.add_argument(
            "--schema",
            type=str,
            default=None,
            help="The schema file (YAML or JSON; a local path or gs://) declaring the events "
            "and the tables they land in. Required. Read and validated at launch.",
        )
        group.add_argument(
            "--schema_table",
            type=str,
            action="append",
            default=None,
            help="Write only this table of the schema (repeatable). Default: every table the "
            "schema writes from events.",
        )


class GenericPipelineOptions(
    GenericOptions,
    common.FileInputOptions,
    common.StreamingInputOptions,
    common.BigtableOptions,
    common.TimeOptions,
):
    """The flags of this job: the schema, input (files or Pub/Sub), Bigtable target, zone."""


OPTION_CLASSES = GenericPipelineOptions.__bases__  # what run() parses and --help shows


def load_schema(options: PipelineOptions) -> Schema:
    path = options.view_as(GenericOptions).schema
    if not path:
        raise admin.ConfigError("pass --schema with the schema file describing the events")
    try:
        return load(path)
    except SchemaError as err:
        raise admin.ConfigError(str(err)) from None
    except OSError as err:
        raise admin.ConfigError(f"cannot read the schema {path}: {err}") from None


def builder_for(options: PipelineOptions, schema: Schema) -> generic.Builder:
    try:
        return generic.Builder(
            schema, options.view_as(GenericOptions).schema_table, common.timezone(options)
        )
    except ValueError as err:
        raise admin.ConfigError(str(err)) from None


def job_for(options: PipelineOptions, schema: Schema | None = None) -> common.JobSpec:
    schema = schema or load_schema(options)
    builder = builder_for(options, schema)
    return common.JobSpec(
        name=schema.dataset,
        description=__doc__,
        builder=builder,
        tables=tuple(builder.tables),
        csv_adapter=builder.csv_adapter,
        decls={t: schema.table(t).decl for t in builder.tables},
        schema_source=str(schema.source),
    )


class _SplitAggregates(beam.DoFn):
    def __init__(self, aggregate_tables: Sequence[str]) -> None:
        self._aggregate = frozenset(aggregate_tables)

    def process(self, row):
        if row.table in self._aggregate:
            yield pvalue.TaggedOutput(row.table, row)
        else:
            yield row


def build(
    pipeline: beam.Pipeline, options: PipelineOptions, job: common.JobSpec | None = None
) -> dict[str, beam.PCollection]:
    """Read (files or Pub/Sub) → build rows (bad input to dead letters) → write each table:
    SetCell tables with WriteToBigTable, aggregate tables with AddToCell."""
    from transforms.aggregate_write import WriteAggregates
    from transforms.bigtable_write import WriteRows
    from transforms.ingest import DEAD_LETTER, ROWS, BuildRows, ReadPubSubLines, ReadRecordLines

    job = job or job_for(options)
    builder: generic.Builder = job.builder  # type: ignore[assignment]
    target = common.resolve_target(options)
    stream = options.view_as(common.StreamingInputOptions)
    timeout = options.view_as(common.BigtableOptions).write_timeout_seconds
    if stream.input_subscription:
        lines = pipeline | "ReadMessages" >> ReadPubSubLines(stream.input_subscription)
    else:
        input_format = options.view_as(common.FileInputOptions).input_format
        patterns = common.input_patterns(options)
        lines = pipeline | "ReadLines" >> ReadRecordLines(patterns, input_format)
    built = lines | "ParseAndBuild" >> BuildRows(job.builder, job.name, job.csv_adapter)
    aggregates = builder.aggregate_tables()
    plain = [t for t in job.tables if t not in aggregates]
    split = built[ROWS] | "SplitAggregates" >> beam.ParDo(
        _SplitAggregates(aggregates)
    ).with_outputs(*aggregates, main="cells")
    if plain:
        split["cells"] | "WriteBigtable" >> WriteRows(
            target.project, target.instance, plain, timeout_s=timeout
        )
    for table in aggregates:
        split[table] | f"WriteAggregates_{table}" >> WriteAggregates(
            target.project, target.instance, table, operation_timeout=timeout
        )
    letters = built[DEAD_LETTER]
    common.write_dead_letters(letters, options, job.name)
    return {"rows": built[ROWS], "dead_letter": letters}


def run(argv: Sequence[str] | None = None) -> PipelineResult:
    """Every ingest job's run, with the job (its tables and their declarations) from the
    schema file instead of the built-in declarations."""
    return common.run_file_ingest(
        argv,
        name=NAME,
        description=__doc__,
        classes=OPTION_CLASSES,
        build=build,
        job_for=job_for,
    )


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    run()
