"""A command pays only for what it runs: ``btts --help``, every light command's ``--help``, an
argument error and a query load neither Beam nor (for help and errors) the Bigtable clients.

Each case runs ``btts`` in a fresh interpreter and reports which heavy packages ended up in
``sys.modules``; the start-up times themselves are the ``startup`` section of ``make bench``.
"""

from __future__ import annotations

import functools
import gc
import importlib
import json
import os
import subprocess
import sys
import uuid

import pytest

from btts import config
from btts.lazy import lazy_module
from btts.samples import data as samples
from btts_cli import main as cli
from pipelines import flags, job_modules
from pipelines.common import options
from tests.support.jobs import added_flags, parsed_flags, run_job, write_lines

BEAM = "apache_beam"
CLIENTS = ("google.cloud.bigtable", "google.cloud.bigtable.data", "grpc")
HEAVY = (BEAM, *CLIENTS, "matplotlib", "pyarrow", "yaml")

# Runs btts's main in this interpreter, then prints which HEAVY packages it loaded.
_PROBE = (
    "import json, sys\n"
    "from btts_cli import main as cli\n"
    "try:\n"
    "    code = cli.main(sys.argv[2:])\n"
    "except SystemExit as done:\n"
    "    code = done.code\n"
    "sys.stdout.flush()\n"
    "heavy = [m for m in json.loads(sys.argv[1]) if m in sys.modules]\n"
    "print('\\nLOADED ' + json.dumps({'code': code, 'heavy': heavy}))\n"
)

# Commands whose --help is btts's own.
LIGHT_HELP = [
    [],
    ["tables"], ["tables", "create"], ["tables", "list"], ["tables", "show"],
    ["emulator"], ["emulator", "start"], ["ingest"], ["check"],
    ["query"], ["query", "metrics"], ["query", "meters-of-day"], ["tenant", "drop"],
    ["advise"], ["advise", "lint"], ["advise", "table"], ["templates"], ["serve"],
]  # fmt: skip


def loaded(argv: list[str]) -> dict:
    """Exit code and heavy packages of ``btts ARGV`` in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(HEAVY), *argv],
        capture_output=True, text=True, timeout=120, env=dict(os.environ),
    )  # fmt: skip
    line = done.stdout.rpartition("\nLOADED ")[2]
    assert line, f"btts {' '.join(argv)}: {done.stderr[-2000:]}"
    return json.loads(line)


# Commands that hand --help to a job: its flags come from pipelines.flags, never from Beam's
# option classes (an ingest job's help reads its built-in schema for the input section: yaml).
JOB_HELP = [
    *(["ingest", job] for job in sorted(job_modules())),
    ["check", "server_metrics"], ["nightly"], ["demo"],
]  # fmt: skip


@pytest.mark.parametrize("words", LIGHT_HELP, ids=lambda w: " ".join(w) or "btts")
def test_help_imports_nothing_heavy(words):
    got = loaded([*words, "--help"])
    assert got["code"] == 0
    assert got["heavy"] == [], f"btts {' '.join(words)} --help loaded {got['heavy']}"


@pytest.mark.parametrize("words", JOB_HELP, ids=" ".join)
def test_a_jobs_help_imports_neither_beam_nor_a_client(words):
    got = loaded([*words, "--help"])
    assert got["code"] == 0
    assert [m for m in got["heavy"] if m != "yaml"] == [], f"btts {' '.join(words)} --help"


@pytest.mark.parametrize("job", [*sorted(job_modules()), "nightly"])
def test_a_jobs_help_is_what_its_run_parses(job):
    """The help built without Beam (pipelines.flags) says what the job's option classes parse:
    the same description, flags, help texts and defaults, in the same order."""
    module = importlib.import_module(f"pipelines.{job}")
    assert flags.description(job) == module.__doc__
    fast = flags.help_parser("p", flags.description(job), flags.GROUPS[job], "INPUT")
    beam = options.option_classes_help("p", module.__doc__, module.OPTION_CLASSES, "INPUT")
    assert fast.format_help() == beam.format_help()
    groups = [functools.partial(flags.add_group, group=g) for g in flags.GROUPS[job]]
    assert _declared(added_flags(*groups)) == _declared(parsed_flags(module.OPTION_CLASSES))


def _declared(added: dict) -> list[dict]:
    """Every argument as declared (name, type, default, choices, help…), not where it lives."""
    return [{k: v for k, v in vars(a).items() if k != "container"} for a in added.values()]


@pytest.mark.parametrize(
    "argv",
    [["tabels"], ["query", "metrics", "--host", "h", "--start", "yesterday"], ["ingest", "nope"]],
    ids=["misspelt command", "bad time", "unknown job"],
)
def test_argument_errors_import_nothing_heavy(argv):
    got = loaded(argv)
    assert got["code"] == 2
    assert got["heavy"] == []


def test_the_help_lines_are_the_commands_own():
    """`btts --help` lists each command by its line in COMMANDS without importing it: the line
    must be what the command's own parser says, or the listing would drift from the commands."""
    assert cli.parser(None).format_help() == cli.parser().format_help()


def test_only_the_named_command_is_made_in_full():
    made = cli.parser("tables")
    args = made.parse_args(["tables", "show", "--table", "METRIC"])
    assert args.func is not None
    with pytest.raises(SystemExit):  # the other commands are their help line only
        made.parse_args(["emulator", "start", "--port", "1"])


def test_a_query_loads_no_beam(bigtable_emulator, tmp_path):
    """`btts query` reads with the data client: Beam is not imported for it."""
    target = config.Target("test-project", f"s{uuid.uuid4().hex[:12]}")
    records = list(samples.metric_records(hosts=2, seconds=60))
    path = write_lines(tmp_path / "m.jsonl", [json.dumps(r) for r in records])
    run_job("server_metrics", target, path, tmp_path / "dead")
    host = samples.host_name(1)
    start, end = samples.METRICS_START_MS, samples.METRICS_START_MS + 60_000
    got = loaded(
        ["query", "metrics", "--host", host, "--start", str(start), "--end", str(end),
         "--format", "json", "--instance", target.instance, "--project", target.project]
    )  # fmt: skip
    assert got["code"] == 0
    assert "google.cloud.bigtable.data" in got["heavy"]  # it did read
    assert BEAM not in got["heavy"]


def test_a_lazy_module_runs_at_its_first_use(tmp_path, monkeypatch):
    (tmp_path / "lazy_probe_mod.py").write_text("import sys\nsys.lazy_probe_ran = True\nX = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_probe_mod", raising=False)
    module = lazy_module("lazy_probe_mod")
    try:
        assert not getattr(sys, "lazy_probe_ran", False)
        assert module.X == 1
        assert sys.lazy_probe_ran
        assert lazy_module("lazy_probe_mod") is module
    finally:
        sys.modules.pop("lazy_probe_mod", None)
        vars(sys).pop("lazy_probe_ran", None)


def test_a_missing_module_is_named():
    with pytest.raises(ModuleNotFoundError, match="no_such_btts_module"):
        lazy_module("no_such_btts_module")


def test_the_command_ends_its_process_lightly_but_a_caller_keeps_its_collector():
    """As the process's command, main leaves the heap to the OS (no collection at exit); called
    with arguments (a test, the demo) it leaves the caller's garbage collector alone."""
    code = (
        "import gc, sys\n"
        "from btts_cli import main as cli\n"
        "sys.argv = ['btts', 'tables', 'show', '--table', 'METRIC']\n"
        "cli.main()\n"
        "print('GC', gc.isenabled(), gc.get_freeze_count() > 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.splitlines()[-1] == "GC False True", done.stderr
    assert cli.main(["tables", "show", "--table", "METRIC"]) == 0
    assert gc.isenabled()


def test_a_check_loads_no_bigtable_client(tmp_path):
    """`btts check` writes nothing: it runs Beam, but neither Bigtable client is loaded."""
    records = list(samples.metric_records(hosts=1, seconds=60))
    path = write_lines(tmp_path / "m.jsonl", [json.dumps(r) for r in records])
    got = loaded(["check", "server_metrics", "--input", str(path)])
    assert got["code"] == 0
    assert BEAM in got["heavy"]
    assert not [m for m in got["heavy"] if m.startswith("google.cloud.bigtable")]
