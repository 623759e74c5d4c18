"""``make test-matrix``: a smoke subset of the suite on every Python the package accepts that this
machine has, each in a virtualenv of its own, and one line per version.

Why: ``setup.py`` accepts Python 3.10 and later, the suite runs on one interpreter, and the
versions differ where it hurts (3.10's ``datetime.fromisoformat`` refused every time ending in
``Z``, so an ingest landed nothing there). The subset (:data:`SMOKE`) is what reads times, builds
keys and cells, drafts and loads schemas, and lands a job on the emulator.

Interpreters are found as ``python3.X`` on PATH, else under pyenv's versions (``pyenv root``,
or ``$PYENV_ROOT``, or ``~/.pyenv``), for every minor version from the floor of
``python_requires`` up to :data:`NEWEST` (the newest Beam's pinned release has wheels for).
Virtualenvs are cached under ``.matrix/`` (git-ignored) and rebuilt when setup.py or
pyproject.toml change. Results go to ``.matrix/results.json`` as well.

    python -m tests.matrix                  # every version found
    python -m tests.matrix --python 3.10    # one
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from btts_cli import templates

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".matrix"
# apache-beam 2.77 publishes wheels (and SDK images) for CPython 3.10 to 3.13: the Pythons
# templates are built for (btts_cli.templates.PYTHONS), the newest of them the matrix's last
NEWEST = tuple(int(part) for part in templates.PYTHONS[-1].split("."))
SMOKE = [
    "tests/transforms/text/test_isotime.py",
    "tests/transforms/text/test_timefmt.py",
    "tests/transforms/text/test_declared_time_formats.py",
    "tests/transforms/test_early_times.py",
    "tests/transforms/text/test_events.py",
    "tests/transforms/text/test_keys.py",
    "tests/transforms/builder/test_codegen.py",
    "tests/pipelines/test_golden.py",
    "tests/transforms/schema/test_schema_files.py",
    "tests/btts/draft/test_draft.py",
    "tests/btts/draft/test_drafts_of_public_files.py",
    "tests/pipelines/test_generic.py",
]
INSTALL_TIMEOUT_S = 1_800
RUN_TIMEOUT_S = 1_800


def floor() -> tuple[int, int]:
    """The lowest Python ``setup.py`` accepts (``python_requires=">=3.X"``)."""
    found = re.search(r'python_requires=">=(\d+)\.(\d+)"', (ROOT / "setup.py").read_text())
    if not found:
        raise SystemExit("test-matrix: no python_requires in setup.py")
    return int(found[1]), int(found[2])


def _version(python: str) -> tuple[int, int] | None:
    """The (major, minor) ``python`` runs as, or None where it does not run (a pyenv shim of
    a version that is not installed, a broken link)."""
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    major, minor = out.stdout.split()
    return int(major), int(minor)


def _pyenv_root() -> Path:
    if os.environ.get("PYENV_ROOT"):
        return Path(os.environ["PYENV_ROOT"])
    pyenv = shutil.which("pyenv")
    if pyenv:
        out = subprocess.run([pyenv, "root"], capture_output=True, text=True, check=False)
        if out.returncode == 0 and out.stdout.strip():
            return Path(out.stdout.strip())
    return Path.home() / ".pyenv"


def find(minor: int) -> str | None:
    """An interpreter of Python 3.``minor``: ``python3.X`` on PATH, else pyenv's newest 3.X."""
    wanted = (3, minor)
    candidates = [shutil.which(f"python3.{minor}")]
    versions = _pyenv_root() / "versions"
    if versions.is_dir():
        patches = [p for p in versions.glob(f"3.{minor}.*") if re.fullmatch(r"3\.\d+\.\d+", p.name)]
        patches.sort(key=lambda p: int(p.name.split(".")[2]), reverse=True)
        candidates += [str(p / "bin" / "python") for p in patches]
    return next((c for c in candidates if c and _version(c) == wanted), None)


def _stamp() -> str:
    digest = hashlib.sha256()
    for name in ("setup.py", "pyproject.toml"):
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def venv(python: str, minor: int, log) -> Path:
    """``.matrix/py3.X`` with the package and its test extra installed (editable, from this
    checkout); reused while setup.py and pyproject.toml are unchanged."""
    where = CACHE / f"py3.{minor}"
    stamp = where / ".installed"
    if stamp.exists() and stamp.read_text() == _stamp():
        return where
    CACHE.mkdir(exist_ok=True)
    (CACHE / ".gitignore").write_text("*\n")  # a cache: never committed, wherever it is made
    steps = [
        [python, "-m", "venv", "--clear", str(where)],
        [str(where / "bin" / "python"), "-m", "pip", "install", "-q", "--upgrade", "pip"],
        [str(where / "bin" / "python"), "-m", "pip", "install", "-q", "-e", ".[test]"],
    ]
    for step in steps:
        subprocess.run(
            step, cwd=ROOT, check=True, timeout=INSTALL_TIMEOUT_S, stdout=log, stderr=log
        )
    stamp.write_text(_stamp())
    return where


def run(where: Path, minor: int, log) -> dict:
    """The smoke subset on one virtualenv: counts from pytest's JUnit report, and seconds."""
    report = CACHE / f"py3.{minor}.xml"
    started = time.monotonic()
    done = subprocess.run(
        [str(where / "bin" / "python"), "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
         f"--junitxml={report}", *SMOKE],
        cwd=ROOT, timeout=RUN_TIMEOUT_S, stdout=log, stderr=log, check=False,
    )  # fmt: skip
    seconds = time.monotonic() - started
    suite = ET.parse(report).getroot()
    suite = suite.find("testsuite") if suite.tag == "testsuites" else suite
    counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    return {**counts, "seconds": round(seconds, 1), "exit": done.returncode}


def _line(name: str, result: dict) -> str:
    if "missing" in result:
        return f"{name:<8} not found ({result['missing']})"
    if "install_failed" in result:
        return f"{name:<8} INSTALL FAILED (see {result['install_failed']})"
    verdict = "ok" if result["exit"] == 0 else "FAILED"
    bad = result["failures"] + result["errors"]
    return (
        f"{result['python']:<8} {verdict:<6} {result['passed']:>5} passed {bad:>4} failed "
        f"{result['skipped']:>3} skipped  {result['seconds']:>6.1f} s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.matrix", description=__doc__)
    parser.add_argument("--python", action="append", help="only this version, e.g. 3.10")
    args = parser.parse_args(argv)
    low = floor()
    minors = range(low[1], NEWEST[1] + 1)
    if args.python:
        minors = [int(v.split(".")[1]) for v in args.python]
    results: dict[str, dict] = {}
    for minor in minors:
        name = f"3.{minor}"
        python = find(minor)
        if python is None:
            results[name] = {"missing": f"no python3.{minor} on PATH or under pyenv"}
            print(_line(name, results[name]), flush=True)
            continue
        CACHE.mkdir(exist_ok=True)
        log_path = CACHE / f"py3.{minor}.log"
        with log_path.open("w") as log:
            try:
                where = venv(python, minor, log)
            except (subprocess.SubprocessError, OSError):
                results[name] = {"install_failed": str(log_path.relative_to(ROOT))}
                print(_line(name, results[name]), flush=True)
                continue
            full = _version_text(where)
            results[name] = {"python": full, **run(where, minor, log)}
        print(_line(name, results[name]), flush=True)
    (CACHE / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    ran = [r for r in results.values() if "exit" in r]
    failed = [r for r in results.values() if r.get("exit") or "install_failed" in r]
    if not ran:
        print("test-matrix: no interpreter found", file=sys.stderr)
        return 1
    return 1 if failed else 0


def _version_text(where: Path) -> str:
    out = subprocess.run(
        [str(where / "bin" / "python"), "-c", "import platform; print(platform.python_version())"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return out.stdout.strip()


if __name__ == "__main__":
    raise SystemExit(main())
