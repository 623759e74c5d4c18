"""Writing row mutations with Beam's own ``WriteToBigTable``, one sink per table.

The pure builders produce client-neutral :class:`RowMutation` tuples; conversion to the client's
``DirectRow`` happens here, right before the sink, in the same fused stage (so no ``DirectRow``
is ever pickled between workers).

Beam's sink leaves the client's default of 600 s per write operation, retried by the runner: a
dead Bigtable makes a job hang for most of an hour. :class:`BoundedWriteToBigTable` is the same
sink with every wait bounded (``timeout_s`` per flush, retries of transient errors included)
and a failure that names the table, how many rows were refused and the server's first errors.
Failed rows are never dropped: the bundle, and so the job, fails.
"""

from __future__ import annotations

import atexit
from collections import Counter
from collections.abc import Sequence

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.internal.metrics.metric import Metrics as _ServiceMetrics
from apache_beam.io.gcp import bigtableio
from apache_beam.io.gcp.bigtableio import WriteToBigTable
from apache_beam.metrics import Metrics, monitoring_infos
from google.cloud.bigtable import Client
from google.cloud.bigtable.batcher import MutationsBatchError
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

    def start_bundle(self) -> None:
        self._counts = {t: [0, 0] for t in self._tables}  # rows, cells; added once per bundle

    def process(self, row: RowMutation):
        counts = self._counts.get(row.table)
        if counts is None:
            raise ValueError(f"row for table {row.table!r}, which this write does not declare")
        counts[0] += 1
        counts[1] += len(row.cells)
        yield pvalue.TaggedOutput(row.table, to_direct_row(row))

    def finish_bundle(self) -> None:
        for table, (rows, cells) in self._counts.items():
            if rows:
                self._rows[table].inc(rows)
                self._cells[table].inc(cells)


DEFAULT_TIMEOUT_S = 300.0
MAX_ATTEMPT_S = 60.0


class WriteFailed(RuntimeError):
    """Rows a table did not accept; the message carries the server's errors."""


class _BoundedWriteFn(bigtableio._BigTableWriteFn):
    """Beam's WriteToBigTable DoFn with bounded waits and a failure that says what failed."""

    def __init__(self, project_id, instance_id, table_id, flush_count, max_row_bytes, timeout_s):
        super().__init__(project_id, instance_id, table_id, flush_count, max_row_bytes)
        self.beam_options["timeout_s"] = float(timeout_s)  # beam_options is what pickles

    def write_mutate_metrics(self, status_list) -> None:
        """Beam's request-count metric, one increment per status code per batch instead of a
        labelled counter lookup per row (a tenth of the sink's time at high rates)."""
        codes = Counter(status.code if status else None for status in status_list)
        metric = self.service_call_metric
        for code, count in codes.items():
            status = metric.bigtable_error_code_to_grpc_status_string(code)
            labels = {**metric.base_labels, monitoring_infos.STATUS_LABEL: status}
            counter = _ServiceMetrics.counter(
                urn=metric.request_count_urn, labels=labels, process_wide=True
            )
            counter.inc(count)

    def start_bundle(self) -> None:
        if self.table is None:
            options = self.beam_options
            client = Client(project=options["project_id"])
            self.table = client.instance(options["instance_id"]).table(options["table_id"])
            impl = self.table._table_impl
            impl.default_mutate_rows_operation_timeout = options["timeout_s"]
            impl.default_mutate_rows_attempt_timeout = min(options["timeout_s"], MAX_ATTEMPT_S)
        super().start_bundle()
        self._written_in_bundle = 0

    def process(self, row: DirectRow) -> None:
        # Beam's own process, with its "Written Row" counter added once per bundle.
        self._written_in_bundle += 1
        self.batcher.mutate(row)

    def finish_bundle(self) -> None:
        self.written.inc(self._written_in_bundle)
        self._written_in_bundle = 0
        try:
            super().finish_bundle()
        except MutationsBatchError as err:
            errors = list(err.exc or [])
            shown = "; ".join(f"{type(e).__name__}: {e}" for e in errors[:3])
            raise WriteFailed(
                f"{len(errors)} write error(s) on table {self.beam_options['table_id']} (rows not "
                f"written; the bundle fails, nothing is dropped): {shown}"
            ) from err

    def teardown(self) -> None:
        # A bundle that failed before finish_bundle leaves its batcher registered to flush at
        # interpreter exit; its rows belong to a failed bundle, so forget it instead.
        if self.batcher is not None:
            atexit.unregister(self.batcher.close)
            self.batcher = None


class BoundedWriteToBigTable(WriteToBigTable):
    """``WriteToBigTable`` (native path) whose writes give up after ``timeout_s``."""

    def __init__(self, *args, timeout_s: float = DEFAULT_TIMEOUT_S, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._timeout_s = timeout_s

    def expand(self, rows: beam.PCollection) -> beam.PCollection:
        return rows | beam.ParDo(
            _BoundedWriteFn(
                self._project_id,
                self._instance_id,
                self._table_id,
                self._flush_count,
                self._max_row_bytes,
                self._timeout_s,
            )
        )


class WriteRows(beam.PTransform):
    """Write :class:`RowMutation` s to their tables with ``WriteToBigTable``."""

    def __init__(
        self,
        project: str,
        instance: str,
        tables: Sequence[str],
        flush_count: int = 1000,
        max_row_bytes: int = 5 * 1024 * 1024,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        super().__init__()
        if timeout_s <= 0:
            raise ValueError("the write timeout must be positive")
        if not tables:
            raise ValueError("WriteRows needs at least one table")
        self._project = project
        self._instance = instance
        self._tables = list(dict.fromkeys(tables))
        self._flush_count = flush_count
        self._max_row_bytes = max_row_bytes
        self._timeout_s = timeout_s

    def expand(self, rows: beam.PCollection) -> dict[str, beam.PCollection]:
        split = rows | "SplitByTable" >> beam.ParDo(_SplitByTableFn(self._tables)).with_outputs(
            *self._tables
        )
        return {
            table: split[table]
            | f"Write[{table}]"
            >> BoundedWriteToBigTable(
                project_id=self._project,
                instance_id=self._instance,
                table_id=table,
                flush_count=self._flush_count,
                max_row_bytes=self._max_row_bytes,
                timeout_s=self._timeout_s,
            )
            for table in self._tables
        }
