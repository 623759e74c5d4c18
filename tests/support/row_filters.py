"""Row filters for the tests of their hand-made protobufs: any filter the data client can
express (hypothesis strategies, nested to any depth), and the request the data client itself
sends for one, caught on the wire by an in-process ReadRows server."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import threading
from concurrent import futures

import grpc
from google.cloud.bigtable.data import BigtableDataClient, ReadRowsQuery
from google.cloud.bigtable.data import row_filters as rf
from hypothesis import strategies as st

from transforms.bigtable import rows_stream

EMULATOR_ENV = rows_stream.EMULATOR_ENV


class CaptureReadRows:
    """A gRPC server answering every ReadRows with no rows, keeping the requests it got."""

    def __init__(self) -> None:
        self.requests: list = []
        self.lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        handler = grpc.method_handlers_generic_handler(
            "google.bigtable.v2.Bigtable",
            {
                "ReadRows": grpc.unary_stream_rpc_method_handler(
                    self.read_rows,
                    request_deserializer=rows_stream.Request.FromString,
                    response_serializer=lambda r: r,
                )
            },
        )
        self.server.add_generic_rpc_handlers((handler,))
        self.port = self.server.add_insecure_port("127.0.0.1:0")

    def read_rows(self, request, context):
        with self.lock:
            self.requests.append(request)
        return iter(())


@contextlib.contextmanager
def data_client_sender():
    """``send(filter)``: the ReadRows request the data client sends for a query with it, caught
    by an in-process server."""
    capture = CaptureReadRows()
    capture.server.start()
    before = os.environ.get(EMULATOR_ENV)
    os.environ[EMULATOR_ENV] = f"127.0.0.1:{capture.port}"
    try:
        client = BigtableDataClient(project="p")
        table = client.get_table("i", "t")
    finally:  # the data client read the setting; the emulator's tests need theirs back
        if before is None:
            del os.environ[EMULATOR_ENV]
        else:
            os.environ[EMULATOR_ENV] = before

    def send(row_filter):
        capture.requests.clear()
        assert table.read_rows(ReadRowsQuery(row_filter=row_filter)) == []
        (request,) = capture.requests
        return request

    try:
        yield send
    finally:
        client.close()
        capture.server.stop(0)


ascii_text = st.text(st.characters(max_codepoint=127), max_size=6)
text_or_bytes = st.one_of(ascii_text, st.binary(max_size=6))
flag = st.booleans()
count = st.integers(0, 2**31 - 1)
moments = st.datetimes(
    min_value=dt.datetime(1950, 1, 1),
    max_value=dt.datetime(2200, 1, 1),
    timezones=st.sampled_from([None, dt.timezone.utc, dt.timezone(dt.timedelta(hours=-5))]),
)


@st.composite
def ranged(draw, build, bound):
    """A column or value range: each bound maybe, its inclusive flag maybe (only with it)."""
    start, end = draw(st.none() | bound), draw(st.none() | bound)
    inclusive_start = None if start is None else draw(st.none() | flag)
    inclusive_end = None if end is None else draw(st.none() | flag)
    return build(start, end, inclusive_start, inclusive_end)


LEAVES = st.one_of(
    st.builds(rf.SinkFilter, flag),
    st.builds(rf.PassAllFilter, flag),
    st.builds(rf.BlockAllFilter, flag),
    st.builds(rf.StripValueTransformerFilter, flag),
    st.builds(rf.RowKeyRegexFilter, text_or_bytes),
    st.builds(rf.FamilyNameRegexFilter, ascii_text),
    st.builds(rf.ColumnQualifierRegexFilter, text_or_bytes),
    st.builds(rf.ValueRegexFilter, text_or_bytes),
    st.builds(rf.LiteralValueFilter, st.one_of(st.text(max_size=4), st.binary(max_size=4))),
    st.builds(rf.LiteralValueFilter, st.integers(-(2**63), 2**63 - 1)),
    st.builds(rf.RowSampleFilter, st.floats(0, 1, exclude_min=True, exclude_max=True)),
    st.builds(rf.CellsRowOffsetFilter, count),
    st.builds(rf.CellsRowLimitFilter, count),
    st.builds(rf.CellsColumnLimitFilter, count),
    st.builds(rf.ApplyLabelFilter, st.text(max_size=15)),
    st.builds(rf.TimestampRangeFilter, st.none() | moments, st.none() | moments),
    st.builds(rf.ValueBitmaskFilter, text_or_bytes),
    ranged(
        lambda *a: rf.ColumnRangeFilter("fam", *a),
        text_or_bytes,
    ),
    ranged(rf.ValueRangeFilter, st.one_of(st.binary(max_size=4), st.integers(-(2**63), 2**63 - 1))),
)


def combined(children):
    maybe = st.none() | children
    return st.one_of(
        st.builds(rf.RowFilterChain, st.lists(children, max_size=3)),
        st.builds(rf.RowFilterUnion, st.lists(children, max_size=3)),
        st.builds(rf.ConditionalRowFilter, children, maybe, maybe),
    )


FILTERS = st.recursive(LEAVES, combined, max_leaves=6)
