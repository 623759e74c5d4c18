"""Every batch job and the nightly copy as cases that run on several runners and compare.

A case's run on a runner under test must land what the in-process DirectRunner lands: every
table's cells byte for byte (key, family, qualifier, value, timestamp) as written and after the
declared garbage collection, the counters, the dead-letter reasons and the dead-letter records.
Its input is split over several files so that, on two workers, both read and write (each
worker process's share is tallied: :class:`transforms.metrics.WorkerTally`).

Raw cells are compared exactly: the tables are made before the run with the declared families
but without their GC rules (the emulator, like Bigtable, collects superseded versions at a
time of its own choosing, so a raw dump of a table with GC rules depends on when it is read);
the after-GC view applies the declaration's rules to that dump (:func:`gc_view`)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib
import json
import os
import pickle
import uuid
from collections.abc import Sequence
from pathlib import Path

from apache_beam.options.pipeline_options import PipelineOptions
from google.cloud.bigtable.data import BigtableDataClient, RowMutationEntry, SetCell

from btts import admin, config
from btts.samples import data
from pipelines import nightly
from pipelines.common.jobspec import index_tables, job_tables, table_decl
from pipelines.common.options import StreamingInputOptions
from tests.support import REPO
from tests.support.jobs import dump, read_dead_letters, run_job, write_lines
from transforms.metrics import CHECK_CPU_US, INDEX_CPU_US, read_worker_tallies
from transforms.schema import builtin_tables
from transforms.schema.model import INDEX_FAMILY
from transforms.table_model import TableDecl

MP = ("--direct_num_workers=2", "--direct_running_mode=multi_processing")
FILES = 4  # input files per case: ranges for both workers whatever the runner's round-robin
IOT = REPO / "docs" / "schemas" / "tb-cell-iot-temperatures.yaml"
# Counters whose totals depend on how the runner cut the work, not on what landed: distinct rows
# are counted per bundle (summed, an upper bound), superseded rows per bundle's collapse, and
# the nightly read's pieces are cut at keys the emulator samples at random.
PER_BUNDLE = ("distinct_rows_", "distinct_unknown_", "superseded_rows_", "read_ranges_")
TIMED = (CHECK_CPU_US, INDEX_CPU_US)  # measured CPU, not counts: another run, another figure


@dataclasses.dataclass(frozen=True)
class Case:
    """One job's run: its good and bad input lines and its flags."""

    id: str
    job: str
    lines: tuple[str, ...]
    bad: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()


def _json(records) -> tuple[str, ...]:
    return tuple(json.dumps(record) for record in records)


def _iot_records() -> list[dict]:
    """Device temperatures for the user schema (times ending in Z, as 3.10 once refused)."""
    start = dt.datetime(2024, 5, 1, 9, tzinfo=dt.timezone.utc)
    out = []
    for i in range(60):
        moment = start + dt.timedelta(seconds=97 * i)
        record = {
            "device": f"dev-{i % 5}",
            "ts": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "temperature_c": round(15 + (i * 7 % 100) / 10, 1),
        }
        if i % 3:
            record["humidity"] = 30 + i % 40
        out.append(record)
    return out


IOT_BAD = (
    '{"device": "dev-9", "ts": "2024-05-01T10:00:00Z", "temperature_c": "warm"}',
    '{"device": "dev-9", "temperature_c": 20}',
)


def cases() -> dict[str, Case]:
    """Every batch job; the weather balloons once per column pattern."""
    out = [
        Case("server_metrics", "server_metrics", tuple(data.metric_events(hosts=4, seconds=60)),
             tuple(data.BAD_METRIC_LINES[:3])),
        Case("smart_meters", "smart_meters", _json(data.meter_records(meters=3, days=1)),
             tuple(data.BAD_METER_LINES[:2]), ("--timezone=America/New_York",)),
        Case("market_data", "market_data", _json(data.tick_records(symbols=3, every_s=21_600)),
             tuple(data.BAD_TICK_LINES[:2])),
        Case("battery", "battery", _json(data.battery_records(users=3, minutes=60, every=15)),
             tuple(data.BAD_BATTERY_LINES[:2]), ("--battery_layout=salted",)),
        Case("game_results", "game_results", _json(data.game_records(players=2))[:12],
             tuple(data.BAD_GAME_LINES[:2])),
        Case("garden", "garden", _json(data.garden_records())[::7],
             tuple(data.BAD_GARDEN_LINES[:2]), ("--garden_layout=both",)),
        Case("sales", "sales", _json(data.sales_records(employees=2))[:40],
             tuple(data.BAD_SALES_LINES[:2])),
        Case("user_schema", "generic", _json(_iot_records()), IOT_BAD, (f"--schema={IOT}",)),
    ]  # fmt: skip
    balloons = _json(data.balloon_records(balloons=2, minutes=4))
    for pattern in ("TS-COLS", "TS-BLOB", "TB-COL", "TB-CELL"):
        flags = (f"--balloon_pattern={pattern}",)
        out.append(Case(f"weather_balloons[{pattern}]", "weather_balloons", balloons,
                        tuple(data.BAD_BALLOON_LINES[:2]), flags))  # fmt: skip
    return {case.id: case for case in out}


def write_inputs(case: Case, where: Path) -> str:
    """The case's lines (a bad one second, the rest after) dealt over :data:`FILES` files;
    the glob matching them. Each file appears whole (written aside, then renamed): another
    test worker may be reading the same shared inputs."""
    mixed = [*case.lines[:1], *case.bad, *case.lines[1:]]
    for n in range(FILES):
        path = where / f"part-{n}.jsonl"
        if not path.exists():
            aside = write_lines(where / f"part-{n}.{os.getpid()}.tmp", mixed[n::FILES])
            os.replace(aside, path)
    return str(where / "part-*.jsonl")


def _job_decls(case: Case, argv: Sequence[str]) -> dict[str, TableDecl]:
    """The tables the case's run writes (for its flags) and their declarations."""
    entry = importlib.import_module(f"pipelines.{case.job}").ENTRY
    options = PipelineOptions(list(argv))
    job = entry.job_for(options) if callable(entry.job_for) else entry.job_for
    rollup = options.view_as(StreamingInputOptions).hourly_rollup
    tables = job_tables(job, rollup, index_tables(job, rollup))
    return {table: table_decl(job, table) for table in tables}


def without_gc(decl: TableDecl) -> TableDecl:
    """``decl`` whose families keep every version (aggregates stay aggregates)."""
    families = tuple(dataclasses.replace(f, max_versions=None, max_age=None) for f in decl.families)
    return dataclasses.replace(decl, families=families)


def make_tables(target: config.Target, decls: Sequence[TableDecl]) -> None:
    with admin.Admin(target) as api:
        for decl in decls:
            api.ensure(without_gc(decl))


def gc_view(cells: Sequence[tuple], decl: TableDecl) -> list[tuple]:
    """What the declared GC rules leave of a dump's cells: per column the newest
    ``max_versions``, none older than ``max_age`` (either rule deletes a cell)."""
    families = {f.name: f for f in decl.families}
    now_us = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1_000_000)
    kept, seen = [], {}
    for cell in sorted(cells, key=lambda c: (c[0], c[1], c[2], -c[4])):  # newest first
        family = families[cell[1]]
        column = cell[:3]
        seen[column] = seen.get(column, 0) + 1
        if family.max_versions and seen[column] > family.max_versions:
            continue
        if family.max_age and cell[4] < now_us - family.max_age // dt.timedelta(microseconds=1):
            continue
        kept.append(cell)
    return kept


@dataclasses.dataclass
class Landing:
    """What a run left: per table the raw cells and the after-GC view, the counters that do
    not depend on bundling, the dead-letter reasons and records (JSON lines, sorted)."""

    raw: dict[str, list[tuple]]
    gc: dict[str, list[tuple]]
    counters: dict[str, int]
    reasons: list
    dead: list[str]


def comparable(counters: dict[str, int], indexes: Sequence[str] = ()) -> dict[str, int]:
    """The counters that do not depend on bundling (a series index's rows and cells are
    written once per bundle that saw a series) nor on the clock (:data:`TIMED`)."""
    bundled = (*PER_BUNDLE, *TIMED)
    bundled += tuple(f"{what}_{table}" for table in indexes for what in ("rows", "cells"))
    return {k: v for k, v in counters.items() if not k.startswith(bundled)}


def _is_index(decl: TableDecl) -> bool:
    return any(family.name == INDEX_FAMILY for family in decl.families)


def landed(
    target: config.Target, report, decls: dict[str, TableDecl], dead_prefix: Path | None
) -> Landing:
    raw = {table: dump(target, table) for table in sorted(decls)}
    letters = read_dead_letters(dead_prefix) if dead_prefix else []
    return Landing(
        # a series index holds a version per bundle that saw a series (its newest is exact):
        # its raw cells show the runner's bundling, not its bytes; its GC view is compared
        raw={table: cells for table, cells in raw.items() if not _is_index(decls[table])},
        gc={table: gc_view(cells, decls[table]) for table, cells in raw.items()},
        counters=comparable(report.counters, [t for t in decls if _is_index(decls[t])]),
        reasons=list(report.reasons),
        dead=sorted(json.dumps(d, sort_keys=True) for d in letters),
    )


def land(case: Case, pattern: str, target: config.Target, dead: Path, runner=()) -> Landing:
    """Run ``case`` on ``runner`` (flags; none: in process) into ``target``, tables made first
    without GC rules; what it landed."""
    argv = [*case.flags, *runner]
    decls = _job_decls(case, [f"--input={pattern}", *argv])
    make_tables(target, list(decls.values()))
    report = run_job(case.job, target, Path(pattern), dead, argv)
    assert report.counters["lines_read"] == len(case.lines) + len(case.bad)
    return landed(target, report, decls, dead)


def shared_dir(tmp_path_factory) -> Path:
    """A directory of this test session that every pytest-xdist worker sees (the session's
    base, not a worker's): in-process landings made once serve every runner's tests."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return root / "runner-cases"


def _cached(path: Path, make):
    """``make()``'s value, kept in ``path`` for other tests and workers (pickled aside, then
    renamed; two workers may both make it, and the landings are equal)."""
    if path.exists():
        return pickle.loads(path.read_bytes())
    value = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    aside = path.with_suffix(f".{os.getpid()}.tmp")
    aside.write_bytes(pickle.dumps(value))
    os.replace(aside, path)
    return value


def reference(case: Case, shared: Path) -> tuple[str, Landing]:
    """The case's inputs under ``shared`` (their glob) and what the in-process run lands from
    them, made once per session."""
    where = shared / case.id.replace("[", "-").replace("]", "")  # no glob characters
    pattern = write_inputs(case, where / "in")
    dead = where / f"dead-{os.getpid()}" / "dead"
    landing = _cached(where / "landing.pickle", lambda: land(case, pattern, new_target(), dead))
    return pattern, landing


def nightly_reference(shared: Path) -> Landing:
    return _cached(shared / "nightly" / "landing.pickle", lambda: land_nightly(new_target()))


# -- the nightly copy ---------------------------------------------------------------------------

NIGHTLY_DAY = "20170726"
SENSOR_METERS = 1_500  # 3,000 rows: the emulator samples 1 key in 100, so the scan is cut in
# about 30 pieces and both workers read (and write) some


def fill_sensor(target: config.Target) -> None:
    """SENSOR with two days of readings per meter, every tenth row with a superseded version
    of a column (the copy leaves it out: SENSOR keeps one version)."""
    decl = builtin_tables.get("SENSOR")
    make_tables(target, [decl])
    entries = []
    for meter in range(SENSOR_METERS):
        for day, stamp in (("20170725", 1_500_940_800), ("20170726", 1_501_027_200)):
            us = stamp * 1_000_000
            cells = [SetCell("METER", b"ID", str(meter).encode(), us)]
            cells += [
                SetCell("METER", b"%04d" % (hhmm * 100), b"%d.%02d" % (meter % 97, hhmm), us)
                for hhmm in range(0, 24, 8)
            ]
            if meter % 10 == 0:
                cells.append(SetCell("METER", b"0000", b"superseded", us - 1_000_000))
            entries.append(RowMutationEntry(f"{meter:010d}#{day}".encode(), cells))
    client = BigtableDataClient(project=target.project)
    try:
        table = client.get_table(target.instance, "SENSOR")
        for start in range(0, len(entries), 1_000):
            table.bulk_mutate_rows(entries[start : start + 1_000])
    finally:
        client.close()


def land_nightly(target: config.Target, runner=()) -> Landing:
    """The nightly copy of :data:`NIGHTLY_DAY` from a filled SENSOR, on ``runner``."""
    fill_sensor(target)
    report = nightly.run(
        [
            f"--bigtable_project={target.project}",
            f"--bigtable_instance={target.instance}",
            f"--date={NIGHTLY_DAY}",
            *runner,
        ]
    )
    assert report.counters["verified_rows"] == SENSOR_METERS
    decls = {name: builtin_tables.get("SENSOR") for name in report.tables}
    return landed(target, report, decls, None)


# -- who did the work ---------------------------------------------------------------------------


def new_target() -> config.Target:
    """A fresh instance on the session's emulator (as the ``target`` fixture makes one)."""
    return config.Target("test-project", f"t{uuid.uuid4().hex[:12]}")


def tallies(directory: Path) -> dict[str, dict[int, int]]:
    return read_worker_tallies(str(directory))


def assert_every_worker_worked(
    directory: Path, workers: int = 2, not_in: Sequence[int] = ()
) -> None:
    """``workers`` processes, none of them this one (nor ``not_in``), each read and wrote."""
    found = tallies(directory)
    for step in ("read", "write"):
        pids = found.get(step, {})
        assert len(pids) >= workers, f"{step}: records per worker process {pids}"
        assert not {os.getpid(), *not_in} & set(pids), f"{step}: not in a worker: {pids}"


def clear(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name in directory.iterdir():
        name.unlink()
