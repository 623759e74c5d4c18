"""A block cut by table once for the build step's event spans and fingerprints
(``TableCut``), and its stamps read once (``stamp_array``): the same spans and fingerprints as
each step reading the block itself, with the stamps a step read handed to the next."""

from __future__ import annotations

import json

import numpy as np
import pytest

from btts.samples import data as samples
from transforms import schema as schema_lib
from transforms.builder.builder import Builder
from transforms.ingest import block_rows
from transforms.ingest.block_rows import EventSpans
from transforms.ingest.fingerprints import RowPrints, stamp_array
from transforms.mutations import TableCut, first_stamps, table_parts, take, without_empty_rows
from transforms.text import events


def _rows(tables: str) -> list[tuple]:
    return [(t, f"k{i}".encode(), (("f", b"q", b"v", 1000 + i),)) for i, t in enumerate(tables)]


@pytest.mark.parametrize("tables", ["A", "AB" * 6, "ABC" * 3, "AAB", "ABBA", "BA" * 4 + "A"])
def test_a_cut_is_each_tables_rows_in_order(tables):
    rows = _rows(tables)
    cut = TableCut()
    for _ in range(2):  # the second block, laid out as the first, reuses the cut
        parts = cut(rows)
        assert [t for t, _ in parts] == list(dict.fromkeys(tables))
        for table, part in parts:
            assert part == [r for r in rows if r[0] == table]
    assert cut(_rows("C" * 3)) == [("C", _rows("C" * 3))]  # another layout: cut again


def test_a_job_writing_one_table_never_reads_a_rows_table():
    rows = [("anything", b"k", ())]
    assert TableCut("T")(rows) == [("T", rows)]
    assert TableCut("T")([]) == [] and TableCut()([]) == []


def test_the_cut_agrees_with_table_parts():
    tables = list("ABAB") + list("CA")
    rows = _rows("".join(tables))
    want = [(t, take(rows, where)) for t, where in table_parts(tables)]
    assert TableCut()(rows) == want


def test_stamp_array_reads_lean_whole_and_mixed_rows():
    whole = _rows("AAA")
    lean = [(t, k, len(cells), cells[0][3]) for t, k, cells in whole]
    for rows in (whole, lean, [lean[0], whole[1], lean[2]], [whole[0], lean[1]]):
        got = stamp_array(rows)
        assert got.dtype == np.int64 and got.tolist() == first_stamps(rows)
    assert stamp_array([]).tolist() == []


CASES = {
    "server_metrics": lambda: samples.metric_records(hosts=5, seconds=900),
    "smart_meters": lambda: samples.meter_records(meters=7, days=1),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("lean", [False, True], ids=["whole", "lean"])
def test_spans_and_prints_of_one_cut_are_those_each_step_reads_itself(name, lean):
    schema = schema_lib.builtin(name)
    builder = Builder(schema)
    event_ms = {t: schema.decls()[t].event_ms for t in builder.tables}
    keyed = {t: not stamped for t, stamped in builder.stamp_in_key().items()}
    lines = [json.dumps(r) for r in CASES[name]()]
    frame = builder.framer(builder.tables if lean else ())
    only = builder.tables[0] if len(builder.tables) == 1 else None
    steps = {mode: (EventSpans(event_ms), RowPrints(builder.stamp_in_key())) for mode in "ab"}
    cut, reused = TableCut(only), 0
    for at in range(0, len(lines), 50):
        out = block_rows.build_block(
            "f", "jsonl", lines[at : at + 50], events.parse_json_object, builder.rows, frame
        )
        batch = without_empty_rows(out.batch)  # as the step hands them on
        spans, prints = steps["a"]
        spans.track(batch)
        prints.add(batch, "f", "jsonl", at)
        spans, prints = steps["b"]  # as BuildRows does: one cut, stamps read once
        parts, stamps = cut(batch), {}
        prints.add(batch, "f", "jsonl", at, parts, stamps)
        assert set(stamps) == {t for t, _ in parts if keyed[t]}  # the keyed tables' stamps
        before = dict(stamps)
        spans.track(batch, parts, stamps)
        reused += bool(before) and stamps == before  # spans read none of their own again
    drained = {
        mode: (
            spans.rows,
            spans.drain(),
            prints.rows,
            [
                (s, sorted(a.tolist()))
                for s, p in prints.drain()
                for a in (*p.ids.values(), *p.keys.values())
            ],
        )
        for mode, (spans, prints) in steps.items()
    }
    assert drained["a"] == drained["b"] and drained["a"][0] > 0
    assert reused == len(range(0, len(lines), 50))
