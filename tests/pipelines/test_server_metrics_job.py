"""The server-metrics job end to end on the emulator, read back through the client (and cbt)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from btts.query import engine
from btts.samples import data
from pipelines import server_metrics as job
from tests.support.jobs import compiled, dump, read_dead_letters, run_job, write_lines
from transforms.text import events


def _expected_keys(lines: list[str]) -> tuple[set[bytes], set[bytes]]:
    metric, current = set(), set()
    for line in lines:
        m, c = compiled("server_metrics")(events.parse_json_object(line))
        metric.add(m.key)
        current.add(c.key)
    return metric, current


def test_good_and_bad_lines_reconcile(target, tmp_path):
    good = list(data.metric_events(hosts=7, seconds=60))
    bad = list(data.BAD_METRIC_LINES)
    lines = good[:40] + bad[:4] + good[40:] + bad[4:] + [""]
    source = write_lines(tmp_path / "in.jsonl", lines)
    dead = tmp_path / "dead" / "metrics"

    result = run_job("server_metrics", target, source, dead)

    metric_keys, current_keys = _expected_keys(good)
    assert {r.key for r in engine.read_rows(target, "METRIC")} == metric_keys
    assert {r.key for r in engine.read_rows(target, "CURRENT_METRIC")} == current_keys
    letters = read_dead_letters(dead)
    assert sorted(d["raw"] for d in letters) == sorted(bad)
    assert all(d["reason"] and d["pipeline"] == "server_metrics" for d in letters)
    assert all(d["source"].endswith("in.jsonl") for d in letters)
    c = result.counters
    assert c["lines_read"] == len(lines)
    assert c["blank_lines"] == 1
    assert c["lines_read"] == c["events_valid"] + c["dead_letters"] + c["blank_lines"]
    assert c["events_valid"] == len(good) and c["dead_letters"] == len(bad)
    assert c["rows_METRIC"] == c["rows_CURRENT_METRIC"] == len(good)


def test_every_metric_value_lands_as_source_text(target, tmp_path):
    good = list(data.metric_events(hosts=3, seconds=15))
    run_job("server_metrics", target, write_lines(tmp_path / "in.jsonl", good), tmp_path / "d")
    stored = {r.key: r.latest() for r in engine.read_rows(target, "METRIC")}
    for line in good:
        event = json.loads(line)
        key = f"{event['hostname']}#{events_ms(event['timestamp'])}".encode()
        for name, value in event["metrics"].items():
            assert stored[key][("METRIC", name.upper().encode())] == json.dumps(value).encode()


def events_ms(text: str) -> int:
    from transforms.text.timefmt import parse_event_time

    return parse_event_time(text)


def test_running_twice_leaves_identical_tables(target, tmp_path):
    lines = list(data.metric_events(hosts=5, seconds=30)) + list(data.BAD_METRIC_LINES)
    source = write_lines(tmp_path / "in.jsonl", lines)
    run_job("server_metrics", target, source, tmp_path / "d1")
    first = {t: dump(target, t, latest_only=True) for t in ("METRIC", "CURRENT_METRIC")}
    run_job("server_metrics", target, source, tmp_path / "d2")
    second = {t: dump(target, t, latest_only=True) for t in ("METRIC", "CURRENT_METRIC")}
    assert first == second
    assert len(first["METRIC"]) == 5 * 6 * len(data.METRIC_NAMES)


def test_late_reading_in_a_later_run_does_not_move_current_backwards(target, tmp_path):
    new = '{"hostname": "h", "timestamp": "2015-03-16T19:53:37.045Z", "metrics": {"cpu": 0.05}}'
    old = '{"hostname": "h", "timestamp": "2015-03-16T19:53:32.045Z", "metrics": {"cpu": 0.02}}'
    run_job("server_metrics", target, write_lines(tmp_path / "a.jsonl", [new]), tmp_path / "d")
    run_job("server_metrics", target, write_lines(tmp_path / "b.jsonl", [old]), tmp_path / "e")
    (row,) = engine.read_rows(target, "CURRENT_METRIC", latest_only=True)
    assert row.latest() == {("METRIC", b"CPU"): b"0.05"}
    assert row.cells[0].timestamp_us == 1426535617045000


def test_csv_input(target, tmp_path):
    source = write_lines(
        tmp_path / "m.csv",
        ["hostname,timestamp,cpu/cpu1_usr", "server1.bbb.com,2015-03-16T19:53:32.045Z,0.02"],
    )
    run_job("server_metrics", target, source, tmp_path / "d")
    (row,) = engine.read_rows(target, "METRIC")
    assert row.key == b"server1.bbb.com#1426535612045"
    assert row.latest() == {("METRIC", b"CPU/CPU1_USR"): b"0.02"}


def test_missing_table_stops_the_job_before_any_data_moves(target, tmp_path):
    source = write_lines(tmp_path / "in.jsonl", list(data.metric_events(hosts=1, seconds=5)))
    with pytest.raises(SystemExit) as stopped:
        run_job("server_metrics", target, source, tmp_path / "d", create=False)
    message = str(stopped.value)
    assert "table METRIC does not exist" in message
    assert "btts tables create --table METRIC --table CURRENT_METRIC" in message
    assert not list(tmp_path.glob("d*"))


def test_a_typo_in_a_flag_is_an_error_not_a_warning(target, tmp_path):
    with pytest.raises(SystemExit, match=r"unknown option.*--inptu"):
        job.run(["--inptu=x.jsonl"])


def test_no_input_is_an_error(target):
    with pytest.raises(SystemExit, match="no input"):
        job.run([f"--bigtable_instance={target.instance}"])


def test_help_lists_this_jobs_flags(capsys):
    with pytest.raises(SystemExit) as done:
        job.run(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--input", "--dead_letter", "--bigtable_instance", "--create_tables"):
        assert flag in out
    assert "--dataflow_endpoint" not in out  # not Beam's hundreds of runner flags


@pytest.mark.skipif(shutil.which("cbt") is None, reason="Google's cbt CLI is not installed")
def test_cbt_reads_the_rows_and_values_of_spec_5_2(target, tmp_path, golden_cases):
    case = golden_cases["server-metrics-fanout"]
    run_job(
        "server_metrics",
        target,
        write_lines(tmp_path / "in.jsonl", case["input_lines"]),
        tmp_path / "d",
    )
    out = subprocess.run(
        ["cbt", "-project", target.project, "-instance", target.instance, "read", "METRIC"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=dict(os.environ),
    ).stdout
    assert "server1.bbb.com#1426535612045" in out
    for cell in case["expected_rows"][0]["cells"]:
        assert f"METRIC:{cell['qualifier']}" in out
        assert f'"{cell["value"]}"' in out
    assert "2015/03/16-19:53:32.045000" in out


@pytest.mark.parametrize("runner", [(), ("--runner=direct",), ("--runner", "DirectRunner")])
def test_a_local_run_never_tries_prism(target, tmp_path, monkeypatch, runner):
    """Beam's DirectRunner first tries Prism (a binary fetched from GitHub); a local job goes
    straight to the in-process runner, so it neither waits on the network nor switches runner:
    by default, and by any name of the DirectRunner (``--runner direct`` as Beam reads it)."""
    from apache_beam.runners.portability import prism_runner

    tried = []

    def refuse(runner, pipeline, options):  # Beam falls back on any error: record the try
        tried.append(pipeline)
        raise RuntimeError("no Prism here")

    monkeypatch.setattr(prism_runner.PrismRunner, "run_pipeline", refuse)
    good = list(data.metric_events(hosts=2, seconds=10))
    lines = write_lines(tmp_path / "in.jsonl", good)
    result = run_job("server_metrics", target, lines, tmp_path, extra=runner)
    assert result.counters["rows_METRIC"] == len(good)
    assert not tried


def test_a_named_runner_is_left_alone():
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines import common

    def made(argv):
        options = PipelineOptions(argv)
        return common.new_pipeline(options, common.runner_of(options)).runner

    for argv in ([], ["--runner=direct"], ["--runner=DirectRunner"], ["--runner=Direct"]):
        local = made(argv)
        assert type(local).__name__ == "SwitchingDirectRunner" and local._is_interactive, argv
    assert type(made(["--runner=BundleBasedDirectRunner"])).__name__ == "BundleBasedDirectRunner"
