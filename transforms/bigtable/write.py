"""Writing row mutations to Bigtable, one sink per table: a drop-in for Beam's
``WriteToBigTable`` built on public APIs only.

The pure builders produce client-neutral :class:`RowMutation` tuples. :class:`WriteRows` routes
them by table to :class:`BoundedWriteToBigTable`, which takes ``WriteToBigTable``'s arguments and
elements and reports Beam's sink metrics under the same names ("Written Row" in Beam's sink
namespace, the sink lineage, the sink's display data) with three things changed, because the
sink as shipped is where a job spends most of its time and can hang for most of an hour:

* **Lean requests.** The sink's client batcher turns every row into a ``DirectRow``, then a
  ``RowMutationEntry``, then a proto-plus message, and sizes each one through a dict: several
  times the cost of building the row. Here each row is written once, straight into the bytes of
  its ``MutateRowsRequest`` entry (:mod:`transforms.builder.wire`, byte-identical to the client's),
  and sent by :mod:`transforms.bigtable.transport`, four requests at a time so that building and
  writing overlap. The data client's ``RowMutationEntry`` takes the same path; the legacy
  ``DirectRow`` goes through the client's own public ``Table.mutate_rows``.
* **Bounded waits, safe resends.** Every request gives up after ``timeout_s`` (retries
  included) with a failure that names the table, how many rows were refused and the server's
  first errors. Only idempotent entries are re-sent (see the transport). Failed rows are never
  dropped: the bundle, and so the job, fails; cells carry event-time timestamps, so a retried
  bundle rewrites the same cells.
* **Flow control** (``flow_control``; off unless asked, as a job's ``--flow_control`` decides):
  Bigtable's server-side rate limiting and a per-worker cap on requests and bytes in flight.
* **Latest-only tables** (``latest_only``): for families that keep one version, a bundle's
  writes of one key are collapsed to the cells Bigtable keeps (:mod:`.collapse`) before they are
  sent; the row counters still count every row write built.
"""

from __future__ import annotations

import collections
import math
import operator
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent import futures
from typing import Any

import apache_beam as beam
import grpc
from apache_beam import pvalue
from apache_beam.io.gcp.bigtableio import FLUSH_COUNT, MAX_ROW_BYTES, WriteToBigTable
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import Lineage
from apache_beam.transforms.display import DisplayDataItem
from google.cloud.bigtable import Client
from google.cloud.bigtable.data import mutations as data_mutations
from google.cloud.bigtable.row import DirectRow
from google.cloud.bigtable_v2.services.bigtable import BigtableClient

from transforms.bigtable.client_entries import encoding, entry_bytes
from transforms.bigtable.collapse import LatestHolder
from transforms.bigtable.transport import (
    DEFAULT_TIMEOUT_S,
    MAX_IN_FLIGHT,
    Attempt,
    Batch,
    FlowControl,
    direct_rows_sender,
    open_sender,
)
from transforms.builder import wire
from transforms.errors import WriteFailed
from transforms.metrics import NAMESPACE, WorkerTally
from transforms.mutations import (
    MAX_MUTATIONS_PER_REQUEST,
    FramedRows,
    RowMutation,
    cell_count,
    cell_total,
    table_parts,
    take,
)

__all__ = ["WriteRows"]


# A request's rows (WriteRows): each request costs the writer threads a fixed share of CPU
# (measured at 1,000,000 events: 5,000 rows per request took 2-4% less job CPU than 2,000, for
# 10-30 MB more peak RSS); requests stay under the byte cap below and Bigtable's 100,000
# mutations (MAX_MUTATIONS_PER_REQUEST, checked per request).
DEFAULT_FLUSH_COUNT = 5_000
DEFAULT_FLUSH_BYTES = 5 * 1024 * 1024
# Beam's sink counts "Written Row" under its DoFn's namespace; so does this one, so that a
# dashboard or test written for WriteToBigTable reads the same counter.
BEAM_SINK_NAMESPACE = "apache_beam.io.gcp.bigtableio._BigTableWriteFn"
WRITTEN_ROW = "Written Row"
# Entries per status code ("ok", "unavailable", ...), and the time spent waiting for flow
# control under the name Dataflow's autoscaler reads as throttling.
REQUESTS_NAMESPACE = "btts.bigtable.requests"
THROTTLED = "cumulativeThrottlingSeconds"
_KEY = operator.itemgetter(1)
_CELLS = operator.itemgetter(2)
_TABLE = operator.itemgetter(0)
_STATUS_NAMES = {code.value[0]: code.name.lower() for code in grpc.StatusCode}
_DIRECT_LOCK = threading.Lock()


class _LeanBatcher:
    """Rows into requests of at most ``flush_count`` rows or ``flush_bytes`` bytes, sent at
    most ``MAX_IN_FLIGHT`` at a time; :meth:`close` waits for all and reports what failed.
    ``DirectRow`` s go in batches of their own to ``direct_sender``."""

    def __init__(
        self,
        table_name: str,
        flush_count: int,
        flush_bytes: int,
        pool,
        sender,
        encoder=None,
        direct_sender: Callable | None = None,
        head: bytes | None = None,
    ):
        self._head = head or wire.request_head(table_name)  # the same for every request
        self._encode = encoder or wire.EntryEncoder()  # learns the table's layouts: keep it
        self._flush_count = flush_count
        self._flush_bytes = flush_bytes
        self._pool = pool
        self._sender = sender
        self._direct_sender = direct_sender
        self._direct: list[DirectRow] = []
        self._pending: collections.deque = collections.deque()
        self.done: list[Attempt] = []
        self._new_request()

    def _new_request(self) -> None:
        self._entries: list[bytes] = []
        self._keys: list[bytes] = []
        self._mutations = self._bytes = 0

    def add(self, row) -> None:
        if type(row) is tuple or isinstance(row, RowMutation):
            key, data, mutations = row[1], self._encode(row), cell_count(row)
        elif isinstance(row, data_mutations.RowMutationEntry):
            key, data, mutations = row.row_key, entry_bytes(row), len(row.mutations)
        elif isinstance(row, DirectRow):
            self._add_direct(row)
            return
        else:
            raise TypeError(
                f"cannot write a {type(row).__name__}: expected RowMutation or DirectRow (or the "
                "data client's RowMutationEntry)"
            )
        self._append(key, data, mutations)

    def _add_direct(self, row: DirectRow) -> None:
        if self._direct_sender is None:
            raise TypeError("this writer takes no DirectRow (no client table to send it to)")
        self._direct.append(row)
        if len(self._direct) >= self._flush_count:
            self._submit(self._direct_sender, self._direct)
            self._direct = []

    def _append(self, key: bytes, data: bytes, mutations: int) -> None:
        if not mutations:  # Bigtable refuses the whole request for one such entry
            return
        if mutations + self._mutations > MAX_MUTATIONS_PER_REQUEST and self._entries:
            self.flush()  # the request would be refused whole: send what it holds first
        self._entries.append(data)
        self._keys.append(key)
        self._mutations += mutations
        self._bytes += len(data)
        if len(self._entries) >= self._flush_count or self._bytes >= self._flush_bytes:
            self.flush()

    def add_rows(self, rows: Sequence, made: list | None = None) -> None:
        """:meth:`add` for a batch of builder rows (plain tuples) encoded in one loop; limits
        (and rows without a cell: never sent) are checked row by row only where needed. ``made``:
        the rows' entries framed by the builder (``FramedRows.entries``; a None is encoded here,
        from a whole row: a lean row always has its entry)."""
        encode = self._encode
        if made is not None and None in made:
            made = [e if e is not None else encode(r) for r, e in zip(rows, made, strict=True)]
        start = 0
        while start < len(rows):
            room = self._flush_count - len(self._entries)
            chunk = rows[start : start + room]
            if made is not None:  # the builder's own tuples, already encoded
                entries = made[start : start + room]
            elif any(type(row) is not tuple for row in chunk):  # other row types
                for row in rows[start:]:
                    self.add(row)
                return
            else:
                entries = [encode(row) for row in chunk]
            size = sum(map(len, entries))
            mutations = cell_total(chunk)
            if (
                self._bytes + size >= self._flush_bytes
                or self._mutations + mutations > MAX_MUTATIONS_PER_REQUEST
                or not all(map(_CELLS, chunk))
            ):  # a limit falls inside this chunk, or a row has no cell: row by row
                for row, data in zip(chunk, entries, strict=True):
                    self._append(row[1], data, cell_count(row))
            else:
                self._entries += entries
                self._keys += map(_KEY, chunk)
                self._bytes += size
                self._mutations += mutations
                if len(self._entries) >= self._flush_count:
                    self.flush()
            start += len(chunk)

    def flush(self) -> None:
        if not self._entries:
            return
        batch = Batch(self._head, self._entries, self._keys)
        self._new_request()
        self._submit(self._sender, batch)

    def _submit(self, sender, batch) -> None:
        self._pending.append(self._pool.submit(sender, batch))
        while len(self._pending) > MAX_IN_FLIGHT:
            self.done.append(self._pending.popleft().result())

    def close(self) -> None:
        self.flush()
        if self._direct:
            self._submit(self._direct_sender, self._direct)
            self._direct = []
        while self._pending:
            self.done.append(self._pending.popleft().result())


class _BoundedWriteFn(beam.DoFn):
    """Writes one table's rows: lean requests, bounded waits, safe resends, optional flow
    control, and a failure that says what failed (see the module docstring).

    ``latest_only``: the table's families that keep one version; rows of one key are then
    held (one request's worth at most) and collapsed before sending
    (:mod:`transforms.bigtable.collapse`)."""

    def __init__(
        self,
        project_id: str,
        instance_id: str,
        table_id: str,
        *,
        flush_count: int,
        max_row_bytes: int,
        timeout_s: float,
        flow: FlowControl | None,
        latest_only: Collection[str],
    ) -> None:
        self._ids = (project_id, instance_id, table_id)
        self._latest = frozenset(latest_only)
        self._flush_count = flush_count
        self._max_row_bytes = max_row_bytes
        self._timeout_s = float(timeout_s)
        self._flow = flow

    def display_data(self) -> dict:
        project, instance, table = self._ids
        return {  # the keys and labels of Beam's sink
            "projectId": DisplayDataItem(project, label="Bigtable Project Id"),
            "instanceId": DisplayDataItem(instance, label="Bigtable Instance Id"),
            "tableId": DisplayDataItem(table, label="Bigtable Table Id"),
            "flowControl": DisplayDataItem(self._flow is not None, label="Flow control"),
        }

    def setup(self) -> None:
        _project, _instance, table = self._ids
        self._table_name = BigtableClient.table_path(*self._ids)
        self._pool = futures.ThreadPoolExecutor(
            MAX_IN_FLIGHT + 1, thread_name_prefix=f"write-{table}"
        )
        # the sender (and the channel or client it opened, closed in teardown); the encoder
        self._sender, self._opened = open_sender(
            *self._ids, self._table_name, self._timeout_s, self._flow
        )
        self._client = self._direct_sender = None  # made for the first DirectRow: most jobs
        self._encoder, self._head = encoding(self._table_name)  # send none
        self._written = Metrics.counter(BEAM_SINK_NAMESPACE, WRITTEN_ROW)
        self._tally = WorkerTally("write")  # rows per worker process, when asked for
        self._throttled = Metrics.counter(REQUESTS_NAMESPACE, THROTTLED)
        self._throttled_s = 0.0
        self._lean = self._holder = None
        if self._latest:  # row writes folded into a later row of the same key, never sent
            self._superseded = Metrics.counter(NAMESPACE, f"superseded_rows_{table}")

    def _send_direct(self, rows: list) -> Attempt:
        with _DIRECT_LOCK:  # the writer threads may send DirectRows at once
            if self._direct_sender is None:
                project, instance, table = self._ids
                self._client = Client(project=project)  # the legacy client's own mutate_rows
                legacy = self._client.instance(instance).table(table)
                self._direct_sender = direct_rows_sender(
                    legacy, self._timeout_s, self._flow, self._table_name
                )
        return self._direct_sender(rows)

    def start_bundle(self) -> None:
        self._lean = _LeanBatcher(
            self._table_name,
            self._flush_count,
            self._max_row_bytes,
            self._pool,
            self._sender,
            self._encoder,
            self._send_direct,
            self._head,
        )
        self._written_in_bundle = 0
        if self._latest:
            self._holder = LatestHolder(
                self._ids[2], self._latest, self._flush_count, self._max_row_bytes
            )
        self._superseded_in_bundle = 0

    def process(self, element) -> None:
        # One row, or a list of rows (WriteRows' split hands them over a block at a time),
        # perhaps with their request entries made by the builder.
        kind = type(element)
        rows = element if kind is list or kind is FramedRows else (element,)
        self._check_table(rows)
        self._written_in_bundle += len(rows)
        entries = element.entries if kind is FramedRows else None
        holder = self._holder
        if holder is not None:
            if holder.holds(rows):
                if holder.add(rows, entries):
                    self._drain()
                return
            self._drain()  # other kinds of rows: sent after what is held, in order
        self._lean.add_rows(rows, entries)

    def _check_table(self, rows: Sequence) -> None:
        """A row of another table fails the bundle before any of it is sent (DirectRows: none)."""
        try:
            tables = list(map(_TABLE, rows))  # builder tuples and RowMutations, in C
        except TypeError:  # DirectRow or RowMutationEntry among them
            tables = [row[0] for row in rows if isinstance(row, tuple)]
        table = self._ids[2]
        if tables.count(table) != len(tables):
            other = next(t for t in tables if t != table)
            raise ValueError(f"row for table {other!r} reached the {table} writer")

    def _drain(self) -> None:
        out = self._holder.drain()
        self._superseded_in_bundle += out.superseded
        if out.rows:
            self._lean.add_rows(out.rows, out.entries)

    def _record(self, attempt: Attempt) -> None:
        for code, count in attempt.codes.items():
            name = _STATUS_NAMES.get(code, f"code_{code}")
            Metrics.counter(REQUESTS_NAMESPACE, name).inc(count)
        self._throttled_s += attempt.throttled_s

    def finish_bundle(self) -> None:
        """Raises WriteFailed (a SystemFailure carrying each FailedEntry)."""
        if self._holder is not None:
            self._drain()
        lean, self._lean = self._lean, None
        lean.close()
        errors, refused = [], 0
        for attempt in lean.done:
            self._record(attempt)
            if attempt.errors:
                refused += attempt.rows
                errors.extend(attempt.errors)
        if self._throttled_s >= 1:  # whole seconds, as Beam's own sinks count them
            whole = math.floor(self._throttled_s)
            self._throttled.inc(whole)
            self._throttled_s -= whole
        if errors:
            shown = "; ".join(map(str, errors[:3]))
            raise WriteFailed(
                f"{len(errors)} write error(s) on table {self._ids[2]} "
                f"(requests of {refused} rows not fully written; the bundle fails, nothing is "
                f"dropped): {shown}",
                errors,
            )
        self._written.inc(self._written_in_bundle)
        self._tally.add(self._written_in_bundle)
        self._tally.flush()
        self._written_in_bundle = 0
        if self._superseded_in_bundle:
            self._superseded.inc(self._superseded_in_bundle)
        Lineage.sinks().add("bigtable", *self._ids)

    def teardown(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        opened, client = getattr(self, "_opened", None), getattr(self, "_client", None)
        if opened is not None:
            opened.close()  # the channel or data client setup opened
        if client is not None:  # the legacy client of DirectRows
            client.table_data_client.transport.close()
        self._opened = self._client = None


def _flow(setting: FlowControl | bool) -> FlowControl | None:
    """The flow control a writer uses: a :class:`FlowControl` as given, a new one for True,
    none for False (a mistyped setting fails here, at construction, not on a worker)."""
    if isinstance(setting, FlowControl):
        return setting
    if not isinstance(setting, bool):
        raise TypeError(f"flow_control={setting!r}: expected a FlowControl, True or False")
    return FlowControl() if setting else None


class BoundedWriteToBigTable(beam.PTransform):
    """A drop-in for ``WriteToBigTable``: the same arguments and elements (``DirectRow`` s, and
    also :class:`RowMutation` s and ``RowMutationEntry`` s), lean requests, writes that give up
    after ``timeout_s``, and ``flow_control`` (a :class:`FlowControl`, or True for the default
    one; off unless asked). ``latest_only``: the table's families that keep one version
    (``max_versions: 1``), whose rows of one key are collapsed to the cells Bigtable keeps
    before sending. ``use_cross_language`` hands the write to Beam's own (Java) sink."""

    def __init__(
        self,
        project_id: str,
        instance_id: str,
        table_id: str,
        use_cross_language: bool = False,
        expansion_service=None,
        flush_count: int = FLUSH_COUNT,
        max_row_bytes: int = MAX_ROW_BYTES,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        flow_control: FlowControl | bool = False,
        latest_only: Collection[str] = (),
    ) -> None:
        super().__init__()
        self._ids = (project_id, instance_id, table_id)
        self._cross_language = use_cross_language
        self._expansion_service = expansion_service
        self._fn = _BoundedWriteFn(
            project_id,
            instance_id,
            table_id,
            flush_count=flush_count,
            max_row_bytes=max_row_bytes,
            timeout_s=timeout_s,
            flow=_flow(flow_control),
            latest_only=latest_only,
        )

    def expand(self, rows: beam.PCollection) -> beam.PCollection:
        if self._cross_language:
            return rows | WriteToBigTable(
                *self._ids,
                use_cross_language=True,
                expansion_service=self._expansion_service,
            )
        return rows | beam.ParDo(self._fn)


class _SplitByTableFn(beam.DoFn):
    """Routes each row to its table's output, counting row writes and cells (summed over
    bundles: exact). Distinct rows are counted over the whole run by the overwrite check
    (:mod:`transforms.ingest.overwrite_check`), never per bundle."""

    def __init__(self, tables: Sequence[str]) -> None:
        self._tables = frozenset(tables)

    def setup(self) -> None:
        self._rows, self._cells = (
            {t: Metrics.counter(NAMESPACE, f"{name}_{t}") for t in self._tables}
            for name in ("rows", "cells")
        )

    def start_bundle(self) -> None:
        self._counts = {t: [0, 0] for t in self._tables}  # rows, cells; added once per bundle

    def process(self, element: RowMutation | list):
        kind = type(element)
        if kind is not list and kind is not FramedRows:  # one row
            self._count(element[0], [element])
            yield pvalue.TaggedOutput(element[0], element)
            return
        if not element:
            return
        tables = list(map(_TABLE, element))
        if tables.count(tables[0]) == len(tables):  # one table's rows (in C): as they are
            self._count(tables[0], element)
            yield pvalue.TaggedOutput(tables[0], element)
            return
        entries = element.entries if kind is FramedRows else None
        for table, where in table_parts(tables):  # the rows' entries go with them
            rows = take(element, where)
            self._count(table, rows)
            yield pvalue.TaggedOutput(
                table, rows if entries is None else FramedRows(rows, take(entries, where))
            )

    def _count(self, table: str, rows: list) -> None:
        counts = self._counts.get(table)
        if counts is None:
            raise ValueError(f"row for table {table!r}, which this write does not declare")
        counts[0] += len(rows)
        counts[1] += cell_total(rows)

    def finish_bundle(self) -> None:
        for table, (rows, cells) in self._counts.items():
            if rows:
                self._rows[table].inc(rows)
                self._cells[table].inc(cells)


class WriteRows(beam.PTransform):
    """Write :class:`RowMutation` s (or lists of them, batches from ``BuildRows``) to their
    tables with ``WriteToBigTable``. ``latest_only``: table → its families that keep one
    version (the declaration's ``max_versions: 1``, see
    :func:`transforms.bigtable.collapse.latest_only_families`); a bundle's writes of one key of
    such a table are collapsed to the cells Bigtable keeps. Given explicitly: only the declaration
    says a table's GC rule drops the older cells."""

    def __init__(
        self,
        project: str,
        instance: str,
        tables: Sequence[str],
        flush_count: int = DEFAULT_FLUSH_COUNT,
        max_row_bytes: int = DEFAULT_FLUSH_BYTES,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        flow_control: FlowControl | bool = False,
        latest_only: Mapping[str, Collection[str]] | None = None,
    ) -> None:
        super().__init__()
        if timeout_s <= 0:
            raise ValueError("the write timeout must be positive")
        if not tables:
            raise ValueError("WriteRows needs at least one table")
        if flush_count < 1 or max_row_bytes < 1:
            raise ValueError("flush_count and max_row_bytes must be positive")
        self._tables = list(dict.fromkeys(tables))
        latest = {t: frozenset(f) for t, f in (latest_only or {}).items() if f}
        unknown = sorted(set(latest) - set(self._tables))
        if unknown:
            raise ValueError(f"latest_only names tables this write does not declare: {unknown}")
        self._writes = {
            table: BoundedWriteToBigTable(
                project,
                instance,
                table,
                flush_count=flush_count,
                max_row_bytes=max_row_bytes,
                timeout_s=timeout_s,
                flow_control=flow_control,
                latest_only=latest.get(table, ()),
            )
            for table in self._tables
        }

    def expand(self, rows: beam.PCollection) -> dict[str, beam.PCollection]:
        # each table's batches are FramedRows (or lists): coded and sized by row_batches
        tagged = {table: FramedRows for table in self._tables}
        split_fn = beam.ParDo(_SplitByTableFn(self._tables)).with_output_types(Any, **tagged)
        split = rows | "SplitByTable" >> split_fn.with_outputs(*self._tables)
        return {
            table: split[table] | f"Write[{table}]" >> write
            for table, write in self._writes.items()
        }
