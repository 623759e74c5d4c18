"""Writing aggregate cells (``AddToCell``) with the Bigtable data client (docs/patterns.md §3 rule
13).

Beam's ``WriteToBigTable`` takes legacy ``DirectRow`` s, which cannot carry ``AddToCell``; this
sink sends :class:`~transforms.mutations.AddCell` rows through
``google.cloud.bigtable.data.BigtableDataClient.bulk_mutate_rows`` in batches.

Every entry's result is checked: ``bulk_mutate_rows`` raises ``MutationsExceptionGroup`` with one
``FailedMutationEntryError`` per failed entry, and this sink turns that into
:class:`AggregateWriteError` (failing the bundle, naming the keys and causes) after counting the
failures in ``write_failures_<TABLE>``. Nothing is dropped silently.

Not idempotent — say it plainly: ``AddToCell`` adds. Re-running a job over the same input adds
the same amounts again, and a bundle the runner retries after a partial failure re-adds the
entries that had succeeded. The client does not retry ``AddToCell`` itself (non-idempotent
mutations are never retried), so a transient error fails the batch rather than risking a double
add inside one attempt. Re-run only input that was not written, or rebuild the table (the
sales job's ``--replace_months``); the hourly rollups avoid this sink by default
(``--rollup_mode exact``). Under the test retry harness (:mod:`transforms.bigtable.retry_harness`)
each bundle is sent as several attempts and its rows and cells counters count every attempt.
"""

from __future__ import annotations

from collections.abc import Iterable

import apache_beam as beam
from apache_beam.metrics import Metrics
from google.cloud.bigtable.data import (
    AddToCell,
    BigtableDataClient,
    FailedMutationEntryError,
    MutationsExceptionGroup,
    RowMutationEntry,
)

from transforms.bigtable import retry_harness as retry_harness_modes
from transforms.bigtable.aggregate_batches import EntryBatches, partial_failure
from transforms.errors import AggregateWriteError
from transforms.metrics import NAMESPACE, WorkerTally
from transforms.mutations import AddCell, RowMutation

__all__ = ["WriteAggregates"]


def to_entry(row: RowMutation) -> RowMutationEntry:
    """The data client's entry for one row of :class:`AddCell` s."""
    table, key, cells = row
    mutations = []
    for cell in cells:
        if type(cell) is not AddCell:
            raise TypeError(
                f"{table} {key!r}: WriteAggregates writes AddCell only, got {type(cell).__name__}"
            )
        mutations.append(AddToCell(cell.family, cell.qualifier, cell.amount, cell.timestamp_us))
    if not mutations:
        raise ValueError(f"{table} {key!r}: a row with no cells")
    return RowMutationEntry(key, mutations)


def describe_failures(
    group: MutationsExceptionGroup, entries: list[RowMutationEntry]
) -> list[tuple[bytes | None, str]]:
    """``(row key, cause)`` for every failed entry of a ``bulk_mutate_rows`` call."""
    out = []
    for exc in group.exceptions:
        if isinstance(exc, FailedMutationEntryError):
            entry = exc.entry
            if entry is None and exc.index is not None and exc.index < len(entries):
                entry = entries[exc.index]
            cause = exc.__cause__ or exc
            out.append(
                (bytes(entry.row_key) if entry else None, f"{type(cause).__name__}: {cause}")
            )
        else:
            out.append((None, f"{type(exc).__name__}: {exc}"))
    return out


def _indices(group: MutationsExceptionGroup) -> set[int]:
    """The entries (by index in the request) the failures of ``group`` name."""
    return {
        exc.index
        for exc in group.exceptions
        if isinstance(exc, FailedMutationEntryError) and exc.index is not None
    }


class _WriteAggregatesFn(beam.DoFn):
    """The Beam and client shell: rows become entries, :class:`EntryBatches` says when a
    request is full, :func:`partial_failure` what a failed one means."""

    def __init__(
        self,
        project: str,
        instance: str,
        table: str,
        batch_entries: int,
        operation_timeout: float,
        retry_harness: str | None = None,
    ) -> None:
        self._project = project
        self._instance = instance
        self._table_id = table
        self._batch_entries = batch_entries
        self._operation_timeout = operation_timeout
        self._harness = retry_harness_modes.parse(retry_harness)  # tests only
        self._client: BigtableDataClient | None = None

    def setup(self) -> None:
        self._rows = Metrics.counter(NAMESPACE, f"rows_{self._table_id}")
        self._cells = Metrics.counter(NAMESPACE, f"cells_{self._table_id}")
        self._failures = Metrics.counter(NAMESPACE, f"write_failures_{self._table_id}")
        self._tally = WorkerTally("write")  # rows per worker process, when asked for

    def start_bundle(self) -> None:
        # One client per bundle, closed in finish_bundle: no channel outlives its bundle even on
        # runners that never call teardown.
        self._client = BigtableDataClient(project=self._project)
        self._table = self._client.get_table(self._instance, self._table_id)
        self._batches = EntryBatches(self._batch_entries)
        self._held: list[RowMutation] | None = [] if self._harness else None

    def process(self, element: RowMutation | list) -> Iterable[None]:
        rows = element if isinstance(element, list) else (element,)  # a batch, or one row
        for row in rows:
            if row[0] != self._table_id:
                raise ValueError(f"row for table {row[0]!r} reached the {self._table_id} writer")
            if self._held is not None:
                self._held.append(row)
            else:
                self._add(row)
        return ()

    def _add(self, row: RowMutation) -> None:
        entry = to_entry(row)
        for entries, cells in self._batches.add(entry, len(entry.mutations)):
            self._send(entries, cells)

    def _flush(self) -> None:
        entries, cells = self._batches.take()
        if entries:
            self._send(entries, cells)

    def _send(self, entries: list[RowMutationEntry], cells: int) -> None:
        try:
            self._table.bulk_mutate_rows(entries, operation_timeout=self._operation_timeout)
        except MutationsExceptionGroup as group:
            failed = describe_failures(group, entries)
            outcome = partial_failure(
                self._table_id, [len(e.mutations) for e in entries], failed, _indices(group)
            )
            if outcome.applied_rows is not None:
                self._rows.inc(outcome.applied_rows)
                self._cells.inc(outcome.applied_cells)
            self._failures.inc(len(failed))
            raise AggregateWriteError(outcome.message, failed) from group
        self._rows.inc(len(entries))
        self._cells.inc(cells)
        self._tally.add(len(entries))

    def finish_bundle(self) -> None:
        try:
            if self._held is not None:  # the retry harness: AddToCell adds on every attempt
                for attempt in retry_harness_modes.attempts(self._held, self._harness):
                    for row in attempt:
                        self._add(row)
                    self._flush()
            self._flush()
            self._tally.flush()
        finally:
            self._close()

    def teardown(self) -> None:
        self._close()

    def _close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            client.close()


class WriteAggregates(beam.PTransform):
    """Write rows of :class:`AddCell` s to one aggregate table with ``AddToCell``.

    ``batch_entries`` rows go in one ``MutateRows`` request (also capped at Bigtable's 100,000
    mutations); ``operation_timeout`` bounds each request's wait, in seconds. ``retry_harness``
    is for tests (:mod:`transforms.bigtable.retry_harness`)."""

    def __init__(
        self,
        project: str,
        instance: str,
        table: str,
        batch_entries: int = 1000,
        operation_timeout: float = 300.0,
        retry_harness: str | None = None,
    ) -> None:
        super().__init__()
        if batch_entries < 1:
            raise ValueError("batch_entries must be at least 1")
        self._fn = _WriteAggregatesFn(
            project, instance, table, batch_entries, operation_timeout, retry_harness
        )

    def expand(self, rows: beam.PCollection) -> beam.PCollection:
        return rows | "AddToCell" >> beam.ParDo(self._fn)
