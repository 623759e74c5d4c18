"""What a job's run hands back and prints: a RunReport value, a last summary line that shows a
partial load, dead letters that a re-run never deletes, and one clear line (no traceback, no
Beam usage) for a missing input or a bad flag."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

from pipelines import common
from tests.support.jobs import read_dead_letters, run_job, write_lines

GOOD = '{"meter_id": 987654, "timestamp": "2017-07-26T00:15:00Z", "reading": 13.45}'
OTHER = '{"meter_id": 987655, "timestamp": "2017-07-26T00:30:00Z", "reading": 2.5}'
BAD = '{"meter_id": 987654, "timestamp": "2017/07/26 00:01", "reading": 1.5}'


def _last_line(out: str) -> str:
    return out.rstrip("\n").splitlines()[-1]


def test_run_returns_a_report_and_the_summary_ends_with_what_landed(target, tmp_path, capsys):
    source = write_lines(tmp_path / "m.jsonl", [GOOD, BAD, "", OTHER])
    report = run_job("smart_meters", target, source, tmp_path / "dead" / "m")
    assert isinstance(report, common.RunReport)
    assert report.counters["events_valid"] == 2 and report.counters["dead_letters"] == 1
    assert report.records == 3 and report.tables == ("SENSOR",) and report.state == "DONE"
    assert [r.count for r in report.reasons] == [1]
    out = capsys.readouterr().out
    assert _last_line(out) == "smart_meters: 2 of 3 records landed (1 dead letters, 33.33%)"
    assert f"dead letters to {report.dead_letters}" in out
    with pytest.raises(AttributeError):
        report.counters = {}  # a value: frozen


def test_the_last_line_also_when_nothing_was_dead_lettered(target, tmp_path, capsys):
    source = write_lines(tmp_path / "m.jsonl", [GOOD])
    run_job("smart_meters", target, source, tmp_path / "dead" / "m")
    assert _last_line(capsys.readouterr().out) == (
        "smart_meters: 1 of 1 records landed (0 dead letters, 0.00%)"
    )


def test_validate_only_says_valid_not_landed(tmp_path, capsys):
    source = write_lines(tmp_path / "m.jsonl", [GOOD, BAD])
    report = common.run_file_ingest(
        [f"--input={source}", "--validate_only", "--max_bad_records=1"],
        classes=[common.FileInputOptions, common.BigtableOptions],
        job_for=common.builtin_job("smart_meters", "test"),
    )
    assert report.dead_letters is None
    assert _last_line(capsys.readouterr().out) == (
        "smart_meters: 1 of 2 records valid (validate only: nothing written) "
        "(1 dead letters, 50.00%)"
    )


def test_a_rerun_keeps_the_previous_runs_dead_letters(target, tmp_path, capsys):
    source = write_lines(tmp_path / "m.jsonl", [GOOD, BAD])
    prefix = tmp_path / "dead" / "m"
    first = run_job("smart_meters", target, source, prefix)
    second = run_job("smart_meters", target, source, prefix)
    assert first.dead_letters != second.dead_letters
    for report in (first, second):
        (path,) = glob.glob(report.dead_letters)
        assert os.path.basename(path).startswith("m-")
    assert len(read_dead_letters(prefix)) == 2  # one per run, none deleted
    assert "Deleting" not in capsys.readouterr().err


def _job(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipelines.smart_meters", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "BIGTABLE_EMULATOR_HOST": "localhost:1"},
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--input=/no/such/dir/*.jsonl", "--skip_preflight"],
            "--input /no/such/dir/*.jsonl: no file matches",
        ),
        (
            ["--input=/no/such/file.jsonl", "--skip_preflight"],
            "--input /no/such/file.jsonl: no such file",
        ),
        (
            ["--input=x", "--max_dead_letter_ratio=abc"],
            "--max_dead_letter_ratio: 'abc' is not a number",
        ),
        (["--input=x", "--creat_tables"], "did you mean --create_tables?"),
        (["--input=x", "--input_format=xml"], "--input_format: invalid choice: 'xml'"),
    ],
)
def test_a_users_mistake_is_one_line_and_a_nonzero_exit(argv, message):
    done = _job(*argv)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr + done.stdout
    assert "usage:" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("smart_meters: error: ") and message in lines[0]


def test_an_empty_glob_is_refused_before_the_pipeline_starts(tmp_path):
    (tmp_path / "in").mkdir()
    with pytest.raises(SystemExit, match=r"--input .*\*\.jsonl: no file matches") as stop:
        common.run_file_ingest(
            [f"--input={tmp_path / 'in' / '*.jsonl'}", "--validate_only"],
            classes=[common.FileInputOptions, common.BigtableOptions],
            job_for=common.builtin_job("smart_meters", "test"),
        )
    assert stop.value.code != 0


def test_a_missing_input_is_named_after_the_preflight(target, tmp_path):
    with pytest.raises(SystemExit, match=r"--input .*nope\.jsonl: no such file") as stop:
        run_job("smart_meters", target, tmp_path / "nope.jsonl", tmp_path / "dead" / "m")
    assert stop.value.code != 0
