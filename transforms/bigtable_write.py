"""Writing row mutations with Beam's own ``WriteToBigTable``, one sink per table.

The pure builders produce client-neutral :class:`RowMutation` tuples; conversion to the client's
``DirectRow`` happens here, right before the sink, in the same fused stage (so no ``DirectRow``
is ever pickled between workers).
"""

from __future__ import annotations

from collections.abc import Sequence

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.io.gcp.bigtableio import WriteToBigTable
from apache_beam.metrics import Metrics
from google.cloud.bigtable.data import mutations as data_mutations
from google.cloud.bigtable.row import DirectRow

from transforms.ingest import NAMESPACE
from transforms.mutations import AddCell, Cell, RowMutation


def to_direct_row(row: RowMutation) -> DirectRow:
    """A ``DirectRow`` carrying exactly the row's cells with their event-time timestamps.

    Appends the data client's ``SetCell`` directly: ``DirectRow.set_cell`` wants a ``datetime``
    per cell, which costs more than the rest of the row and would only be converted back.
    """
    direct = DirectRow(row.key)
    append = direct._get_mutations().append
    for cell in row.cells:
        if type(cell) is Cell:
            append(
                data_mutations.SetCell(cell.family, cell.qualifier, cell.value, cell.timestamp_us)
            )
        elif type(cell) is AddCell:
            raise TypeError("AddToCell rows go through WriteAggregates, not WriteToBigTable")
        else:
            raise TypeError(f"unknown cell type {type(cell).__name__}")
    return direct


class _SplitByTableFn(beam.DoFn):
    def __init__(self, tables: Sequence[str]) -> None:
        self._tables = frozenset(tables)

    def setup(self) -> None:
        self._rows = {t: Metrics.counter(NAMESPACE, f"rows_{t}") for t in self._tables}
        self._cells = {t: Metrics.counter(NAMESPACE, f"cells_{t}") for t in self._tables}

    def process(self, row: RowMutation):
        if row.table not in self._tables:
            raise ValueError(f"row for table {row.table!r}, which this write does not declare")
        self._rows[row.table].inc()
        self._cells[row.table].inc(len(row.cells))
        yield pvalue.TaggedOutput(row.table, to_direct_row(row))


class WriteRows(beam.PTransform):
    """Write :class:`RowMutation` s to their tables with ``WriteToBigTable``."""

    def __init__(
        self,
        project: str,
        instance: str,
        tables: Sequence[str],
        flush_count: int = 1000,
        max_row_bytes: int = 5 * 1024 * 1024,
    ) -> None:
        super().__init__()
        if not tables:
            raise ValueError("WriteRows needs at least one table")
        self._project = project
        self._instance = instance
        self._tables = list(dict.fromkeys(tables))
        self._flush_count = flush_count
        self._max_row_bytes = max_row_bytes

    def expand(self, rows: beam.PCollection) -> dict[str, beam.PCollection]:
        split = rows | "SplitByTable" >> beam.ParDo(_SplitByTableFn(self._tables)).with_outputs(
            *self._tables
        )
        return {
            table: split[table]
            | f"Write[{table}]"
            >> WriteToBigTable(
                project_id=self._project,
                instance_id=self._instance,
                table_id=table,
                flush_count=self._flush_count,
                max_row_bytes=self._max_row_bytes,
            )
            for table in self._tables
        }
