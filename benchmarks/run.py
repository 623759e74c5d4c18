"""Benchmark our pipelines against the raw-client ceiling and the naive Beam pipeline, in one
run against one emulator, and write a JSON report.

    python -m benchmarks.run            # make bench        (about an hour)
    python -m benchmarks.run --quick    # make bench-quick  (minutes)
    python -m benchmarks.run --toy      # every section at toy size (tests/benchmarks, seconds)

Every figure comes from its own process (see ``benchmarks.cases``); ratios compare figures of
this one run, on this machine, so noise between machines cancels out. Each section (``SECTIONS``)
runs on an emulator of its own and its figures are written to the report as it ends: a section
that fails is named in the report's ``failed`` (and the exit status is 1) after the others ran,
and keeps what it measured before failing.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from benchmarks import data, init_flights, startup
from btts import admin, config, emulator
from transforms.schema import builtin_tables

ROOT = Path(__file__).resolve().parent
PROFILES = ("toy", "quick", "full")  # every size below is a tuple in this order
SIZES = {
    # dataset: events of a (toy, quick, full) run
    # full: large enough that start-up does not dominate the end-to-end figures
    "metrics": (100, 2_000, 200_000),
    "meters": (200, 4_000, 200_000),
    "market": (100, 2_000, 200_000),
    "ticks": (100, 2_000, 200_000),  # a user's schema (docs/schemas/ts-cols-stock-ticks.yaml)
}
# events of the full run's in-process 'ours' and 'core' per dataset: ours_cpu_vs_core is judged
# at this size, where start-up is not the story (issue 36); the baselines stay at SIZES
OURS_EVENTS = 1_000_000
# metrics events in the small scaling run; the large one has ten times as many: the full run's
# 1,000,000 is where the peak-RSS target is set
SCALING_EVENTS = (20, 500, 100_000)
NIGHTLY_METERS = (10, 200, 2_000)  # SENSOR holds 4 days of them
NIGHTLY_ROUNDS = (1, 1, 3)  # rounds of the nightly cases: medians
INDEX_COST_ROUNDS = (1, 1, 5)  # rounds of the index_cost pair (with, without): paired medians
CHECK_ROUNDS = (1, 1, 5)  # rounds of each dataset's check pair (ours, ours_nocheck): the same
TABLES = {
    "metrics": ["METRIC", "CURRENT_METRIC"],
    "meters": ["SENSOR"],
    "market": ["QUOTE", "TRADE"],
    "ticks": ["TICK"],
}
TARGETS = {
    "ours_vs_ceiling": 0.8,
    "ours_vs_naive": 1.0,
    "ours_vs_core": 0.5,
    "core_events_per_s": 100_000,
    "scaling_time_ratio": 11.0,
    "scaling_rss_ratio": 1.5,
    "scaling_large_peak_rss_mb": 400,
    "nightly_vs_ceiling": 0.95,  # the verified copy, at its ceiling
}
READ_SIZES = ("100", "1000,10000", "1000,10000,100000")  # series of the read-scale figures
FLIGHTS = (500, 20_000, 336_776)  # flights landed for the flights figures
PROM_SERIES = (20, 200, 1000)  # Prometheus series (1 h at 15 s each) written and read back
INIT_FLIGHTS = ("0.01", "1", "1,3")  # years of flights drafted by btts init (3: ~110 MB)

_EMULATOR_PID: list[int] = []  # the running emulator's process, while there is one


def emulator_cpu_s() -> float | None:
    """CPU seconds the emulator has used so far (Linux /proc; None elsewhere)."""
    if not _EMULATOR_PID:
        return None
    try:
        with open(f"/proc/{_EMULATOR_PID[-1]}/stat", encoding="ascii") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def machine() -> dict:
    """What ran the figures: they are this machine's, and a ratio is judged on one machine."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        model = names[0] if names else model
    except OSError:
        pass
    return {
        "cpu_model": model,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


MACHINE = machine()


class StepFailed(RuntimeError):
    """A measured process (a case, a benchmark module) failed: its section fails, not the run."""


# A toy run's cases run in this process (``benchmarks.cases.MODES``): it asks whether every case
# runs, not how fast, and a process per case would cost seconds each.
IN_PROCESS: list[bool] = []


def measure(*args: str, timeout: float = 1800) -> dict:
    started = time.monotonic()
    emulator_before = emulator_cpu_s()
    lines = _in_process(args) if IN_PROCESS else _in_subprocess(args, timeout)
    result = json.loads(lines[-1][len("RESULT ") :])
    emulator_after = emulator_cpu_s()
    if emulator_before is not None and emulator_after is not None:
        result["emulator_cpu_s"] = round(emulator_after - emulator_before, 2)
    result["wall_s"] = round(time.monotonic() - started, 2)
    for unit in ("events", "rows", "cells"):
        if result.get(unit):
            result[f"{unit}_per_s"] = round(result[unit] / result["seconds"], 1)
    result["seconds"] = round(result["seconds"], 3)
    result["machine"] = f"{MACHINE['cpu_model']} x{MACHINE['cpu_count']}"
    return result


def _in_subprocess(args: tuple[str, ...], timeout: float) -> list[str]:
    """The ``RESULT`` lines of ``python -m benchmarks.cases *args`` (StepFailed: none, or the
    case failed)."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.cases", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT.parent,
        env=dict(os.environ),
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode or not lines:
        raise StepFailed(
            f"benchmark step {' '.join(args[:2])} failed ({done.returncode}):\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
        )
    return lines


def _in_process(args: tuple[str, ...]) -> list[str]:
    """The ``RESULT`` lines of the case ``args`` run in this process (a toy run)."""
    from benchmarks import cases

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        mode, *rest = args
        if mode == "core":
            rest = [*rest, "1"]  # one pass, not the best of ten
        cases.MODES[mode](*rest)
    lines = [line for line in printed.getvalue().splitlines() if line.startswith("RESULT ")]
    if not lines:
        raise StepFailed(f"benchmark step {' '.join(args[:2])} printed no result")
    return lines


def fresh_instance(table_names: list[str]) -> str:
    from benchmarks.cases import USER_SCHEMAS, schema_of

    instance = f"bench{uuid.uuid4().hex[:8]}"
    own = {n: d for ds in USER_SCHEMAS for n, d in schema_of(ds).decls().items()}
    decls = [own[t] if t in own else builtin_tables.get(t) for t in table_names]
    admin.preflight(
        config.Target("test-project", instance),
        decls + _index_decls(table_names),
        create=True,
    )
    return instance


def release(instance: str) -> None:
    """Drop an instance's tables once measured: the emulator holds every cell in memory, and a
    million-event run leaves gigabytes that the next run on the same emulator would add to."""
    with admin.Admin(config.Target("test-project", instance)) as tables:
        for name in tables.list_tables():
            tables.drop(name)


def measure_fresh(tables: list[str], case: str, dataset: str, path: str, *rest: str) -> dict:
    """``measure`` of ``case`` on an instance of its own holding ``tables`` (a case takes the
    instance after its input), released afterwards."""
    instance = fresh_instance(tables)
    try:
        return measure(case, dataset, path, instance, *rest)
    finally:
        release(instance)


def _index_decls(table_names: list[str]) -> list:
    """The series indexes the jobs writing these tables write too."""
    from benchmarks.cases import JOBS, USER_SCHEMAS, schema_of
    from transforms.scans import series_index

    out = {}
    for dataset in [*JOBS, *USER_SCHEMAS]:
        schema = schema_of(dataset)
        listed = {t.name for t in series_index.indexed_tables(schema)}
        if schema.index is not None and listed & set(table_names):
            out[schema.index.table] = schema.index.decl()
    return list(out.values())


@contextlib.contextmanager
def fresh_emulator() -> Iterator[None]:
    """An emulator of its own: it keeps every row written to it, and a fuller emulator spends
    more CPU per write (its heap is scanned by Go's collector), which would tax later figures."""
    with emulator.Emulator() as running:
        _EMULATOR_PID.append(running.process.pid)
        try:
            yield
        finally:
            _EMULATOR_PID.pop()


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def run_dataset(dataset: str, path: Path, profile: int, ours_path: Path | None = None) -> dict:
    """Every figure of one dataset. Below a full run (``profile``) the variants that only
    matter at full size (two DirectRunner worker processes; one wire writer) are left out, and a
    toy run forks no writers. ``ours_path``: the (larger) input of the in-process ``ours`` run
    and of ``core``, so that their CPU ratio is not the story of start-up; every other case reads
    ``path``."""
    out = {}
    names = TABLES[dataset]
    log(f"[{dataset}] core")
    out["core"] = measure("core", dataset, str(ours_path or path))
    full = profile == len(PROFILES) - 1
    rounds = CHECK_ROUNDS[profile]
    out.update(run_check_pair(names, dataset, str(ours_path or path), rounds))
    for mode in ("ours_mp", "naive") if full else ("naive",):
        log(f"[{dataset}] {mode}")
        if mode == "naive":
            out[mode] = measure_fresh(names, "naive", dataset, str(path))
        else:
            out[mode] = measure_fresh(names, "ours", dataset, str(path), "mp")
    for procs in (1, 2) if profile else (1,):
        log(f"[{dataset}] ceiling x{procs}")
        out[f"ceiling_{procs}p"] = measure_fresh(names, "ceiling", dataset, str(path), str(procs))
    for procs in (1, 2) if full else (2,) if profile else (1,):
        log(f"[{dataset}] wire x{procs}")
        out[f"wire_{procs}p"] = measure_fresh(names, "wire", dataset, str(path), str(procs))

    def best(prefix: str) -> tuple[str, float]:
        figures = {
            k: v["rows_per_s"]
            for k, v in out.items()
            if k.startswith(prefix) and k != "ours_nocheck"
        }
        name = max(figures, key=figures.get)
        return name, figures[name]

    ours_name, best_ours = best("ours")  # (ours_nocheck is not ours: the check is on by default)
    _, ceiling = best("ceiling_")
    _, wire = best("wire_")
    out["summary"] = {
        "ours_rows_per_s": best_ours,
        "ours_mode": "multi_processing" if ours_name == "ours_mp" else "in_process",
        "ceiling_rows_per_s": ceiling,
        "naive_rows_per_s": out["naive"]["rows_per_s"],
        "ours_vs_ceiling": ratio(best_ours, ceiling),
        "wire_rows_per_s": wire,
        "ours_vs_wire": ratio(best_ours, wire),
        "ours_vs_naive": ratio(best_ours, out["naive"]["rows_per_s"]),
        "core_events_per_s": out["core"]["events_per_s"],
        # end to end in one process (events/s) over the builder alone: the runner's share
        "ours_events_per_s": out["ours"]["events_per_s"],
        "ours_vs_core": ratio(out["ours"]["events_per_s"], out["core"]["events_per_s"]),
        **cpu_summary(out["core"], out["ours"]),
        **check_summary(out),
        "check_rounds": rounds,
    }
    return out


def run_check_pair(names: list[str], dataset: str, source: str, rounds: int) -> dict:
    """The in-process job with its overwrite check (``ours``, the default) and without
    (``ours_nocheck``: ``--overwrite_check=off``) on the same input, each run on a fresh
    instance, taking turns over ``rounds`` rounds (:func:`alternating`); each side is its run
    of median CPU. ``check_cpu_s_runs``: every run's CPU seconds, in the rounds' order."""

    def side(mode: str) -> Callable[[], dict]:
        def once() -> dict:
            log(f"[{dataset}] {mode}")
            flags = ["nocheck"] if mode == "ours_nocheck" else []
            return measure_fresh(names, "ours", dataset, source, *flags)

        return once

    runs = alternating({mode: side(mode) for mode in ("ours", "ours_nocheck")}, rounds)
    out: dict = {mode: _median_of(got, "cpu_s") for mode, got in runs.items()}
    out["check_cpu_s_runs"] = {mode: [r["cpu_s"] for r in got] for mode, got in runs.items()}
    out["check_cpu_s_runs"]["check_own"] = [r.get("check_cpu_s", 0.0) for r in runs["ours"]]
    return out


def alternating(sides: dict[str, Callable[[], dict]], rounds: int) -> dict[str, list[dict]]:
    """Each side's run (a dict holding ``cpu_s``) once a round over ``rounds`` rounds, the
    order turned round every other round (A B, B A, A B…): a load coming and going on a shared
    machine falls on both sides, and so does whatever the first run of a round pays that the
    second does not. Each side's runs are kept in the rounds' order, so that round ``i`` of
    one side pairs with round ``i`` of the other (:func:`paired_share`)."""
    got: dict[str, list[dict]] = {name: [] for name in sides}
    order = list(sides)
    for index in range(rounds):
        for name in order if index % 2 == 0 else order[::-1]:
            got[name].append(sides[name]())
    return got


def paired_share(with_step: list[float], without: list[float]) -> float | None:
    """The share of a job's CPU a step costs, from CPU seconds of runs with and without it
    paired by round: the median of the rounds' differences over the median run with it.

    Why the median of the pairs, not the difference of the two medians: the two runs of a
    round share what the machine was doing then, so their difference drops it; the two
    medians may come from different rounds. None: no pair."""
    pairs = sorted(a - b for a, b in zip(with_step, without, strict=True))
    if not pairs or not with_step:
        return None
    middle = len(pairs) // 2
    diff = pairs[middle] if len(pairs) % 2 else (pairs[middle - 1] + pairs[middle]) / 2
    ordered = sorted(with_step)
    return round(diff / ordered[(len(ordered) - 1) // 2], 3)


def check_summary(pair: dict) -> dict:
    """What the overwrite check costs the in-process job (``pair``: what
    :func:`run_check_pair` gave): its CPU seconds without the check (the run of median CPU),
    and the check's share of the job's CPU two ways (the target: at most 5% at 1,000,000
    events): ``check_cpu_share``, the rounds' runs with and without it
    (:func:`paired_share`: all it costs, and all the noise of two runs), and
    ``check_own_cpu_share``, the CPU its own code spent as the job timed it
    (``check_cpu_s``), over the run's, the median of the runs with it: no runner's cost
    of moving its fingerprints, and none of the noise."""
    out = {"ours_cpu_s_no_check": pair.get("ours_nocheck", {}).get("cpu_s")}
    runs = pair.get("check_cpu_s_runs") or {}
    share = paired_share(runs.get("ours", []), runs.get("ours_nocheck", []))
    if share is not None:
        out["check_cpu_share"] = share
    timed = runs.get("check_own") or []  # reports from before the job timed it have none
    own = own_share(timed, runs["ours"]) if timed else None
    if own is not None:
        out["check_own_cpu_share"] = own
    return out


def own_share(own: list[float], cpu: list[float]) -> float | None:
    """A step's share of a job's CPU from its own CPU seconds as the job timed them, run by
    run (``own[i]`` of the run of ``cpu[i]`` CPU seconds): the median of the runs' shares
    (the lower middle one of an even count; None: no run)."""
    shares = sorted(o / c for o, c in zip(own, cpu, strict=True) if c)
    return round(shares[(len(shares) - 1) // 2], 3) if shares else None


def cpu_summary(core: dict, ours: dict) -> dict:
    """Where the in-process job's time goes, from CPU seconds of the same run.

    ``ours_cpu_vs_core``: the builder's CPU (core) over the whole job process's CPU, threads
    and start-up included: 0.5 means the job costs this process twice what the builder does.
    ``ours_vs_core_bound``: the most ours/core could be on this machine if the job cost no more
    than the builder, given the CPU the emulator spent storing the same rows (both share
    ``cpu_count`` cores): emulators whose cost per cell dwarfs the builder's cap it."""
    core_s, ours_cpu, emulator = core.get("seconds"), ours.get("cpu_s"), ours.get("emulator_cpu_s")
    out = {
        "ours_cpu_s": ours_cpu,
        "emulator_cpu_s": emulator,
        "ours_cpu_vs_core": ratio(core_s, ours_cpu),
    }
    if core_s and emulator is not None:
        cores = os.cpu_count() or 1
        out["ours_vs_core_bound"] = round(min(1.0, cores * core_s / (core_s + emulator)), 3)
    return out


def run_scaling(work: Path, small: int) -> dict:
    results = {}
    for n in (small, small * 10):
        path = work / f"scaling-{n}.jsonl"
        data.metrics(path, n)
        log(f"[scaling] metrics x{n}")
        results[n] = measure_fresh(TABLES["metrics"], "ours", "metrics", str(path))
    a, b = results[small], results[small * 10]
    return {
        "small": a,
        "large": b,
        "events_ratio": 10,
        "time_ratio": ratio(b["seconds"], a["seconds"]),
        "rss_ratio": ratio(b["peak_rss_mb"], a["peak_rss_mb"]),
    }


def run_index_cost(work: Path, events: int, rounds: int) -> dict:
    """The job's CPU with and without its series index: the built-in server-metrics file
    through the generic job, ``events`` events, each run on a fresh instance, the two taking
    turns over ``rounds`` rounds (:func:`alternating`); each side is its run of median CPU.
    ``cpu_share``: the index's share of the job's CPU (:func:`paired_share`; the target: at
    most 5% at 1,000,000 events); ``own_cpu_share``: its own code's (:func:`own_share`), what
    the job timed of it (``series_index_cpu_us``: its drains, the rows the builder did not
    fold) and the builder's fold of as many events (``fold_ns_per_event``, measured apart:
    :func:`benchmarks.cases.fold`), without the runner's cost of writing its rows."""
    path = work / f"index-cost-{events}.jsonl"
    data.metrics(path, events)

    def side(mode: str) -> Callable[[], dict]:
        def once() -> dict:
            log(f"[index_cost] metrics x{events} {mode}")
            return measure_fresh(TABLES["metrics"], "ours", "metrics", str(path), mode)

        return once

    runs = alternating({mode: side(mode) for mode in ("index", "noindex")}, rounds)
    out = {mode: _median_of(got, "cpu_s") for mode, got in runs.items()}
    out["events"] = events
    out["rounds"] = rounds
    out["cpu_s_runs"] = {mode: [r["cpu_s"] for r in got] for mode, got in runs.items()}
    out["cpu_ratio"] = ratio(out["index"]["cpu_s"], out["noindex"]["cpu_s"])
    out["cpu_share"] = paired_share(out["cpu_s_runs"]["index"], out["cpu_s_runs"]["noindex"])
    # its own code: what the job timed of it, and the builder's fold of as many events
    log("[index_cost] the builder's fold, per event")
    folding = measure("fold", "metrics", str(path))
    out["fold_ns_per_event"] = folding["ns_per_event"]
    fold_s = folding["ns_per_event"] * events / 1e9
    timed = [r.get("index_cpu_s", 0.0) for r in runs["index"]]
    out["cpu_s_runs"]["index_own"] = [round(t + fold_s, 6) for t in timed]
    out["own_cpu_share"] = own_share(out["cpu_s_runs"]["index_own"], out["cpu_s_runs"]["index"])
    out["seconds_ratio"] = ratio(out["index"]["seconds"], out["noindex"]["seconds"])
    return out


def _median_of(runs: list[dict], figure: str) -> dict:
    """The run of median ``figure`` (an odd count; the lower middle one of an even count)."""
    return sorted(runs, key=lambda r: r[figure])[(len(runs) - 1) // 2]


def run_module(module: str, args: list[str], name: str, out: Path) -> dict:
    """A benchmark module of its own (its JSON report written to ``out``), on the running
    emulator."""
    log(f"[{name}] python -m {module} {' '.join(args)}")
    done = subprocess.run(
        [sys.executable, "-m", module, *args, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=7200,
        cwd=ROOT.parent,
        env=dict(os.environ),
    )
    if done.returncode:
        raise StepFailed(
            f"{module} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return json.loads(out.read_text(encoding="utf-8"))


NIGHTLY_DATES = ("20170726", "20170727", "20170728")  # a round per day: fresh destinations


def run_nightly(meters: int, rounds: int, days: int = 4) -> dict:
    """The job against the data client doing the same work, both timed from the creation of
    their destination table: the verified copy against a client copy that reads its copy back
    and compares count and checksum, and the copy alone against the client's copy alone. The
    cases alternate over ``rounds`` rounds (a day each), each figure the median of its rounds,
    so that a load coming and going on a shared machine falls on both sides."""
    instance = fresh_instance(["SENSOR"])
    log(f"[nightly] loading SENSOR ({meters} meters x {days} days)")
    load = measure("load_sensor", instance, str(meters), str(days))
    cases = {
        "ours": ("nightly_ours",),
        "ours_copy_only": ("nightly_ours", "--no_verify"),
        "ceiling": ("nightly_ceiling", "verify"),
        "ceiling_copy_only": ("nightly_ceiling",),
    }
    runs: dict[str, list[dict]] = {name: [] for name in cases}
    for date in NIGHTLY_DATES[:rounds]:
        for name, (mode, *flags) in cases.items():
            log(f"[nightly] {name} {date}")
            runs[name].append(measure(mode, instance, date, *flags))
    out = {name: _median_run(got) for name, got in runs.items()}
    return {
        **out,
        "rounds": rounds,
        "rows_per_s_runs": {n: [r["rows_per_s"] for r in got] for n, got in runs.items()},
        "copy_only_vs_ceiling": ratio(
            out["ours_copy_only"]["rows_per_s"], out["ceiling_copy_only"]["rows_per_s"]
        ),
        "day_rows": out["ceiling"]["rows"],
        "sensor_rows": load["rows"],
        "ours_vs_ceiling": ratio(out["ours"]["rows_per_s"], out["ceiling"]["rows_per_s"]),
        # CPU seconds of the two processes for the same work: what a loaded machine charges
        "ours_cpu_vs_ceiling": ratio(out["ours"].get("cpu_s"), out["ceiling"].get("cpu_s")),
        "rows_read_from_server": out["ours"].get("rows_read_from_server"),
    }


def _median_run(runs: list[dict]) -> dict:
    """The run of median speed."""
    return _median_of(runs, "rows_per_s")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def table(report: dict) -> str:
    lines = [
        f"{'dataset':<9}{'core ev/s':>11}{'ours rows/s':>13}{'(mode)':>10}{'ceiling':>10}"
        f"{'naive':>9}{'wire':>9}{'ours/ceil':>11}{'ours/naive':>11}{'ours/wire':>10}"
        f"{'ours/core':>10}{'(bound)':>8}{'cpu/core':>9}"
        f"{'RSS MB':>8}{'CPU s':>7}{'no chk':>7}{'check':>7}{'(own)':>7}"
    ][: 1 if report["datasets"] else 0]
    for dataset in SIZES:
        if dataset not in report["datasets"]:
            continue
        d = report["datasets"][dataset]
        s = d["summary"]
        lines.append(
            f"{dataset:<9}{s['core_events_per_s']:>11,.0f}{s['ours_rows_per_s']:>13,.0f}"
            f"{'mp' if s['ours_mode'] == 'multi_processing' else 'in-proc':>10}"
            f"{s['ceiling_rows_per_s']:>10,.0f}{s['naive_rows_per_s']:>9,.0f}"
            f"{s['wire_rows_per_s']:>9,.0f}"
            f"{s['ours_vs_ceiling']:>11.2f}{s['ours_vs_naive']:>11.2f}{s['ours_vs_wire']:>10.2f}"
            f"{s['ours_vs_core']:>10.2f}{_fmt(s.get('ours_vs_core_bound')):>8}"
            f"{_fmt(s.get('ours_cpu_vs_core')):>9}"
            f"{d['ours']['peak_rss_mb']:>8.0f}"
            f"{_fmt(s.get('ours_cpu_s')):>7}{_fmt(s.get('ours_cpu_s_no_check')):>7}"
            f"{_share(s.get('check_cpu_share')):>7}{_share(s.get('check_own_cpu_share')):>7}"
        )
    sc = report.get("scaling")
    if sc:
        large = sc["large"]
        lines.append(
            f"scaling: 10x events -> {sc['time_ratio']:.2f}x time, {sc['rss_ratio']:.2f}x peak "
            f"RSS ({large['events']:,} events: {large['peak_rss_mb']:.0f} MB)"
        )
    n = report.get("nightly")
    lines += _nightly_lines(n) if n else []
    if report.get("startup"):
        lines += startup.table_lines(report["startup"])
    lines += _read_lines(report)
    lines += init_flights.lines(report.get("init_flights"))
    lines.append(
        "(bound): the most ours/core this machine allows, given the emulator's CPU for the same "
        "rows; cpu/core: the builder's CPU over the job process's CPU; CPU s / no chk: the "
        "in-process job's CPU seconds with the overwrite check (default) and without (each the "
        "run of median CPU, the two taking turns over the rounds); check: the share of the "
        "job's CPU the check costs, from the rounds' runs with and without it; (own): the "
        "share its own code spent, timed inside the job"
    )
    lines.append("targets: " + ", ".join(f"{k} {v}" for k, v in TARGETS.items()))
    lines.append(f"machine: {MACHINE['cpu_model']}, {MACHINE['cpu_count']} cores, Python "
                 f"{MACHINE['python']}")  # fmt: skip
    if report.get("quick"):
        lines.append(
            "quick run: at these sizes start-up dominates every 'ours' figure; the targets are "
            "judged on `make bench`"
        )
    return "\n".join(lines)


def _read_lines(report: dict) -> list[str]:
    """The series index's cost to a job, and the reads at cardinality."""
    lines = []
    cost = report.get("index_cost")
    if cost:
        lines.append(
            f"series index: job CPU {cost['noindex']['cpu_s']:.1f}s without, "
            f"{cost['index']['cpu_s']:.1f}s with ({cost['cpu_ratio']:.3f}x{_of_job(cost)}) for "
            f"{cost['events']:,} metrics events; wall {cost['seconds_ratio']:.3f}x"
        )
    for r in (report.get("read_scale") or {}).get("results", []):
        if "star_error" in r:
            lines.append(f"read scale {r['series']:>7,} series: * {r['star_error'][:80]}")
            continue
        lines.append(
            f"read scale {r['series']:>7,} series: suggest p50 {r['suggest_p50_ms']} ms, lookup "
            f"p50 {r['lookup_p50_ms']} ms, * {r['star_ms']:.0f} ms = {r['star_vs_floor']}x the "
            f"data client's read ({r['floor_ms']:.0f} ms)"
        )
    flights = report.get("flights")
    if flights:
        wrong = sum(m["wrong"] or 0 for m in flights["metrics"].values())
        lines.append(
            f"flights ({flights['landing']['records']:,} records, "
            f"{flights['landing']['pairs']:,} series): every metric with carrier=*, flight=* "
            f"in at most {flights['slowest_s']:.1f}s, {wrong} value(s) wrong"
        )
    return lines


def _of_job(cost: dict) -> str:
    """The index's share of the job's CPU and the rounds it is the median of (reports from
    before they were kept have neither)."""
    if cost.get("cpu_share") is None:
        return ""
    own = cost.get("own_cpu_share")  # reports from before its own code was timed have none
    mine = "" if own is None else f" (own code {_share(own)})"
    return f", {_share(cost['cpu_share'])} of the job{mine}, {cost['rounds']} rounds"


def _nightly_lines(n: dict) -> list[str]:
    return [
        f"nightly (medians of {n.get('rounds', 1)}; both sides timed from table creation on): "
        f"ours {n['ours']['rows_per_s']:,.0f} rows/s, ceiling {n['ceiling']['rows_per_s']:,.0f} "
        f"rows/s ({n['ours_vs_ceiling']:.2f}; "
        f"copy without verification {n['ours_copy_only']['rows_per_s']:,.0f} rows/s against "
        f"{n.get('ceiling_copy_only', n['ceiling'])['rows_per_s']:,.0f}, "
        f"{n['copy_only_vs_ceiling']:.2f}; CPU of the verified copy "
        f"{_fmt(n.get('ours_cpu_vs_ceiling'))}x the ceiling's); rows read from "
        f"the server {n['rows_read_from_server']:,} for a day of {n['day_rows']:,} "
        f"(SENSOR holds {n['sensor_rows']:,})"
    ]


@dataclasses.dataclass
class Run:
    """What every section is given: the run's profile (an index into ``PROFILES``, and into
    every size tuple), its scratch directory, its options, and the report, which ``save``
    writes as it stands (each section's figures are kept as the section ends)."""

    profile: int
    work: Path
    out: Path
    datasets: list[str]
    ours_events: int | None
    report: dict

    def size(self, sizes: tuple):
        return sizes[self.profile]

    def save(self) -> None:
        write_report(self.report, self.out)

    def guarded(self, name: str, section: Callable[[], object]) -> object | None:
        """``section()``, or None when it fails: the failure is logged and named in the
        report's ``failed`` (the other sections still run), and the report is saved."""
        try:
            return section()
        except Exception as err:  # any failure costs this section only
            log(f"[{name}] FAILED: {type(err).__name__}: {err}")
            self.report["failed"][name] = f"{type(err).__name__}: {err}"[-6000:]
            return None
        finally:
            self.save()


def write_report(report: dict, out: Path) -> None:
    """The report as it stands, replacing the file whole (a crash mid-write leaves the last)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    partial.write_text(json.dumps(report, indent=2, sort_keys=True))
    os.replace(partial, out)


def datasets_section(run: Run) -> dict:
    """Every figure of each dataset, each on an emulator of its own (rows of earlier datasets
    would slow this one's writes), kept as each dataset ends; a failing one is named
    ``datasets/NAME``."""
    got = run.report["datasets"]
    for dataset in run.datasets:
        run.guarded(f"datasets/{dataset}", lambda dataset=dataset: one_dataset(run, dataset))
    return got


def one_dataset(run: Run, dataset: str) -> None:
    path = run.work / f"{dataset}.jsonl"
    events = run.size(SIZES[dataset])
    getattr(data, dataset)(path, events)
    ours_path = None
    if run.ours_events and run.ours_events != events:
        ours_path = run.work / f"{dataset}-ours.jsonl"
        getattr(data, dataset)(ours_path, run.ours_events)
    with fresh_emulator():
        run.report["datasets"][dataset] = run_dataset(
            dataset, path, profile=run.profile, ours_path=ours_path
        )


def scaling_section(run: Run) -> dict:
    with fresh_emulator():
        return run_scaling(run.work, run.size(SCALING_EVENTS))


def nightly_section(run: Run) -> dict:
    with fresh_emulator():
        return run_nightly(run.size(NIGHTLY_METERS), run.size(NIGHTLY_ROUNDS))


def index_cost_section(run: Run) -> dict:
    with fresh_emulator():
        events = run.ours_events or run.size(SIZES["metrics"])
        return run_index_cost(run.work, events, run.size(INDEX_COST_ROUNDS))


def startup_section(run: Run) -> dict:
    with fresh_emulator():
        log("[startup] whole commands and their floors, each its own process")
        target = config.Target("test-project", fresh_instance([]))
        return startup.run_startup(
            run.work, target, run.size(startup.REPEATS), every_help=run.profile > 0
        )


def module_section(module: str, flag: str, sizes: tuple) -> Callable[[Run], dict]:
    """A section that is a benchmark module of its own (``python -m module flag SIZE``), its
    JSON report beside this run's."""
    name = module.rpartition(".")[2]

    def section(run: Run) -> dict:
        with fresh_emulator():
            out = run.out.with_name(f"{run.out.stem}-{name}.json")
            return run_module(module, [flag, str(run.size(sizes))], name, out)

    return section


# Every section, in the order a run takes them: name -> what measures it (a dict for the report).
SECTIONS: dict[str, Callable[[Run], dict]] = {
    "datasets": datasets_section,
    "scaling": scaling_section,
    "nightly": nightly_section,
    "index_cost": index_cost_section,
    "read_scale": module_section("benchmarks.read_scale", "--sizes", READ_SIZES),
    "flights": module_section("benchmarks.flights", "--records", FLIGHTS),
    "prom_remote": module_section("benchmarks.prom_remote", "--series", PROM_SERIES),
    "init_flights": module_section("benchmarks.init_flights", "--sizes", INIT_FLIGHTS),
    "startup": startup_section,
}


def run_sections(run: Run, sections: set[str]) -> None:
    """Each chosen section, its figures into the report (saved as each ends)."""
    for name, section in SECTIONS.items():
        if name not in sections:
            continue
        got = run.guarded(name, lambda section=section: section(run))
        if got is not None:
            run.report[name] = got
            run.save()  # guarded saved before its figures were in: a crash now keeps them


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="small sizes (minutes)")
    size.add_argument("--toy", action="store_true", help="toy sizes: does every section run?")
    parser.add_argument("--name", help="report name (default: the profile: toy, quick or full)")
    parser.add_argument("--out", type=Path, help="report file (default: results/NAME.json)")
    parser.add_argument(
        "--datasets", default=",".join(SIZES), help="comma-separated subset of %(default)s"
    )
    parser.add_argument(
        "--ours_events",
        type=int,
        default=None,
        help="events of the in-process 'ours' run and of 'core' per dataset (the slower "
        f"baselines keep their size). Default: {OURS_EVENTS:,} on a full run (where cpu/core "
        "is judged), the dataset's size on a quick one",
    )
    parser.add_argument(
        "--sections",
        default=",".join(SECTIONS),
        help="comma-separated subset of %(default)s (e.g. startup: only the start-up figures)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    sections = set(args.sections.split(","))
    if sections - set(SECTIONS):
        parser.error(f"--sections: unknown {sorted(sections - set(SECTIONS))}; use {[*SECTIONS]}")
    datasets = args.datasets.split(",")
    if set(datasets) - set(SIZES):
        parser.error(f"--datasets: unknown {sorted(set(datasets) - set(SIZES))}; use {[*SIZES]}")
    profile = 0 if args.toy else 1 if args.quick else 2
    name = args.name or PROFILES[profile]
    full = profile == len(PROFILES) - 1
    ours_events = args.ours_events
    if ours_events is None:
        ours_events = OURS_EVENTS if full else None
    started = time.monotonic()
    report = {
        "name": name,
        "machine": MACHINE,
        "profile": PROFILES[profile],
        "quick": not full,
        "sizes": {k: v[profile] for k, v in SIZES.items()},
        "ours_events": ours_events,
        "targets": TARGETS,
        "datasets": {},
        "failed": {},
    }
    out = args.out or ROOT / "results" / f"{name}.json"
    IN_PROCESS[:] = [True] if profile == 0 else []
    with tempfile.TemporaryDirectory(prefix="btts-bench-") as tmp:
        run = Run(profile, Path(tmp), out, datasets, ours_events, report)
        run_sections(run, sections)
    report["seconds"] = round(time.monotonic() - started, 1)
    write_report(report, out)
    print(table(report))
    print(f"report: {out} ({report['seconds']}s)")
    if report["failed"]:
        log(f"FAILED sections: {', '.join(report['failed'])} (the others' figures are kept)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
