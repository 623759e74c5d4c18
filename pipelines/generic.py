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
import time
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
_LOG = logging.getLogger(__name__)


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


OPTION_CLASSES = (
    GenericOptions,
    common.FileInputOptions,
    common.StreamingInputOptions,
    common.BigtableOptions,
    common.TimeOptions,
)


class GenericPipelineOptions(
    GenericOptions,
    common.FileInputOptions,
    common.StreamingInputOptions,
    common.BigtableOptions,
    common.TimeOptions,
):
    """The flags of this job: the schema, input (files or Pub/Sub), Bigtable target, zone."""


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
    from transforms.ingest import (
        DEAD_LETTER,
        ROWS,
        BuildRows,
        ReadPubSubLines,
        ReadRecordLines,
        WriteDeadLetters,
        WriteDeadLettersToPubSub,
    )

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
    if stream.dead_letter_topic:
        letters | "DeadLettersToPubSub" >> WriteDeadLettersToPubSub(stream.dead_letter_topic)
    else:
        prefix = common.dead_letter_prefix(options, job.name)
        letters | "WriteDeadLetters" >> WriteDeadLetters(prefix)
    return {"rows": built[ROWS], "dead_letter": letters}


def prepare(options: PipelineOptions, schema: Schema, tables: Sequence[str]) -> admin.Target:
    """Check (or create, with --create_tables) the schema's tables before any data moves."""
    target = common.resolve_target(options)
    bt = options.view_as(common.BigtableOptions)
    if not bt.skip_preflight:
        decls = [schema.table(t).decl for t in tables]
        try:
            for line in admin.preflight(target, decls, create=bt.create_tables):
                _LOG.info("%s", line)
        except admin.ConfigError as err:
            raise admin.ConfigError(
                str(err).replace(
                    "btts tables create", f"btts tables create --schema {schema.source}"
                )
            ) from None
    return target


def run(argv: Sequence[str] | None = None) -> PipelineResult:
    """Like every ingest job's run (common.run_file_ingest), with the tables from the schema
    file instead of the built-in declarations."""
    try:
        options = common.parse_args(argv, f"python -m pipelines.{NAME}", __doc__, OPTION_CLASSES)
        schema = load_schema(options)
        job = job_for(options, schema)
        common.validate_input(options, job)
        target = prepare(options, schema, job.tables)
    except admin.ConfigError as err:
        raise SystemExit(f"{NAME}: error: {err}") from None
    started = time.monotonic()
    pipeline = beam.Pipeline(options=options)
    build(pipeline, options, job)
    result = pipeline.run()
    if common.is_streaming(options):
        _LOG.info("%s: streaming; stop it with Ctrl-C or by cancelling the job", schema.dataset)
    result.wait_until_finish()
    seconds = time.monotonic() - started
    result.btts_counters = common.counters(result)
    print(common.summary(f"{NAME} ({schema.dataset})", result.btts_counters, seconds, target))
    return result


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    run()
