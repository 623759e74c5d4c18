"""The hand-written MutateRows encoding must be the client's, byte for byte, for any row."""

from __future__ import annotations

import pytest
from google.cloud.bigtable_v2.types import bigtable as bigtable_types
from google.cloud.bigtable_v2.types import data as data_types
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import data
from transforms import schema as schema_lib
from transforms.builder import builder as generic
from transforms.builder import wire
from transforms.mutations import Cell
from transforms.text import events

_Entry = bigtable_types.MutateRowsRequest.Entry.pb()
_Request = bigtable_types.MutateRowsRequest.pb()


def _protobufs(row) -> bytes:
    """The same row through the protobuf runtime the client uses."""
    _table, key, cells = row
    entry = _Entry(row_key=key)
    for family, qualifier, value, ts in cells:
        set_cell = entry.mutations.add().set_cell
        set_cell.SetInParent()
        set_cell.family_name = family
        set_cell.column_qualifier = qualifier
        set_cell.value = value
        set_cell.timestamp_micros = ts
    return entry.SerializeToString()


_lengths = st.sampled_from([0, 1, 2, 100, 120, 127, 128, 200, 16_383, 16_384])
_bytes = st.binary(max_size=300) | _lengths.map(lambda n: b"v" * n)
_timestamps = st.integers(-(2**63), 2**63 - 1) | st.sampled_from(
    [0, -1, 1, 127, 128, 1426535612045000]
)
_cell = st.tuples(
    st.text(max_size=20) | st.sampled_from(["METRIC", "", "é" * 70]), _bytes, _bytes, _timestamps
)


@settings(max_examples=400, deadline=None)
@given(key=_bytes, cells=st.lists(_cell, max_size=6), shared_ts=st.booleans())
def test_any_row_encodes_as_the_protobuf_runtime_does(key, cells, shared_ts):
    if shared_ts and cells:  # the usual row: every cell at the event's time
        cells = [(f, q, v, cells[0][3]) for f, q, v, _ in cells]
    row = ("T", key, tuple(cells))
    assert wire.entry(row) == _protobufs(row)


@pytest.mark.parametrize(
    ("schema", "make"),
    [("server_metrics", data.metrics), ("smart_meters", data.meters), ("market_data", data.market)],
)
def test_benchmark_rows_encode_as_the_protobuf_runtime_does(schema, make, tmp_path):
    make(tmp_path / "in.jsonl", 300)
    builder = generic.Builder(schema_lib.builtin(schema))
    rows = [
        row
        for line in (tmp_path / "in.jsonl").read_bytes().splitlines()
        for row in builder.rows(events.parse_json_object(line))
    ]
    assert len(rows) >= 300
    for row in rows:
        assert wire.entry(row) == _protobufs(row)


def test_a_request_parses_back_to_its_table_and_entries():
    rows = [("T", b"k%d" % i, (Cell("f", b"q", b"v%d" % i, 1000 + i),)) for i in range(3)]
    head = wire.request_head("projects/p/instances/i/tables/T")
    raw = _Request.FromString(head + b"".join(wire.framed(wire.entry(r)) for r in rows))
    assert raw.table_name == "projects/p/instances/i/tables/T"
    assert [e.row_key for e in raw.entries] == [b"k0", b"k1", b"k2"]
    assert [e.mutations[0].set_cell.value for e in raw.entries] == [b"v0", b"v1", b"v2"]


@pytest.mark.parametrize("n", [1, 127, 128, 300, 2**32, 2**63 - 1, -1, -(2**63)])
def test_varint_is_protobufs(n):
    encoded = data_types.Mutation.SetCell.pb()(timestamp_micros=n).SerializeToString()
    assert b"\x18" + wire.varint(n) == encoded


def test_wrong_types_are_refused_as_the_client_would():
    with pytest.raises(TypeError):
        wire.entry(("T", b"k", ((b"family", b"q", b"v", 1),)))
    with pytest.raises(TypeError):
        wire.entry(("T", b"k", (("f", "text qualifier", b"v", 1),)))
    with pytest.raises(TypeError):
        wire.entry(("T", b"k", (("f", b"q", "text value", 1),)))


_HOSTILE = ["METRIC", "", "x'); import os #", '"""', "\\", "\n", "é" * 60, "{0}", "%b%s"]


@settings(max_examples=300, deadline=None)
@given(
    family=st.sampled_from(_HOSTILE) | st.text(max_size=12),
    qualifiers=st.lists(_bytes, min_size=1, max_size=4),
    key=_bytes,
    values=st.lists(_bytes, min_size=4, max_size=4),
    ts=_timestamps,
    other_ts=st.booleans(),
)
def test_the_generated_encoder_writes_what_entry_writes(
    family, qualifiers, key, values, ts, other_ts
):
    encoder = wire.EntryEncoder()
    cells = [(family, q, v, ts) for q, v in zip(qualifiers, values[: len(qualifiers)], strict=True)]
    if other_ts:
        cells[-1] = (*cells[-1][:3], ts + 1 if ts < 2**63 - 1 else 0)
    for row in [("T", b"k", tuple(cells)), ("T", key, tuple(cells))]:  # learn, then use
        assert encoder(row) == wire.framed(wire.entry(row)) == wire.framed(_protobufs(row))


def test_generated_encoders_hold_schema_names_as_constants_only():
    import ast

    hostile = ("x'); import os #", b'q"""\n')
    encode = wire.generate([hostile])
    assert encode is not None
    source = encode.source
    literals = {
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
    }
    assert literals == set()  # every name, and the format itself, is a bound constant
    assert "import os" not in source
    row = ("T", b"k", ((*hostile, b"v", 5),))
    assert encode(row) == wire.framed(_protobufs(row))


def test_rows_of_unknown_layouts_still_encode_and_stop_the_generated_path():
    encoder = wire.EntryEncoder(max_layouts=2)
    rows = [("T", b"k%d" % i, ((f"f{i}", b"q", b"v", 7),)) for i in range(1100)]
    for row in rows:
        assert encoder(row) == wire.framed(_protobufs(row))
    assert encoder._fast == []  # past 1000 misses: every row takes entry()


def test_qualifiers_that_change_from_row_to_row_keep_the_generated_path():
    # a meter's readings: one fixed column and one named by the time of day
    encoder = wire.EntryEncoder(max_layouts=2)
    rows = [
        ("T", b"m%d" % i, (("M", b"ID", b"7", 9), ("M", b"%04d" % (i % 96), b"1.5", 9)))
        for i in range(2000)
    ]
    for row in rows:
        assert encoder(row) == wire.framed(_protobufs(row))
    assert encoder._misses <= 3  # two layouts learnt as they are, then one for any qualifier
    assert [layout for layout, _ in encoder._fast] == [(("M", None), ("M", None))]


@settings(max_examples=200, deadline=None)
@given(
    family=st.text(min_size=1, max_size=8),
    qualifiers=st.lists(_bytes, min_size=1, max_size=3),
    key=_bytes,
    value=_bytes,
    ts=_timestamps,
)
def test_an_encoder_for_any_qualifier_writes_what_entry_writes(family, qualifiers, key, value, ts):
    encode = wire.generate([(family, None)] * len(qualifiers))
    row = ("T", key, tuple((family, q, value, ts) for q in qualifiers))
    out = encode(row)
    assert out is None or out == wire.framed(_protobufs(row))
    short = (
        0 < len(key) <= 50 and 0 < len(value) <= 30 and all(0 < len(q) <= 30 for q in qualifiers)
    )
    if short and ts > 0:  # every length fits one byte: the generated path takes it
        assert out is not None


def test_a_few_rows_of_unknown_layouts_among_many_known_keep_the_generated_path():
    encoder = wire.EntryEncoder(max_layouts=1)
    known = [("T", b"k%d" % i, (("f", b"q", b"v%d" % i, 7),)) for i in range(3000)]
    odd = [("T", b"o%d" % i, (("f", b"q%d" % i, b"v", 7),)) for i in range(1100)]
    for row in known + odd:  # 1,100 misses, but most rows hit
        assert encoder(row) == wire.framed(_protobufs(row))
    assert len(encoder._fast) == 1


@settings(max_examples=500, deadline=None)
@given(n=st.integers(0, 2**63 - 1) | st.integers(0, 2**20) | st.integers(-(2**63), -1))
def test_a_stamp_is_the_timestamps_varint(n):
    assert wire.stamp(n) == wire.varint(n)
    assert wire.stamp(n) == wire.stamp(n)  # from the cache, the second time


@given(
    key=_bytes,
    family=st.sampled_from(["s", "f" * 200]) | st.text(min_size=1, max_size=20),
    marks=st.lists(st.tuples(_bytes, _timestamps), max_size=4),
)
def test_an_index_row_of_marks_encodes_as_the_protobuf_runtime_does(key, family, marks):
    """The series index's rows (cells without a value) framed in one go: what the general
    path frames, which is the client's own encoding."""
    cells = [(family, qualifier, b"", stamp) for qualifier, stamp in marks]
    got = wire.marks_entry(key, family, marks)
    assert got == wire.framed(wire.entry(("T", key, cells)))
    assert got == wire.framed(_protobufs(("T", key, cells)))
