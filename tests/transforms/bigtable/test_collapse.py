"""Collapsing a batch's writes of one key to the cells Bigtable keeps
(transforms/bigtable/collapse.py): newest cell per column, equal timestamps won by the later write,
anything but plain SetCells in one-version families left alone, and rows of one write kept as they
were built."""

from __future__ import annotations

import contextlib
import random

import apache_beam as beam
import pytest

from btts import admin, config
from btts.samples import data
from tests.support.jobs import compiled, dump, retry_harness, run_job, write_lines
from tests.support.runner_cases import make_tables
from transforms.bigtable.collapse import LatestHolder, collapse_latest, latest_only_families
from transforms.bigtable.write import WriteRows
from transforms.mutations import AddCell, Cell, RowMutation
from transforms.schema import builtin_tables
from transforms.text.events import parse_json_object

LATEST = {"CURRENT": frozenset({"M"})}


def _row(key: bytes, *cells: tuple, table: str = "CURRENT") -> tuple:
    return (table, key, tuple(cells))


def _kept(rows: list) -> dict:
    """What a reader of each column's newest cell sees after writing ``rows`` in order."""
    seen: dict = {}
    for table, key, cells in rows:
        for family, qualifier, value, ts in cells:
            column = (table, key, family, qualifier)
            if column not in seen or ts >= seen[column][1]:
                seen[column] = (value, ts)
    return seen


def test_the_newest_cell_of_each_column_wins_whatever_the_order():
    rows = [
        _row(b"h1", ("M", b"cpu", b"new", 30), ("M", b"mem", b"old", 10)),
        _row(b"h1", ("M", b"cpu", b"old", 20), ("M", b"mem", b"new", 40)),
        _row(b"h1", ("M", b"cpu", b"older", 5)),
    ]
    out = collapse_latest(rows, None, LATEST)
    assert out.rows == [_row(b"h1", ("M", b"cpu", b"new", 30), ("M", b"mem", b"new", 40))]
    assert out.entries is None
    assert out.superseded == 2


def test_equal_timestamps_the_later_write_wins():
    rows = [
        _row(b"h1", ("M", b"cpu", b"first", 7)),
        _row(b"h1", ("M", b"cpu", b"second", 7)),
        _row(b"h1", ("M", b"cpu", b"earlier", 6)),
    ]
    out = collapse_latest(rows, [b"e0", b"e1", b"e2"], LATEST)
    assert out.rows == [rows[1]]
    assert out.entries == [b"e1"]  # the surviving row is one the builder made: its entry kept


def test_a_column_written_twice_in_one_row_keeps_its_later_cell():
    rows = [_row(b"h1", ("M", b"cpu", b"a", 7), ("M", b"cpu", b"b", 7)), _row(b"h1")]
    out = collapse_latest(rows, [b"e0", b"e1"], LATEST)
    assert out.rows == [_row(b"h1", ("M", b"cpu", b"b", 7))]
    assert out.entries == [None]  # a new row: the writer encodes it


def test_a_merged_row_is_new_and_its_entry_left_to_the_writer():
    rows = [_row(b"h1", ("M", b"a", b"1", 1)), _row(b"h1", ("M", b"b", b"2", 1))]
    out = collapse_latest(rows, [b"e0", b"e1"], LATEST)
    assert out.rows == [_row(b"h1", ("M", b"a", b"1", 1), ("M", b"b", b"2", 1))]
    assert out.entries == [None]


def test_keys_written_once_keep_their_rows_and_entries_in_order():
    rows = [_row(b"k%d" % i, ("M", b"q", b"v", i)) for i in range(5)]
    entries = [b"entry%d" % i for i in range(5)]
    out = collapse_latest(rows, entries, LATEST)
    assert out.rows == rows and out.entries == entries and out.superseded == 0
    rows.append(rows[0])  # one key twice: the others untouched, in order
    entries.append(b"again")
    out = collapse_latest(rows, entries, LATEST)
    assert out.rows == rows[1:] and out.entries == entries[1:]
    assert out.superseded == 1


def test_keys_with_an_aggregate_or_other_family_or_server_time_are_left_alone():
    cases = [
        [_row(b"h", ("M", b"q", b"a", 1)), _row(b"h", AddCell("M", b"q", 1, 2))],
        [_row(b"h", ("M", b"q", b"a", 1)), _row(b"h", ("OTHER", b"q", b"b", 2))],
        [_row(b"h", ("M", b"q", b"a", 1)), _row(b"h", ("M", b"q", b"b", -1))],
    ]
    for rows in cases:
        out = collapse_latest(rows, [b"x", b"y"], LATEST)
        assert out.rows == rows and out.entries == [b"x", b"y"] and out.superseded == 0


def test_other_tables_rows_are_kept_in_order():
    other = [_row(b"h1", ("M", b"q", b"v%d" % i, 1), table="HISTORY") for i in range(3)]
    current = [_row(b"h1", ("M", b"q", b"v%d" % i, i)) for i in range(3)]
    rows = [other[0], current[0], other[1], current[1], current[2], other[2]]
    out = collapse_latest(rows, None, LATEST)
    assert out.rows == [other[0], other[1], current[2], other[2]]


def test_row_mutations_stay_row_mutations():
    rows = [
        RowMutation("CURRENT", b"h", (Cell("M", b"a", b"1", 5),)),
        RowMutation("CURRENT", b"h", (Cell("M", b"b", b"2", 5),)),
    ]
    (row,) = collapse_latest(rows, None, LATEST).rows
    assert type(row) is RowMutation
    assert row == RowMutation("CURRENT", b"h", (Cell("M", b"a", b"1", 5), Cell("M", b"b", b"2", 5)))


def test_a_reader_of_the_newest_cells_sees_what_it_saw_before():
    rand = random.Random(36)
    rows = [
        _row(
            b"host%d" % rand.randrange(5),
            *(
                ("M", b"m%d" % m, b"%d" % rand.randrange(1000), rand.randrange(20))
                for m in range(3)
            ),
        )
        for _ in range(400)
    ]
    out = collapse_latest(rows, None, LATEST)
    assert len(out.rows) == 5
    assert _kept(out.rows) == _kept(rows)


def test_the_holder_drains_at_its_bound_and_collapses_across_batches():
    holder = LatestHolder("CURRENT", {"M"}, max_rows=4, max_bytes=10**6)
    first = [_row(b"h1", ("M", b"q", b"a", 1)), _row(b"h2", ("M", b"q", b"b", 1))]
    assert not holder.add(first, [b"e1", b"e2"])
    assert holder.add([_row(b"h1", ("M", b"q", b"c", 2))] * 2, None)  # four rows held: full
    out = holder.drain()
    assert out.rows == [first[1], _row(b"h1", ("M", b"q", b"c", 2))]
    assert out.entries == [b"e2", None] and out.superseded == 2
    assert len(holder) == 0
    assert holder.add([first[0]], [b"x" * 50]) is False
    assert LatestHolder("T", {"M"}, 100, max_bytes=40).add([first[0]], [b"x" * 50])
    assert not LatestHolder.holds([first[0], object()])


def test_the_holder_takes_rows_whatever_table_they_name():
    # A writer sends every row it gets to its one table.
    holder = LatestHolder("CURRENT", {"M"}, 10, 10**6)
    holder.add([_row(b"h", ("M", b"q", b"a", 1), table="ELSEWHERE")] * 3, None)
    assert len(holder.drain().rows) == 1


def test_one_version_families_come_from_the_declaration():
    assert latest_only_families(builtin_tables.get("CURRENT_METRIC")) == {"METRIC"}
    hourly = builtin_tables.get("METRIC_HOURLY")
    assert latest_only_families(hourly) == {"exact_sum", "exact_count"}  # not the aggregates


@pytest.mark.parametrize("harness", [None, "half"])
def test_a_collapsed_stream_lands_the_latest_values_an_uncollapsed_one_does(
    target, tmp_path, harness
):
    """Many events per CURRENT_METRIC key, out of order and some delivered twice: the job (which
    collapses by the declaration) leaves the newest cells a write of every row leaves."""
    lines = list(data.metric_events(hosts=4, seconds=600))  # 120 events per host
    random.Random(36).shuffle(lines)  # a host's newest event is not its last
    lines += lines[::7]  # redelivered: the same cells again
    with retry_harness(harness) if harness else contextlib.nullcontext():
        result = run_job(
            "server_metrics",
            target,
            write_lines(tmp_path / "in.jsonl", lines),
            tmp_path / "dead",
            extra=["--collapse_latest=on"],  # files: off unless asked (auto is on for Pub/Sub)
        )
    counts = result.counters
    assert counts["rows_CURRENT_METRIC"] == counts["rows_METRIC"] == len(lines)  # as built
    assert counts["superseded_rows_CURRENT_METRIC"] >= len(lines) // 2  # it did collapse

    # The same rows, every one written, into an instance of their own.
    rows = [row for line in lines for row in compiled("server_metrics")(parse_json_object(line))]
    plain = config.Target(target.project, target.instance + "x")
    tables = ["METRIC", "CURRENT_METRIC"]
    with admin.Admin(plain) as api:
        for table in tables:
            api.ensure(builtin_tables.get(table))
    with beam.Pipeline() as p:
        _ = p | beam.Create([rows]) | WriteRows(plain.project, plain.instance, tables)

    latest = dump(target, "CURRENT_METRIC", latest_only=True)
    assert len(latest) == 4 * len(data.METRIC_NAMES)
    assert latest == dump(plain, "CURRENT_METRIC", latest_only=True)
    newest = _kept([r for r in rows if r[0] == "CURRENT_METRIC"])
    assert {(k, f, q): (v, ts) for k, f, q, v, ts in latest} == {
        (k, f, q): seen for (_t, k, f, q), seen in newest.items()
    }
    assert dump(target, "METRIC") == dump(plain, "METRIC")  # keys written once: all there


def test_file_input_writes_every_row_unless_asked_to_collapse(target, tmp_path):
    lines = list(data.metric_events(hosts=2, seconds=60))
    # tables that keep every version: the emulator applies a table's GC rules when its own
    # timer runs, so versions the job wrote could be gone before they are counted
    make_tables(target, [builtin_tables.get(t) for t in ("METRIC", "CURRENT_METRIC")])
    result = run_job(
        "server_metrics", target, write_lines(tmp_path / "in.jsonl", lines), tmp_path / "dead"
    )
    assert result.counters["rows_CURRENT_METRIC"] == len(lines)
    assert "superseded_rows_CURRENT_METRIC" not in result.counters  # auto: off for files
    assert len(dump(target, "CURRENT_METRIC")) == len(lines) * len(data.METRIC_NAMES)
