"""Every batch job and the nightly copy on the DirectRunner in multi-processing mode, two
workers, against the emulator: the same tables, counters and dead letters as the in-process run.

``--direct_running_mode=multi_processing`` runs the bundles in separate SDK worker processes, so
every DoFn, transform argument (builders, time zones, table lists) and row object is pickled and
shipped the way a distributed runner (Dataflow) ships them. Each job's input is split over
several files, so that both workers read, build and write (their shares are tallied per process
and checked: tests/support/runner_cases.py), and the landing is compared with the in-process run's:
every table's cells as written and after GC, the counters, the dead-letter reasons and records.
The workers inherit BIGTABLE_EMULATOR_HOST. Each job's rows are also compared with what its pure
builder makes of the same lines.
"""

from __future__ import annotations

import json
import os
import struct
import zoneinfo
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to

from btts import admin
from pipelines import weather_balloons as balloon_job
from protos import balloon_pb2
from tests.support import runner_cases
from tests.support.jobs import compiled, dump
from tests.support.runner_cases import MP, Case
from transforms.metrics import WORKER_TALLY_ENV
from transforms.mutations import AddCell
from transforms.text.events import parse_json_object

CASES = runner_cases.cases()


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> Path:
    return runner_cases.shared_dir(tmp_path_factory)


def _same_as_in_process(case: Case, shared: Path, tmp_path: Path, monkeypatch):
    """Run ``case`` on two worker processes; it lands what the in-process run lands (made
    once per session) and both workers worked. The multi-process run's target, for more
    checks."""
    pattern, want = runner_cases.reference(case, shared)
    tally = tmp_path / "tally"
    runner_cases.clear(tally)
    target = runner_cases.new_target()
    with monkeypatch.context() as env:
        env.setenv(WORKER_TALLY_ENV, str(tally))  # the worker processes inherit it
        got = runner_cases.land(case, pattern, target, tmp_path / "mp" / "dead", MP)
    assert got.raw == want.raw
    assert got.gc == want.gc
    assert got.counters == want.counters
    assert got.reasons == want.reasons
    assert got.dead == want.dead
    assert sorted(json.loads(d)["raw"] for d in got.dead) == sorted(case.bad)
    assert got.counters["events_valid"] == len(case.lines)
    assert got.counters.get("dead_letters", 0) == len(case.bad)
    runner_cases.assert_every_worker_worked(tally)
    return target


def _built(lines, build) -> list:
    return [row for line in lines for row in build(parse_json_object(line))]


def _cells(rows, table: str, latest: bool = False) -> set[tuple]:
    """The cells the builder made for ``table``; with ``latest``, only each column's newest."""
    cells = [
        (row.key, c.family, c.qualifier, c.value, c.timestamp_us)
        for row in rows
        if row.table == table
        for c in row.cells
    ]
    if not latest:
        return set(cells)
    newest: dict[tuple, tuple] = {}
    for cell in cells:
        column = cell[:3]
        if column not in newest or cell[4] > newest[column][4]:
            newest[column] = cell
    return set(newest.values())


def _stored(target, table: str, latest: bool = False) -> set[tuple]:
    return set(dump(target, table, latest_only=latest))


def test_user_code_really_runs_in_other_processes():
    """The mode under test ships the DoFns to worker processes: a function run in-process
    would see the test's own PID."""
    parent = os.getpid()
    with beam.Pipeline(options=PipelineOptions(list(MP))) as p:
        in_worker = (
            p
            | beam.Create(list(range(8)))
            | beam.Map(lambda _, parent=parent: os.getpid() != parent)
        )
        assert_that(in_worker, equal_to([True] * 8))


def test_server_metrics(bigtable_emulator, shared, tmp_path, monkeypatch):
    case = CASES["server_metrics"]
    target = _same_as_in_process(case, shared, tmp_path, monkeypatch)
    rows = _built(case.lines, compiled("server_metrics"))
    assert _stored(target, "METRIC") == _cells(rows, "METRIC")
    assert _stored(target, "CURRENT_METRIC", latest=True) == _cells(rows, "CURRENT_METRIC", True)


def test_market_data(bigtable_emulator, shared, tmp_path, monkeypatch):
    case = CASES["market_data"]
    target = _same_as_in_process(case, shared, tmp_path, monkeypatch)
    rows = _built(case.lines, compiled("market_data"))
    for table in compiled("market_data").tables:
        assert _stored(target, table) == _cells(rows, table)
    assert len(_stored(target, "QUOTE")) > 3 * 4 * 5


def test_smart_meters_in_a_time_zone(bigtable_emulator, shared, tmp_path, monkeypatch):
    case = CASES["smart_meters"]
    target = _same_as_in_process(case, shared, tmp_path, monkeypatch)
    tz = zoneinfo.ZoneInfo("America/New_York")
    rows = _built(case.lines, compiled("smart_meters", tz=tz))
    assert _stored(target, "SENSOR", latest=True) == _cells(rows, "SENSOR", latest=True)
    # New York's day started at 04:00 UTC: the UTC day's readings span two local days
    assert {k.split(b"#")[1] for k, *_ in _stored(target, "SENSOR")} == {
        b"20170724",
        b"20170725",
    }


@pytest.mark.parametrize("pattern", sorted(balloon_job.PATTERNS))
def test_weather_balloons(bigtable_emulator, shared, tmp_path, monkeypatch, pattern):
    case = CASES[f"weather_balloons[{pattern}]"]
    target = _same_as_in_process(case, shared, tmp_path, monkeypatch)
    table = balloon_job.PATTERNS[pattern]
    rows = _built(case.lines, compiled("weather_balloons", (table,)))
    assert _stored(target, table) == _cells(rows, table)
    if pattern == "TS-BLOB":  # the protobuf cells decode to the events in the workers' bytes
        blobs = [c[3] for c in _stored(target, table)]
        decoded = sorted(
            balloon_pb2.BalloonMeasurement.FromString(b).SerializeToString() for b in blobs
        )
        built = sorted(c.value for r in rows for c in r.cells)
        assert decoded == built  # the workers' bytes are the builder's, field for field
    if pattern == "TB-CELL":  # one row per balloon and week, a cell per event in each column
        assert len({c[0] for c in _stored(target, table)}) == 2
        assert len(_stored(target, table)) == len(case.lines) * 4


def test_battery_salted(bigtable_emulator, shared, tmp_path, monkeypatch):
    case = CASES["battery"]
    target = _same_as_in_process(case, shared, tmp_path, monkeypatch)
    rows = _built(case.lines, compiled("battery", ("BATTERY_SALTED",)))
    assert _stored(target, "BATTERY_SALTED") == _cells(rows, "BATTERY_SALTED")
    salts = {k.split(b"#")[1] for k, *_ in _stored(target, "BATTERY_SALTED")}
    assert len(salts) > 1  # spread over the buckets


def test_game_results(bigtable_emulator, shared, tmp_path, monkeypatch):
    case = CASES["game_results"]
    target = _same_as_in_process(case, shared, tmp_path, monkeypatch)
    rows = _built(case.lines, compiled("game_results"))
    for table in compiled("game_results").tables:
        assert _stored(target, table) == _cells(rows, table)


def test_garden_both_layouts(bigtable_emulator, shared, tmp_path, monkeypatch):
    case = CASES["garden"]
    target = _same_as_in_process(case, shared, tmp_path, monkeypatch)
    rows = _built(case.lines, compiled("garden", ("GARDEN_DAILY", "GARDEN_MONTHLY")))
    for table in ("GARDEN_DAILY", "GARDEN_MONTHLY"):
        assert _stored(target, table) == _cells(rows, table)
    assert len({c[0] for c in _stored(target, "GARDEN_MONTHLY")}) == 4  # 2 gardens × 2 months


def test_sales_sums(bigtable_emulator, shared, tmp_path, monkeypatch):
    case = CASES["sales"]
    target = _same_as_in_process(case, shared, tmp_path, monkeypatch)
    want: dict[tuple, int] = {}
    for row in _built(case.lines, compiled("sales")):
        for cell in row.cells:
            assert isinstance(cell, AddCell)
            column = (row.key, cell.family, cell.qualifier, cell.timestamp_us)
            want[column] = want.get(column, 0) + cell.amount
    got = {
        (key, family, qualifier, ts): struct.unpack(">q", value)[0]
        for key, family, qualifier, value, ts in dump(target, "SALES_MONTHLY")
    }
    assert got == want


def test_a_user_schema(bigtable_emulator, shared, tmp_path, monkeypatch):
    """``btts ingest --schema FILE`` (the generic job): its builder is compiled from the
    schema's text on each worker."""
    case = CASES["user_schema"]
    target = _same_as_in_process(case, shared, tmp_path, monkeypatch)
    devices = {c[0].split(b"#")[0] for c in _stored(target, "DEVICE_TEMP")}
    assert devices == {b"dev-%d" % i for i in range(5)}


def test_nightly_copy_and_verification(bigtable_emulator, shared, tmp_path, monkeypatch):
    want = runner_cases.nightly_reference(shared)
    tally = tmp_path / "tally"
    runner_cases.clear(tally)
    target = runner_cases.new_target()
    with monkeypatch.context() as env:
        env.setenv(WORKER_TALLY_ENV, str(tally))
        got = runner_cases.land_nightly(target, MP)
    assert got == want
    runner_cases.assert_every_worker_worked(tally)
    day = runner_cases.NIGHTLY_DAY
    expected = {
        c for c in _stored(target, "SENSOR", latest=True) if c[0].endswith(b"#" + day.encode())
    }
    assert len({c[0] for c in expected}) == runner_cases.SENSOR_METERS
    assert _stored(target, f"SENSOR_{day}") == expected  # the live cells, none superseded
    assert got.counters["verified_days"] == 1
    with admin.Admin(target) as api:
        assert f"SENSOR_{day}" in api.list_tables()
