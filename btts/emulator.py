"""Start and stop the official emulators on a free loopback port: Bigtable (``cbtemulator``)
and Pub/Sub (``cloud-pubsub-emulator``, for the streaming jobs).

Used by the test fixtures, the demo and ``btts emulator start|stop``. A process is stopped by
its PID; nothing is left running.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from btts.errors import EmulatorError

__all__ = [
    "EMULATOR_INSTANCE",
    "EMULATOR_PROJECT",
    "ENV_HOST",
    "STATE_FILE",
    "Emulator",
    "alive",
    "start_detached",
    "stop_detached",
]

ENV_BINARY = "BTTS_CBTEMULATOR"
ENV_HOST = "BIGTABLE_EMULATOR_HOST"
DEBIAN_SDK_ROOT = "/usr/lib/google-cloud-sdk"  # where the Debian packages install the SDK
INSTALL_HINT = (
    "The Bigtable emulator (cbtemulator) was not found. Install it with one of:\n"
    "  sudo apt-get install google-cloud-cli-bigtable-emulator\n"
    "  gcloud components install bigtable\n"
    f"or point {ENV_BINARY} at the cbtemulator binary."
)
PUBSUB_ENV_BINARY = "BTTS_PUBSUB_EMULATOR"
PUBSUB_ENV_HOST = "PUBSUB_EMULATOR_HOST"
PUBSUB_INSTALL_HINT = (
    "The Pub/Sub emulator was not found. Install it (it needs Java 11+) with one of:\n"
    "  sudo apt-get install google-cloud-cli-pubsub-emulator\n"
    "  gcloud components install pubsub-emulator\n"
    f"or point {PUBSUB_ENV_BINARY} at the cloud-pubsub-emulator script."
)
# cbtemulator keeps every row in Go's heap, and under the collector's default pacing a
# write-heavy job makes it spend over a third of its CPU collecting: CPU the job beside it
# needs. Collecting at 5x the live heap instead of 2x cut its CPU for 400,000 rows from 4.5 s to
# 3.3 s (2 cores). GOGC=off with a GOMEMLIMIT went further until the heap neared the ceiling,
# then collected without pause and slowed writes fivefold: a ratio scales, a ceiling does not.
# A GOGC or GOMEMLIMIT set in the environment wins.
GO_MEMORY = {"GOGC": "400"}
# Project and instance used against the emulator, which accepts any names.
EMULATOR_PROJECT = "test-project"
EMULATOR_INSTANCE = "test-instance"


def find_binary(
    env_var: str = ENV_BINARY,
    sdk_path: tuple[str, ...] = ("bigtable-emulator", "cbtemulator"),
    hint: str = INSTALL_HINT,
) -> str:
    """An emulator binary (``sdk_path`` under an SDK root's platform/): $env_var, then PATH,
    then the Debian packages' SDK root, then gcloud's (asking gcloud takes seconds). Raises
    :class:`EmulatorError` with an install hint."""
    explicit = os.environ.get(env_var)
    if explicit:
        if os.access(explicit, os.X_OK):
            return explicit
        raise EmulatorError(f"{env_var}={explicit} is not an executable file.\n{hint}")
    on_path = shutil.which(sdk_path[-1])
    if on_path:
        return on_path
    default = os.path.join(DEBIAN_SDK_ROOT, "platform", *sdk_path)
    if os.access(default, os.X_OK):
        return default
    gcloud = shutil.which("gcloud")
    if gcloud:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            root = subprocess.run(
                [gcloud, "info", "--format=value(installation.sdk_root)"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
            ).stdout.strip()
            path = os.path.join(root, "platform", *sdk_path)
            if root and os.access(path, os.X_OK):
                return path
    raise EmulatorError(hint)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def wait_for_port(
    host: str, port: int, timeout: float, proc: subprocess.Popen | None = None
) -> None:
    """Raises EmulatorError (a UserError)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise EmulatorError(f"the emulator exited with code {proc.returncode} before answering")
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise EmulatorError(f"the emulator did not answer on {host}:{port} within {timeout:.0f}s")


@dataclass
class Emulator:
    """A running emulator. Use as a context manager, which also sets BIGTABLE_EMULATOR_HOST for
    the duration and restores the previous value after."""

    host: str = "127.0.0.1"
    port: int = 0
    binary: str | None = None
    startup_timeout: float = 30.0
    process: subprocess.Popen | None = None
    env_var = ENV_HOST
    runtime_env: ClassVar[dict[str, str]] = GO_MEMORY

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"

    def command(self) -> list[str]:
        return [self.binary or find_binary(), "-host", self.host, "-port", str(self.port)]

    def start(self) -> Emulator:
        if not self.port:
            self.port = free_port(self.host)
        self.process = subprocess.Popen(
            self.command(),
            env={**self.runtime_env, **os.environ},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C in the terminal must not kill it mid-cleanup
        )
        try:
            wait_for_port(self.host, self.port, self.startup_timeout, self.process)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.process is not None:
            stop_pid(self.process.pid, self.process)
            self.process = None

    def __enter__(self) -> Emulator:
        if self.process is None:
            self.start()
        self._previous = os.environ.get(self.env_var)
        os.environ[self.env_var] = self.endpoint
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is None:
            os.environ.pop(self.env_var, None)
        else:
            os.environ[self.env_var] = self._previous
        self.stop()


@dataclass
class PubSubEmulator(Emulator):
    """The Pub/Sub emulator (a Java program: slower to start, hence the longer timeout)."""

    startup_timeout: float = 90.0
    env_var = PUBSUB_ENV_HOST
    runtime_env: ClassVar[dict[str, str]] = {}

    def command(self) -> list[str]:
        binary = self.binary or find_binary(
            PUBSUB_ENV_BINARY,
            ("pubsub-emulator", "bin", "cloud-pubsub-emulator"),
            PUBSUB_INSTALL_HINT,
        )
        return [binary, f"--host={self.host}", f"--port={self.port}"]

    def stop(self) -> None:
        # The launcher script starts java as a child: stop the whole process group.
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
        super().stop()


def stop_pid(pid: int, proc: subprocess.Popen | None = None, grace: float = 5.0) -> None:
    """SIGTERM, wait, then SIGKILL: the emulator never outlives its owner."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc is not None:
            if proc.poll() is not None:
                return
        elif not alive(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if proc is not None:
        proc.wait(timeout=5)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    # A zombie child of ours still answers kill(0); reap it if it is ours.
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return True


# -- a detached emulator for `btts emulator start|stop` ------------------------------------------

STATE_FILE = Path(".btts") / "emulator.json"


def start_detached(state_file: Path = STATE_FILE, port: int = 0) -> dict:
    if state_file.exists():
        state = json.loads(state_file.read_text())
        if alive(state["pid"]):
            return state
    emu = Emulator(port=port).start()
    state = {"pid": emu.process.pid, "host": emu.host, "port": emu.port, "endpoint": emu.endpoint}
    state_file.parent.mkdir(parents=True, exist_ok=True)
    state_file.write_text(json.dumps(state))
    return state


def stop_detached(state_file: Path = STATE_FILE) -> dict | None:
    if not state_file.exists():
        return None
    state = json.loads(state_file.read_text())
    stop_pid(state["pid"])
    state_file.unlink()
    return state
