"""The series index step of the ingest graph: the rows a job builds (and its hourly rollup's)
folded into the schema's series index (``index:``) and written through the job's SetCell sink,
beside the rows (:mod:`transforms.rollup.series_index`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import apache_beam as beam

from pipelines.common.jobspec import JobSpec
from transforms.rollup.series_index import IndexSeries
from transforms.scans import series_index

__all__ = ["write_series_index"]


def index_tables(job: JobSpec, rollup: bool = False) -> list[str]:
    """The tables of ``job`` (and its rollup's, with ``rollup``) whose series its schema's
    index lists; empty when the schema declares no index."""
    schema = job.builder.schema
    if schema.index is None:
        return []
    listed = {t.name for t in series_index.indexed_tables(schema)}
    written = [*job.tables, *([job.rollup.table] if rollup and job.rollup else [])]
    return [t for t in dict.fromkeys(written) if t in listed]


def write_series_index(
    parts: Sequence[beam.PCollection], job: JobSpec, set_cells: Callable, rollup: bool
) -> None:
    """Fold ``parts`` (batches of rows) into the index rows and write them."""
    tables = index_tables(job, rollup)
    if not tables:
        return
    schema = job.builder.schema
    rows = parts[0] if len(parts) == 1 else parts | "RowsToIndex" >> beam.Flatten()
    table = schema.index.table
    families = {f.name for f in schema.index.decl().families}  # one version each
    indexed = rows | "IndexSeries" >> IndexSeries(schema, table, tables)
    indexed | "WriteSeriesIndex" >> set_cells([table], latest_only={table: families})
