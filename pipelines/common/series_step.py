"""The series index step of the ingest graph: the rows a job builds (and its hourly rollup's)
folded into the schema's series index (``index:``) and written through the job's SetCell sink,
beside the rows (:mod:`transforms.rollup.series_index`).

A batch run's build step folds its own rows as it builds them (:func:`build_step_index`, its
``index`` output): only the hourly rollup's rows, and a stream's, are folded by a step here."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import apache_beam as beam

from transforms.ingest.index_fold import IndexPlan
from transforms.rollup.series_index import IndexSeries
from transforms.schema import Schema

__all__ = ["build_step_index", "write_series_index"]


def build_step_index(
    schema: Schema, indexed: Sequence[str], tables: Sequence[str], streaming: bool
) -> IndexPlan | None:
    """What the build step indexes of a run writing ``tables`` (of those the index lists,
    ``indexed``): all of them in batch; None when streaming (windows: the step here folds per
    bundle and window) or when it writes none."""
    mine = [t for t in indexed if t in tables]
    if streaming or not mine:
        return None
    return IndexPlan.of(schema, mine)


def write_series_index(
    parts: Sequence[beam.PCollection],
    schema: Schema,
    indexed: Sequence[str],
    set_cells: Callable,
    built: beam.PCollection | None = None,
    built_tables: Sequence[str] = (),
) -> None:
    """Fold ``parts`` (batches of rows) of the ``indexed`` tables into the rows of ``schema``'s
    index and write them with ``set_cells(tables, latest_only=...)``, with ``built`` (batches
    of index rows the build step made of ``built_tables``)."""
    rest = [t for t in indexed if t not in built_tables]
    outputs = [built] if built is not None else []
    if rest and parts:
        table = schema.index.table
        rows = parts[0] if len(parts) == 1 else parts | "RowsToIndex" >> beam.Flatten()
        outputs.append(rows | "IndexSeries" >> IndexSeries(schema, table, rest))
    if not outputs:
        return
    table = schema.index.table
    families = {f.name for f in schema.index.decl().families}  # one version each
    index_rows = outputs[0] if len(outputs) == 1 else outputs | "AllIndexRows" >> beam.Flatten()
    index_rows | "WriteSeriesIndex" >> set_cells([table], latest_only={table: families})
