"""The table report: key and row sizes, the largest rows against the limits, and monotonic-prefix
detection, on tables the real jobs wrote to the emulator (and on synthetic rows for the limits)."""

from __future__ import annotations

import json

import pytest

from btts.advisor import table_report
from btts.advisor.table_report import classify_segment, spearman
from btts.query import engine
from btts.samples import data as samples
from btts_cli import advise_command
from tests.support.jobs import run_job, write_lines
from transforms.mutations import ReadCell, ReadRow

# -- pure ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("segment", "kind"),
    [
        (b"1426535612045", "epoch-ms"),
        (b"20150301124501001", "yyyymmddhhmmssmmm"),
        (b"20170726", "yyyymmdd"),
        (b"201503", "yyyymm"),
        (b"9223370611433425807", "reverse-ts"),  # Long.MAX_VALUE - 1425421350000 (2015)
        (b"1426535612", "epoch-s"),
        (b"2021-03-05-1200", "iso-date"),
        (b"2021-W09", "iso-week"),
        (b"0000987654", "number"),  # a zero-padded meter id, not a time
        (b"99999999", "number"),  # not a date
        (b"server1.bbb.com", "text"),
        (b"\xff\xfe", "text"),
    ],
)
def test_segment_classes(segment, kind):
    assert classify_segment(segment) == kind


def test_spearman():
    assert spearman([1, 2, 3, 4, 5]) == pytest.approx(1.0)
    assert spearman([5, 4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([3, 3, 3]) == 0.0
    assert abs(spearman([1, 5, 2, 4, 3, 3])) < 0.5


def _row(key: bytes, *values: bytes, family: str = "F") -> ReadRow:
    return ReadRow(key, tuple(ReadCell(family, b"q", v, 1000 * i) for i, v in enumerate(values)))


def test_sizes_and_limits_on_synthetic_rows():
    rows = [
        _row(b"a#1", b"x" * 10),
        _row(b"b#1", b"y" * (11 * 1024 * 1024)),  # an 11 MB cell: over the 10 MB limit
        _row(b"c" * 5000, b"z"),  # a 5,000-byte key: over 4 KiB
    ]
    rep = table_report.summarize(rows, "T")
    # key + family + qualifier + value + 8-byte timestamp
    assert rep.row_sizes == [3 + 1 + 1 + 10 + 8, 3 + 1 + 1 + 11 * 1024 * 1024 + 8, 5000 + 11]
    assert rep.key_lengths == [3, 3, 5000]
    assert rep.largest[0].key == b"b#1" and rep.largest_cell == 11 * 1024 * 1024
    assert any("cell (limit 10 MB)" in line for line in rep.over)
    assert any("5,000-byte key (limit 4 KiB)" in line for line in rep.over)
    assert rep.over_count == 2
    assert table_report.distribution([5, 1, 3]) == {
        "min": 1,
        "p50": 3,
        "p90": 5,
        "p99": 5,
        "max": 5,
    }


def test_row_limits_advised_and_hard():
    advised = table_report.limit_problems(150 * 1024 * 1024, 1, 10, b"k")
    hard = table_report.limit_problems(300 * 1024 * 1024, 1, 10, b"k")
    assert advised == ["WARNING row 'k': 150.0 MB over the advised 100 MB"]
    assert hard == ["ERROR row 'k': 300.0 MB over the 256 MB hard limit"]
    assert table_report.limit_problems(99 * 1024 * 1024, 9 * 1024 * 1024, 4096, b"k") == []


def test_monotonic_detection_on_synthetic_keys():
    ts_first = [_row(b"EV#%d" % (1426535612000 + i), b"v") for i in range(20)]
    rep = table_report.summarize(ts_first)
    assert rep.segments.constant == (b"EV",) and rep.segments.kind == "epoch-ms"
    assert rep.monotonic and "after constant 'EV'" in rep.monotonic_reasons[0]
    # A sequential id: no time shape, but key order follows the cells' time.
    seq = [ReadRow(b"%08d" % i, (ReadCell("F", b"q", b"v", 1_000_000 * i),)) for i in range(1, 30)]
    rep = table_report.summarize(seq)
    assert rep.segments.kind == "number" and rep.monotonic
    assert "key order follows cell time" in rep.monotonic_reasons[0]
    # Reversed timestamps: the newest sort first.
    rev = table_report.summarize(
        [_row(b"%d" % (9223372036854775807 - 1426535612000 - i), b"v") for i in range(5)]
    )
    assert "start of the key space" in rev.monotonic_reasons[0]


# -- on the emulator, tables written by the real jobs -------------------------------------------


@pytest.fixture
def battery_tables(target, tmp_path):
    records = list(samples.battery_records(users=6, minutes=60, every=5))
    source = write_lines(tmp_path / "battery.jsonl", [json.dumps(r) for r in records])
    for layout in ("promoted", "timestamp_first"):
        run_job("battery", target, source, tmp_path / layout, [f"--battery_layout={layout}"])
    return target, len(records)


def test_report_matches_what_the_table_holds(battery_tables):
    target, events = battery_tables
    stored = engine.read_rows(target, "BATTERY_TS_FIRST")
    assert len(stored) == events
    # Paged reads see every row once, in key order.
    assert list(table_report.iter_rows(target, "BATTERY_TS_FIRST", page=7)) == stored
    assert [r.key for r in table_report.iter_rows(target, "BATTERY_TS_FIRST", limit=10)] == [
        r.key for r in stored[:10]
    ]
    rep = table_report.report(target, "BATTERY_TS_FIRST")
    assert rep.rows == events and not rep.limited
    assert rep.cells == sum(len(r.cells) for r in stored) == 2 * events  # USER, PERCENTAGE
    sizes = [
        len(r.key) + sum(len(c.family) + len(c.qualifier) + len(c.value) + 8 for c in r.cells)
        for r in stored
    ]
    assert rep.row_sizes == sizes and rep.total_bytes == sum(sizes)
    assert set(rep.key_lengths) == {len(b"BATTERY#20150301000000001")}
    assert rep.largest[0].bytes == max(sizes) and rep.over == []
    sample = table_report.report(target, "BATTERY_TS_FIRST", limit=10)
    assert sample.rows == 10 and sample.limited


def test_timestamp_first_table_is_monotonic_promoted_is_not(battery_tables):
    target, _ = battery_tables
    ts_first = table_report.report(target, "BATTERY_TS_FIRST")
    assert ts_first.segments.constant == (b"BATTERY",)
    assert ts_first.segments.kind == "yyyymmddhhmmssmmm"
    assert ts_first.correlation == pytest.approx(1.0)
    assert ts_first.monotonic
    text = table_report.format_report(ts_first)
    assert "verdict: MONOTONIC PREFIX (docs/patterns.md §3.5)" in text
    assert "after constant 'BATTERY'" in text

    promoted = table_report.report(target, "BATTERY")
    assert promoted.segments.kind == "text"  # the user
    assert promoted.segments.time_position == 2 and promoted.segments.prefixes_before_time == 6
    assert abs(promoted.correlation) < 0.5
    assert not promoted.monotonic
    assert "verdict: no monotonic prefix" in table_report.format_report(promoted)


def test_metrics_table_from_the_server_metrics_job(target, tmp_path):
    source = write_lines(tmp_path / "m.jsonl", list(samples.metric_events(hosts=5, seconds=60)))
    run_job("server_metrics", target, source, tmp_path / "dead")
    rep = table_report.report(target, "METRIC")
    assert rep.rows == 5 * 12
    assert rep.segments.constant == () and rep.segments.kind == "text"
    assert rep.segments.time_position == 1 and rep.segments.time_kind == "epoch-ms"
    assert not rep.monotonic
    data = table_report.as_dict(rep)
    assert data["rows"] == 60 and data["monotonic"] is False


def test_table_command(battery_tables, capsys):
    target, events = battery_tables
    where = ["--project", target.project, "--instance", target.instance]
    assert advise_command.main(["table", "BATTERY_TS_FIRST", *where]) == 0
    out = capsys.readouterr().out
    assert f"{events:,} rows" in out and "MONOTONIC PREFIX" in out and "largest rows:" in out
    assert advise_command.main(["table", "BATTERY", *where, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["monotonic"] is False
    assert advise_command.main(["table", "NOPE", *where]) == 2
    assert "table NOPE does not exist" in capsys.readouterr().err
