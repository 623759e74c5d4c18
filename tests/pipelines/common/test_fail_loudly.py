"""Jobs that did not do their work say so: a non-zero exit when nothing valid was read or too
many records were dead letters, a summary naming the reasons, and a check that writes nothing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from btts import exits
from btts.query import engine
from pipelines.common import report
from pipelines.common.report import JobFailed, failure, parse_bad_records
from tests.support.jobs import read_dead_letters, run_job, write_lines
from transforms.errors import DataError, RunFailed, reason_kind

GOOD = '{"meter_id": 987654, "timestamp": "2017-07-26T00:15:00Z", "reading": 13.45}'
SLASH = '{"meter_id": 987654, "timestamp": "2017/07/26 00:%02d", "reading": 1.5}'


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        (
            "field 'date': '2012/01/01' is not a date YYYY-MM-DD",
            "field 'date': '…' is not a date YYYY-MM-DD",
        ),
        ("invalid JSON: Extra data at column 131", "invalid JSON: Extra data at column N"),
        ("field 'x': -12.5 is above its maximum 10", "field 'x': N is above its maximum 10"),
        ("not UTF-8: byte 3 is 0xff", "not UTF-8: byte N is 0xff"),
        ("key field 'host' has no value", "key field 'host' has no value"),
    ],
)
def test_reasons_group_by_kind_keeping_the_field_they_name(reason, kind):
    assert reason_kind(reason) == kind


def test_failure_needs_input_and_is_judged_on_records_not_blank_lines():
    reasons = [report.Reason("field 't': '…' bad", 3, "in.jsonl", 2)]
    totals = {"lines_read": 5, "blank_lines": 2, "dead_letters": 3, "events_valid": 0}
    assert "no valid event in 3 records" in failure(totals, reasons, None)
    assert "top reason: field 't': '…' bad" in failure(totals, reasons, None)
    assert failure({"lines_read": 2, "blank_lines": 2}, [], None) is None
    some = {"lines_read": 100, "dead_letters": 2, "events_valid": 98}
    assert failure(some, reasons, None) is None
    assert failure(some, reasons, 0.02) is None
    assert "2.00%), over --max_dead_letter_ratio 0.01" in failure(some, reasons, 0.01)


def test_all_bad_input_fails_the_job_and_names_the_reason(target, tmp_path, capsys):
    lines = [SLASH % i for i in range(7)] + ["", "not json"]
    source = write_lines(tmp_path / "m.jsonl", lines)
    dead = tmp_path / "dead" / "m"
    with pytest.raises(JobFailed, match="no valid event in 8 records read") as failed:
        run_job("smart_meters", target, source, dead)
    assert exits.ending(failed.value)[0] != 0
    # the records as a whole, neither one bad record (a dead-letter reason) nor the system's
    assert isinstance(failed.value, RunFailed) and not isinstance(failed.value, DataError)
    assert exits.ending(failed.value, "btts ingest smart_meters", job=True)[0] == 1
    out = capsys.readouterr().out
    assert "top dead-letter reasons:" in out
    assert f"7  field 'timestamp': not an RFC 3339 time: '…'  (first: {source}:1)" in out
    assert f"1  invalid JSON: Expecting value at column N  (first: {source}:9)" in out
    letters = read_dead_letters(dead)
    assert len(letters) == 8  # every bad line kept, with its reason and line
    assert sorted(d["line"] for d in letters) == [1, 2, 3, 4, 5, 6, 7, 9]
    assert engine.read_rows(target, "SENSOR") == []


def test_max_dead_letter_ratio_fails_after_writing_what_was_valid(target, tmp_path):
    source = write_lines(tmp_path / "m.jsonl", [GOOD, SLASH % 1])
    dead = tmp_path / "dead" / "m"
    result = run_job("smart_meters", target, source, dead, ["--max_dead_letter_ratio=0.5"])
    assert result.counters["events_valid"] == 1
    with pytest.raises(JobFailed, match=r"1 dead letters in 2 records \(50.00%\)"):
        run_job("smart_meters", target, source, dead, ["--max_dead_letter_ratio=0.4"])
    (row,) = engine.read_rows(target, "SENSOR", latest_only=True)
    assert row.latest()[("METER", b"0015")] == b"13.45"
    with pytest.raises(SystemExit, match="give a share from 0 to 1"):
        run_job("smart_meters", target, source, dead, ["--max_dead_letter_ratio=5"])


def test_btts_check_validates_without_writing_or_needing_bigtable(tmp_path):
    """`btts check` runs with no Bigtable at all (no emulator variable), writes no table and
    no dead-letter file, prints the summary and exits non-zero when nothing is valid."""
    readings = [GOOD.replace("00:15", f"00:{m:02d}") for m in range(10)]
    good = write_lines(tmp_path / "good.jsonl", [*readings, SLASH % 2])  # 1 of 11: under 10%
    bad = write_lines(tmp_path / "bad.jsonl", [SLASH % 3])
    env = {k: v for k, v in __import__("os").environ.items() if "EMULATOR" not in k}
    cmd = [sys.executable, "-m", "btts_cli.main", "check", "smart_meters"]
    dead = f"--dead_letter={tmp_path / 'dead' / 'm'}"
    ok = subprocess.run(
        [*cmd, f"--input={good}", dead], capture_output=True, text=True, env=env, timeout=120
    )
    assert ok.returncode == 0, ok.stderr
    assert "validate only: nothing written" in ok.stdout
    assert "valid events              10" in ok.stdout
    assert "1  field 'timestamp': not an RFC 3339 time: '…'" in ok.stdout
    failed = subprocess.run(
        [*cmd, f"--input={bad}", dead], capture_output=True, text=True, env=env, timeout=120
    )
    assert failed.returncode == 1
    assert "error: no valid event in 1 records read" in failed.stderr
    assert not (tmp_path / "dead").exists()


def test_the_summary_says_when_row_writes_share_rows(target, tmp_path, capsys):
    """Three readings of one meter on one day are three writes into one SENSOR day row."""
    lines = [GOOD, GOOD.replace("00:15", "00:30"), GOOD.replace("00:15", "00:45")]
    source = write_lines(tmp_path / "m.jsonl", lines)
    result = run_job("smart_meters", target, source, tmp_path / "dead" / "m")
    assert result.counters["rows_SENSOR"] == 3
    assert result.counters["distinct_rows_SENSOR"] == 1
    assert "(3 row writes into 1 distinct row)" in capsys.readouterr().out
    assert len(engine.read_rows(target, "SENSOR")) == 1


@pytest.mark.parametrize(
    ("text", "dead", "records", "fails"),
    [("10%", 10, 100, False), ("10%", 11, 100, True), ("0", 1, 1000, True), ("5", 5, 6, False),
     ("100%", 99, 100, False), ("0%", 1, 100, True)],
)  # fmt: skip
def test_max_bad_records_takes_a_count_or_a_share(text, dead, records, fails):
    assert parse_bad_records(text).exceeded(dead, records) is fails


@pytest.mark.parametrize("text", ["abc", "-1", "150%", "1.5", ""])
def test_a_bad_max_bad_records_says_what_it_takes(text):
    with pytest.raises(ValueError, match=r"neither a count .* nor a share"):
        parse_bad_records(text)


def test_a_run_that_dead_letters_most_of_its_input_fails_by_default(target, tmp_path):
    """The default limit (10%): 3 of 4 records dead-lettered is a failed run, after writing the
    valid one; the error names the top reasons with their first line and the flag."""
    source = write_lines(tmp_path / "m.jsonl", [GOOD, SLASH % 1, SLASH % 2, "{"])
    dead = tmp_path / "dead" / "m"
    with pytest.raises(JobFailed) as failed:
        run_job("smart_meters", target, source, dead, ["--max_bad_records=10%"])
    message = str(failed.value)
    assert "3 dead letters in 4 records (75.00%), over --max_bad_records 10%" in message
    assert f"not an RFC 3339 time: '…' (2, first at {source}:2)" in message
    assert "pass --max_bad_records 100%" in message
    assert len(engine.read_rows(target, "SENSOR")) == 1  # what was valid landed
    report = run_job("smart_meters", target, source, dead, ["--max_bad_records=3"])
    assert report.counters["dead_letters"] == 3
