"""Writing row mutations with Beam's ``WriteToBigTable``, one sink per table.

The pure builders produce client-neutral :class:`RowMutation` tuples. :class:`WriteRows` routes
them by table to :class:`BoundedWriteToBigTable`: Beam's sink (same transform, same "Written
Row", request-count and lineage metrics) with two things changed, because the sink as shipped
is where a job spends most of its time and can hang for most of an hour:

* **Lean requests.** The sink's client batcher turns every row into a ``DirectRow``, then a
  ``RowMutationEntry``, then a proto-plus message, and sizes each one through a dict: several
  times the cost of building the row. Here each row is written once, straight into the bytes of
  its ``MutateRowsRequest`` entry (:mod:`transforms.wire`, byte-identical to the client's), and
  requests are sent on the client's own GAPIC channel (same credentials, emulator and routing
  headers), four at a time so that building and writing overlap. ``DirectRow`` elements are
  still accepted.
* **Bounded waits.** Every request gives up after ``timeout_s`` (retries included) with a
  failure that names the table, how many rows were refused and the server's first errors. Entries
  the server answers with a transient code (``DEADLINE_EXCEEDED``, ``UNAVAILABLE``, as the data
  client retries) are re-sent alone, with exponential backoff. Failed rows are never dropped: the
  bundle, and so the job, fails; cells carry event-time timestamps, so a retried bundle rewrites
  the same cells.
"""

from __future__ import annotations

import collections
import operator
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent import futures
from dataclasses import dataclass, field

import apache_beam as beam
import grpc
from apache_beam import pvalue
from apache_beam.internal.metrics.metric import Metrics as _ServiceMetrics
from apache_beam.io.gcp import bigtableio
from apache_beam.io.gcp.bigtableio import WriteToBigTable
from apache_beam.metrics import Metrics, monitoring_infos
from apache_beam.metrics.metric import Lineage
from google.api_core import exceptions as api_exceptions
from google.api_core import gapic_v1
from google.cloud.bigtable import Client
from google.cloud.bigtable.data.mutations import RowMutationEntry
from google.cloud.bigtable.row import DirectRow
from google.cloud.bigtable_v2.services.bigtable.transports.base import DEFAULT_CLIENT_INFO
from google.cloud.bigtable_v2.types import bigtable as bigtable_types

from transforms import retry_harness, wire
from transforms.ingest import NAMESPACE
from transforms.mutations import MAX_MUTATIONS_PER_REQUEST, RowMutation

_Response = bigtable_types.MutateRowsResponse.pb()  # the raw protobuf, no proto-plus wrapper

DEFAULT_TIMEOUT_S = 300.0
MAX_ATTEMPT_S = 60.0
DEFAULT_FLUSH_COUNT = 2_000
DEFAULT_FLUSH_BYTES = 5 * 1024 * 1024
MAX_IN_FLIGHT = 4
RETRYABLE_CODES = frozenset({4, 14})  # DEADLINE_EXCEEDED, UNAVAILABLE
_RETRYABLE_ERRORS = (api_exceptions.DeadlineExceeded, api_exceptions.ServiceUnavailable)


class WriteFailed(RuntimeError):
    """Rows a table did not accept; the message carries the server's errors."""


@dataclass(slots=True)
class _Batch:
    """One MutateRows request: its leading fields (the table), its entries (framed, ready to
    join) and their row keys, to resend some entries alone and to name a refused row."""

    head: bytes
    entries: list[bytes]
    keys: list[bytes]

    def to_bytes(self) -> bytes:
        return self.head + b"".join(self.entries)

    def subset(self, indexes: list[int]) -> _Batch:
        return _Batch(
            self.head, [self.entries[i] for i in indexes], [self.keys[i] for i in indexes]
        )


@dataclass(slots=True)
class _Attempt:
    """The outcome of one MutateRows request: status codes seen, errors that will not pass."""

    rows: int
    codes: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)


def mutate_rows_call(stub, table_name: str):
    """``(request bytes, timeout) -> MutateRowsResponse protobufs``: MutateRows on the GAPIC
    client's own channel (credentials, emulator), with the routing headers its ``mutate_rows``
    sends, but no proto-plus wrapping of the request on the way out."""
    method = stub.transport.grpc_channel.unary_stream(
        "/google.bigtable.v2.Bigtable/MutateRows",
        request_serializer=None,  # the request is already bytes
        response_deserializer=_Response.FromString,
    )
    metadata = (
        gapic_v1.routing_header.to_grpc_metadata({"table_name": table_name, "app_profile_id": ""}),
        ("x-goog-api-client", DEFAULT_CLIENT_INFO.to_grpc_metadata()[1]),
    )

    def call(request: bytes, timeout: float):
        try:
            yield from method(request, timeout=timeout, metadata=metadata)
        except grpc.RpcError as err:
            raise api_exceptions.from_grpc_error(err) from None

    return call


@dataclass
class _RequestSender:
    """Sends MutateRows requests, each until all its entries are written, one of them is
    refused for good, or ``timeout_s`` has passed. Runs in the writer's worker threads."""

    call: Callable
    timeout_s: float

    def __call__(self, batch: _Batch) -> _Attempt:
        outcome = _Attempt(len(batch.entries))
        deadline = time.monotonic() + self.timeout_s
        delay = 0.01
        while True:
            remaining = deadline - time.monotonic()
            answered, refused, failure = self._attempt(batch, min(remaining, MAX_ATTEMPT_S))
            written = answered.count(1) - len(refused)
            if written:
                outcome.codes[0] += written
            retry = [i for i, seen in enumerate(answered) if not seen]  # the stream broke first
            for index, status in refused:
                outcome.codes[status.code] += 1
                if status.code in RETRYABLE_CODES:
                    retry.append(index)
                else:
                    outcome.errors.append(
                        f"row {batch.keys[index]!r}: code {status.code}: "
                        f"{status.message or 'no message'}"
                    )
            if failure is not None and not isinstance(failure, _RETRYABLE_ERRORS):
                outcome.errors.append(f"{type(failure).__name__}: {failure}")
                return outcome
            if outcome.errors or not retry:
                return outcome
            if time.monotonic() + delay >= deadline:
                last = f"{type(failure).__name__}: {failure}" if failure else "transient errors"
                outcome.errors.append(
                    f"{len(retry)} row(s) still not written after {self.timeout_s:g}s of "
                    f"retries (last: {last})"
                )
                return outcome
            time.sleep(delay * random.uniform(0.5, 1.0))
            delay = min(delay * 2, MAX_ATTEMPT_S)
            batch = batch.subset(sorted(retry))

    def _attempt(self, batch: _Batch, timeout: float):
        """One call: which entries were answered, the ``(index, status)`` of those not written,
        and the call's error."""
        answered = bytearray(len(batch.entries))
        refused = []
        try:
            for response in self.call(batch.to_bytes(), max(timeout, 0.001)):
                for answer in response.entries:
                    answered[answer.index] = 1
                    if answer.status.code:
                        refused.append((answer.index, answer.status))
        except api_exceptions.GoogleAPICallError as err:
            return answered, refused, err
        return answered, refused, None


class _LeanBatcher:
    """Rows into requests of at most ``flush_count`` rows or ``flush_bytes`` bytes, sent at
    most ``MAX_IN_FLIGHT`` at a time; :meth:`close` waits for all and reports what failed."""

    def __init__(
        self, table_name: str, flush_count: int, flush_bytes: int, pool, sender, encoder=None
    ):
        self._head = wire.request_head(table_name)  # the same for every request
        self._encode = encoder or wire.EntryEncoder()  # learns the table's layouts: keep it
        self._flush_count = flush_count
        self._flush_bytes = flush_bytes
        self._pool = pool
        self._sender = sender
        self._pending: collections.deque = collections.deque()
        self.done: list[_Attempt] = []
        self._new_request()

    def _new_request(self) -> None:
        self._entries: list[bytes] = []
        self._keys: list[bytes] = []
        self._mutations = self._bytes = 0

    def add(self, row) -> None:
        if type(row) is tuple or isinstance(row, RowMutation):
            key, data, mutations = row[1], self._encode(row), len(row[2])
        elif isinstance(row, DirectRow):
            # The sink's documented element type, through the client's own conversion: any
            # mutation it can hold, not only SetCell.
            key, changes = row.row_key, row._get_mutations()
            converted = RowMutationEntry(key, changes)._to_pb()
            data = wire.framed(type(converted).pb(converted).SerializeToString())
            mutations = len(changes)
        else:
            raise TypeError(
                f"cannot write a {type(row).__name__}: expected RowMutation or DirectRow"
            )
        self._append(key, data, mutations)

    def _append(self, key: bytes, data: bytes, mutations: int) -> None:
        if mutations + self._mutations > MAX_MUTATIONS_PER_REQUEST and self._entries:
            self.flush()  # the request would be refused whole: send what it holds first
        self._entries.append(data)
        self._keys.append(key)
        self._mutations += mutations
        self._bytes += len(data)
        if len(self._entries) >= self._flush_count or self._bytes >= self._flush_bytes:
            self.flush()

    def add_rows(self, rows: Sequence) -> None:
        """:meth:`add` for a batch: the rows the builders make (plain tuples) encoded in one
        loop, with the request's limits checked per row only where a request could fill."""
        encode = self._encode
        start = 0
        while start < len(rows):
            room = self._flush_count - len(self._entries)
            chunk = rows[start : start + room]
            if any(type(row) is not tuple for row in chunk):  # DirectRows and the like
                for row in rows[start:]:
                    self.add(row)
                return
            entries = [encode(row) for row in chunk]
            size = sum(map(len, entries))
            mutations = sum(len(row[2]) for row in chunk)
            if (
                self._bytes + size >= self._flush_bytes
                or self._mutations + mutations > MAX_MUTATIONS_PER_REQUEST
            ):  # a limit falls inside this chunk: row by row
                for row, data in zip(chunk, entries, strict=True):
                    self._append(row[1], data, len(row[2]))
            else:
                self._entries += entries
                self._keys += [row[1] for row in chunk]
                self._bytes += size
                self._mutations += mutations
                if len(self._entries) >= self._flush_count:
                    self.flush()
            start += len(chunk)

    def flush(self) -> None:
        if not self._entries:
            return
        batch = _Batch(self._head, self._entries, self._keys)
        self._pending.append(self._pool.submit(self._sender, batch))
        self._new_request()
        while len(self._pending) > MAX_IN_FLIGHT:
            self.done.append(self._pending.popleft().result())

    def close(self) -> None:
        self.flush()
        while self._pending:
            self.done.append(self._pending.popleft().result())


class _BoundedWriteFn(bigtableio._BigTableWriteFn):
    """Beam's WriteToBigTable DoFn with lean requests, bounded waits and a failure that says
    what failed (see the module docstring)."""

    def __init__(self, project_id, instance_id, table_id, flush_count, max_row_bytes, timeout_s):
        super().__init__(project_id, instance_id, table_id, flush_count, max_row_bytes)
        self.beam_options["timeout_s"] = float(timeout_s)  # beam_options is what pickles

    def setup(self) -> None:
        options = self.beam_options
        self._ids = (options["project_id"], options["instance_id"], options["table_id"])
        client = Client(project=options["project_id"])
        self._stub = client.table_data_client  # the GAPIC client: channel, auth, emulator
        self._table_name = self._stub.table_path(*self._ids)
        self._pool = futures.ThreadPoolExecutor(
            MAX_IN_FLIGHT + 1, thread_name_prefix=f"write-{options['table_id']}"
        )
        self._sender = _RequestSender(
            mutate_rows_call(self._stub, self._table_name), options["timeout_s"]
        )
        self._encoder = wire.EntryEncoder()
        self._lean = None

    def start_bundle(self) -> None:
        options = self.beam_options
        self.service_call_metric = self.start_service_call_metrics(*self._ids)
        self._lean = _LeanBatcher(
            self._table_name,
            options["flush_count"],
            options["max_row_bytes"],
            self._pool,
            self._sender,
            self._encoder,
        )
        self._written_in_bundle = 0
        # Test-only retry harness (transforms/retry_harness.py): None in production.
        self._harness = retry_harness.mode()
        self._held: list | None = [] if self._harness else None

    def process(self, element) -> None:
        # Beam's own process, with its "Written Row" counter added once per bundle; a list is
        # a batch of rows (WriteRows' split hands them over a block at a time).
        rows = element if type(element) is list else (element,)
        self._written_in_bundle += len(rows)
        if self._held is not None:
            self._held.extend(rows)
            return
        self._lean.add_rows(rows)

    def _record(self, codes: Counter) -> None:
        """Beam's request-count metric, one increment per status code per request instead of
        a labelled counter lookup per row."""
        metric = self.service_call_metric
        for code, count in codes.items():
            status = metric.bigtable_error_code_to_grpc_status_string(code)
            labels = {**metric.base_labels, monitoring_infos.STATUS_LABEL: status}
            counter = _ServiceMetrics.counter(
                urn=metric.request_count_urn, labels=labels, process_wide=True
            )
            counter.inc(count)

    def finish_bundle(self) -> None:
        lean, self._lean = self._lean, None
        if self._held is not None:  # the retry harness: each attempt sent and waited for
            for attempt in retry_harness.attempts(self._held, self._harness):
                lean.add_rows(attempt)
                lean.close()
        lean.close()
        errors, refused = [], 0
        for attempt in lean.done:
            self._record(attempt.codes)
            if attempt.errors:
                refused += attempt.rows
                errors.extend(attempt.errors)
        if errors:
            shown = "; ".join(errors[:3])
            raise WriteFailed(
                f"{len(errors)} write error(s) on table {self.beam_options['table_id']} "
                f"(requests of {refused} rows not fully written; the bundle fails, nothing is "
                f"dropped): {shown}"
            )
        self.written.inc(self._written_in_bundle)
        self._written_in_bundle = 0
        Lineage.sinks().add("bigtable", *self._ids)

    def teardown(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        stub = getattr(self, "_stub", None)
        if stub is not None:
            stub.transport.close()  # the gRPC channel this DoFn opened in setup
            self._stub = None


class BoundedWriteToBigTable(WriteToBigTable):
    """``WriteToBigTable`` (native path) with lean requests, whose writes give up after
    ``timeout_s``. Takes :class:`RowMutation` s or client ``DirectRow`` s."""

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


class _SplitByTableFn(beam.DoFn):
    """Routes each row to its table's output, counting row writes, cells and distinct keys.

    Distinct keys are counted per bundle (a set of at most MAX_DISTINCT_KEYS per table): summed
    over bundles they are exact when a key's writes share a bundle and an upper bound
    otherwise; past the cap a table's count is given up (``distinct_unknown_<table>``)."""

    MAX_DISTINCT_KEYS = 65_536

    def __init__(self, tables: Sequence[str]) -> None:
        self._tables = frozenset(tables)

    def setup(self) -> None:
        self._rows, self._cells, self._distinct, self._unknown = (
            {t: Metrics.counter(NAMESPACE, f"{name}_{t}") for t in self._tables}
            for name in ("rows", "cells", "distinct_rows", "distinct_unknown")
        )

    def start_bundle(self) -> None:
        self._counts = {t: [0, 0] for t in self._tables}  # rows, cells; added once per bundle
        self._keys: dict[str, set | None] = {t: set() for t in self._tables}

    def process(self, element: RowMutation | list):
        if type(element) is not list:  # one row
            self._count(element[0], [element])
            yield pvalue.TaggedOutput(element[0], element)
            return
        by_table: collections.defaultdict[str, list] = collections.defaultdict(list)
        for row in element:  # a batch: one list per table
            by_table[row[0]].append(row)
        for table, rows in by_table.items():
            self._count(table, rows)
            yield pvalue.TaggedOutput(table, rows)

    def _count(self, table: str, rows: list) -> None:
        counts = self._counts.get(table)
        if counts is None:
            raise ValueError(f"row for table {table!r}, which this write does not declare")
        counts[0] += len(rows)
        counts[1] += sum(map(len, map(operator.itemgetter(2), rows)))
        keys = self._keys[table]
        if keys is not None:
            keys.update(map(operator.itemgetter(1), rows))
            if len(keys) > self.MAX_DISTINCT_KEYS:
                self._keys[table] = None

    def finish_bundle(self) -> None:
        for table, (rows, cells) in self._counts.items():
            if rows:
                self._rows[table].inc(rows)
                self._cells[table].inc(cells)
                keys = self._keys[table]
                if keys is None:
                    self._unknown[table].inc()
                else:
                    self._distinct[table].inc(len(keys))
        self._keys = {}


class WriteRows(beam.PTransform):
    """Write :class:`RowMutation` s (or lists of them, batches from ``BuildRows``) to their
    tables with ``WriteToBigTable``."""

    def __init__(
        self,
        project: str,
        instance: str,
        tables: Sequence[str],
        flush_count: int = DEFAULT_FLUSH_COUNT,
        max_row_bytes: int = DEFAULT_FLUSH_BYTES,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        super().__init__()
        if timeout_s <= 0:
            raise ValueError("the write timeout must be positive")
        if not tables:
            raise ValueError("WriteRows needs at least one table")
        if flush_count < 1 or max_row_bytes < 1:
            raise ValueError("flush_count and max_row_bytes must be positive")
        self._tables = list(dict.fromkeys(tables))
        self._sink = {  # BoundedWriteToBigTable's arguments but the table
            "project_id": project,
            "instance_id": instance,
            "flush_count": flush_count,
            "max_row_bytes": max_row_bytes,
            "timeout_s": timeout_s,
        }

    def expand(self, rows: beam.PCollection) -> dict[str, beam.PCollection]:
        split = rows | "SplitByTable" >> beam.ParDo(_SplitByTableFn(self._tables)).with_outputs(
            *self._tables
        )
        return {
            table: split[table]
            | f"Write[{table}]" >> BoundedWriteToBigTable(table_id=table, **self._sink)
            for table in self._tables
        }
