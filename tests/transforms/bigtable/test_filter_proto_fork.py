"""Row filters to protobuf by hand (transforms/bigtable/filter_proto.py) against the data client's
own serialization, caught on the wire (the capture of tests/support/row_filters.py), extended:
deeper trees, any text (non-ASCII regexes, qualifiers and labels), values of the wrong type.
Either both refuse a filter or both send the same bytes; ``BTTS_OFFICIAL=filters`` sends a
filtered read through the data client itself
(tests/transforms/bigtable/test_rows_stream_fork.py)."""

from __future__ import annotations

import datetime as dt
import struct

import pytest
from google.cloud.bigtable.data import ReadRowsQuery
from google.cloud.bigtable.data import row_filters as rf
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.support.row_filters import FILTERS
from transforms.bigtable.filter_proto import filter_pb

_any_text = st.text(max_size=5)  # any code point: the library encodes text as ASCII
_odd = st.sampled_from([3, 2.5, None, ["x"], b"\xff\xfe"])
_texty = st.one_of(_any_text, _any_text, st.binary(max_size=4), _odd)


def _built(cls, *args):
    """The filter, or None when its own constructor refuses the arguments."""
    try:
        return cls(*args)
    except (TypeError, ValueError, UnicodeError, AttributeError, struct.error):
        return None


LEAVES = st.one_of(
    st.builds(_built, st.just(rf.RowKeyRegexFilter), _texty),
    st.builds(_built, st.just(rf.FamilyNameRegexFilter), _texty),
    st.builds(_built, st.just(rf.ColumnQualifierRegexFilter), _texty),
    st.builds(_built, st.just(rf.ValueRegexFilter), _texty),
    st.builds(_built, st.just(rf.LiteralValueFilter), _texty | st.integers()),
    st.builds(_built, st.just(rf.ApplyLabelFilter), _any_text),
    st.builds(_built, st.just(rf.ValueBitmaskFilter), _texty),
    st.builds(_built, st.just(rf.CellsColumnLimitFilter), st.integers(0, 2**31 - 1)),
    st.builds(
        _built,
        st.just(rf.TimestampRangeFilter),
        st.none() | st.datetimes(dt.datetime(1970, 1, 2), dt.datetime(2100, 1, 1)),
    ),
    st.builds(
        lambda *a: _built(rf.ColumnRangeFilter, "fam", *a),
        _texty,
        _texty,
        st.none() | st.booleans(),
        st.none() | st.booleans(),
    ),
    st.builds(lambda *a: _built(rf.ValueRangeFilter, *a), _texty, _texty),
).filter(lambda f: f is not None)


def _combined(children):
    return st.one_of(
        st.builds(rf.RowFilterChain, st.lists(children, max_size=4)),
        st.builds(rf.RowFilterUnion, st.lists(children, max_size=4)),
        st.builds(rf.ConditionalRowFilter, children, st.none() | children, st.none() | children),
    )


DEEP = st.recursive(LEAVES | FILTERS, _combined, max_leaves=12)


def _ours(row_filter):
    try:
        return filter_pb(row_filter).SerializeToString()
    except (TypeError, ValueError, UnicodeError, AttributeError):
        return "refused"


def _theirs(sent, row_filter):
    try:
        request = sent(row_filter)
    except (TypeError, ValueError, UnicodeError, AttributeError):
        return "refused"
    return request.filter.SerializeToString() if request.HasField("filter") else None


@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(row_filter=DEEP)
def test_any_filter_is_refused_by_both_or_sent_as_the_data_client_sends_it(sent, row_filter):
    theirs = _theirs(sent, row_filter)
    ours = _ours(row_filter)
    event("refused" if theirs == "refused" else "sent")
    if theirs is None:  # an empty chain or union: the data client sends no filter
        assert isinstance(row_filter, rf.RowFilterChain | rf.RowFilterUnion)
        assert not row_filter.filters
        return
    assert ours == theirs


def test_a_request_carries_the_filter_the_data_client_sends(sent):
    from transforms.bigtable import rows_stream

    row_filter = rf.RowFilterChain(
        filters=[rf.FamilyNameRegexFilter("f"), rf.ColumnQualifierRegexFilter("é".encode())]
    )
    theirs = sent(row_filter)
    ours = rows_stream.request_of(theirs.table_name, ReadRowsQuery(row_filter=row_filter))
    assert ours.filter == theirs.filter
