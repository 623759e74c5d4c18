"""What a job is: the :class:`JobSpec` (builder, tables, declarations, rollup) of a schema
file or a built-in dataset, and the job the time flags make of it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from apache_beam.options.pipeline_options import PipelineOptions

from btts import errors
from pipelines.common.options import FileInputOptions, StreamingInputOptions
from transforms import schema as schema_lib
from transforms.build import builder as schema_builder
from transforms.ingest.build_rows import Builder, CsvAdapter
from transforms.rollup.core import RollupSpec, schema_rollups
from transforms.table_model import TableDecl

__all__ = ["JobSpec", "builtin_job", "job_tables", "schema_job", "table_decl", "with_time_input"]


@dataclass(frozen=True)
class JobSpec:
    """What distinguishes one file-ingest job from another."""

    name: str
    description: str
    builder: Builder
    tables: Sequence[str]
    decls: Mapping[str, TableDecl]  # every table of the job's schema file
    csv_adapter: CsvAdapter | None = None
    rollup: RollupSpec | None = None
    schema_source: str | None = None  # a user's schema file, named in messages
    # A rule on every event's rows beyond the schema's (raises InvalidEvent), e.g. sales'
    # --replace_months; kept apart from the builder so --time_format can rebuild that.
    check_rows: Callable[[Sequence[tuple]], None] | None = None

    def rows_fn(self) -> Callable[[dict], Sequence[tuple]]:
        """What BuildRows runs per record: the builder's plain rows, checked if asked."""
        if self.check_rows is None:
            return self.builder.rows
        return functools.partial(_checked_rows, self.builder.rows, self.check_rows)

    def framed_fn(self) -> Callable[[dict, list, list], None] | None:
        """:meth:`rows_fn` with each row's request entry made alongside (the writers send it
        as it is), appended to a batch (``Builder.frame_into``), when the builder can (a
        schema's compiled builder)."""
        framed = getattr(self.builder, "frame_into", None)
        if framed is None or self.check_rows is None:
            return framed
        return functools.partial(_checked_framed, framed, self.check_rows)


def _checked_framed(
    framed: Callable, check: Callable, record: dict, rows: list, entries: list
) -> None:
    mine: list = []
    made: list = []
    framed(record, mine, made)
    check(mine)  # raises before anything is kept
    rows += mine
    entries += made


def _checked_rows(rows: Callable, check: Callable, record: dict) -> Sequence[tuple]:
    out = rows(record)
    check(out)
    return out


def schema_job(
    schema: schema_lib.Schema,
    *,
    description: str,
    name: str | None = None,
    tables: Sequence[str] | None = None,
    tz: dt.tzinfo = dt.timezone.utc,
    builtin: bool = True,
) -> JobSpec:
    """The job of a schema file: its compiled builder (for ``tables``, default every table it
    writes from events), its declarations, and the hourly rollup it declares for them, if any.
    A built-in schema's tables need no ``--schema`` to create; a user's file is named in hints."""
    try:
        builder = schema_builder.Builder(schema, list(tables) if tables else None, tz)
    except ValueError as err:  # tables the schema does not write from events
        raise errors.ConfigError(str(err)) from err
    rollups = schema_rollups(schema)
    rollup = next((rollups[t] for t in builder.tables if t in rollups), None)
    return JobSpec(
        name=name or schema.dataset,
        description=description,
        builder=builder,
        tables=tuple(builder.tables),
        decls=schema.decls(),
        csv_adapter=builder.csv_adapter,
        rollup=rollup,
        schema_source=None if builtin else str(schema.source),
    )


def builtin_job(dataset: str, description: str, **kwargs) -> JobSpec:
    """The job of the built-in dataset ``dataset`` (``transforms/declarations/<dataset>.yaml``)."""
    return schema_job(schema_lib.builtin(dataset), description=description, **kwargs)


def with_time_input(options: PipelineOptions, job: JobSpec) -> JobSpec:
    """The job reading its input's times as --time_format, --input_timezone and
    --ambiguous_times say (unchanged without them); a bad choice is a ConfigError."""
    opts = options.view_as(FileInputOptions)
    if not (opts.time_format or opts.input_timezone or opts.ambiguous_times):
        return job
    formats = {}
    for item in opts.time_format or []:
        name, sep, fmt = item.partition("=")
        if not sep or not name or not fmt:
            raise errors.ConfigError(f"--time_format {item!r}: give FIELD=FORMAT")
        formats[name] = fmt
    builder = job.builder
    schema = schema_lib.with_times(  # a format the schema refuses: a SchemaError
        builder.schema, formats, opts.input_timezone or "", opts.ambiguous_times or ""
    )
    builder = schema_builder.Builder(schema, builder.tables, builder.tz)
    return dataclasses.replace(job, builder=builder, csv_adapter=builder.csv_adapter)


def job_tables(options: PipelineOptions, job: JobSpec) -> list[str]:
    """The tables a run of ``job`` writes: its own, its hourly rollup's, its series index."""
    tables = list(job.tables)
    rollup = bool(options.view_as(StreamingInputOptions).hourly_rollup and job.rollup)
    if rollup:
        tables.append(job.rollup.table)
    index = job.builder.schema.index
    if index is not None and _indexes(job, tables):
        tables.append(index.table)
    return tables


def _indexes(job: JobSpec, tables: Sequence[str]) -> bool:
    from transforms.scans import series_index

    return bool({t.name for t in series_index.indexed_tables(job.builder.schema)} & set(tables))


def table_decl(job: JobSpec, table: str) -> TableDecl:
    """The declaration of a table ``job`` writes: one of its schema's, or its series index."""
    index = job.builder.schema.index
    if table not in job.decls and index is not None and index.table == table:
        return index.decl()
    return job.decls[table]
