"""The job's builder makes each row's request entry while building it (Builder.framed): the
entries must be the encoder's bytes for the same rows, byte for byte, on every generated path,
and anything the fast path does not cover must be left to the writer (None), never guessed."""

from __future__ import annotations

import json
import pickle

import pytest
from apache_beam.coders import coders
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks import data
from tests.support.codegen_inputs import (
    BUILTIN_EXAMPLES,
    GENERATED_LITERALS,
    HOSTILE,
    every_path_schema,
    literals,
)
from transforms import schema as sf
from transforms.builder import builder as generic
from transforms.builder import wire
from transforms.ingest import build_rows
from transforms.mutations import FramedRows
from transforms.text import events


def _check(builder: generic.Builder, record: dict) -> list:
    rows, entries = builder.framed(record)
    assert rows == builder.rows(record)
    assert len(entries) == len(rows)
    for row, entry in zip(rows, entries, strict=True):
        if entry is not None:
            assert entry == wire.framed(wire.entry(row))
    return entries


@pytest.mark.parametrize("name", BUILTIN_EXAMPLES)
def test_builtin_examples_frame_as_the_encoder_does(name):
    schema = sf.builtin(name)
    builder = generic.Builder(schema)
    _check(builder, events.parse_json_object(schema.example))
    assert literals(builder._framed.source) <= GENERATED_LITERALS


@pytest.mark.parametrize(
    ("schema", "make"),
    [
        (lambda: sf.builtin("server_metrics"), data.metrics),
        (lambda: sf.builtin("smart_meters"), data.meters),
        (lambda: sf.builtin("market_data"), data.market),
        (lambda: sf.load("docs/schemas/ts-cols-stock-ticks.yaml"), data.ticks),
    ],
)
def test_benchmark_rows_are_all_framed_by_the_builder(schema, make, tmp_path):
    make(tmp_path / "in.jsonl", 300)
    builder = generic.Builder(schema())
    for line in (tmp_path / "in.jsonl").read_bytes().splitlines():
        assert None not in _check(builder, events.parse_json_object(line))


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_on_every_path_frame_as_the_encoder_does(name):
    builder = generic.Builder(sf.loads(every_path_schema(name, "qualifier")))
    record = {"f": "abc", "f_n": 1.5, "when": "2015-03-16T19:53:32.045Z", "f_m": {"cpu": 2}}
    _check(builder, events.parse_json_object(json.dumps(record)))
    assert literals(builder._framed.source) <= GENERATED_LITERALS


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(alphabet="ab #", min_size=1, max_size=8),
    number=st.none() | st.floats(allow_nan=False, allow_infinity=False) | st.integers(),
    entries=st.dictionaries(
        st.sampled_from(["cpu", "mem", "x" * 120, "disk"]),
        st.integers() | st.sampled_from([10**120, 0.5]),
        max_size=4,
    ),
    when=st.sampled_from(
        ["2015-03-16T19:53:32.045Z", "1970-01-01T00:00:00Z", "1969-12-31T23:59:59Z", 0, 1]
    ),
)
def test_long_empty_or_early_cells_are_left_to_the_writer(text, number, entries, when):
    """Values past one-byte lengths, timestamps not after the epoch, optional values absent:
    every entry the builder makes equals the encoder's; the rest are None."""
    builder = generic.Builder(sf.loads(every_path_schema("q", "qualifier")))
    record = {"f": text, "when": when, "f_m": entries}
    if number is not None:
        record["f_n"] = number
    try:
        builder.rows(events.parse_json_object(json.dumps(record)))
    except ValueError:  # InvalidEvent is one
        return  # refused: a dead letter either way
    _check(builder, events.parse_json_object(json.dumps(record)))


_EDGE_SCHEMA = """
dataset: edges
event:
  time: ts
  fields:
    name: {type: text, max_length: 200}
    when: {type: time, as: ts}
tables:
  - name: T
    pattern: TS-COLS
    families: [{name: fam, max_versions: 1}]
    key:
      - {text: name}
      - epoch_ms: ts
    columns:
      - {family: fam, qualifier: q, value: name}
  - name: H
    pattern: TS-COLS
    families: [{name: fam, max_versions: 1}]
    key:
      - {text: name}
      - epoch_ms: ts
    columns:
      - {family: fam, qualifier: {time: hhmm}, value: name}
"""


@pytest.mark.parametrize("length", range(1, 131))
def test_every_value_length_frames_while_its_lengths_fit_one_byte(length):
    """Around the one-byte limits of a fixed and a time-of-day qualifier: the builder frames
    a row exactly when its SetCell's length is under 126 (what its fast path covers), and
    then as the encoder does; the key grows with the value too, past 127 bytes at the end."""
    builder = generic.Builder(sf.loads(_EDGE_SCHEMA))
    record = {"name": "x" * length, "when": "2015-03-16T19:53:32.045Z"}
    rows, entries = builder.framed(record)
    for row, entry in zip(rows, entries, strict=True):
        # SetCell: family field (5), qualifier field (2 + its length), stamp (9), value (2 + n)
        fits = 5 + 2 + len(row[2][0][1]) + 9 + 2 + length < 126
        assert (entry is not None) == (fits and len(row[1]) < 128)
        if entry is not None:
            assert entry == wire.framed(wire.entry(row))


def test_framed_rows_are_rows_to_beam_and_keep_their_entries_when_pickled():
    rows = FramedRows([("T", b"k", (("f", b"q", b"v", 1000),))], [b"entry"])
    assert rows == [("T", b"k", (("f", b"q", b"v", 1000),))]
    again = pickle.loads(pickle.dumps(rows))
    assert type(again) is FramedRows and again == rows and again.entries == [b"entry"]
    coder = coders.FastPrimitivesCoder()  # what Beam codes (and sizes) elements of Any with
    assert build_rows.FramedRows is FramedRows
    assert coder.decode(coder.encode(rows)) == list(rows)


@settings(max_examples=300, deadline=None)
@given(
    ts=st.integers(0, 2**63 - 1)
    | st.sampled_from([2**14 - 1, 2**14, 2**28 - 1, 2**28, 2**28 + 1, 1426535612045000])
)
def test_a_stamp_is_the_timestamps_varint(ts):
    assert wire.stamp(ts) == wire.varint(ts)


def test_a_bad_record_appends_nothing_to_the_batch():
    builder = generic.Builder(sf.builtin("server_metrics"))
    schema = sf.builtin("server_metrics")
    good = events.parse_json_object(schema.example)
    rows: list = []
    entries: list = []
    builder.frame_into(good, rows, entries)
    kept = (list(rows), list(entries))
    with pytest.raises(ValueError):
        builder.frame_into({**good, "unexpected": 1}, rows, entries)
    assert (rows, entries) == kept and len(rows) == len(entries) == 2


def test_row_batches_are_coded_with_their_entries_and_sized_without_encoding():
    from apache_beam.coders import registry

    from transforms.ingest.batches import RowBatchCoder

    coder = registry.get_coder(FramedRows)
    assert type(coder) is RowBatchCoder
    rows = FramedRows(
        [("T", b"k", (("f", b"q", b"v", 1000),)), ("T", b"l", ())], [b"entry", b"other"]
    )
    again = coder.decode(coder.encode(rows))
    assert type(again) is FramedRows and again == rows and again.entries == rows.entries
    plain = [("T", b"k", (("f", b"q", b"v", 1000),))]
    assert (
        coder.decode(coder.encode(plain)) == plain
        and type(coder.decode(coder.encode(plain))) is list
    )
    one = ("T", b"k", (("f", b"q", b"v", 1000),))
    assert coder.decode(coder.encode(one)) == one
    assert coder.estimate_size(rows) == len(b"entry") + len(b"other") + 16  # from the entries
    partly = FramedRows(plain * 3, [b"x", None, b"y"])
    assert coder.estimate_size(partly) > 0


def test_the_build_and_split_steps_declare_row_batches():
    import apache_beam as beam

    from transforms.bigtable.write import WriteRows

    pipeline = beam.Pipeline()  # constructed, never run: nothing to write to
    lines = pipeline | beam.Create([("src", b"{}")])
    built = lines | build_rows.BuildRows(generic.Builder(sf.builtin("server_metrics")).rows, "p")
    assert built[build_rows.ROWS].element_type is FramedRows
    tables = built[build_rows.ROWS] | WriteRows("p", "i", ["METRIC"])
    split = tables["METRIC"].producer.inputs[0]  # the split's output for METRIC
    assert split.element_type is FramedRows


_MAP_SCHEMA = """
dataset: maps
event:
  time: ts
  fields:
    host: text
    when: {type: time, as: ts}
    metrics: map
tables:
  - name: M
    pattern: TS-COLS
    families: [{name: m, max_versions: 1}]
    key:
      - {text: host}
      - epoch_ms: ts
    columns:
      - {family: m, each: metrics}
"""


def test_a_maps_openings_are_kept_per_qualifier_and_length_and_made_again_when_full():
    """One builder, many records: a map's cells of one qualifier and value lengths from 1 past
    the one-byte limits, over more distinct qualifiers than its openings' cache keeps (it
    starts again). Each row is framed exactly while its lengths fit one byte, and then as the
    encoder frames it, whatever the records before it left in the cache."""
    builder = generic.Builder(sf.loads(_MAP_SCHEMA))
    framed = 0
    for index in range(5000):
        name = f"r{index % 7}"  # a few names seen with every length, and a new one each time
        length = 1 + index % 115
        metrics = {name: 10**length, f"k{index}": 1}
        record = {"host": "h", "when": "2015-03-16T19:53:32.045Z", "metrics": metrics}
        entries = _check(builder, events.parse_json_object(json.dumps(record)))
        # SetCell: family field (3), qualifier field (2 + its length), stamp (9), value (2 + n)
        fits = 3 + 2 + len(name) + 9 + 2 + length + 1 < 126
        assert (entries[0] is not None) == fits
        framed += fits
    assert 0 < framed < 5000
