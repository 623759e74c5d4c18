"""Row filters as raw protobufs (transforms.bigtable.filter_proto): for any filter, nested or
not, the ``RowFilter`` built from its public attributes is the one the data client's own
``read_rows`` sends, caught on the wire by an in-process ReadRows server."""

from __future__ import annotations

import datetime as dt

import pytest
from google.cloud.bigtable.data import ReadRowsQuery
from google.cloud.bigtable.data import row_filters as rf
from hypothesis import HealthCheck, given, settings

from tests.support.row_filters import FILTERS
from transforms.bigtable import rows_stream
from transforms.bigtable.filter_proto import filter_pb, micros_of

TABLE = "projects/p/instances/i/tables/t"


@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(row_filter=FILTERS)
def test_the_filter_is_the_one_the_data_client_sends(sent, row_filter):
    theirs = sent(row_filter)
    ours = rows_stream.request_of(TABLE, ReadRowsQuery(row_filter=row_filter))
    assert ours.HasField("filter") == theirs.HasField("filter")
    assert ours.filter.SerializeToString() == theirs.filter.SerializeToString()
    if theirs.HasField("filter"):
        assert filter_pb(row_filter) == theirs.filter
    else:  # the data client leaves out a filter that is false: an empty chain or union
        assert isinstance(row_filter, rf.RowFilterChain | rf.RowFilterUnion)
        assert not row_filter.filters


@pytest.mark.parametrize(
    ("start", "end", "micros"),
    [
        (
            dt.datetime(1970, 1, 1, 0, 0, 0, 1500),
            dt.datetime(1970, 1, 1, 0, 0, 0, 3001),
            (1000, 4000),
        ),
        (dt.datetime(1970, 1, 1, 0, 0, 1), dt.datetime(1970, 1, 1, 0, 0, 2), (10**6, 2 * 10**6)),
    ],
)
def test_a_timestamp_range_goes_out_in_whole_milliseconds(sent, start, end, micros):
    row_filter = rf.TimestampRangeFilter(start, end)
    span = filter_pb(row_filter).timestamp_range_filter
    assert (span.start_timestamp_micros, span.end_timestamp_micros) == micros
    assert filter_pb(row_filter) == sent(row_filter).filter


def test_a_naive_datetime_is_utc():
    aware = dt.datetime(2024, 3, 1, 12, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert micros_of(aware) == micros_of(dt.datetime(2024, 3, 1, 10)) == 1709287200 * 10**6


def test_no_filter_is_none_and_an_unknown_one_is_refused_by_name():
    class HomeMadeFilter:
        pass

    assert filter_pb(None) is None
    with pytest.raises(TypeError, match="HomeMadeFilter"):
        filter_pb(HomeMadeFilter())
    with pytest.raises(TypeError, match="HomeMadeFilter"):
        filter_pb(rf.RowFilterChain(filters=[rf.PassAllFilter(True), HomeMadeFilter()]))
    with pytest.raises(TypeError, match="could not be converted to bytes"):
        filter_pb(rf.ColumnRangeFilter("f", start_qualifier=3))
