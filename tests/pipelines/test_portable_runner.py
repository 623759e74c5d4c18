"""Every batch job and the nightly copy on Beam's PortableRunner, against the emulator: the same
tables, counters and dead letters as the in-process run.

The runner talks to a local job service (``apache_beam.runners.portability.
local_job_service_main``) that runs the job with an EXTERNAL environment: a worker pool
(``apache_beam.runners.worker.worker_pool_main``) starts each SDK worker as a process of its own,
as ``python`` from PATH, so the pool is started with this interpreter's directory first on PATH
(the venv, where the project is installed). Both servers are started once for this module, on
free ports, with a hard timeout (a hung job fails instead of holding the suite), and stopped by
their process id. Nothing of a job reaches a worker but what the runner ships: the pipeline
proto, its pickled DoFns, and the files the workers read; the tally of each read and write
(tests/support/runner_cases.py) shows they ran in a worker the pool started, not in this process
nor in the servers. The local job service runs a job on one SDK worker (its runner takes no
``--direct_num_workers``): two workers at once are the multi-process tests' part
(tests/pipelines/test_multiprocessing_runner.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from btts.emulator import free_port, stop_pid, wait_for_port
from tests.support import runner_cases
from transforms.metrics import WORKER_TALLY_ENV

HARD_TIMEOUT_S = 900  # the servers' whole life: every job of this module, on a busy machine
STARTUP_S = 120
CASES = runner_cases.cases()
# The column patterns share one job and its code path; one (protobuf cells) stands for them.
PORTABLE_CASES = [c for c in CASES if not c.startswith("weather_balloons") or "TS-BLOB" in c]


def _start(module: str, args: list[str], env: dict, log: Path) -> subprocess.Popen:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", module, *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its workers share its process group: stopped with it
        )


def _stop(process: subprocess.Popen) -> None:
    """The server and what it started (its session's process group), by its id."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    stop_pid(process.pid, process)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def portable(bigtable_emulator, tmp_path_factory):
    """``(runner flags, tally directory, server pids, shared directory)`` of a job service
    and an external worker pool."""
    where = tmp_path_factory.mktemp("portable")
    tally = where / "tally"
    tally.mkdir()
    env = {
        **os.environ,  # BIGTABLE_EMULATOR_HOST: this session's emulator
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        WORKER_TALLY_ENV: str(tally),
    }
    job_port, pool_port = free_port(), free_port()
    servers = [
        _start("apache_beam.runners.portability.local_job_service_main",
               ["--port", str(job_port)], env, where / "job_service.log"),
        _start("apache_beam.runners.worker.worker_pool_main",
               ["--service_port", str(pool_port)], env, where / "worker_pool.log"),
    ]  # fmt: skip
    watchdog = threading.Timer(HARD_TIMEOUT_S, lambda: [_stop(s) for s in servers])
    watchdog.daemon = True
    watchdog.start()
    try:
        for server, port in zip(servers, (job_port, pool_port), strict=True):
            wait_for_port("127.0.0.1", port, STARTUP_S, server)
        flags = [
            "--runner=PortableRunner",
            f"--job_endpoint=localhost:{job_port}",
            "--environment_type=EXTERNAL",
            f"--environment_config=localhost:{pool_port}",
        ]
        yield flags, tally, [s.pid for s in servers], runner_cases.shared_dir(tmp_path_factory)
    finally:
        watchdog.cancel()
        for server in servers:
            _stop(server)


@pytest.mark.parametrize("name", PORTABLE_CASES)
def test_a_batch_job_lands_the_same_on_the_portable_runner(name, portable, tmp_path):
    flags, tally, servers, shared = portable
    case = CASES[name]
    pattern, want = runner_cases.reference(case, shared)  # in process, once per session
    runner_cases.clear(tally)
    got = runner_cases.land(
        case, pattern, runner_cases.new_target(), tmp_path / "portable" / "dead", flags
    )
    assert got.raw == want.raw
    assert got.gc == want.gc
    assert got.counters == want.counters
    assert got.reasons == want.reasons
    assert got.dead == want.dead and len(got.dead) == len(case.bad)
    runner_cases.assert_every_worker_worked(tally, workers=1, not_in=servers)


def test_the_nightly_copy_lands_the_same_on_the_portable_runner(portable):
    flags, tally, servers, shared = portable
    want = runner_cases.nightly_reference(shared)
    runner_cases.clear(tally)
    got = runner_cases.land_nightly(runner_cases.new_target(), flags)
    assert got == want
    runner_cases.assert_every_worker_worked(tally, workers=1, not_in=servers)
