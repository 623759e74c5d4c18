"""The build step's logic without Beam (transforms.ingest.block_rows): what a block of items
becomes, which items are dead letters and why, and the tallies reported once per bundle."""

from __future__ import annotations

import json
import logging

from hypothesis import given
from hypothesis import strategies as st

from transforms.errors import InvalidEvent
from transforms.ingest import block_rows
from transforms.metrics import MAX_REASON_KINDS, OTHER_REASONS
from transforms.text import events


def _build(record: dict) -> list:
    if "v" not in record:
        raise InvalidEvent("missing field 'v'")
    if record["v"] == "boom":
        raise RuntimeError("a builder bug")
    return [("T", record["v"].encode(), (("f", b"q", b"1", 1000),))]


def _framed(record: dict, rows: list, entries: list) -> None:
    built = _build(record)  # raises before anything is appended, as Builder.frame_into does
    rows += built
    entries += [b"entry"] * len(built)


def test_a_block_keeps_its_good_rows_and_each_bad_item_with_its_reason(caplog):
    items = ['{"v": "a"}', "", '{"w": 1}', '{"v": "boom"}', '{"v": "b"}', '[{"v": "c"},']
    with caplog.at_level(logging.ERROR):
        out = block_rows.build_block("in.jsonl", "jsonl", items, events.parse_json_object, _build)
    assert [row[1] for row in out.batch] == [b"a", b"b"]
    assert (out.valid, out.blank, out.unexpected) == (2, 1, 1)
    assert [index for index, _raw, _reason in out.bad] == [2, 3, 5]
    reasons = [reason for _i, _raw, reason in out.bad]
    assert reasons[0] == "missing field 'v'"
    assert reasons[1] == "unexpected error: RuntimeError: a builder bug"
    assert reasons[2].startswith("invalid JSON")
    assert "json_array" in reasons[2]  # a piece of a top-level array says so
    assert "unexpected error building rows from a line of in.jsonl" in caplog.text


def test_framed_blocks_keep_rows_and_entries_in_step():
    items = ['{"v": "a"}', '{"x": 1}', '{"v": "c"}']
    out = block_rows.build_block(
        "in.jsonl", "jsonl", items, events.parse_json_object, None, _framed
    )
    assert [row[1] for row in out.batch] == [b"a", b"c"]
    assert out.entries == [b"entry", b"entry"]
    assert [index for index, _raw, _reason in out.bad] == [1]


def test_an_oversize_cell_from_a_long_item_is_refused_and_leaves_nothing_behind():
    big = "x" * 20_000

    def build(record: dict) -> list:
        return [("T", b"k", (("f", record["v"].encode(), b"1", 1000),))]

    def framed(record: dict, rows: list, entries: list) -> None:
        rows += build(record)
        entries.append(b"entry")

    items = [json.dumps({"v": big}), '{"v": "ok"}']
    for fn, framed_fn in ((build, None), (None, framed)):
        out = block_rows.build_block(
            "in.jsonl", "jsonl", items, events.parse_json_object, fn, framed_fn
        )
        assert [row[2][0][1] for row in out.batch] == [b"ok"]
        assert len(out.entries) == (1 if framed_fn else 0)
        assert [index for index, _raw, _reason in out.bad] == [0]
        assert "qualifier" in out.bad[0][2]


def test_blank_csv_lines_are_skipped_but_blank_records_are_dead_letters():
    def decode(raw: object) -> dict:
        raise InvalidEvent("empty")

    assert block_rows.build_block("a.csv", "csv", ["  "], decode, _build).blank == 1
    out = block_rows.build_block("a.parquet", "record", [""], decode, _build)
    assert (out.blank, [reason for _i, _raw, reason in out.bad]) == (0, ["empty"])


def test_the_tally_keeps_the_first_line_of_each_reason_and_caps_the_kinds():
    tally = block_rows.ReasonTally()
    tally.count("a.jsonl", "missing field 'v'", 7)
    tally.count("a.jsonl", "missing field 'v'", 3)
    tally.count("a.jsonl", "missing field 'v'", None)
    drained = tally.drain()
    assert [(count, first) for _name, count, first in drained] == [(3, 3)]
    assert tally.drain() == []  # drained once
    for n in range(MAX_REASON_KINDS + 3):
        tally.count("a.jsonl", f"reason number {n}: {'x' * n}", n)
    names = [name for name, _count, _first in tally.drain()]
    assert len(names) <= MAX_REASON_KINDS + 1
    assert any(OTHER_REASONS in name for name in names)


@given(st.lists(st.lists(st.integers(1, 10**15), min_size=1, max_size=5), max_size=6))
def test_the_span_is_the_lowest_and_highest_stamp_of_the_tracked_table(blocks):
    spans = block_rows.EventSpans({"T": lambda us: us // 1000})
    for stamps in blocks:
        batch = [("U", b"k", (("f", b"q", b"v", 1),))]  # an untracked table is ignored
        batch += [("T", b"k", (("f", b"q", b"v", s),)) for s in stamps]
        spans.track(batch)
    every = [s for stamps in blocks for s in stamps]
    expected = [min(every) // 1000, max(every) // 1000] if every else []
    assert spans.drain() == expected
    assert spans.drain() == []


@given(
    st.lists(st.integers(1, 10**15), min_size=1, max_size=40),
    st.sets(st.integers(0, 39)),
    st.booleans(),
)
def test_the_span_of_interleaved_tables_skips_rows_without_a_cell(stamps, empty, tracked_first):
    """A schema's builder writes its tables in turn (every event: U then T, or T then U): the
    tracked table's rows are a stride of the batch; a row without a cell counts nothing."""
    spans = block_rows.EventSpans({"T": lambda us: us})
    batch = []
    for i, stamp in enumerate(stamps):
        mine = ("T", b"k", () if i in empty else (("f", b"q", b"v", stamp),))
        other = ("U", b"k", (("f", b"q", b"v", 0),))  # untracked: its stamp never counts
        batch += [mine, other] if tracked_first else [other, mine]
    spans.track(batch)
    kept = [s for i, s in enumerate(stamps) if i not in empty]
    assert spans.rows == len(kept)
    assert spans.drain() == ([min(kept), max(kept)] if kept else [])
    spans.track([])  # an empty batch tracks nothing
    assert spans.drain() == []


def test_progress_logs_at_most_once_per_interval(caplog):
    now = [0.0]
    progress = block_rows.Progress("job", 10.0, clock=lambda: now[0])
    with caplog.at_level(logging.INFO):
        progress.add(1023)  # under 1024 items the clock is not even read
        now[0] = 11.0
        progress.add(1)
        progress.add(1024)  # within 10 s of the last line: quiet
        now[0] = 25.0
        progress.add(1024)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "job: 1024 lines processed by this worker (93 lines/s)",
        "job: 3072 lines processed by this worker (123 lines/s)",
    ]
