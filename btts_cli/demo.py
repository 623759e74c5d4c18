"""The main job: the whole system on a local emulator, from sample events to query answers.

    make demo          # or: btts demo [--meters 1000 --meter_days 2 --hosts 100 --minutes 10]

1. generates a deterministic sample for every dataset (with bad lines in each) under
   --output_dir/input;
2. starts a Bigtable emulator;
3. runs every batch pipeline on the DirectRunner (server metrics and their latest-first copy,
   smart meters, market data, weather balloons in the four column patterns, battery promoted
   and salted, game results, garden, sales, multi-tenant device data), then the nightly job;
4. prints the answer to each documented query, each checked against the generated events (an
   answer that differs fails the demo), and a summary: rows per table, dead letters,
   throughput, and the time of each phase;
5. stops the emulator.

Any failure stops the demo with a message and a non-zero exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import json
import logging
import shlex
import shutil
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from btts import admin, config, emulator, errors, exits
from btts.query import engine, render
from btts.samples import checks
from btts.samples import data as samples
from btts.samples.data import Sizes
from btts_cli import demo_options, query_command
from pipelines import common
from transforms.scans import key_ranges

__all__ = ["run_with"]

SHOW_ROWS = 5
BUDGET_SECONDS = 300

# Two jobs without a module of their own: the latest-first copy of the server metrics
# (METRIC_RECENT, for the reversed-timestamp query) and the multi-tenant device readings.
RECENT_JOB = common.builtin_job(
    "queries",
    "Server metrics → METRIC_RECENT (HOSTNAME#reversed timestamp), latest first.",
    name="metric_recent",
)
DEVICE_JOB = common.builtin_job(
    "devices",
    "Device readings → DEVICE (TENANT#KIND#DEVICE#YYYYMMDD), tenant-prefixed.",
    name="device",
)


def run_job_spec(job: common.JobSpec, argv: Sequence[str]):
    """Run a :class:`common.JobSpec` exactly like an ingest module's ``run``."""
    return common.run_file_ingest(
        argv,
        classes=(common.FileInputOptions, common.BigtableOptions),
        job_for=job,
    )


# -- options ----------------------------------------------------------------------------------

# -- phase 1: sample data ---------------------------------------------------------------------


class Dataset(NamedTuple):
    name: str
    path: Path
    good: int
    bad: int


BAD_LINES = {
    "server_metrics": samples.BAD_METRIC_LINES,
    "smart_meters": samples.BAD_METER_LINES,
    "market_data": samples.BAD_TICK_LINES,
    "weather_balloons": samples.BAD_BALLOON_LINES,
    "battery": samples.BAD_BATTERY_LINES,
    "game_results": samples.BAD_GAME_LINES,
    "garden": samples.BAD_GARDEN_LINES,
    "sales": samples.BAD_SALES_LINES,
    "device": (
        '{"tenant": "acme#evil", "kind": "phone", "device": "1", '
        '"timestamp": "2019-05-01T00:00:00Z", "readings": {"memusage": 1}}',
        '{"tenant": "acme", "kind": "phone", "device": "1", '
        '"timestamp": "2019-05-01T00:00:00Z", "readings": {}}',
    ),
}


def generate(out: Path, sizes: Sizes) -> dict[str, Dataset]:
    datasets = {}
    for name, bad in BAD_LINES.items():
        path = out / f"{name}.jsonl"
        lines = samples.write_jsonl(path, checks.records(name, sizes), bad)
        datasets[name] = Dataset(name, path, lines - len(bad), len(bad))
    return datasets


# -- phase 3: the pipelines -------------------------------------------------------------------


@dataclass
class JobRun:
    label: str
    seconds: float
    counters: dict[str, int]

    @property
    def events(self) -> int:
        return self.counters.get("events_valid", 0)


def _run_step(label: str, run: Callable[[], Any], log_path: Path) -> tuple[Any, float]:
    """Run one job with its own printout captured to ``log_path``; failures stop the demo."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.StringIO()
    started = time.monotonic()
    try:
        with contextlib.redirect_stdout(buffer):
            result = run()
    except SystemExit as stop:  # a job's configuration error
        raise SystemExit(f"demo: {label} failed: {stop.code}") from None
    except common.JobFailed as err:  # a job that did not do its work: its line
        raise SystemExit(f"demo: {label} failed: {exits.ending(err)[1]}") from None
    except Exception as err:
        raise SystemExit(f"demo: {label} failed: {type(err).__name__}: {err}") from err
    finally:
        log_path.write_text(buffer.getvalue())
    return result, time.monotonic() - started


def _check_counts(label: str, data: Dataset, counters: dict[str, int]) -> None:
    """Every line is accounted for: the good ones landed, the bad ones are dead letters."""
    lines = counters.get("lines_read", 0)
    valid = counters.get("events_valid", 0)
    dead = counters.get("dead_letters", 0)
    blank = counters.get("blank_lines", 0)
    if lines != valid + dead + blank or valid != data.good or dead != data.bad:
        raise SystemExit(
            f"demo: {label}: counts do not reconcile: {lines} lines read, {valid} valid "
            f"(expected {data.good}), {dead} dead letters (expected {data.bad})"
        )


def run_pipelines(out: Path, datasets: dict[str, Dataset]) -> list[JobRun]:
    from pipelines import load

    balloons = load("weather_balloons").run
    steps: list[tuple[str, str, Callable[[list[str]], Any], list[str]]] = [
        ("server_metrics", "server_metrics", load("server_metrics").run, []),
        ("metric_recent", "server_metrics", lambda a: run_job_spec(RECENT_JOB, a), []),
        ("smart_meters", "smart_meters", load("smart_meters").run, []),
        ("market_data", "market_data", load("market_data").run, []),
        *(
            (f"weather_balloons {p}", "weather_balloons", balloons, [f"--balloon_pattern={p}"])
            for p in ("TS-COLS", "TS-BLOB", "TB-CELL", "TB-COL")
        ),
        ("battery promoted", "battery", load("battery").run, ["--battery_layout=promoted"]),
        ("battery salted", "battery", load("battery").run, ["--battery_layout=salted"]),
        ("game_results", "game_results", load("game_results").run, []),
        ("garden", "garden", load("garden").run, ["--garden_layout=both"]),
        ("sales", "sales", load("sales").run, []),
        ("device", "device", lambda a: run_job_spec(DEVICE_JOB, a), []),
    ]
    runs = []
    print(f"  {'job':<26}{'lines':>10}{'events':>10}{'dead':>6}{'seconds':>9}{'events/s':>10}")
    for label, name, run, extra in steps:
        if name not in datasets:
            continue
        data = datasets[name]
        slug = label.replace(" ", "_")
        dead_letter = out / "dead-letters" / slug
        argv = [f"--input={data.path}", f"--dead_letter={dead_letter}", "--create_tables", *extra]
        if data.bad > data.good // 10:  # --tiny: the deliberate bad lines pass the default 10%
            argv.append(f"--max_bad_records={data.bad}")
        result, seconds = _run_step(label, lambda r=run, a=argv: r(a), out / "logs" / slug)
        counters = result.counters
        _check_counts(label, data, counters)
        job = JobRun(label, seconds, counters)
        runs.append(job)
        print(
            f"  {label:<26}{counters.get('lines_read', 0):>10,}{job.events:>10,}"
            f"{counters.get('dead_letters', 0):>6,}{seconds:>9.1f}"
            f"{job.events / max(seconds, 1e-9):>10,.0f}",
            flush=True,
        )
    return runs


def run_nightly(out: Path, sizes: Sizes) -> tuple[list[str], float]:
    from pipelines import nightly

    first = dt.datetime.fromtimestamp(samples.METERS_START_MS / 1000, dt.timezone.utc).date()
    last = first + dt.timedelta(days=sizes.meter_days - 1)
    argv = [f"--dates={first:%Y%m%d}..{last:%Y%m%d}"]
    result, seconds = _run_step("nightly", lambda: nightly.run(argv), out / "logs" / "nightly")
    plan = result.plan
    counters = result.counters
    copied = sum(counters.get(f"rows_{t}", 0) for t in plan.destinations)
    print(
        f"  nightly: SENSOR → {', '.join(plan.destinations)}: {copied:,} rows copied and "
        f"verified (row counts and checksums) in {seconds:.1f}s"
    )
    return list(plan.destinations), seconds


# -- phase 4: the queries, checked against the generated events -------------------------------


def build_queries(sizes: Sizes) -> list[checks.Check]:
    """Each documented query with its answer computed from the generated records alone."""
    return list(checks.checks(sizes, query_command.BALLOON_QUERIES))


_no_key = checks.without_key


def cbt_row_keys(text: str) -> list[str]:
    """The row keys of ``cbt read`` output: each row follows a line of 40 dashes."""
    lines = text.splitlines()
    return [lines[i + 1] for i, line in enumerate(lines[:-1]) if line == "-" * 40]


def _cbt_check(target: config.Target, scan: key_ranges.Scan, keys: list[str]) -> str | None:
    """``cbt read`` of the same range sees the same rows (when cbt is installed)."""
    cbt = shutil.which("cbt")
    args = scan.cbt_args()
    if not cbt or not args:
        return None
    command = [cbt, "-project", target.project, "-instance", target.instance, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise SystemExit(f"demo: cbt failed: {done.stderr.strip()}")
    seen = cbt_row_keys(done.stdout)
    shown = " ".join(f"'{a}'" if " " in a else a for a in ["cbt", *command[1:]])
    if seen != keys:
        raise SystemExit(f"demo: {shown} shows {len(seen)} rows, the query {len(keys)}")
    return f"{shown}\n    → the same {len(seen)} rows ✓"


def run_queries(target: config.Target, sizes: Sizes) -> float:
    started = time.monotonic()
    for number, item in enumerate(build_queries(sizes), 1):
        print(f"\nQ{number}. {item.title}")
        print(f"    $ {item.command}")
        query = query_command.plan(shlex.split(item.command)[2:])
        for scan in query.scans:
            print(f"    read {scan.describe()}")
        got = engine.run(target, query)
        shown = render.to_table(got[:SHOW_ROWS]).replace("\n", "\n    ")
        print(f"    {shown}")
        for grid in render.wide_grids(got):
            print("    " + grid.replace("\n", "\n    "))
        more = f"; first {SHOW_ROWS} shown" if len(got) > SHOW_ROWS else ""
        if _no_key(got) != item.expected:
            raise SystemExit(
                f"demo: Q{number} ({item.title}): {len(got)} records read, "
                f"{len(item.expected)} expected from the generated events; they differ"
            )
        if not got:
            raise SystemExit(f"demo: Q{number} ({item.title}): the answer is empty")
        note = f"; {item.note}" if item.note else ""
        print(f"    {len(got):,} record(s){more}{note} — equal to the generated events ✓")
        if number == 1:
            line = _cbt_check(target, query.scans[0], [r["key"] for r in got])
            if line:
                print(f"    {line}")
        if item.after:
            try:
                print(f"    {item.after(target)}")
            except checks.CheckFailed as err:
                raise SystemExit(str(err)) from err
    return time.monotonic() - started


# -- the summary ------------------------------------------------------------------------------


def print_summary(
    target: config.Target, runs: list[JobRun], phases: dict[str, float], out: Path
) -> None:
    with admin.Admin(target) as api:
        names = api.list_tables()
    print("\nRows per table")
    for name in names:
        print(f"  {name:<22}{engine.count_rows(target, name):>10,}")
    letters = sorted((out / "dead-letters").glob("server_metrics-*"))
    if letters:
        print(f"\nDead letters of server_metrics ({letters[0]}), by reason:")
        for line in letters[0].read_text(encoding="utf-8").splitlines():
            print(f"  {json.loads(line)['reason']}")
    dead = sum(r.counters.get("dead_letters", 0) for r in runs)
    events = sum(r.events for r in runs)
    seconds = sum(r.seconds for r in runs)
    print(
        f"\nPipelines: {len(runs)} jobs, {events:,} events landed, {dead:,} dead letters "
        f"(every bad line, with its reason), {events / max(seconds, 1e-9):,.0f} events/s overall"
    )
    print("Phases: " + ", ".join(f"{k} {v:.1f}s" for k, v in phases.items()))


def run(argv: Sequence[str] | None = None) -> None:
    """The demo; any failure raises SystemExit with a message (a non-zero exit code)."""
    run_with(demo_options.options(argv))


def run_with(opts: argparse.Namespace) -> None:
    """The demo for parsed options (``btts demo`` parses them before importing this module)."""
    with contextlib.suppress(AttributeError, ValueError):
        sys.stdout.reconfigure(line_buffering=True)  # progress in order, even through a pipe
    # Show the jobs' progress lines, not their table-creation chatter.
    for name in ("pipelines.common", "pipelines.nightly"):
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        _demo(opts)
    except Exception as err:  # not SystemExit or KeyboardInterrupt: those pass through
        traceback.print_exc()
        raise SystemExit(f"demo: failed: {type(err).__name__}: {err}") from None


def _demo(opts: argparse.Namespace) -> None:
    sizes: Sizes = opts.sizes
    out = Path(opts.output_dir)
    for sub in ("dead-letters", "logs"):
        shutil.rmtree(out / sub, ignore_errors=True)
    warnings.filterwarnings("ignore", message="Connecting to Bigtable emulator")
    phases: dict[str, float] = {}
    began = time.monotonic()

    print("bigtable-timeseries demo: sample events → Beam pipelines → Bigtable emulator → queries")
    print(f"\n[1/5] Sample data (deterministic) in {out / 'input'}")
    started = time.monotonic()
    datasets = generate(out / "input", sizes)
    for d in datasets.values():
        print(f"  {d.name:<18}{d.good:>10,} events + {d.bad} bad lines")
    phases["sample data"] = time.monotonic() - started

    started = time.monotonic()
    try:
        emu = emulator.Emulator().start()
    except errors.EmulatorError as err:
        raise SystemExit(f"demo: cannot start the Bigtable emulator: {err}") from None
    with emu:
        phases["emulator start"] = time.monotonic() - started
        print(f"\n[2/5] Bigtable emulator on {emu.endpoint} (pid {emu.process.pid})")
        target = config.resolve_target(None, None)

        print("\n[3/5] Batch pipelines on the DirectRunner (each job's own report: logs/)")
        started = time.monotonic()
        runs = run_pipelines(out, datasets)
        phases["pipelines"] = time.monotonic() - started

        print("\n[4/5] Nightly job")
        _, phases["nightly"] = run_nightly(out, sizes)

        print("\n[5/5] The documented queries, each answer checked against the generated events")
        phases["queries"] = run_queries(target, sizes)

        print_summary(target, runs, phases, out)
    total = time.monotonic() - began
    print(f"\nStopped the emulator. Done in {total:.0f}s.")
    if total > BUDGET_SECONDS:
        print(f"WARNING: over the {BUDGET_SECONDS}s budget", flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    run()
