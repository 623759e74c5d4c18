"""Start-up: whole ``btts`` commands as a user runs them, each its own process, beside the
floors measured in the same rounds: ``python -c pass``, importing the Bigtable data client, and
the data client reading the same rows in one process (and ``cbt read`` of them, where ``cbt``
is installed).

Every case runs once per round, the rounds one after another, so that a load that comes and
goes on a shared machine falls on cases and floors alike; each figure is the median of its
rounds. Commands run against the benchmark's emulator (``BIGTABLE_EMULATOR_HOST``), with
Python's bytecode cache on as on any installed machine (``PYTHONDONTWRITEBYTECODE`` is dropped
from their environment: otherwise every run compiles the project's modules again).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import data
from btts import config
from btts.query import engine
from btts.samples import data as samples
from btts_cli.main import COMMANDS
from pipelines import job_modules

__all__ = ["REPEATS", "TARGETS", "run_startup", "table_lines"]

REPEATS = (1, 3, 7)  # rounds of a toy, a quick and a full run
ANSWER_ROWS = 100  # rows of the query's answer, lines of the checked and ingested file
TARGETS = {
    "help_vs_python": 5.0,  # every btts --help: at most this many `python -c pass`
    "query_vs_floor": 1.5,  # btts query over the data client reading the same rows
    "check_vs_floor": 2.0,  # btts check of a 100-line file, over the same floor
    "ingest_s": 2.5,  # a 100-row btts ingest, seconds (on an idle 2-core machine)
}

# The floor of a query: import the data client and read the rows of [start, end) of a table.
_READ = (
    "import sys\n"
    "from google.cloud.bigtable.data import BigtableDataClient, ReadRowsQuery, RowRange\n"
    "project, instance, table, start, end = sys.argv[1:]\n"
    "query = ReadRowsQuery(row_ranges=RowRange(bytes.fromhex(start), bytes.fromhex(end)))\n"
    "with BigtableDataClient(project=project) as client:\n"
    "    rows = client.get_table(instance, table).read_rows(query)\n"
    "print(len(rows))\n"
)


def _btts() -> list[str]:
    script = Path(sys.executable).with_name("btts")
    return [str(script)] if script.exists() else [sys.executable, "-m", "btts_cli.main"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


class StartupFailed(RuntimeError):
    """A measured command did not do what it does for a user."""


def _run(argv: list[str], expect: int = 0) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=_env())
    seconds = time.monotonic() - started
    if done.returncode != expect:
        raise StartupFailed(
            f"startup: {' '.join(argv[:6])} exited {done.returncode}:\n{done.stderr[-2000:]}"
        )
    return seconds, done.stdout


def _cases(work: Path, target: config.Target, every_help: bool) -> dict[str, list[str]]:
    """Every measured command line, by name; the answer's rows are the file's events. Without
    ``every_help``, the help of no single command (a toy run: does the section run at all?)."""
    py, btts = sys.executable, _btts()
    events = work / "startup-metrics.jsonl"
    data.metrics(events, ANSWER_ROWS)  # one host, a reading every 5 s
    host = samples.host_name(0)
    start, end = samples.METRICS_START_MS, samples.METRICS_START_MS + 5_000 * ANSWER_ROWS
    (scan,) = engine.builtin_query(
        "server_metrics", "host_metrics", {"hostname": host}, start, end
    ).scans
    ((first, last),) = scan.ranges
    on = ["--project", target.project, "--instance", target.instance]
    cases = {
        "python": [py, "-c", "pass"],
        "import_data_client": [py, "-c", "import google.cloud.bigtable.data"],
        "read_floor": [py, "-c", _READ, target.project, target.instance, scan.table,
                       first.hex(), last.hex()],
        "ingest": [*btts, "ingest", "server_metrics", "--input", str(events), "--dead_letter",
                   str(work / "startup-dead"), *on],
        "query": [*btts, "query", "metrics", "--host", host, "--start", str(start), "--end",
                  str(end), "--format", "json", *on],
        "check": [*btts, "check", "server_metrics", "--input", str(events)],
    }  # fmt: skip
    if shutil.which("cbt"):
        cases["cbt_read"] = ["cbt", "-project", target.project, "-instance", target.instance,
                             "read", scan.table, f"start={first.decode()}",
                             f"end={last.decode()}"]  # fmt: skip
    cases["help"] = [*btts, "--help"]
    cases["help ingest server_metrics"] = [*btts, "ingest", "server_metrics", "--help"]
    cases["help check server_metrics"] = [*btts, "check", "server_metrics", "--help"]
    if not every_help:
        return cases
    for name in COMMANDS:
        cases[f"help {name}"] = [*btts, name, "--help"]
    for job in sorted(job_modules()):  # a job's flags (pipelines.flags) and input section
        cases[f"help ingest {job}"] = [*btts, "ingest", job, "--help"]
    return cases


def run_startup(work: Path, target: config.Target, repeats: int, every_help: bool = True) -> dict:
    """Medians of ``repeats`` rounds of every case, and their ratios to the floors."""
    cases = _cases(work, target, every_help)
    # The rows the query reads (the measured ingests write the same cells again); the job
    # creates every table it writes, its series index too, as a user's first run would.
    _run([*cases["ingest"], "--create_tables"])
    runs: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, argv in cases.items():
            seconds, out = _run(argv)
            runs[name].append(seconds)
            if name == "read_floor" and int(out) != ANSWER_ROWS:
                raise StartupFailed(
                    f"startup: the floor read {out.strip()} rows, not {ANSWER_ROWS}"
                )
    median = {name: round(statistics.median(times), 3) for name, times in runs.items()}
    helps = [n for n in median if n.startswith("help")]
    worst = max(helps, key=median.get)
    jobs = [n for n in helps if n.startswith(("help ingest ", "help check "))]
    worst_job = max(jobs, key=median.get)
    return {
        "repeats": repeats,
        "answer_rows": ANSWER_ROWS,
        "median_s": median,
        "runs_s": {name: [round(t, 3) for t in times] for name, times in runs.items()},
        "worst_help": worst,
        "help_vs_python": _ratio(median[worst], median["python"]),
        "worst_job_help": worst_job,
        "job_help_vs_python": _ratio(median[worst_job], median["python"]),
        "query_vs_floor": _ratio(median["query"], median["read_floor"]),
        "check_vs_floor": _ratio(median["check"], median["read_floor"]),
        "ingest_s": median["ingest"],
        "cbt_vs_floor": _ratio(median.get("cbt_read"), median["read_floor"]),
        "targets": TARGETS,
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def table_lines(s: dict) -> list[str]:
    """The start-up section of the printed summary."""
    m = s["median_s"]
    cbt = f", cbt read {m['cbt_read']:.2f}s" if "cbt_read" in m else ""
    return [
        f"startup (medians of {s['repeats']}): python {m['python']:.3f}s, import data client "
        f"{m['import_data_client']:.2f}s, data client read of {s['answer_rows']} rows "
        f"{m['read_floor']:.2f}s{cbt}",
        f"  help: worst `{s['worst_help']}` {m[s['worst_help']]:.3f}s = {s['help_vs_python']:.1f}x "
        f"python; query {m['query']:.2f}s = {s['query_vs_floor']:.2f}x floor; check "
        f"{m['check']:.2f}s = {s['check_vs_floor']:.2f}x floor; ingest {m['ingest']:.2f}s",
        f"  of which a job's flags: worst `{s['worst_job_help']}` {m[s['worst_job_help']]:.3f}s = "
        f"{s['job_help_vs_python']:.1f}x python",
    ]
