"""Sending MutateRows requests: the call, retries that resend only what is safe, flow control.

:mod:`transforms.bigtable.write` builds each request's bytes; this module sends them on the data
client's own gRPC channel (its credentials, the emulator, the routing headers its
``mutate_rows`` sends) and decides what happens to every entry the server did not write:

* **Retries.** Entries answered with a transient code (``DEADLINE_EXCEEDED``, ``UNAVAILABLE``,
  ``RESOURCE_EXHAUSTED``) are re-sent alone, with exponential backoff, until ``timeout_s``.
  Only idempotent entries are re-sent, as python-bigtable does: a cell with a server-assigned
  timestamp (``-1``) or an ``AddToCell``/``MergeToCell`` would be written twice by a resend, so
  such an entry fails instead, with an error that names its row.
* **Flow control** (:class:`FlowControl`). The request opts in to Bigtable's batch write flow
  control (``mutate_rows_rate_limit`` feature flags); the server answers with ``RateLimitInfo``
  and the sender follows it as the Java client does (:class:`RateLimiter`). A per-worker cap on
  requests and bytes in flight (:class:`InFlightLimit`) bounds what one worker can throw at a
  cluster, whatever the number of threads the runner gives it.
"""

from __future__ import annotations

import base64
import functools
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import grpc
from google.api_core import exceptions as api_exceptions
from google.cloud.bigtable.data import BigtableDataClient
from google.cloud.bigtable.data import mutations as data_mutations
from google.cloud.bigtable.data.exceptions import MutationsExceptionGroup
from google.cloud.bigtable_v2 import FeatureFlags
from google.cloud.bigtable_v2.types import bigtable as bigtable_types

from transforms import official
from transforms.bigtable.channel import client_metadata, open_channel
from transforms.errors import FailedEntry

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "MAX_IN_FLIGHT",
    "Attempt",
    "Batch",
    "FlowControl",
    "direct_rows_sender",
    "open_sender",
]

_Response = bigtable_types.MutateRowsResponse.pb()  # the raw protobuf, no proto-plus wrapper
_Request = bigtable_types.MutateRowsRequest.pb()

DEFAULT_TIMEOUT_S = 300.0
MAX_ATTEMPT_S = 60.0
MAX_IN_FLIGHT = 4  # requests one writer (one DoFn instance) keeps in flight
RESOURCE_EXHAUSTED = 8
RETRYABLE_CODES = frozenset({4, 8, 14})  # DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, UNAVAILABLE
_RETRYABLE_ERRORS = (
    api_exceptions.DeadlineExceeded,
    api_exceptions.ServiceUnavailable,
    api_exceptions.TooManyRequests,  # RESOURCE_EXHAUSTED
)
FEATURES_HEADER = "bigtable-features"


@dataclass(slots=True)
class Batch:
    """One MutateRows request: its leading fields (the table), its entries (framed, ready to
    join) and their row keys, to resend some entries alone and to name a refused row."""

    head: bytes
    entries: list[bytes]
    keys: list[bytes]

    def to_bytes(self) -> bytes:
        return b"".join((self.head, *self.entries))

    def subset(self, indexes: list[int]) -> Batch:
        return Batch(self.head, [self.entries[i] for i in indexes], [self.keys[i] for i in indexes])

    def size(self) -> int:
        return len(self.head) + sum(map(len, self.entries))


@dataclass(slots=True)
class Attempt:
    """The outcome of one request: status codes seen, errors that will not pass, and the
    seconds it waited for flow control (``throttled_s``)."""

    rows: int
    codes: Counter = field(default_factory=Counter)
    errors: list[FailedEntry] = field(default_factory=list)
    throttled_s: float = 0.0


def resend_refusal(framed_entry: bytes) -> str | None:
    """Why a framed ``MutateRowsRequest`` entry must not be sent twice, or None when a resend
    writes the same cells again (every cell has its own timestamp, nothing accumulates)."""
    # The framed entry is field 2 of the request: parse it as a one-entry request.
    request = _Request.FromString(framed_entry)
    for entry in request.entries:
        for mutation in entry.mutations:
            kind = mutation.WhichOneof("mutation")
            if kind in ("add_to_cell", "merge_to_cell"):
                return f"it holds a {kind} mutation, which adds again when re-sent"
            if kind == "set_cell" and mutation.set_cell.timestamp_micros == -1:
                return (
                    "a cell takes the server's timestamp (-1), so a resend adds another version; "
                    "give every cell a timestamp (event time) to make it safe to retry"
                )
    return None


def feature_flags_header(flow_control: bool) -> tuple[str, str] | None:
    """The ``bigtable-features`` metadata that opts in to batch write flow control (both
    ``mutate_rows_rate_limit`` flags, as the Java client sets them), or None when off."""
    if not flow_control:
        return None
    flags = FeatureFlags(mutate_rows_rate_limit=True, mutate_rows_rate_limit2=True)
    encoded = base64.urlsafe_b64encode(FeatureFlags.serialize(flags))
    return FEATURES_HEADER, encoded.decode("ascii")


def mutate_rows_call(channel: grpc.Channel, table_name: str, flow_control: bool = False):
    """``(request bytes, timeout) -> MutateRowsResponse bytes``: MutateRows on ``channel``
    (:func:`transforms.bigtable.channel.open_channel`: credentials, emulator), with the headers
    the data client's ``bulk_mutate_rows`` sends, but no proto-plus wrapping of the request on
    the way out and no parsing of the responses on the way in (:func:`parse_response`; see
    :func:`all_written`)."""
    method = channel.unary_stream(
        "/google.bigtable.v2.Bigtable/MutateRows",
        request_serializer=None,  # the request is already bytes
        response_deserializer=None,  # so is the answer: most are all_written's
    )
    metadata = list(client_metadata(table_name))
    flags = feature_flags_header(flow_control)
    if flags:
        metadata.append(flags)
    metadata = tuple(metadata)

    def call(request: bytes, timeout: float):
        try:
            yield from method(request, timeout=timeout, metadata=metadata)
        except grpc.RpcError as err:
            raise api_exceptions.from_grpc_error(err) from None

    return call


def parse_response(response: bytes):
    """A ``MutateRowsResponse`` protobuf from its bytes."""
    return _Response.FromString(response)


@functools.lru_cache(maxsize=64)
def all_written(count: int) -> bytes:
    """The bytes of one ``MutateRowsResponse`` that says every entry of a request of ``count``
    was written, as Bigtable and its emulator send it: the entries in order, each with an empty
    (OK) status. Why: reading a response entry by entry costs more per row than encoding the
    row; a response equal to these bytes says the same thing in one comparison."""
    response = _Response()
    for index in range(count):
        response.entries.add(index=index).status.SetInParent()
    return response.SerializeToString()


_NO_RATE_LIMIT = _Response()  # what all_written's response tells the rate limiter


class RateLimiter:
    """Bigtable's batch write flow control, as the Java client's
    ``RateLimitingServerStreamingCallable`` does it: off until a response carries a valid
    ``RateLimitInfo``; then requests are spaced at a rate that starts at 10 per second and is
    multiplied by each ``factor`` (capped to 0.7–1.3) at most once per ``period``; an error
    that says the cluster is overloaded multiplies it by 0.7 (10 s period); a response without
    ``RateLimitInfo`` turns limiting off once the period has passed. Thread-safe."""

    DEFAULT_QPS = 10.0
    MIN_QPS, MAX_QPS = 0.1, 100_000.0
    MIN_FACTOR, MAX_FACTOR = 0.7, 1.3
    ERROR_PERIOD_S = 10.0

    def __init__(self, clock: Callable[[], float] = time.monotonic, sleep=time.sleep) -> None:
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self.enabled = False
        self.rate = self.DEFAULT_QPS
        self._next_update = clock()
        self._next_free = clock()  # when the next request may start

    def acquire(self) -> float:
        """Wait for this request's turn; the seconds waited."""
        if not self.enabled:
            return 0.0
        with self._lock:
            now = self._clock()
            start = max(now, self._next_free)
            self._next_free = start + 1.0 / self.rate
        wait = start - now
        if wait > 0:
            self._sleep(wait)
        return max(wait, 0.0)

    def on_response(self, response) -> None:
        """Follow a response's ``RateLimitInfo`` (or its absence)."""
        info = response.rate_limit_info if response.HasField("rate_limit_info") else None
        if info is None or info.factor <= 0 or info.period.seconds <= 0:
            with self._lock:
                if self._clock() > self._next_update:
                    self.enabled = False
            return
        self.enabled = True
        self._update(info.factor, float(info.period.seconds))

    def on_overload(self) -> None:
        """DEADLINE_EXCEEDED, UNAVAILABLE or RESOURCE_EXHAUSTED: the cluster is busy."""
        self._update(self.MIN_FACTOR, self.ERROR_PERIOD_S)

    def _update(self, factor: float, period_s: float) -> None:
        factor = min(max(factor, self.MIN_FACTOR), self.MAX_FACTOR)
        with self._lock:
            now = self._clock()
            if now < self._next_update:
                return
            self._next_update = now + period_s
            self.rate = min(max(self.rate * factor, self.MIN_QPS), self.MAX_QPS)


class InFlightLimit:
    """At most ``requests`` requests and ``max_bytes`` request bytes in flight (a request
    larger than ``max_bytes`` goes alone). Thread-safe; the peak is kept for tests."""

    def __init__(self, requests: int, max_bytes: int) -> None:
        if requests < 1 or max_bytes < 1:
            raise ValueError("in-flight limits must be positive")
        self.requests, self.max_bytes = requests, max_bytes
        self._cond = threading.Condition()
        self._count = self._bytes = 0
        self.peak_requests = self.peak_bytes = 0

    def acquire(self, size: int) -> float:
        """Wait for room for a request of ``size`` bytes; the seconds waited."""
        started = time.monotonic()
        with self._cond:
            while self._count and (
                self._count >= self.requests or self._bytes + size > self.max_bytes
            ):
                self._cond.wait()
            self._count += 1
            self._bytes += size
            self.peak_requests = max(self.peak_requests, self._count)
            self.peak_bytes = max(self.peak_bytes, self._bytes)
        return time.monotonic() - started

    def release(self, size: int) -> None:
        with self._cond:
            self._count -= 1
            self._bytes -= size
            self._cond.notify_all()


@dataclass(frozen=True)
class FlowControl:
    """Per-worker flow control settings (picklable; the limiters are made on the worker).

    ``max_requests``/``max_bytes`` cap what one worker process has in flight to one table."""

    max_requests: int = 16
    max_bytes: int = 64 * 1024 * 1024

    def shared(self, table_name: str) -> tuple[RateLimiter, InFlightLimit]:
        """This process's limiters for ``table_name``: shared by every writer thread, as the
        Java client shares one limiter per client."""
        key = (table_name, self)
        with _SHARED_LOCK:
            found = _SHARED.get(key)
            if found is None:
                found = _SHARED[key] = (
                    RateLimiter(),
                    InFlightLimit(self.max_requests, self.max_bytes),
                )
        return found


_SHARED: dict[tuple, tuple[RateLimiter, InFlightLimit]] = {}
_SHARED_LOCK = threading.Lock()


@dataclass
class RequestSender:
    """Sends MutateRows requests, each until every entry is written or refused for good (or
    not safe to resend), the call fails for good, or ``timeout_s`` has passed. Runs in the
    writer's worker threads;
    ``limiter``/``in_flight`` are the flow control (None: off)."""

    call: Callable
    timeout_s: float
    limiter: RateLimiter | None = None
    in_flight: InFlightLimit | None = None

    def __call__(self, batch: Batch) -> Attempt:
        outcome = Attempt(len(batch.entries))
        unsafe: list[FailedEntry] = []  # entries not re-sent: reported once the others are
        try:
            self._send(batch, outcome, unsafe)
        finally:
            outcome.errors.extend(unsafe)
        return outcome

    def _send(self, batch: Batch, outcome: Attempt, unsafe: list[FailedEntry]) -> None:
        deadline = time.monotonic() + self.timeout_s
        delay = 0.01
        first = list(range(len(batch.entries)))  # each entry's index in the batch as first sent
        while True:
            remaining = deadline - time.monotonic()
            answered, refused, failure = self._attempt(
                batch, min(remaining, MAX_ATTEMPT_S), outcome
            )
            written = answered.count(1) - len(refused)
            if written:
                outcome.codes[0] += written
            # entries not answered (the stream broke first); a search in C when all were
            retry = [i for i, seen in enumerate(answered) if not seen] if 0 in answered else []
            for index, status in refused:
                outcome.codes[status.code] += 1
                if status.code in RETRYABLE_CODES:
                    retry.append(index)
                else:
                    key, at = batch.keys[index], first[index]
                    outcome.errors.append(FailedEntry(status.message, key, at, status.code))
            if failure is not None and not isinstance(failure, _RETRYABLE_ERRORS):
                outcome.errors.append(FailedEntry(failure))
                return
            if retry:
                retry = self._resendable(batch, retry, failure, unsafe, first)
            if not retry:  # a row refused for good does not stop the others' retries (as the
                return  # data client's bulk_mutate_rows goes on): fewer rows for the rerun
            if time.monotonic() + delay >= deadline:
                last = f"{type(failure).__name__}: {failure}" if failure else "transient errors"
                outcome.errors.append(
                    FailedEntry(
                        f"{len(retry)} row(s) still not written after {self.timeout_s:g}s of "
                        f"retries (last: {last})"
                    )
                )
                return
            pause = delay * random.uniform(0.5, 1.0)
            time.sleep(pause)
            if isinstance(failure, api_exceptions.TooManyRequests) or any(
                s.code == RESOURCE_EXHAUSTED for _i, s in refused
            ):
                outcome.throttled_s += pause
            delay = min(delay * 2, MAX_ATTEMPT_S)
            retry.sort()
            batch, first = batch.subset(retry), [first[i] for i in retry]

    @staticmethod
    def _resendable(
        batch: Batch, retry: list[int], failure, unsafe: list[FailedEntry], first: list[int]
    ) -> list[int]:
        """The entries of ``retry`` that are safe to send again; the others become errors
        (``first``: each entry's index in the batch as first sent)."""
        keep = []
        for index in retry:
            why = resend_refusal(batch.entries[index])
            if why is None:
                keep.append(index)
            else:
                cause = f"{type(failure).__name__}: {failure}" if failure else "a transient error"
                said = f"not re-sent after {cause}: {why}"
                unsafe.append(FailedEntry(said, batch.keys[index], first[index]))
        return keep

    def _attempt(self, batch: Batch, timeout: float, outcome: Attempt):
        """One call: which entries were answered, the ``(index, status)`` of those not written,
        and the call's error."""
        answered = bytearray(len(batch.entries))
        refused = []
        limiter, in_flight = self.limiter, self.in_flight
        size = batch.size() if in_flight is not None else 0
        if limiter is not None:
            outcome.throttled_s += limiter.acquire()
        if in_flight is not None:
            outcome.throttled_s += in_flight.acquire(size)
        count = len(batch.entries)
        try:
            for response in self.call(batch.to_bytes(), max(timeout, 0.001)):
                if type(response) is bytes:
                    if response == all_written(count):  # every entry written: nothing to read
                        answered[:] = b"\x01" * count
                        if limiter is not None:
                            limiter.on_response(_NO_RATE_LIMIT)
                        continue
                    response = _Response.FromString(response)
                if limiter is not None:
                    limiter.on_response(response)
                for answer in response.entries:
                    answered[answer.index] = 1
                    if answer.status.code:
                        refused.append((answer.index, answer.status))
        except api_exceptions.GoogleAPICallError as err:
            if limiter is not None and isinstance(err, _RETRYABLE_ERRORS):
                limiter.on_overload()
            return answered, refused, err
        finally:
            if in_flight is not None:
                in_flight.release(size)
        if limiter is not None and any(s.code == RESOURCE_EXHAUSTED for _i, s in refused):
            limiter.on_overload()
        return answered, refused, None


def direct_rows_sender(table, timeout_s: float, flow: FlowControl | None, table_name: str):
    """``(DirectRows) -> Attempt`` through the legacy client's public ``Table.mutate_rows``:
    the client converts the rows and retries only their idempotent entries; failures come
    back per row and are reported with the row's key. Flow control caps them in flight; the
    client's own requests do not carry the rate-limit opt-in, so the rate limiter does not
    apply to them."""
    from google.cloud.bigtable.table import DEFAULT_RETRY

    retry = DEFAULT_RETRY.with_deadline(timeout_s)
    in_flight = flow.shared(table_name)[1] if flow is not None else None

    def send(rows: Iterable) -> Attempt:
        rows = list(rows)
        outcome = Attempt(len(rows))
        size = sum(row.get_mutations_size() for row in rows) if in_flight is not None else 0
        if in_flight is not None:
            outcome.throttled_s += in_flight.acquire(size)
        try:
            statuses = table.mutate_rows(rows, retry=retry, timeout=MAX_ATTEMPT_S)
        except api_exceptions.GoogleAPICallError as err:
            outcome.errors.append(FailedEntry(err))
            return outcome
        finally:
            if in_flight is not None:
                in_flight.release(size)
        for index, (row, status) in enumerate(zip(rows, statuses, strict=True)):
            outcome.codes[status.code] += 1
            if status.code:
                outcome.errors.append(FailedEntry(status.message, row.row_key, index, status.code))
        return outcome

    return send


# -- the official path (BTTS_OFFICIAL=mutate): the data client sends each request ------------

CLIENT_RETRYABLE = (*_RETRYABLE_ERRORS,)  # what the fork retries, given to the data client


def _client_mutation(mutation):
    """A raw ``Mutation`` as the data client's own mutation class (public constructors)."""
    kind = mutation.WhichOneof("mutation")
    if kind == "set_cell":
        cell = mutation.set_cell
        return data_mutations.SetCell(
            cell.family_name, cell.column_qualifier, cell.value, cell.timestamp_micros
        )
    if kind == "delete_from_column":
        column = mutation.delete_from_column
        span = column.time_range if column.HasField("time_range") else None
        return data_mutations.DeleteRangeFromColumn(
            column.family_name,
            column.column_qualifier,
            span.start_timestamp_micros or None if span else None,
            span.end_timestamp_micros or None if span else None,
        )
    if kind == "delete_from_family":
        return data_mutations.DeleteAllFromFamily(mutation.delete_from_family.family_name)
    if kind == "delete_from_row":
        return data_mutations.DeleteAllFromRow()
    raise TypeError(f"cannot send a {kind} mutation through this sink")


def client_sender(table, timeout_s: float, in_flight: InFlightLimit | None = None):
    """``(Batch) -> Attempt`` through the data client's ``bulk_mutate_rows`` on ``table`` (a
    data client table): the official counterpart of :class:`RequestSender` (its retries of
    idempotent entries, its channel and headers, its serialization). It retries what the fork
    retries (``CLIENT_RETRYABLE``); the rate limiting of batch write flow control is not in the
    data client (only ``in_flight``, the cap on requests and bytes, applies)."""

    def send(batch: Batch) -> Attempt:
        request = _Request.FromString(batch.to_bytes())
        entries = [
            data_mutations.RowMutationEntry(e.row_key, [_client_mutation(m) for m in e.mutations])
            for e in request.entries
        ]
        outcome = Attempt(len(entries))
        size = batch.size() if in_flight is not None else 0
        if in_flight is not None:
            outcome.throttled_s += in_flight.acquire(size)
        failed = []
        try:
            table.bulk_mutate_rows(
                entries,
                operation_timeout=timeout_s,
                attempt_timeout=min(timeout_s, MAX_ATTEMPT_S),
                retryable_errors=CLIENT_RETRYABLE,
            )
        except MutationsExceptionGroup as group:
            failed = list(group.exceptions)
        except api_exceptions.GoogleAPICallError as err:
            outcome.errors.append(FailedEntry(err))
            return outcome
        finally:
            if in_flight is not None:
                in_flight.release(size)
        outcome.codes[0] += len(entries) - len(failed)
        for error in failed:  # the data client's FailedMutationEntryError: entry, index, cause
            cause = error.__cause__
            code = getattr(getattr(cause, "grpc_status_code", None), "value", (2,))[0]
            outcome.codes[code] += 1
            outcome.errors.append(
                FailedEntry(cause or error, error.entry.row_key, error.index, code)
            )
        return outcome

    return send


def open_sender(project: str, instance: str, table: str, table_name: str, timeout_s, flow):
    """A writer's ``(Batch) -> Attempt`` for one table and what to close after it: a
    :class:`RequestSender` of raw bytes on a channel of its own, or with ``BTTS_OFFICIAL=mutate``
    the data client's ``bulk_mutate_rows`` (:func:`client_sender`). ``flow``: a
    :class:`FlowControl` or None."""
    limiter = in_flight = None
    if flow is not None:
        limiter, in_flight = flow.shared(table_name)
    if official.uses("mutate"):
        client = BigtableDataClient(project=project)
        return client_sender(client.get_table(instance, table), timeout_s, in_flight), client
    channel = open_channel()
    call = mutate_rows_call(channel, table_name, flow is not None)
    return RequestSender(call, timeout_s, limiter, in_flight), channel
