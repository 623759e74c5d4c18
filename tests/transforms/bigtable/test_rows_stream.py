"""ReadRows straight from gRPC (transforms.bigtable.rows_stream): the chunk-merge rules on
vectors written here, resuming after transient errors, and rows equal to the data client's
``read_rows`` on the emulator."""

from __future__ import annotations

import datetime

import grpc
import pytest
from google.cloud.bigtable.data import BigtableDataClient, ReadRowsQuery, RowRange, row_filters
from google.cloud.bigtable.data.exceptions import InvalidChunk
from google.cloud.bigtable.data.mutations import RowMutationEntry, SetCell
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transforms.bigtable import rows_stream
from transforms.bigtable.rows_stream import MergeState, Response, merge_chunks, resume_request
from transforms.mutations import Cell, ReadRow


def chunk(key=b"", family=None, qualifier=None, ts=0, value=b"", size=0, commit=False, reset=False):
    out = Response.CellChunk(
        row_key=key,
        timestamp_micros=ts,
        value=value,
        value_size=size,
    )
    if commit:  # one of a oneof: set only the one that holds
        out.commit_row = True
    if reset:
        out.reset_row = True
    if family is not None:
        out.family_name.value = family
    if qualifier is not None:
        out.qualifier.value = qualifier
    return out


def response(*chunks, scanned=b""):
    return Response(chunks=list(chunks), last_scanned_row_key=scanned)


def merged(*responses, state=None):
    return list(merge_chunks(responses, state))


# -- the merge rules --------------------------------------------------------------------------


def test_rows_commit_one_after_another_and_bytes_responses_parse():
    first = response(chunk(b"a", "f", b"q", 10, b"v1", commit=True))
    second = response(chunk(b"b", "f", b"q", 20, b"v2", commit=True)).SerializeToString()
    state = MergeState()
    assert merged(first, second, state=state) == [
        ReadRow(b"a", (Cell("f", b"q", b"v1", 10),)),
        ReadRow(b"b", (Cell("f", b"q", b"v2", 20),)),
    ]
    assert (state.last_key, state.rows) == (b"b", 2)


def test_family_and_qualifier_carry_over_and_an_empty_qualifier_is_one():
    rows = merged(
        response(
            chunk(b"r", "f", b"q1", 3, b"x"),
            chunk(ts=2, value=b"older"),  # same column, another version
            chunk(qualifier=b"q2", ts=1, value=b"y"),  # same family
            chunk(family="g", qualifier=b"", ts=7, value=b"z", commit=True),
        )
    )
    assert rows == [
        ReadRow(
            b"r",
            (
                Cell("f", b"q1", b"x", 3),
                Cell("f", b"q1", b"older", 2),
                Cell("f", b"q2", b"y", 1),
                Cell("g", b"", b"z", 7),
            ),
        )
    ]


def test_a_value_split_across_chunks_and_responses_is_joined():
    rows = merged(
        response(chunk(b"r", "f", b"q", 5, b"ab", size=6)),
        response(chunk(value=b"cd", size=6), chunk(value=b"ef")),
        response(chunk(qualifier=b"n", ts=5, value=b"1", commit=True)),
    )
    assert rows == [ReadRow(b"r", (Cell("f", b"q", b"abcdef", 5), Cell("f", b"n", b"1", 5)))]


def test_a_reset_drops_the_row_in_progress_even_inside_a_split_value():
    rows = merged(
        response(chunk(b"r", "f", b"q", 1, b"partial"), chunk(reset=True)),
        response(chunk(b"r", "f", b"q", 1, b"ab", size=4), chunk(reset=True)),
        response(chunk(b"r", "f", b"q", 2, b"whole", commit=True)),
    )
    assert rows == [ReadRow(b"r", (Cell("f", b"q", b"whole", 2),))]


def test_last_scanned_key_moves_the_resume_point_between_rows():
    state = MergeState()
    rows = merged(
        response(chunk(b"a", "f", b"q", 1, b"v", commit=True)),
        response(scanned=b"m"),
        state=state,
    )
    assert len(rows) == 1 and (state.last_key, state.rows) == (b"m", 1)
    with pytest.raises(InvalidChunk, match="row key"):  # a row must come after it
        merged(response(chunk(b"c", "f", b"q", commit=True)), state=state)


@pytest.mark.parametrize(
    ("responses", "why"),
    [
        (
            [response(chunk(b"b", "f", b"q", commit=True), chunk(b"a", "f", b"q", commit=True))],
            "after",
        ),
        (
            [response(chunk(b"a", "f", b"q", commit=True), chunk(b"a", "f", b"q", commit=True))],
            "after",
        ),
        ([response(chunk(b"a", "f", None, commit=True))], "family and qualifier"),
        ([response(chunk(b"", "f", b"q", commit=True))], "without a row key"),
        ([response(chunk(b"a", "f", b"q"), chunk(family="g", commit=True))], "without a qualifier"),
        ([response(chunk(b"a", "f", b"q"))], "ended inside row"),
        ([response(chunk(b"a", "f", b"q", size=3, value=b"x"))], "ended inside a cell"),
        ([response(chunk(b"a", "f", b"q"), chunk(b"b", "f", b"q", commit=True))], "not committed"),
        ([response(chunk(b"a", "f", b"q"), chunk(value=b"x", reset=True))], "reset_row"),
        ([response(chunk(b"a", "f", b"q", size=2, commit=True))], "split cell"),
        ([response(chunk(b"a", "f", b"q", size=2), chunk(ts=9, value=b"x"))], "mid value"),
        ([response(chunk(reset=True))], "without a row key"),
        (
            [response(chunk(b"a", "f", b"q", size=4, value=b"x"), chunk(size=4, commit=True))],
            "split cell",
        ),
        (
            [response(chunk(b"b", "f", b"q", commit=True)), response(scanned=b"a")],
            "backwards",
        ),
        ([response(chunk(b"a", "f", b"q"), scanned=b"z")], "inside a row"),
    ],
)
def test_a_stream_breaking_the_rules_is_refused(responses, why):
    with pytest.raises(InvalidChunk, match=why):
        merged(*responses)


# -- resuming ---------------------------------------------------------------------------------


def request(ranges=(), keys=(), limit=0):
    query = ReadRowsQuery(
        row_keys=list(keys) or None,
        row_ranges=[RowRange(start_key=a or None, end_key=b or None) for a, b in ranges] or None,
        limit=limit or None,
    )
    return rows_stream.request_of("projects/p/instances/i/tables/t", query)


def spans(req):
    return [
        (r.WhichOneof("start_key"), r.start_key_closed or r.start_key_open, r.end_key_open)
        for r in req.rows.row_ranges
    ]


def test_a_resume_reads_only_what_comes_after_the_last_key():
    state = MergeState()
    state.last_key, state.rows = b"c5", 3
    req = request([(b"a", b"b"), (b"c", b"d"), (b"e", b"")], keys=[b"a1", b"c5", b"c6"], limit=10)
    out = resume_request(req, state)
    assert spans(out) == [("start_key_open", b"c5", b"d"), ("start_key_closed", b"e", b"")]
    assert list(out.rows.row_keys) == [b"c6"] and out.rows_limit == 7
    assert out.filter == req.filter and out.table_name == req.table_name
    state.rows = 10
    assert resume_request(req, state) is None  # the limit is reached
    state.rows, state.last_key = 0, b"z"
    assert resume_request(request([(b"a", b"b")], keys=[b"a"]), state) is None
    whole = resume_request(request(), state)
    assert spans(whole) == [("start_key_open", b"z", b"")]


class Unavailable(grpc.RpcError):
    def code(self):
        return grpc.StatusCode.UNAVAILABLE

    def details(self):
        return "the stream broke"

    def trailing_metadata(self):
        return ()


class FakeChannel:
    """Answers each call from a script: a list of responses, then maybe an error."""

    def __init__(self, script):
        self.script, self.requests = list(script), []

    def unary_stream(self, method, request_serializer=None, response_deserializer=None):
        def call(data, timeout=None, metadata=None):
            self.requests.append(rows_stream.Request.FromString(data))
            responses, error = self.script.pop(0)
            yield from (r.SerializeToString() for r in responses)
            if error is not None:
                raise error

        return call


def test_a_broken_stream_resumes_after_the_last_committed_row_without_repeating_it():
    channel = FakeChannel(
        [
            (
                [
                    response(chunk(b"a", "f", b"q", 1, b"1", commit=True)),
                    response(chunk(b"b", "f", b"q", 1, b"half")),
                ],
                Unavailable(),
            ),
            ([response(chunk(b"b", "f", b"q", 1, b"2", commit=True))], None),
        ]
    )
    reader = rows_stream.RowReader(channel)
    rows = reader.read("t", ReadRowsQuery(row_ranges=[RowRange(b"a", b"z")], limit=5), 10)
    assert [(r.key, r.cells[0].value) for r in rows] == [(b"a", b"1"), (b"b", b"2")]
    second = channel.requests[1]
    assert spans(second) == [("start_key_open", b"a", b"z")] and second.rows_limit == 4


def test_a_permanent_error_is_not_retried():
    class Denied(Unavailable):
        def code(self):
            return grpc.StatusCode.PERMISSION_DENIED

    channel = FakeChannel([([], Denied()), ([], None)])
    with pytest.raises(Exception, match="stream broke") as err:
        rows_stream.RowReader(channel).read("t", ReadRowsQuery(), 10)
    assert err.type.__name__ == "PermissionDenied" and len(channel.requests) == 1


# -- the same rows as the data client, on the emulator ----------------------------------------


@pytest.fixture(scope="module")
def filled(bigtable_emulator):
    """A table of binary keys, two families, several versions and an empty qualifier."""
    import uuid

    from btts import admin
    from btts.config import Target
    from transforms.table_model import Family, KeyRecipe, Segment, TableDecl

    target = Target("test-project", f"t{uuid.uuid4().hex[:12]}")
    decl = TableDecl(
        "STREAM", (Family("f"), Family("g")), KeyRecipe((Segment("text", "k"),)), "TS-COLS"
    )
    with admin.Admin(target) as api:
        api.ensure(decl)
    client = BigtableDataClient(project=target.project)
    table = client.get_table(target.instance, "STREAM")
    entries = []
    for i in range(60):
        key = bytes([i * 4 % 256]) + b"#%03d" % i
        cells = [SetCell("f", b"q%d" % (i % 3), b"v%d" % i, ts * 1000) for ts in (1, 2, 3)]
        cells += [SetCell("g", b"", b"x" * (i * 50), 5000)] if i % 4 else []
        entries.append(RowMutationEntry(key, cells))
    table.bulk_mutate_rows(entries)
    yield target, client, table
    client.close()


key_bound = st.binary(min_size=0, max_size=3)
FILTERS = [
    None,
    row_filters.CellsColumnLimitFilter(1),
    row_filters.FamilyNameRegexFilter("g"),
    row_filters.RowFilterChain(
        filters=[row_filters.ColumnQualifierRegexFilter(b"q1"), row_filters.CellsRowLimitFilter(2)]
    ),
]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    bounds=st.lists(st.tuples(key_bound, key_bound), max_size=4),
    keys=st.lists(st.binary(min_size=1, max_size=5), max_size=3),
    which=st.integers(0, len(FILTERS) - 1),
    limit=st.sampled_from([None, 1, 7]),
)
def test_rows_equal_the_data_clients_read_rows(filled, bounds, keys, which, limit):
    _target, _client, table = filled
    ranges = [RowRange(start_key=a or None, end_key=b or None) for a, b in bounds if not b or a < b]
    query = ReadRowsQuery(
        row_keys=keys or None, row_ranges=ranges or None, limit=limit, row_filter=FILTERS[which]
    )
    expected = [ReadRow.of(r) for r in table.read_rows(query)]
    reader = rows_stream.shared_reader()
    assert reader.read(table.table_name, query, 30) == expected


@settings(max_examples=60, deadline=None)
@given(
    bounds=st.lists(st.tuples(key_bound, key_bound), max_size=4),
    which=st.integers(0, len(FILTERS) - 1),
    limit=st.sampled_from([None, 1, 7]),
)
def test_a_span_query_is_the_request_of_the_data_clients_query(bounds, which, limit):
    """Many ranges go straight into the request (SpanQuery): the same bytes as the data
    client's query of the same ranges, filter and limit."""
    spans = [(a, b) for a, b in bounds if not (a and b) or a < b]
    fast = rows_stream.SpanQuery(spans, FILTERS[which], limit)
    name = "projects/p/instances/i/tables/t"
    want = rows_stream.request_of(name, fast.query())
    got = rows_stream.request_of(name, fast)
    assert got.SerializeToString() == want.SerializeToString()


def in_f(row_filter):
    return row_filters.RowFilterChain(filters=[row_filters.FamilyNameRegexFilter("f"), row_filter])


EPOCH = datetime.datetime(1970, 1, 1)
MS = datetime.timedelta(milliseconds=1)
EVERY_FILTER = {  # one of each class (the cells: versions at 1, 2, 3 ms in f, 5 ms in g)
    "sink": row_filters.RowFilterChain(
        filters=[row_filters.FamilyNameRegexFilter("g"), row_filters.SinkFilter(True)]
    ),
    "pass_all": row_filters.PassAllFilter(True),
    "block_all": row_filters.BlockAllFilter(True),
    "strip_value": row_filters.StripValueTransformerFilter(True),
    "row_key_regex": row_filters.RowKeyRegexFilter(b"\\C#0[0-2]\\d"),
    "family_regex": row_filters.FamilyNameRegexFilter("f"),
    "qualifier_regex": row_filters.ColumnQualifierRegexFilter("q[12]"),
    "value_regex": row_filters.ValueRegexFilter("v1.*"),
    "literal_value": row_filters.LiteralValueFilter("v7"),
    "sample": row_filters.RowSampleFilter(1e-12),  # nothing, with any likelihood
    # within one family: the emulator counts a row's families in a random order
    "row_offset": in_f(row_filters.CellsRowOffsetFilter(2)),
    "row_limit": in_f(row_filters.CellsRowLimitFilter(2)),
    "column_limit": row_filters.CellsColumnLimitFilter(2),
    "label": row_filters.ApplyLabelFilter("seen"),
    "timestamps": row_filters.TimestampRangeFilter(EPOCH + 1.5 * MS, EPOCH + 2.2 * MS),
    "timestamps_from": row_filters.TimestampRangeFilter(start=EPOCH + 2 * MS),
    "column_range": row_filters.ColumnRangeFilter("f", b"q0", b"q1", inclusive_end=False),
    "column_range_open": row_filters.ColumnRangeFilter("f", start_qualifier="q0"),
    "value_range": row_filters.ValueRangeFilter(b"v2", b"v3", inclusive_start=False),
    "value_bitmask": row_filters.ValueBitmaskFilter(b"v1"),
    "union": row_filters.RowFilterUnion(
        filters=[
            row_filters.ColumnQualifierRegexFilter(b"q0"),
            row_filters.RowFilterChain(
                filters=[
                    row_filters.FamilyNameRegexFilter("g"),
                    row_filters.StripValueTransformerFilter(True),
                ]
            ),
        ]
    ),
    "empty_chain": row_filters.RowFilterChain(),
    "condition": row_filters.ConditionalRowFilter(
        row_filters.FamilyNameRegexFilter("g"),
        true_filter=row_filters.CellsColumnLimitFilter(1),
        false_filter=row_filters.RowFilterChain(
            filters=[
                row_filters.ColumnQualifierRegexFilter(b"q1"),
                row_filters.CellsRowLimitFilter(1),
            ]
        ),
    ),
    "condition_true_only": row_filters.ConditionalRowFilter(
        row_filters.ValueRegexFilter(b"v.*5"), true_filter=row_filters.PassAllFilter(True)
    ),
}


@pytest.mark.parametrize("name", EVERY_FILTER)
def test_every_filter_class_selects_the_rows_the_data_client_reads(filled, name):
    _target, _client, table = filled
    query = ReadRowsQuery(row_filter=EVERY_FILTER[name])
    expected = [ReadRow.of(r) for r in table.read_rows(query)]
    assert rows_stream.shared_reader().read(table.table_name, query, 30) == expected


def test_a_missing_table_is_not_found(filled):
    from google.api_core import exceptions

    target, _client, _table = filled
    name = f"projects/{target.project}/instances/{target.instance}/tables/NOPE"
    with pytest.raises(exceptions.NotFound):
        rows_stream.shared_reader().read(name, ReadRowsQuery(), 10)


@pytest.mark.parametrize("families", [["f"], ["g"], ["f", "g"]])
@pytest.mark.parametrize("qualifier", [b"q1", b"", b"q"])
def test_one_column_selects_what_a_literal_qualifier_regex_does(filled, families, qualifier):
    from transforms.bigtable import filters

    _target, _client, table = filled
    regex = row_filters.RowFilterChain(
        filters=[
            row_filters.FamilyNameRegexFilter("|".join(families)),
            row_filters.ColumnQualifierRegexFilter(filters.re2_literal(qualifier)),
        ]
    )
    expected = [ReadRow.of(r) for r in table.read_rows(ReadRowsQuery(row_filter=regex))]
    query = ReadRowsQuery(row_filter=filters.one_column(families, qualifier))
    got = rows_stream.shared_reader().read(table.table_name, query, 30)
    holds = (qualifier == b"q1" and "f" in families) or (qualifier == b"" and "g" in families)
    assert got == expected and bool(expected) == holds


def test_without_the_emulator_the_channel_goes_to_the_endpoint_with_default_credentials(
    monkeypatch,
):
    import google.auth
    from google.auth.credentials import AnonymousCredentials

    asked = []
    monkeypatch.delenv(rows_stream.EMULATOR_ENV, raising=False)

    def default(**kwargs):
        asked.append(kwargs)
        return AnonymousCredentials(), "p"

    monkeypatch.setattr(google.auth, "default", default)
    channel = rows_stream.open_channel("bigtable.example.com")
    try:
        assert isinstance(channel, grpc.Channel) and asked
        assert "https://www.googleapis.com/auth/bigtable.data" in asked[0]["default_scopes"]
    finally:
        channel.close()


class ResetStream(Unavailable):
    def code(self):
        return grpc.StatusCode.INTERNAL

    def details(self):
        return "Received RST_STREAM with error code 2"


def test_a_reset_stream_resumes_after_the_last_key_the_server_scanned():
    channel = FakeChannel(
        [
            (
                [response(chunk(b"a", "f", b"q", 1, b"1", commit=True)), response(scanned=b"k")],
                ResetStream(),
            ),
            ([response(chunk(b"m", "f", b"q", 1, b"2", commit=True))], None),
        ]
    )
    rows = rows_stream.RowReader(channel).read(
        "t", ReadRowsQuery(row_ranges=[RowRange(b"a", b"z")]), 10
    )
    assert [r.key for r in rows] == [b"a", b"m"]
    assert spans(channel.requests[1]) == [("start_key_open", b"k", b"z")]
