"""Lean rows (transforms/mutations.py): the job's framed builder, given lean tables, makes each
row whose request entry it frames as ``(table, key, count, stamp)`` instead of its cells. What
lands is the entry, so the entries must be the writer's own encoding of the plain rows, byte for
byte, and a lean row must carry exactly the table, key, cell count and stamp of the plain row;
a row the writer encodes itself (no entry: a time out of the fast range, a long value or key,
general closures, unpivoted rows) keeps its cells, equal to the plain row's. For every schema
file of the repository (and the every-path schemas), records generated from its fields, and a
hostile user schema (optional fields, a map column, two families, a latest-only one, cells
shared by two tables of which only one is lean, times before the fast range, long values)."""

from __future__ import annotations

import datetime as dt
import json
import pickle

import pytest
from apache_beam.coders import registry
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.lean_rows import same_rows
from tests.support.schema_records import SCHEMAS, ZONES, records, shaped_records
from transforms import official
from transforms import schema as sf
from transforms.builder import builder as generic
from transforms.errors import InvalidEvent
from transforms.limits import MAX_CELL_BYTES
from transforms.mutations import (
    FramedRows,
    cell_count,
    cell_total,
    check_limits,
    first_stamps,
    is_lean,
    without_empty_rows,
)
from transforms.text import events


def _outcome(function, record: dict) -> tuple:
    rows: list = []
    entries: list = []
    try:
        function(record, rows, entries)
    except ValueError as err:  # InvalidEvent is one: nothing appended
        assert rows == entries == []
        return type(err).__name__, str(err)
    return rows, entries


def _check_record(builder: generic.Builder, lean: frozenset, record: dict) -> int:
    """One record through the lean framer and the plain builder: the same refusal, or rows
    that land and tell the same; the full framer's entries are the lean one's."""
    try:
        plain = builder.rows(record)
    except ValueError as err:
        assert _outcome(builder.framer(lean), record) == (type(err).__name__, str(err))
        return 0
    rows, entries = _outcome(builder.framer(lean), record)
    assert entries == builder.framed(record)[1]
    for row in rows:
        assert not is_lean(row) or row[0] in lean
    return same_rows(rows, entries, plain)


@pytest.mark.parametrize("tz", ZONES, ids=["utc", "new_york"])
@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_lean_rows_land_and_tell_what_the_plain_rows_do(name, tz, monkeypatch):
    path = SCHEMAS[name]
    monkeypatch.delenv(official.ENV, raising=False)
    schema = sf.loads(path) if isinstance(path, str) else sf.load(str(path))
    builder = generic.Builder(schema, tz=tz)
    lean = frozenset(builder.tables)
    bases = shaped_records(path) if builder._shape is not None else []

    @settings(
        max_examples=40,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(record=records(schema, bases))
    def agree(record):
        _check_record(builder, lean, record)

    agree()
    if schema.example:
        _check_record(builder, lean, events.parse_json_object(schema.example))


HOSTILE_SCHEMA = """
dataset: lean_edges
event:
  time: ts
  fields:
    host: {type: text, max_length: 300}
    when: {type: time, as: ts}
    temp: {type: number, optional: true}
    count: {type: integer, optional: true}
    note: {type: text, optional: true, max_length: 400}
    extra: {type: map, optional: true}
tables:
  - name: CUR
    pattern: TS-COLS
    families:
      - {name: r, max_versions: 1}
      - {name: h, max_versions: 5}
    key:
      - text: host
      - epoch_ms: ts
    columns: &cols
      - {family: r, qualifier: temp, value: temp}
      - {family: h, each: extra}
      - {family: h, qualifier: count, value: count}
      - {family: r, qualifier: note, value: note}
  - name: TWIN
    pattern: TS-COLS
    families:
      - {name: r, max_versions: 1}
      - {name: h, max_versions: 5}
    key:
      - epoch_ms: ts
      - text: host
    columns: *cols
  - name: LATEST
    pattern: LATEST
    families: [{name: r, max_versions: 1}]
    key:
      - text: host
    columns:
      - {family: r, qualifier: {time: hhmm}, value: host}
      - {family: r, qualifier: fixed, value: ts}
  - name: JSONED
    pattern: TS-COLS
    families: [{name: r, max_versions: 1}]
    key:
      - text: host
      - epoch_ms: ts
    columns:
      - {family: r, qualifier: j, value: {json: [host, temp]}}
"""

_WHEN = st.sampled_from(
    [
        "2015-03-16T19:53:32.045Z",
        "2015-03-16T19:53:32.045+05:30",
        "1970-01-01T00:00:00Z",  # stamp 0: no timestamp field at all
        "1975-06-01T12:00:00Z",  # before the fast range's 1987
        "1987-11-01T00:00:00Z",
        "2100-01-01T00:00:00Z",
    ]
)


@st.composite
def _hostile_records(draw) -> dict:
    record: dict = {
        "host": draw(st.text(alphabet="ab.é-", min_size=1, max_size=300)),
        "when": draw(_WHEN),
    }
    if draw(st.booleans()):
        record["temp"] = draw(st.integers(-(10**6), 10**6) | st.floats(-1e300, 1e300))
    if draw(st.booleans()):
        record["count"] = draw(st.integers(0, 10**18))
    if draw(st.booleans()):
        record["note"] = draw(st.text(alphabet="xy z", min_size=1, max_size=400))
    if draw(st.booleans()):
        names = st.sampled_from(["cpu", "mem", "q" * 120, "disk"])
        values = st.integers(0, 10**6) | st.sampled_from([10**120, 0.5])
        record["extra"] = draw(st.dictionaries(names, values, max_size=4))
    return events.parse_json_object(json.dumps(record))


@pytest.mark.parametrize(
    "lean",
    [{"CUR", "TWIN", "LATEST", "JSONED"}, {"CUR"}, {"TWIN", "LATEST"}],
    ids=["all", "one_of_two_sharing_cells", "other_of_two"],
)
@pytest.mark.parametrize("tz", ZONES, ids=["utc", "new_york"])
def test_a_hostile_schemas_lean_rows_land_and_tell_what_the_plain_rows_do(lean, tz):
    builder = generic.Builder(sf.loads(HOSTILE_SCHEMA), tz=tz)
    made = {"lean": 0, "rows": 0}

    @settings(max_examples=300, deadline=None, database=None)
    @given(record=_hostile_records())
    def agree(record):
        made["lean"] += _check_record(builder, frozenset(lean), record)
        made["rows"] += 1

    agree()
    assert made["lean"] > 0  # the fast path was taken, and (above) left where it must be


def test_a_lean_table_sharing_cells_with_a_whole_one_builds_them_once():
    """CUR and TWIN hold the same cells: with TWIN whole, they are one tuple as before."""
    builder = generic.Builder(sf.loads(HOSTILE_SCHEMA))
    source = builder.framer({"CUR"}).source
    assert source.count("cells0 = tuple(cells0)") == 1 and source.count(", cells0)") == 2
    lean_both = builder.framer({"CUR", "TWIN"}).source
    assert "cells0" not in lean_both  # no row holds them whole: written out where needed
    record = {"host": "h", "when": "2015-03-16T19:53:32.045Z", "temp": 1, "extra": {"a": 2}}
    rows, entries = builder.framed(events.parse_json_object(json.dumps(record)))
    lean, _ = _outcome(builder.framer({"CUR"}), events.parse_json_object(json.dumps(record)))
    assert [is_lean(row) for row in lean] == [True, False, False, False]
    assert lean[1] == rows[1] and entries[0] is not None


def test_the_default_framer_and_the_plain_builder_stay_whole():
    builder = generic.Builder(sf.builtin("market_data"))
    record = events.parse_json_object(sf.builtin("market_data").example)
    rows, _ = builder.framed(record)
    assert rows == builder.rows(record) and not any(map(is_lean, rows))
    lean, entries = _outcome(builder.framer(builder.tables), record)
    assert [len(row) for row in lean] == [4, 4] and entries == builder.framed(record)[1]
    assert [row[2] for row in lean] == [7, 6]


@pytest.mark.parametrize("switch", ["builder", "wire"])
def test_the_official_paths_make_no_lean_rows(switch, monkeypatch):
    """The plain loop (BTTS_OFFICIAL=builder) and the protobuf runtime's entries (wire) make
    no entry, so every row stays whole."""
    monkeypatch.setenv(official.ENV, switch)
    builder = generic.Builder(sf.builtin("server_metrics"))
    record = events.parse_json_object(sf.builtin("server_metrics").example)
    rows, entries = _outcome(builder.framer(builder.tables), record)
    assert rows == builder.rows(record) and entries == [None] * len(rows)


def test_a_folding_framer_keeps_whole_the_rows_it_does_not_fold():
    """The index folds a table the builder does not fold from its rows' cells: kept whole."""
    builder = generic.Builder(sf.loads(HOSTILE_SCHEMA))
    every = set(builder.tables)
    frame, folds = builder.folding_framer(["CUR", "LATEST"], every)
    assert {f.table for f in folds} == {"CUR"}  # a time-of-day qualifier is not folded
    record = {"host": "h", "when": "2015-03-16T19:53:32.045Z", "temp": 1}
    rows, entries = _outcome(frame, events.parse_json_object(json.dumps(record)))
    assert [is_lean(row) for row in rows] == [True, True, False, False]
    assert same_rows(rows, entries, builder.rows(events.parse_json_object(json.dumps(record))))


def test_the_accessors_read_lean_and_whole_rows_alike():
    whole = ("T", b"k", (("f", b"a", b"1", 5000), ("f", b"b", b"2", 5000)))
    lean = ("T", b"l", 3, 7000)
    empty = ("T", b"e", 0, 7000)
    assert [cell_count(r) for r in (whole, lean, empty)] == [2, 3, 0]
    assert cell_total([whole, lean]) == cell_total([lean, whole]) == 5
    assert cell_total([lean, lean]) == 6 and cell_total([whole]) == 2 and cell_total([]) == 0
    assert first_stamps([whole, lean]) == [5000, 7000]
    assert first_stamps([lean, whole]) == [7000, 5000]
    assert first_stamps([lean]) == [7000] and first_stamps([whole]) == [5000]
    with pytest.raises(IndexError):  # a row without a cell has no stamp, in either order
        first_stamps([lean, ("T", b"x", ())])
    batch = FramedRows([whole, empty, lean], [b"w", b"e", b"l"])
    kept = without_empty_rows(batch)
    assert kept == [whole, lean] and kept.entries == [b"w", b"l"]


def test_the_limits_check_passes_lean_rows_and_still_refuses_whole_ones():
    check_limits([("T", b"k", 3, 1000)])
    big = ("T", b"k", (("f", b"q", b"x" * (MAX_CELL_BYTES + 1), 1000),))
    with pytest.raises(InvalidEvent):
        check_limits([("T", b"l", 3, 1000), big])


def test_lean_batches_cross_processes_with_their_entries():
    coder = registry.get_coder(FramedRows)
    rows = FramedRows([("T", b"k", 2, 1000), ("T", b"l", (("f", b"q", b"v", 9),))], [b"e", None])
    for again in (coder.decode(coder.encode(rows)), pickle.loads(pickle.dumps(rows))):
        assert type(again) is FramedRows and again == rows and again.entries == rows.entries
    assert coder.estimate_size(rows) > 0


def test_a_lean_stamp_is_the_tables_own_cell_time():
    """A table stamped with its bucket's start (cell_time) and a zone: the lean stamp is the
    plain cells' (the writer's bytes hold it)."""
    schema = sf.builtin("smart_meters")
    builder = generic.Builder(schema, tz=dt.timezone(dt.timedelta(hours=-5)))
    record = events.parse_json_object(schema.example)
    assert _check_record(builder, frozenset(builder.tables), record) > 0
