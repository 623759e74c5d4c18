"""The main job (`make demo` → `btts demo`), run with tiny sizes: it prints every documented
query's answer, each checked against the generated events, and exits non-zero on any failure."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from btts.samples import data as samples
from btts_cli import demo

QUERIES = 20


def _btts(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "btts_cli.main", *args],
        capture_output=True,
        text=True,
        timeout=240,
        env=env or dict(os.environ),
    )


def test_the_demo_prints_every_querys_checked_answer_and_exits_0(tmp_path):
    done = _btts("demo", "--tiny", "--output_dir", str(tmp_path / "out"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    titles = re.findall(r"^Q(\d+)\. ", out, flags=re.M)
    assert titles == [str(n) for n in range(1, QUERIES + 1)]
    assert out.count("equal to the generated events ✓") == QUERIES
    for command in ("metrics", "current", "recent", "meter", "meters-of-day", "quotes",
                    "trades", "player-games", "games", "balloon", "battery", "garden", "sales",
                    "tenant"):  # fmt: skip
        assert f"$ btts query {command} " in out or f"$ btts query {command}\n" in out, command
    for pattern in ("TS-COLS", "TS-BLOB", "TB-CELL", "TB-COL"):
        assert f"--pattern {pattern}" in out
    assert "dropped 1 row(s); acme has 0 left" in out
    # every batch job ran, the nightly job copied both days, the summary counts the tables
    for job in ("server_metrics", "metric_recent", "smart_meters", "market_data", "battery "
                "salted", "game_results", "garden", "sales", "device"):  # fmt: skip
        assert re.search(rf"^  {job}\s+\d", out, flags=re.M), job
    assert "SENSOR → SENSOR_20170725, SENSOR_20170726" in out
    assert re.search(r"^  SENSOR_20170726\s+4$", out, flags=re.M)
    assert "Phases: sample data" in out and "Stopped the emulator." in out
    assert "Traceback" not in done.stderr


def test_a_demo_that_cannot_start_the_emulator_exits_non_zero(tmp_path):
    env = dict(os.environ, BTTS_CBTEMULATOR=str(tmp_path / "no-such-cbtemulator"))
    done = _btts("demo", "--tiny", "--output_dir", str(tmp_path / "out"), env=env)
    assert done.returncode != 0
    assert "demo: cannot start the Bigtable emulator" in done.stderr


def test_counts_that_do_not_reconcile_stop_the_demo(tmp_path, monkeypatch):
    # a "bad" line that is in fact valid: one more event than expected, one dead letter fewer
    good = '{"hostname": "web1", "timestamp": "2015-03-16T19:53:32.045Z", "metrics": {"c": 1}}'
    bad = {**demo.BAD_LINES, "server_metrics": (*samples.BAD_METRIC_LINES, good)}
    monkeypatch.setattr(demo, "BAD_LINES", bad)
    with pytest.raises(SystemExit) as stop:
        demo.run(["--tiny", "--output_dir", str(tmp_path / "out")])
    assert "server_metrics: counts do not reconcile" in str(stop.value.code)


def test_a_wrong_answer_stops_the_demo(tmp_path, monkeypatch):
    real = demo.build_queries

    def with_a_wrong_expectation(sizes):
        items = real(sizes)
        items[0].expected = items[0].expected[1:]
        return items

    monkeypatch.setattr(demo, "build_queries", with_a_wrong_expectation)
    monkeypatch.setattr(demo, "run_pipelines", _only_server_metrics(demo.run_pipelines))
    monkeypatch.setattr(demo, "run_nightly", lambda out, sizes: ([], 0.0))
    with pytest.raises(SystemExit) as stop:
        demo.run(["--tiny", "--output_dir", str(tmp_path / "out")])
    assert "Q1 (Metrics of one host between two times" in str(stop.value.code)
    assert "they differ" in str(stop.value.code)


def _only_server_metrics(run_pipelines):
    def run(out, datasets):
        return run_pipelines(out, {"server_metrics": datasets["server_metrics"]})

    return run


def test_the_defaults_are_the_issues_minimums():
    sizes = samples.Sizes()
    assert sizes.meters * sizes.meter_days * 96 >= 192_000
    assert sizes.hosts * sizes.metric_minutes * 60 // 5 >= 12_000
    assert sizes.tick_seconds * 1 <= 60 and sizes.symbols >= 3
    assert sizes.balloon_minutes == 24 * 60
