"""The emulator harness: found or explained, started on a free port, stopped by PID."""

from __future__ import annotations

import os
import socket

import pytest

from btts import emulator, errors


def test_missing_binary_gives_an_install_hint(monkeypatch):
    monkeypatch.setenv(emulator.ENV_BINARY, "/nonexistent/cbtemulator")
    with pytest.raises(errors.EmulatorError, match="apt-get install google-cloud-cli-bigtable"):
        emulator.find_binary()


def test_start_answers_and_stop_kills_by_pid(bigtable_emulator):
    emu = emulator.Emulator().start()
    pid = emu.process.pid
    try:
        assert emu.port != bigtable_emulator.port
        socket.create_connection((emu.host, emu.port), timeout=2).close()
    finally:
        emu.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(OSError):
        socket.create_connection((emu.host, emu.port), timeout=1).close()


def test_context_restores_the_environment(bigtable_emulator):
    before = os.environ[emulator.ENV_HOST]
    with emulator.Emulator() as emu:
        assert os.environ[emulator.ENV_HOST] == emu.endpoint != before
    assert os.environ[emulator.ENV_HOST] == before


def test_detached_start_and_stop(tmp_path):
    state_file = tmp_path / "emulator.json"
    state = emulator.start_detached(state_file)
    try:
        assert emulator.start_detached(state_file)["pid"] == state["pid"]  # reused, not doubled
        socket.create_connection((state["host"], state["port"]), timeout=2).close()
    finally:
        assert emulator.stop_detached(state_file)["pid"] == state["pid"]
    assert not state_file.exists()
    assert emulator.stop_detached(state_file) is None


def _environment_of(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as f:
        pairs = (item.decode().partition("=") for item in f.read().split(b"\0") if item)
    return {name: value for name, _, value in pairs}


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="reads /proc")
def test_the_emulator_collects_less_often_unless_told_otherwise(monkeypatch):
    monkeypatch.delenv("GOGC", raising=False)
    monkeypatch.delenv("GOMEMLIMIT", raising=False)
    with emulator.Emulator() as emu:
        env = _environment_of(emu.process.pid)
    assert env["GOGC"] == "400"
    assert "GOMEMLIMIT" not in env
    monkeypatch.setenv("GOGC", "100")  # the user's choice wins
    with emulator.Emulator() as emu:
        assert _environment_of(emu.process.pid)["GOGC"] == "100"
