"""No entry without mutations is ever sent (Cloud Bigtable refuses the whole MutateRows request
for one, the emulator takes it), and the summary counts the rows that landed, not the rows a
builder made: an event whose only value for a table is absent writes no row there."""

from __future__ import annotations

import uuid

import apache_beam as beam
import pytest

from btts.query import engine
from tests.support.fake_bigtable import FakeBigtable
from tests.support.jobs import run_job, write_lines
from transforms.bigtable import transport
from transforms.bigtable.channel import open_channel
from transforms.bigtable.write import BoundedWriteToBigTable, WriteRows
from transforms.builder import wire
from transforms.mutations import FramedRows, RowMutation, without_empty_rows

ENV_HOST = "BIGTABLE_EMULATOR_HOST"


@pytest.fixture
def fake(monkeypatch):
    with FakeBigtable() as server:
        monkeypatch.setenv(ENV_HOST, server.endpoint)
        yield server


def _row(key: bytes, cells: int = 1, table: str = "T") -> tuple:
    return (table, key, tuple(("f", b"q%d" % i, b"v", 1_000_000) for i in range(cells)))


def test_the_fake_refuses_an_entry_without_mutations_as_bigtable_does(fake):
    table = f"projects/p/instances/i/tables/T{uuid.uuid4().hex[:8]}"
    rows = [RowMutation(*_row(b"a")), RowMutation(*_row(b"b", cells=0))]
    batch = transport.Batch(
        wire.request_head(table), [wire.framed(wire.entry(r)) for r in rows], [b"a", b"b"]
    )
    channel = open_channel()
    sender = transport.RequestSender(transport.mutate_rows_call(channel, table, False), 10.0)
    outcome = sender(batch)
    assert any("No mutations provided" in str(e) for e in outcome.errors), outcome
    assert fake.applied == {}


def test_without_empty_rows_keeps_order_and_entries():
    rows = FramedRows([_row(b"a"), _row(b"b", 0), _row(b"c")], [b"ea", b"eb", None])
    kept = without_empty_rows(rows)
    assert [r[1] for r in kept] == [b"a", b"c"] and kept.entries == [b"ea", None]
    assert without_empty_rows([_row(b"x", 0)]) == []


@pytest.mark.parametrize("batched", [True, False])
def test_the_writer_never_sends_a_row_without_a_cell(fake, batched):
    table = f"T{uuid.uuid4().hex[:8]}"
    rows = [_row(b"k%03d" % i, cells=i % 3, table=table) for i in range(30)]  # a third: no cell
    elements = [rows[:10], rows[10:]] if batched else rows
    with beam.Pipeline() as p:
        _ = p | beam.Create(elements) | BoundedWriteToBigTable("p", "i", table, flush_count=7)
    assert fake.applied == {r[1]: 1 for r in rows if r[2]}
    assert all(e.mutations for c in fake.calls for e in c.request.entries)


def test_write_rows_sends_only_rows_with_cells(fake):
    table = f"T{uuid.uuid4().hex[:8]}"
    rows = [(table, b"a", _row(b"a")[2]), (table, b"b", ())]
    with beam.Pipeline() as p:
        _ = p | beam.Create([rows]) | WriteRows("p", "i", [table])
    assert fake.applied == {b"a": 1}


SCHEMA = """\
dataset: sparse
event:
  time: ts
  fields:
    device: text
    ts: time
    humidity: {type: number, optional: true}
tables:
  - name: SPARSE
    pattern: TS-COLS
    families: [{name: m, max_versions: 1}]
    key: [{text: device}, {epoch_ms: ts}]
    columns: [{family: m, qualifier: rh, value: humidity}]
"""


def test_a_batch_of_events_without_values_lands_nothing_and_says_so(target, tmp_path, capsys):
    """An optional value empty in most rows: those rows are not written (the emulator would
    take them, Cloud Bigtable would refuse the batch) and the counts say what landed."""
    schema = tmp_path / "sparse.yaml"
    schema.write_text(SCHEMA, encoding="utf-8")
    lines = ["device,ts,humidity"]
    lines += [f"d{i},2024-05-01T10:{i:02d}:00Z,{'40' if i < 2 else ''}" for i in range(10)]
    source = write_lines(tmp_path / "sparse.csv", lines)
    report = run_job("generic", target, source, tmp_path / "dead", [f"--schema={schema}"])
    assert report.counters["events_valid"] == 10
    assert report.counters["rows_SPARSE"] == 2
    assert report.counters["empty_rows"] == 8
    assert "rows not written           8" in capsys.readouterr().out
    keys = sorted(r.key for r in engine.read_rows(target, "SPARSE"))
    assert [k.split(b"#")[0] for k in keys] == [b"d0", b"d1"]


def test_the_same_time_warning_counts_the_rows_whose_times_were_seen():
    """10 events of which one wrote a cell: one time seen is not "all 10 at the same time"."""
    from pipelines.common.report import summary

    totals = {"lines_read": 10, "events_valid": 10, "earliest_event_ms": 5, "latest_event_ms": 5}
    assert "same time" not in summary("j", {**totals, "timed_rows": 1}, 1.0, None)
    assert "all 10 valid events have the same time" in summary(
        "j", {**totals, "timed_rows": 10}, 1.0, None
    )
