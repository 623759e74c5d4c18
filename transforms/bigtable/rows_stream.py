"""Reading rows with ReadRows straight from gRPC: responses parsed by the C protobuf, chunks
merged in one tight loop into :class:`~transforms.mutations.ReadRow` tuples.

Why: the data client's ``read_rows`` wraps every response in proto-plus, builds a ``Row`` and a
``Cell`` object per cell (which every reader here turned into tuples again), and runs its
stream on gRPC's multi-threaded iterator, which hands each message from a polling thread to
the reader's. On the emulator (one row per response) that hand-off alone cost more than the
rows. Here the call runs on a channel of its own with gRPC's single-threaded unary-stream
mode (the reading thread polls its own call), set up as the data client sets up its own:
the emulator when ``BIGTABLE_EMULATOR_HOST`` is set, else the client's endpoint with the
application default credentials; the routing headers are the ones ``read_rows`` sends.

The merge follows the ``ReadRowsResponse.CellChunk`` contract: a row starts with a chunk that
names its key, family and qualifier; a later chunk carries the family and qualifier over
(a new family must come with its qualifier); a cell whose ``value_size`` is set continues in
the next chunks until one without it; ``reset_row`` drops the row in progress; ``commit_row``
ends it; keys only increase. A stream that breaks with a transient error is resumed after the
last committed row (or the last scanned key the server reported), with the row limit reduced
by the rows already returned, so no row is repeated or skipped. Reversed reads are not offered.
The request's filter is built from the filter's public attributes
(:mod:`transforms.bigtable.filter_proto`), as the data client would send it.

The official path (``BTTS_OFFICIAL=read``, or ``filters`` for a read with a filter; see
:mod:`transforms.official`): :func:`request_of` keeps the query as it is
(:class:`ClientRequest`) and the reader hands it to the data client's ``read_rows``, which
merges and resumes by itself; tests compare the two over the emulator and over a server that
breaks its streams, benchmarks/forks.py what this path buys.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple

import grpc
from google.api_core import exceptions as api_exceptions
from google.cloud.bigtable.data import BigtableDataClient, ReadRowsQuery, RowRange
from google.cloud.bigtable.data.exceptions import InvalidChunk
from google.cloud.bigtable.data.row_filters import RowFilter
from google.cloud.bigtable_v2.types import bigtable as bigtable_types

from transforms import official
from transforms.bigtable import channel as channels
from transforms.bigtable.filter_proto import filter_pb
from transforms.mutations import Cell, ReadRow

__all__ = ["RowReader", "SpanQuery", "open_channel", "request_of", "shared_reader"]

Request = bigtable_types.ReadRowsRequest.pb()  # the raw protobufs, no proto-plus wrappers
Response = bigtable_types.ReadRowsResponse.pb()

EMULATOR_ENV = channels.EMULATOR_ENV
METHOD = "/google.bigtable.v2.Bigtable/ReadRows"
# what the data client retries (plus the RST_STREAM it recognises by its message)
RETRYABLE = (
    api_exceptions.DeadlineExceeded,
    api_exceptions.ServiceUnavailable,
    api_exceptions.Aborted,
    api_exceptions.Cancelled,
)
MAX_BACKOFF_S = 1.0


class MergeState:
    """Where a read stands: the last row key it returned (or the server scanned past) and
    how many rows it returned, so a retry resumes right after it."""

    __slots__ = ("last_key", "rows")

    def __init__(self) -> None:
        self.last_key: bytes | None = None
        self.rows = 0


def _check_new_row(chunk, state: MergeState) -> bytes:
    key = chunk.row_key
    if not key:
        raise InvalidChunk("a row starts without a row key")
    if state.last_key is not None and key <= state.last_key:
        raise InvalidChunk(f"row key {key!r} does not come after {state.last_key!r}")
    if chunk.reset_row:
        raise InvalidChunk("a reset before any cell of the row")
    if not chunk.HasField("family_name") or not chunk.HasField("qualifier"):
        raise InvalidChunk(f"row {key!r} starts without a family and qualifier")
    return key


def _check_reset(chunk) -> None:
    if (
        chunk.row_key
        or chunk.HasField("family_name")
        or chunk.HasField("qualifier")
        or chunk.timestamp_micros
        or chunk.labels
        or chunk.value
        or chunk.value_size
        or chunk.commit_row
    ):
        raise InvalidChunk("a reset_row chunk that carries data")


def _check_continuation(chunk, key: bytes, family, qualifier, stamp: int, labels) -> None:
    """A chunk continuing a split value may repeat its coordinates, never change them."""
    if (
        (chunk.row_key and chunk.row_key != key)
        or (chunk.HasField("family_name") and chunk.family_name.value != family)
        or (chunk.HasField("qualifier") and chunk.qualifier.value != qualifier)
        or (chunk.timestamp_micros and chunk.timestamp_micros != stamp)
        or (chunk.labels and list(chunk.labels) != labels)
    ):
        raise InvalidChunk(f"row {key!r}: a cell changed its coordinates mid value")
    if chunk.commit_row and chunk.value_size:
        raise InvalidChunk(f"row {key!r}: committed inside a split cell")


def _check_scanned(scanned: bytes, key: bytes | None, state: MergeState) -> None:
    if key is not None:
        raise InvalidChunk("last_scanned_row_key inside a row")
    if state.last_key is not None and scanned <= state.last_key:
        raise InvalidChunk("last_scanned_row_key went backwards")


def merge_chunks(responses: Iterable, state: MergeState | None = None) -> Iterator[ReadRow]:
    """The committed rows of a ReadRows response stream (responses as bytes or parsed),
    updating ``state`` as rows commit (see the module docstring for the rules). One loop over
    the chunks, a split value kept as its pieces until its last chunk."""
    state = state if state is not None else MergeState()
    key = family = qualifier = labels = parts = None  # the row, column and split value
    cells: list = []
    stamp = 0
    for response in responses:
        if type(response) is bytes:
            response = Response.FromString(response)
        for chunk in response.chunks:
            if parts is not None:  # inside a split value
                if chunk.reset_row:
                    _check_reset(chunk)
                    key = parts = None
                    continue
                _check_continuation(chunk, key, family, qualifier, stamp, labels)
                parts.append(chunk.value)
                if chunk.value_size:
                    continue
                value, parts = b"".join(parts), None
            else:
                if key is None:
                    key = _check_new_row(chunk, state)
                    cells = []
                elif chunk.reset_row:
                    _check_reset(chunk)
                    key = None
                    continue
                elif chunk.row_key and chunk.row_key != key:
                    raise InvalidChunk(f"row {key!r} was not committed before {chunk.row_key!r}")
                if chunk.HasField("family_name"):
                    if not chunk.HasField("qualifier"):
                        raise InvalidChunk(f"row {key!r}: a new family without a qualifier")
                    family = chunk.family_name.value
                    qualifier = chunk.qualifier.value
                elif chunk.HasField("qualifier"):
                    qualifier = chunk.qualifier.value
                stamp = chunk.timestamp_micros
                if chunk.value_size:
                    if chunk.commit_row:
                        raise InvalidChunk(f"row {key!r}: committed inside a split cell")
                    parts, labels = [chunk.value], list(chunk.labels)
                    continue
                value = chunk.value
            cells.append(Cell(family, qualifier, value, stamp))
            if chunk.commit_row:
                state.last_key = key
                state.rows += 1
                yield ReadRow(key, tuple(cells))
                key = None
        scanned = response.last_scanned_row_key
        if scanned:  # the server read past this key: a retry starts after it
            _check_scanned(scanned, key, state)
            state.last_key = scanned
    if parts is not None:
        raise InvalidChunk(f"row {key!r}: the stream ended inside a cell")
    if key is not None:
        raise InvalidChunk(f"the stream ended inside row {key!r}")


class ClientRequest(NamedTuple):
    """A read the data client makes (the official path): the query as given."""

    table_name: str
    query: ReadRowsQuery
    app_profile_id: str = ""


class SpanQuery(NamedTuple):
    """A read of many key ranges ``[start, end)`` (``b""``: unbounded), put straight into the
    request. Why: the data client's ``RowRange`` is a proto-plus message, hashed when a query
    takes it and read back field by field; at 10,000 ranges (a ``*`` over as many series)
    making them cost a fifth of the read. :meth:`query` is the same read as the data client's
    query (what the official path sends)."""

    spans: Sequence[tuple[bytes, bytes]]
    filter: RowFilter | None = None
    limit: int | None = None

    def query(self) -> ReadRowsQuery:
        ranges = [RowRange(start_key=a or None, end_key=b or None) for a, b in self.spans]
        return ReadRowsQuery(row_ranges=ranges, row_filter=self.filter, limit=self.limit)


def request_of(table_name: str, query: ReadRowsQuery | SpanQuery, app_profile_id: str = ""):
    """The ``ReadRowsRequest`` of a data-client query (keys, ranges, filter, limit) or of a
    :class:`SpanQuery`, or the query kept for the data client (:class:`ClientRequest`) when
    ``BTTS_OFFICIAL`` says so."""
    if official.uses("read") or (query.filter and official.uses("filters")):
        if type(query) is SpanQuery:
            query = query.query()
        return ClientRequest(table_name, query, app_profile_id)
    request = Request(table_name=table_name, app_profile_id=app_profile_id)
    rows = request.rows
    if type(query) is SpanQuery:
        rows.SetInParent()  # as the data client sends no range: the whole table
        _add_spans(rows.row_ranges, query.spans)
        return _with_filter(request, query)
    rows.row_keys.extend(query.row_keys)
    for r in query.row_ranges:
        span = rows.row_ranges.add()
        if r.start_key is not None:
            if r.start_is_inclusive:
                span.start_key_closed = r.start_key
            else:
                span.start_key_open = r.start_key
        if r.end_key is not None:
            if r.end_is_inclusive:
                span.end_key_closed = r.end_key
            else:
                span.end_key_open = r.end_key
    return _with_filter(request, query)


def _add_spans(ranges, spans: Sequence[tuple[bytes, bytes]]) -> None:
    add = ranges.add
    for start, end in dict.fromkeys(spans):  # once each, as the data client's query keeps them
        if start and end:
            add(start_key_closed=start, end_key_open=end)
        elif start:
            add(start_key_closed=start)
        elif end:
            add(end_key_open=end)
        else:
            add()


def _with_filter(request, query: ReadRowsQuery | SpanQuery):
    if query.filter:  # as the data client sends it: an empty chain or union is no filter
        request.filter.CopyFrom(filter_pb(query.filter))
    if query.limit:
        request.rows_limit = query.limit
    return request


def resume_request(request, state: MergeState):
    """``request`` for the rows after ``state.last_key`` (the limit less the rows returned),
    or None when nothing is left to read."""
    out = Request()
    out.CopyFrom(request)
    if request.rows_limit:
        if state.rows >= request.rows_limit:
            return None
        out.rows_limit = request.rows_limit - state.rows
    last = state.last_key
    if last is None:
        return out
    rows = request.rows
    if not rows.row_keys and not rows.row_ranges:  # the whole table
        out.rows.row_ranges.add(start_key_open=last)
        return out
    out.rows.Clear()
    out.rows.row_keys.extend(k for k in rows.row_keys if k > last)
    for r in rows.row_ranges:
        end = r.end_key_closed or r.end_key_open
        if end and end <= last:
            continue  # wholly read (an open end at the last key, or a closed one: read)
        span = out.rows.row_ranges.add()
        span.CopyFrom(r)
        start = r.start_key_closed or r.start_key_open
        if start <= last:
            span.start_key_open = last
    if not out.rows.row_keys and not out.rows.row_ranges:
        return None
    return out


class RowReader:
    """ReadRows calls on one channel (thread-safe: every call polls its own stream); the reads
    of the official path (:class:`ClientRequest`) on data clients to ``endpoint``."""

    def __init__(self, channel: grpc.Channel, endpoint: str | None = None) -> None:
        self.channel = channel
        self._call = channel.unary_stream(
            METHOD, request_serializer=None, response_deserializer=None
        )
        self._metadata: dict[tuple[str, str], tuple] = {}
        self._endpoint = endpoint
        self._clients: dict[str, BigtableDataClient] = {}  # per project
        self._lock = threading.Lock()

    def metadata(self, table_name: str, app_profile_id: str = "") -> tuple:
        """The headers the data client's ``read_rows`` sends: client info and routing."""
        key = (table_name, app_profile_id)
        found = self._metadata.get(key)
        if found is None:
            found = self._metadata[key] = channels.client_metadata(table_name, app_profile_id)
        return found

    def read(
        self,
        table_name: str,
        query: ReadRowsQuery | SpanQuery,
        timeout_s: float,
        app_profile_id: str = "",
    ) -> list[ReadRow]:
        """Every row of ``query`` (see the module docstring), within ``timeout_s``."""
        request = request_of(table_name, query, app_profile_id)
        return list(self.stream(request, timeout_s))

    def stream(self, request, timeout_s: float) -> Iterator[ReadRow]:
        """The rows of a ``ReadRowsRequest`` as they come, resumed after transient errors
        until ``timeout_s`` has passed (then :class:`DeadlineExceeded`); a
        :class:`ClientRequest`'s from the data client's ``read_rows``."""
        if type(request) is ClientRequest:
            yield from self._client_rows(request, timeout_s)
            return
        metadata = self.metadata(request.table_name, request.app_profile_id)
        state = MergeState()
        deadline = time.monotonic() + timeout_s
        delay = 0.01
        while True:
            attempt = resume_request(request, state) if state.rows or state.last_key else request
            if attempt is None:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise api_exceptions.DeadlineExceeded(f"ReadRows: over {timeout_s:g}s")
            try:
                responses = self._call(attempt.SerializeToString(), timeout=left, metadata=metadata)
                yield from merge_chunks(_raising(responses), state)
                return
            except (*RETRYABLE, api_exceptions.InternalServerError) as err:
                if not _transient(err) or time.monotonic() + delay >= deadline:
                    raise
            time.sleep(delay * random.uniform(0.5, 1.0))
            delay = min(delay * 2, MAX_BACKOFF_S)

    def _client_rows(self, request: ClientRequest, timeout_s: float) -> Iterator[ReadRow]:
        """The official path: the data client reads, merges and resumes."""
        _, project, _, instance, _, table = request.table_name.split("/")
        with self._lock:
            client = self._clients.get(project)
            if client is None:
                options = {"api_endpoint": self._endpoint} if self._endpoint else None
                client = self._clients[project] = BigtableDataClient(
                    project=project, client_options=options
                )
        target = client.get_table(instance, table, app_profile_id=request.app_profile_id or None)
        for row in target.read_rows_stream(request.query, operation_timeout=timeout_s):
            yield ReadRow.of(row)

    def close(self) -> None:
        self.channel.close()
        for client in self._clients.values():
            client.close()
        self._clients.clear()


def _transient(err: Exception) -> bool:
    if isinstance(err, RETRYABLE):
        return True
    text = str(err).lower()  # INTERNAL after a reset stream, as the data client retries it
    return "rst_stream" in text or "rst stream" in text


def _raising(responses) -> Iterator[bytes]:
    try:
        yield from responses
    except grpc.RpcError as err:
        raise api_exceptions.from_grpc_error(err) from None


CHANNEL_OPTIONS = (
    *channels.GRPC_OPTIONS,
    (grpc.experimental.ChannelOptions.SingleThreadedUnaryStream, 1),
)


def open_channel(endpoint: str | None = None) -> grpc.Channel:
    """A channel as the data client opens its own (:func:`.channel.open_channel`), in gRPC's
    single-threaded stream mode: the reading thread polls its own call."""
    return channels.open_channel(endpoint, CHANNEL_OPTIONS)


_SHARED: dict[tuple, RowReader] = {}
_SHARED_LOCK = threading.Lock()


def shared_reader(endpoint: str | None = None, opener: Callable = open_channel) -> RowReader:
    """This process's reader for ``endpoint`` (and the emulator setting): one channel shared
    by every thread, as the data client shares one."""
    key = (endpoint, os.environ.get(EMULATOR_ENV))
    with _SHARED_LOCK:
        found = _SHARED.get(key)
        if found is None:
            found = _SHARED[key] = RowReader(opener(endpoint), endpoint)
    return found
