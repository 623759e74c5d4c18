"""ReadRows by hand (transforms/bigtable/rows_stream.py: chunks merged, streams resumed) against
the data client's own ``read_rows`` (``BTTS_OFFICIAL=read``), both reading from one in-process
gRPC server that holds a generated table and breaks its streams from a script: a value split
across chunks and responses, several rows per response, rows the server scanned past without
sending (``last_scanned_row_key``), and streams cut after some responses by UNAVAILABLE, an
``RST_STREAM``, ABORTED or CANCELLED, or refused for good.

For every table, query and script, the two read the same rows (the table's, per the query),
send the same requests on every resumption (after the last row returned, or the last key
scanned, with the row limit reduced), and fail alike when the server refuses for good. The same
comparison over the emulator is in tests/transforms/bigtable/test_rows_stream.py."""

from __future__ import annotations

import os
import threading
from concurrent import futures

import grpc
import pytest
from google.api_core import exceptions as api_exceptions
from google.cloud.bigtable.data import ReadRowsQuery, RowRange
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from transforms.bigtable import rows_stream
from transforms.bigtable.rows_stream import ClientRequest, Request, Response
from transforms.mutations import Cell, ReadRow

TABLE = "projects/p/instances/i/tables/t"
RST_STREAM = "Received RST_STREAM with error code 2"
FAULTS = {
    "unavailable": (grpc.StatusCode.UNAVAILABLE, "the stream broke"),
    "rst_stream": (grpc.StatusCode.INTERNAL, RST_STREAM),
    "aborted": (grpc.StatusCode.ABORTED, "aborted"),
    "cancelled": (grpc.StatusCode.CANCELLED, "cancelled"),
}
PERMANENT = (grpc.StatusCode.PERMISSION_DENIED, "not yours")


def _in(key: bytes, ranges) -> bool:
    for r in ranges:
        start = r.start_key_closed or r.start_key_open
        if start and (
            key < start or (r.WhichOneof("start_key") == "start_key_open" and key == start)
        ):
            continue
        end = r.end_key_closed or r.end_key_open
        if end and (key > end or (r.WhichOneof("end_key") == "end_key_open" and key == end)):
            continue
        return True
    return False


class ScriptedReadRows:
    """A ReadRows server over ``rows`` (``(key, cells, visible)``, keys ascending; an invisible
    row is scanned past, as a filter would drop it, and its key sent as ``last_scanned_row_key``
    in a response without chunks, as Bigtable sends it: the data client takes a response's
    scanned key before its chunks, the fork after them). ``script[n]`` shapes the n-th call:
    ``(rows per response, value bytes per chunk, fault after this many responses or None,
    the fault)``; calls past the script are answered whole."""

    def __init__(self) -> None:
        self.rows: list = []
        self.script: list = []
        self.requests: list = []
        self._lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        handler = grpc.method_handlers_generic_handler(
            "google.bigtable.v2.Bigtable",
            {
                "ReadRows": grpc.unary_stream_rpc_method_handler(
                    self.read_rows,
                    request_deserializer=Request.FromString,
                    response_serializer=lambda r: r.SerializeToString(),
                )
            },
        )
        self.server.add_generic_rpc_handlers((handler,))
        self.endpoint = f"127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"

    def selected(self, request) -> list:
        keys, ranges = set(request.rows.row_keys), list(request.rows.row_ranges)
        every = not keys and not ranges
        return [r for r in self.rows if every or r[0] in keys or _in(r[0], ranges)]

    def read_rows(self, request, context):
        with self._lock:
            n = len(self.requests)
            self.requests.append(request)
        per, piece, fault_after, fault = (
            self.script[n] if n < len(self.script) else (3, 1000, None, None)
        )
        sent = 0
        responses = 0
        out = Response()
        pending: list = []  # responses ready to go: a scanned key goes in one of its own
        for key, cells, visible in self.selected(request):
            if request.rows_limit and sent >= request.rows_limit:
                break
            if not visible:
                if out.chunks:
                    pending.append(out)
                pending.append(Response(last_scanned_row_key=key))
                out = Response()
            else:
                out.chunks.extend(_chunks(key, cells, piece))
                sent += 1
                if len(out.chunks) >= per:
                    pending.append(out)
                    out = Response()
            for response in pending:
                if fault_after is not None and responses >= fault_after:
                    context.abort(*fault)
                yield response
                responses += 1
            pending = []
        if out.chunks:
            if fault_after is not None and responses >= fault_after:
                context.abort(*fault)
            yield out


def _chunks(key: bytes, cells, piece: int) -> list:
    """A row's chunks: a cell's value split in pieces of ``piece`` bytes, family and qualifier
    only when they change, the row committed by its last chunk."""
    out = []
    family = qualifier = None
    for cell in cells:
        value = cell.value
        parts = [value[i : i + piece] for i in range(0, len(value), piece)] or [b""]
        for i, part in enumerate(parts):
            chunk = Response.CellChunk(value=part)
            if i == 0:
                if not out:
                    chunk.row_key = key
                if cell.family != family:
                    chunk.family_name.value = cell.family
                    chunk.qualifier.value = cell.qualifier
                elif cell.qualifier != qualifier:
                    chunk.qualifier.value = cell.qualifier
                family, qualifier = cell.family, cell.qualifier
                chunk.timestamp_micros = cell.timestamp_us
            if i < len(parts) - 1:
                chunk.value_size = len(value)
            out.append(chunk)
    out[-1].commit_row = True
    return out


@pytest.fixture(scope="module")
def readers():
    """The server, the fork's reader and the data client's reader, both pointed at it."""
    fake = ScriptedReadRows()
    fake.server.start()
    before = os.environ.get(rows_stream.EMULATOR_ENV)
    os.environ[rows_stream.EMULATOR_ENV] = fake.endpoint
    try:
        reader = rows_stream.RowReader(rows_stream.open_channel())
        client_reader = rows_stream.RowReader(rows_stream.open_channel())
        list(client_reader.stream(ClientRequest(TABLE, ReadRowsQuery(limit=1)), 5))  # its client
    finally:
        if before is None:
            del os.environ[rows_stream.EMULATOR_ENV]
        else:
            os.environ[rows_stream.EMULATOR_ENV] = before
    yield fake, reader, client_reader
    reader.close()
    client_reader.close()
    fake.server.stop(0)


_cell = st.builds(
    Cell,
    st.sampled_from(["f", "g"]),
    st.sampled_from([b"", b"q", b"r"]),
    st.binary(max_size=40),
    st.integers(0, 10**6).map(lambda ms: ms * 1000),
)


def _stored(cells: list[Cell]) -> tuple[Cell, ...]:
    """Cells in the order a server stores them: by family, qualifier, newest first; one
    version per timestamp."""
    unique = {(c.family, c.qualifier, c.timestamp_us): c for c in cells}
    return tuple(sorted(unique.values(), key=lambda c: (c.family, c.qualifier, -c.timestamp_us)))


_key = st.text("abcdefgh", min_size=1, max_size=2).map(str.encode)
_table = st.dictionaries(
    _key,
    st.tuples(st.lists(_cell, min_size=1, max_size=4).map(_stored), st.booleans() | st.just(True)),
    min_size=3,
    max_size=12,
).map(lambda rows: [(k, c, visible) for k, (c, visible) in sorted(rows.items())])
_bound = st.none() | _key
_queries = st.builds(ReadRowsQuery, limit=st.sampled_from([None, 2, 5])) | st.builds(
    lambda keys, ranges, limit: ReadRowsQuery(
        row_keys=keys or None,
        row_ranges=[RowRange(a, b) for a, b in ranges if not (a and b) or a < b] or None,
        limit=limit,
    ),
    st.lists(_key, max_size=3),
    st.lists(st.tuples(_bound, _bound), max_size=2),
    st.sampled_from([None, 1, 3]),
)
_calls = st.tuples(
    st.integers(1, 4),  # chunks per response
    st.integers(1, 16),  # value bytes per chunk
    st.integers(0, 2) | st.none(),  # responses before the fault (None: no fault)
    st.sampled_from(list(FAULTS.values())),
)


def _read(fake, reader, request, script):
    fake.requests.clear()
    fake.script = list(script)
    try:
        rows = list(reader.stream(request, 20))
    except api_exceptions.GoogleAPICallError as err:
        return ("error", type(err).__name__), [_semantic(r) for r in fake.requests]
    return rows, [_semantic(r) for r in fake.requests]


def _semantic(request) -> tuple:
    """What a ReadRows request asks for: its rows (keys, ranges) and limit."""
    return request.rows.SerializeToString(deterministic=True), request.rows_limit


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(table=_table, query=_queries, script=st.lists(_calls, min_size=1, max_size=3))
def test_merged_and_resumed_rows_are_the_data_clients(readers, table, query, script):
    fake, reader, client_reader = readers
    fake.rows = table
    ours, our_requests = _read(fake, reader, rows_stream.request_of(TABLE, query), script)
    theirs, their_requests = _read(fake, client_reader, ClientRequest(TABLE, query), script)
    assert ours == theirs
    assert our_requests == their_requests  # the same resumptions, request by request
    event(f"calls: {min(len(our_requests), 3)}, {'rows' if isinstance(ours, list) else 'error'}")
    if not query.row_keys and not query.row_ranges:  # the whole table: every visible row
        expected = [ReadRow(k, c) for k, c, visible in table if visible][: query.limit or None]
        assert ours == expected


@pytest.mark.parametrize("fault", ["unavailable", "rst_stream", "cancelled"])
def test_a_stream_cut_mid_value_resumes_after_the_last_row_for_both(readers, fault):
    fake, reader, client_reader = readers
    cells = (Cell("f", b"q", b"x" * 30, 5000),)
    fake.rows = [
        (b"a", cells, True),
        (b"b", cells, True),
        (b"c", cells, False),
        (b"d", cells, True),
    ]
    script = [(1, 7, 3, FAULTS[fault])]  # a, then b's first chunks, then cut
    query = ReadRowsQuery(limit=3)
    ours, our_requests = _read(fake, reader, rows_stream.request_of(TABLE, query), script)
    theirs, their_requests = _read(fake, client_reader, ClientRequest(TABLE, query), script)
    assert [r.key for r in ours] == [b"a", b"b", b"d"] and ours == theirs
    assert our_requests == their_requests and len(our_requests) == 2


def test_a_permanent_refusal_fails_both_without_a_retry(readers):
    fake, reader, client_reader = readers
    fake.rows = [(b"a", (Cell("f", b"q", b"v", 1000),), True)]
    script = [(1, 5, 0, PERMANENT)]
    ours = _read(fake, reader, rows_stream.request_of(TABLE, ReadRowsQuery()), script)
    theirs = _read(fake, client_reader, ClientRequest(TABLE, ReadRowsQuery()), script)
    assert ours == theirs == (("error", "PermissionDenied"), [ours[1][0]])


def test_the_switch_sends_reads_and_filtered_reads_to_the_data_client(monkeypatch):
    from google.cloud.bigtable.data import row_filters

    filtered = ReadRowsQuery(row_filter=row_filters.PassAllFilter(True))
    monkeypatch.delenv("BTTS_OFFICIAL", raising=False)
    assert type(rows_stream.request_of(TABLE, filtered)) is Request
    monkeypatch.setenv("BTTS_OFFICIAL", "filters")
    assert type(rows_stream.request_of(TABLE, filtered)) is ClientRequest
    assert type(rows_stream.request_of(TABLE, ReadRowsQuery())) is Request  # no filter: fork
    monkeypatch.setenv("BTTS_OFFICIAL", "read")
    query = ReadRowsQuery(limit=2)
    assert rows_stream.request_of(TABLE, query, "profile") == ClientRequest(TABLE, query, "profile")
