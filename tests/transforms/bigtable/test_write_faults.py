"""Faults in the middle of a write: a paused server is waited for, a dead one fails the job
within a bounded time, and nothing is lost or duplicated either way (issue: reliability)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from btts import config
from btts.emulator import ENV_HOST, Emulator
from btts.query import engine
from btts.samples import data
from tests.support.jobs import dump, run_job, write_lines

EVENTS_HOSTS, EVENTS_SECONDS = 100, 600  # 12,000 events: seconds of writing
TABLES = ("METRIC", "CURRENT_METRIC")


@pytest.fixture
def own_emulator(bigtable_emulator):
    """An emulator this test may pause or kill (never the session's shared one)."""
    emu = Emulator().start()
    previous = os.environ[ENV_HOST]
    os.environ[ENV_HOST] = emu.endpoint
    try:
        yield emu
    finally:
        os.environ[ENV_HOST] = previous
        if emu.process is not None:
            os.kill(emu.process.pid, signal.SIGCONT)
        emu.stop()


def _input(tmp_path):
    lines = list(data.metric_events(hosts=EVENTS_HOSTS, seconds=EVENTS_SECONDS))
    return write_lines(tmp_path / "in.jsonl", lines), len(lines)


def _when_writing_starts(target: config.Target, action) -> threading.Thread:
    """Run ``action`` as soon as the first METRIC row is visible (the write is under way)."""

    def watch():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if engine.read_rows(target, "METRIC", limit=1):
                    action()
                    return
            except Exception:  # the table may not exist yet
                pass
            time.sleep(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def _clean_run_dump(tmp_path, source) -> dict:
    clean = config.Target("test-project", "clean")
    run_job("server_metrics", clean, source, tmp_path / "clean-dead")
    return {t: dump(clean, t, latest_only=True) for t in TABLES}


def test_a_paused_server_is_waited_for_and_every_row_lands_once(own_emulator, tmp_path):
    source, events = _input(tmp_path)
    target = config.Target("test-project", "paused")
    paused = []

    def pause():
        os.kill(own_emulator.process.pid, signal.SIGSTOP)
        paused.append(time.monotonic())
        time.sleep(6)
        os.kill(own_emulator.process.pid, signal.SIGCONT)

    watcher = _when_writing_starts(target, pause)
    result = run_job("server_metrics", target, source, tmp_path / "dead")
    watcher.join(timeout=30)
    assert paused, "the server was never paused mid-write"

    metric = dump(target, "METRIC")  # every version: a retried write must not add one
    assert len(metric) == events * len(data.METRIC_NAMES)
    assert len({cell[:3] for cell in metric}) == len(metric)  # one cell per key and column
    assert result.counters["rows_METRIC"] == events
    assert {t: dump(target, t, latest_only=True) for t in TABLES} == _clean_run_dump(
        tmp_path, source
    )


def test_a_dead_server_fails_the_job_in_bounded_time_and_a_rerun_is_clean(own_emulator, tmp_path):
    source, _ = _input(tmp_path)
    target = config.Target("test-project", "killed")
    watcher = _when_writing_starts(target, lambda: os.kill(own_emulator.process.pid, 9))
    started = time.monotonic()
    with pytest.raises(Exception) as failure:
        run_job("server_metrics", target, source, tmp_path / "dead", ["--write_timeout_seconds=5"])
    elapsed = time.monotonic() - started
    watcher.join(timeout=5)
    message = str(failure.value)
    assert "write error" in message and "METRIC" in message, message
    assert elapsed < 120, f"the job took {elapsed:.0f}s to give up"

    own_emulator.stop()  # the emulator keeps nothing: a restart is an empty instance
    restarted = Emulator().start()
    os.environ[ENV_HOST] = restarted.endpoint
    try:
        run_job("server_metrics", target, source, tmp_path / "rerun-dead")
        rerun = {t: dump(target, t, latest_only=True) for t in TABLES}
        assert rerun == _clean_run_dump(tmp_path, source)
    finally:
        restarted.stop()
