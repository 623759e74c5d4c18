"""What a job is: the :class:`JobSpec` (schema, tables, declarations, rollup; its builder) of a
schema file or a built-in dataset, the job the time flags make of it, and the tables a run of it
writes."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from btts import errors
from transforms import schema as schema_lib
from transforms.builder import builder as schema_builder
from transforms.ingest.build_rows import CsvAdapter
from transforms.rollup.core import RollupSpec, schema_rollups
from transforms.table_model import TableDecl

__all__ = [
    "JobSpec",
    "builtin_job",
    "index_tables",
    "job_tables",
    "schema_job",
    "table_decl",
    "with_times",
]


@dataclass(frozen=True)
class JobSpec:
    """What distinguishes one file-ingest job from another: its schema, the tables it writes
    and the zone it labels days in; its :attr:`builder` is compiled from them when first asked
    for, so a job the flags change (:func:`with_times`) is compiled once, as changed."""

    name: str
    description: str
    schema: schema_lib.Schema
    tables: Sequence[str]
    decls: Mapping[str, TableDecl]  # every table of the job's schema file
    tz: dt.tzinfo = dt.timezone.utc
    rollup: RollupSpec | None = None
    schema_source: str | None = None  # a user's schema file, named in messages
    # A rule on every event's rows beyond the schema's (raises InvalidEvent), e.g. sales'
    # --replace_months; kept apart from the builder so --time_format can rebuild that.
    check_rows: Callable[[Sequence[tuple]], None] | None = None

    @functools.cached_property
    def builder(self) -> schema_builder.Builder:
        """The schema's compiled builder for the job's tables: compiled here, once per job."""
        return schema_builder.Builder(self.schema, list(self.tables), self.tz)

    @property
    def csv_adapter(self) -> CsvAdapter:
        """CSV records reshaped as the schema's events (``Builder.csv_adapter``)."""
        return self.builder.csv_adapter

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
    """The job of a schema file: its tables (``tables``, default every table it writes from
    events), its declarations, and the hourly rollup it declares for them, if any; its builder
    is compiled when first used. A built-in schema's tables need no ``--schema`` to create; a
    user's file is named in hints.
    Raises ConfigError (a UserError: one line naming what to change)."""
    try:
        chosen = schema.tables_to_write(tables)
    except ValueError as err:  # tables the schema does not write from events
        raise errors.ConfigError.because(err) from err
    rollups = schema_rollups(schema)
    return JobSpec(
        name=name or schema.dataset,
        description=description,
        schema=schema,
        tables=tuple(chosen),
        decls=schema.decls(),
        tz=tz,
        rollup=next((rollups[t] for t in chosen if t in rollups), None),
        schema_source=None if builtin else str(schema.source),
    )


def builtin_job(dataset: str, description: str, **kwargs) -> JobSpec:
    """The job of the built-in dataset ``dataset`` (``transforms/declarations/<dataset>.yaml``)."""
    return schema_job(schema_lib.builtin(dataset), description=description, **kwargs)


def with_times(job: JobSpec, formats: Mapping[str, str], zone: str, ambiguous: str) -> JobSpec:
    """The job reading its input's times another way (``--time_format`` as field → format,
    ``--input_timezone``, ``--ambiguous_times``); unchanged without them. Its schema changes,
    its builder is not compiled yet; a bad choice is a SchemaError."""
    if not (formats or zone or ambiguous):
        return job
    schema = schema_lib.with_times(job.schema, formats, zone, ambiguous)  # or a SchemaError
    return dataclasses.replace(job, schema=schema)


def index_tables(job: JobSpec, rollup: bool = False) -> list[str]:
    """The tables of ``job`` (and its rollup's, with ``rollup``) whose series its schema's
    index lists; empty when the schema declares no index."""
    from transforms.scans import series_index

    if job.schema.index is None:
        return []
    listed = {t.name for t in series_index.indexed_tables(job.schema)}
    written = [*job.tables, *([job.rollup.table] if rollup and job.rollup else [])]
    return [t for t in dict.fromkeys(written) if t in listed]


def job_tables(job: JobSpec, rollup: bool, indexed: Sequence[str]) -> list[str]:
    """The tables a run of ``job`` writes: its own, its hourly rollup's (with ``rollup``), and
    its series index when the run writes tables it lists (``indexed``, :func:`index_tables`)."""
    tables = list(job.tables)
    if rollup and job.rollup:
        tables.append(job.rollup.table)
    if indexed:
        tables.append(job.schema.index.table)
    return tables


def table_decl(job: JobSpec, table: str) -> TableDecl:
    """The declaration of a table ``job`` writes: one of its schema's, or its series index."""
    index = job.schema.index
    if table not in job.decls and index is not None and index.table == table:
        return index.decl()
    return job.decls[table]
