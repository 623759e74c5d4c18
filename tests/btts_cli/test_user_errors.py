"""Every mistake a user can make on the ``btts`` command line ends in one clear line on stderr
and a non-zero exit status, never a Python traceback (issue 34).

Each case runs ``btts`` (in this process, ending as ``python -m btts_cli.main`` would; two
cases run that itself) in a scratch directory, offline: no emulator unless the case names one
that is not running, no credentials."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

from tests.support import REPO

SCHEMA = REPO / "docs" / "schemas" / "ts-cols-stock-ticks.yaml"
BAD_SCHEMA = "bad.yaml"  # written into the scratch directory: one unknown pattern
MISSING = "no-such-file.jsonl"


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _gcloud_stub(folder: Path) -> str:
    """A ``gcloud`` that fails as gcloud does without an account: its message, exit 1."""
    folder.mkdir(exist_ok=True)
    stub = folder / "gcloud"
    stub.write_text(
        "#!/bin/sh\necho 'ERROR: (gcloud.builds.submit) You do not currently have an active "
        "account selected.' >&2\nexit 1\n"
    )
    stub.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"


# (id, argv, what the error line says, environment) — the btts layer's own errors.
CASES = [
    ("no command", [], "required: COMMAND", ""),
    ("unknown command", ["tabels"], "did you mean tables?", ""),
    ("unknown subcommand", ["tables", "lsit"], "did you mean list?", ""),
    ("missing subcommand", ["tables"], "required: ACTION", ""),
    ("unknown top flag", ["--bogus", "tables", "list"], "unrecognized arguments: --bogus", ""),
    ("unknown flag", ["tables", "create", "--tabel", "M"], "did you mean --table?", ""),
    ("bad int value", ["emulator", "start", "--port", "abc"], "argument --port", ""),
    ("bad choice", ["advise", "lint", "--fail_on", "sometimes"], "'warning'", ""),
    ("missing required flag", ["query", "metrics", "--host", "h"], "--start, --end", ""),
    ("bad time", ["query", "metrics", "--host", "h", "--start", "soon", "--end", "1"],
     "argument --start", ""),
    ("missing --tenant", ["tenant", "drop"], "required: --tenant", ""),
    ("unknown query", ["query", "metrcs"], "did you mean metrics?", ""),
    ("unknown declared query", ["query", "--schema", str(SCHEMA), "tick"], "tick", ""),
    ("declared query without its range", ["query", "--schema", str(SCHEMA), "ticks",
     "--symbol", "A"], "required: --start, --end", ""),
    ("schema query, unknown flag", ["query", "--schema", str(SCHEMA), "--tabel", "TICK"],
     "did you mean --table?", ""),
    ("missing schema file", ["tables", "show", "--schema", "nope.yaml"], "nope.yaml", ""),
    ("bad schema file", ["tables", "show", "--schema", BAD_SCHEMA], "1 problem(s)", "LIST"),
    ("unknown table", ["tables", "show", "--table", "NOPE"], "no table declaration", ""),
    ("advisor: unknown table", ["advise", "lint", "--table", "NOPE"], "NOPE", ""),
    ("advisor: no table", ["advise", "hotspots"], "name a TABLE", ""),
    ("no instance", ["tables", "create"], "pass --project and --instance", ""),
    ("emulator not running", ["tables", "list"], "no Bigtable emulator answers", "EMULATOR"),
    ("emulator not running (ingest)", ["ingest", "sales", f"--input={MISSING}"],
     "no Bigtable emulator answers", "EMULATOR"),
    ("no credentials", ["tables", "list", "--project", "p", "--instance", "i"],
     "credentials", ""),
    ("ingest: no job", ["ingest"], "name a job", ""),
    ("ingest: unknown job", ["ingest", "sale", "--input", MISSING], "did you mean sales?", ""),
    ("ingest: flags, no job", ["ingest", "--input", MISSING], "or pass --schema FILE", ""),
    ("check: no input", ["check", "smart_meters"], "no input", ""),
    ("ingest: unknown job flag", ["ingest", "sales", f"--input={MISSING}", "--creat_tables"],
     "--creat_tables", ""),
    ("ingest: bad schema file", ["ingest", "--schema", BAD_SCHEMA, f"--input={MISSING}"],
     "1 problem(s)", "LIST"),
    ("nightly: no instance", ["nightly", "--date", "20170726"], "pass --project", ""),
    ("demo: unknown flag", ["demo", "--bogus"], "unrecognized arguments: --bogus", ""),
    ("templates: unknown pipeline", ["templates", "build", "--pipeline", "nope"],
     "invalid choice", ""),
    ("templates --run without a project", ["templates", "build", "--run", "--root", "{root}"],
     "set PROJECT, REGION, BUCKET", ""),
    ("templates --run, gcloud fails", ["templates", "build", "--run", "--pipeline", "nightly",
     "--root", "{root}"], "the command above failed", "GCLOUD"),
]  # fmt: skip

# Errors raised inside a job (pipelines/, not the btts layer), not yet one clear line.
JOB_CASES = [
    ("ingest: missing input file", ["check", "sales", f"--input={MISSING}"], MISSING),
    ("ingest: empty glob", ["check", "sales", "--input=nothing-*.csv"], "nothing-*.csv"),
    ("ingest: bad job flag value", ["check", "sales", f"--input={MISSING}",
     "--max_dead_letter_ratio=abc"], "--max_dead_letter_ratio"),
    ("ingest: job flag, did you mean", ["ingest", "sales", f"--input={MISSING}",
     "--creat_tables"], "did you mean --create_tables"),
    ("nightly: bad day", ["nightly", "--date", "2017"], "YYYYMMDD"),
    # (Dataflow's workers read URIs: a local --input or dead-letter path is refused first)
    ("ingest: Dataflow without region", ["ingest", "sales", "--input=gs://b/in.csv",
     "--dead_letter=gs://b/dead", "--runner=DataflowRunner", "--project=p", "--instance=i",
     "--skip_preflight"], "Missing required option: region"),
]  # fmt: skip


def _scratch(tmp_path: Path) -> Path:
    """A directory with a bad schema file (one problem) and a checkout for ``templates``."""
    text = SCHEMA.read_text(encoding="utf-8")
    (tmp_path / BAD_SCHEMA).write_text(
        text.replace("events_per_second: 20000", "events_per_second: -5")
    )
    root = tmp_path / "checkout"
    shutil.copytree(REPO / "templates", root / "templates")
    shutil.copy(REPO / "setup.py", root / "setup.py")
    return tmp_path


def _environ(monkeypatch, tmp_path: Path, kind: str) -> None:
    """Offline: no emulator (unless ``kind`` names a dead one), no credentials, no gcloud
    settings (unless ``kind`` asks for a failing gcloud)."""
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "PROJECT", "REGION", "BUCKET"):
        monkeypatch.delenv(name, raising=False)
    for name in [n for n in os.environ if "EMULATOR" in n]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("CLOUDSDK_CONFIG", "/nonexistent")
    monkeypatch.setenv("GCE_METADATA_HOST", f"127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("GCE_METADATA_IP", f"127.0.0.1:{_closed_port()}")
    if kind == "EMULATOR":
        monkeypatch.setenv("BIGTABLE_EMULATOR_HOST", f"127.0.0.1:{_closed_port()}")
    elif kind == "GCLOUD":
        monkeypatch.setenv("PATH", _gcloud_stub(tmp_path / "bin"))
        for name in ("PROJECT", "REGION", "BUCKET"):
            monkeypatch.setenv(name, name.lower())
    monkeypatch.chdir(tmp_path)


def _btts(argv: list[str], tmp_path: Path, capfd) -> tuple[int | None, str, str]:
    """``btts ARGV`` in this process as ``python -m btts_cli.main`` would end: its exit status,
    stdout and stderr (with the traceback Python would print for an uncaught exception)."""
    from btts_cli import main as cli

    args = [a.replace("{root}", str(tmp_path / "checkout")) for a in argv]
    trace = ""
    try:
        code = cli.main(args)
    except SystemExit as stop:
        code = stop.code
        if isinstance(code, str):  # Python prints the message and exits 1
            trace, code = code + "\n", 1
    except Exception:
        code, trace = None, traceback.format_exc()
    out, err = capfd.readouterr()
    return code, out, err + trace


def _problems(code: int | None, out: str, err: str, says: str, kind: str = "") -> list:
    """What is wrong with how a command failed (empty: one clear line, non-zero exit)."""
    lines = [line for line in err.splitlines() if line.strip()]
    if kind == "GCLOUD":  # gcloud's own message first, then btts's line
        lines = [line for line in lines if not line.startswith("ERROR: (gcloud")]
    if kind == "LIST":  # a schema file's problems, one per line under the error line
        lines = [line for line in lines if not line.startswith(f"  {BAD_SCHEMA}:")]
    problems = []
    if "Traceback" in out + err:
        problems.append("a traceback")
    if code in (0, None):
        problems.append(f"exit status {code}")
    if len(lines) != 1:
        problems.append(f"{len(lines)} lines on stderr")
    elif says not in lines[0] or "error" not in lines[0]:
        problems.append(f"the line does not say {says!r}")
    return [f"{p}: {' | '.join(lines)[:800]}" for p in problems]


@pytest.mark.parametrize(
    ("argv", "says", "kind"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_every_btts_error_is_one_clear_line_without_a_traceback(
    argv, says, kind, tmp_path, monkeypatch, capfd
):
    _scratch(tmp_path)
    _environ(monkeypatch, tmp_path, kind)
    code, out, err = _btts(argv, tmp_path, capfd)
    assert not _problems(code, out, err, says, kind)


@pytest.mark.parametrize(
    ("argv", "says"), [c[1:] for c in JOB_CASES], ids=[c[0] for c in JOB_CASES]
)
def test_job_errors_through_btts_are_one_clear_line(argv, says, tmp_path, monkeypatch, capfd):
    _scratch(tmp_path)
    _environ(monkeypatch, tmp_path, "")
    assert not _problems(*_btts(argv, tmp_path, capfd), says)


@pytest.mark.parametrize("argv", [["tabels"], ["tables", "create", "--tabel", "M"]])
def test_the_real_entry_point_fails_the_same_way(argv, tmp_path):
    """``python -m btts_cli.main`` itself: one line, exit status 2, no traceback."""
    env = {k: v for k, v in os.environ.items() if "EMULATOR" not in k}
    done = subprocess.run(
        [sys.executable, "-m", "btts_cli.main", *argv], capture_output=True, text=True,
        timeout=120, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 2
    assert not _problems(done.returncode, done.stdout, done.stderr, "did you mean")


@pytest.mark.parametrize(
    "argv",
    [
        ["query", "metrics", "--host", "h", "--start", "2020-01-01", "--end", "2020-01-02"],
        ["check", "server_metrics", f"--input={MISSING}"],
    ],
)
def test_a_wrong_btts_official_is_one_line_before_any_work(argv, tmp_path):
    """``BTTS_OFFICIAL`` is read first of all: a component that does not exist ends the
    command with one line naming the ones there are, not a traceback once a reader is made."""
    env = {k: v for k, v in os.environ.items() if "EMULATOR" not in k}
    env["BTTS_OFFICIAL"] = "bogus"
    done = subprocess.run(
        [sys.executable, "-m", "btts_cli.main", *argv], capture_output=True, text=True,
        timeout=120, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 2
    assert not _problems(done.returncode, done.stdout, done.stderr, "BTTS_OFFICIAL='bogus'")
