"""The series index step of the ingest graph: the rows a job builds (and its hourly rollup's)
folded into the schema's series index (``index:``) and written through the job's SetCell sink,
beside the rows (:mod:`transforms.rollup.series_index`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import apache_beam as beam

from transforms.rollup.series_index import IndexSeries
from transforms.schema import Schema

__all__ = ["write_series_index"]


def write_series_index(
    parts: Sequence[beam.PCollection], schema: Schema, indexed: Sequence[str], set_cells: Callable
) -> None:
    """Fold ``parts`` (batches of rows) of the ``indexed`` tables into the rows of ``schema``'s
    index and write them with ``set_cells(tables, latest_only=...)``."""
    if not indexed:
        return
    rows = parts[0] if len(parts) == 1 else parts | "RowsToIndex" >> beam.Flatten()
    table = schema.index.table
    families = {f.name for f in schema.index.decl().families}  # one version each
    indexed_rows = rows | "IndexSeries" >> IndexSeries(schema, table, list(indexed))
    indexed_rows | "WriteSeriesIndex" >> set_cells([table], latest_only={table: families})
