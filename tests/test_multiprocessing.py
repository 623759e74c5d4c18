"""Every pipeline on the DirectRunner in multi-processing mode, against the emulator.

``--direct_running_mode=multi_processing`` runs the bundles in separate SDK worker processes, so
every DoFn, transform argument (builders, time zones, table lists) and row object is pickled and
shipped the way a distributed runner (Dataflow) ships them. A job that only works in one process
fails here. The workers inherit BIGTABLE_EMULATOR_HOST. Each job's rows are read back and
compared with what its pure builder makes of the same lines.
"""

from __future__ import annotations

import json
import os
import struct
import zoneinfo

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to

from btts import admin
from btts.samples import data
from pipelines import nightly
from pipelines import weather_balloons as balloon_job
from protos import balloon_pb2
from tests.helpers import compiled, dump, read_dead_letters, run_job, write_lines
from transforms.mutations import AddCell
from transforms.text.events import parse_json_object

MP = ("--direct_num_workers=2", "--direct_running_mode=multi_processing")


def _lines(records) -> list[str]:
    return [json.dumps(record) for record in records]


def _run(job: str, target, tmp_path, lines, bad=(), flags=()):
    """Run ``job`` in multi-processing mode on good and bad lines; check the dead letters and
    that the counters reconcile, return the result."""
    mixed = list(lines[:1]) + list(bad) + list(lines[1:])
    source = write_lines(tmp_path / f"{job}.jsonl", mixed)
    dead = tmp_path / "dead" / job
    result = run_job(job, target, source, dead, [*MP, *flags])
    assert sorted(d["raw"] for d in read_dead_letters(dead)) == sorted(bad)
    counts = result.counters
    assert counts["lines_read"] == len(mixed)
    assert counts["events_valid"] == len(lines) and counts.get("dead_letters", 0) == len(bad)
    return result


def _built(lines, build) -> list:
    return [row for line in lines for row in build(parse_json_object(line))]


def _cells(rows, table: str, latest: bool = False) -> set[tuple]:
    """The cells the builder made for ``table``; with ``latest``, only each column's newest (for
    families keeping one version, which the emulator garbage-collects lazily)."""
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


def test_server_metrics(target, tmp_path):
    lines = list(data.metric_events(hosts=3, seconds=15))
    result = _run("server_metrics", target, tmp_path, lines, data.BAD_METRIC_LINES[:3])
    rows = _built(lines, compiled("server_metrics"))
    assert _stored(target, "METRIC") == _cells(rows, "METRIC")
    assert _stored(target, "CURRENT_METRIC", latest=True) == _cells(rows, "CURRENT_METRIC", True)
    assert result.counters["rows_METRIC"] == len(lines)


def test_market_data(target, tmp_path):
    lines = _lines(data.tick_records(symbols=3, every_s=21_600))
    _run("market_data", target, tmp_path, lines, data.BAD_TICK_LINES[:2])
    rows = _built(lines, compiled("market_data"))
    for table in compiled("market_data").tables:
        assert _stored(target, table) == _cells(rows, table)
    assert len(_stored(target, "QUOTE")) > 3 * 4 * 5


def test_smart_meters_in_a_time_zone(target, tmp_path):
    zone = "America/New_York"
    lines = _lines(data.meter_records(meters=3, days=1))
    _run(
        "smart_meters",
        target,
        tmp_path,
        lines,
        data.BAD_METER_LINES[:2],
        [f"--timezone={zone}"],
    )
    tz = zoneinfo.ZoneInfo(zone)
    rows = _built(lines, compiled("smart_meters", tz=tz))
    assert _stored(target, "SENSOR", latest=True) == _cells(rows, "SENSOR", latest=True)
    # New York's day started at 04:00 UTC: the UTC day's readings span two local days
    assert {k.split(b"#")[1] for k, *_ in _stored(target, "SENSOR")} == {
        b"20170724",
        b"20170725",
    }


@pytest.mark.parametrize("pattern", sorted(balloon_job.PATTERNS))
def test_weather_balloons(target, tmp_path, pattern):
    lines = _lines(data.balloon_records(balloons=2, minutes=4))
    _run(
        "weather_balloons",
        target,
        tmp_path,
        lines,
        data.BAD_BALLOON_LINES[:2],
        [f"--balloon_pattern={pattern}"],
    )
    table = balloon_job.PATTERNS[pattern]
    build = compiled("weather_balloons", (table,))
    rows = _built(lines, build)
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
        assert len(_stored(target, table)) == len(lines) * 4


def test_battery_salted(target, tmp_path):
    lines = _lines(data.battery_records(users=3, minutes=60, every=15))
    _run(
        "battery",
        target,
        tmp_path,
        lines,
        data.BAD_BATTERY_LINES[:2],
        ["--battery_layout=salted"],
    )
    rows = _built(lines, compiled("battery", ("BATTERY_SALTED",)))
    assert _stored(target, "BATTERY_SALTED") == _cells(rows, "BATTERY_SALTED")
    salts = {k.split(b"#")[1] for k, *_ in _stored(target, "BATTERY_SALTED")}
    assert len(salts) > 1  # spread over the buckets


def test_game_results(target, tmp_path):
    lines = _lines(data.game_records(players=2))[:12]
    _run("game_results", target, tmp_path, lines, data.BAD_GAME_LINES[:2])
    rows = _built(lines, compiled("game_results"))
    for table in compiled("game_results").tables:
        assert _stored(target, table) == _cells(rows, table)


def test_garden_both_layouts(target, tmp_path):
    lines = _lines(data.garden_records())[::7]
    _run(
        "garden",
        target,
        tmp_path,
        lines,
        data.BAD_GARDEN_LINES[:2],
        ["--garden_layout=both"],
    )
    rows = _built(lines, compiled("garden", ("GARDEN_DAILY", "GARDEN_MONTHLY")))
    for table in ("GARDEN_DAILY", "GARDEN_MONTHLY"):
        assert _stored(target, table) == _cells(rows, table)
    assert len({c[0] for c in _stored(target, "GARDEN_MONTHLY")}) == 4  # 2 gardens × 2 months


def test_sales_sums(target, tmp_path):
    lines = _lines(data.sales_records(employees=2))[:40]
    _run("sales", target, tmp_path, lines, data.BAD_SALES_LINES[:2])
    want: dict[tuple, int] = {}
    for row in _built(lines, compiled("sales")):
        for cell in row.cells:
            assert isinstance(cell, AddCell)
            column = (row.key, cell.family, cell.qualifier, cell.timestamp_us)
            want[column] = want.get(column, 0) + cell.amount
    got = {
        (key, family, qualifier, ts): struct.unpack(">q", value)[0]
        for key, family, qualifier, value, ts in dump(target, "SALES_MONTHLY")
    }
    assert got == want


def test_nightly_copy_and_verification(target, tmp_path):
    # 4 meters, a reading every 2 h on 2017-07-25 and 2017-07-26
    every = _lines(data.meter_records(meters=4, days=2))  # 4 readings per 15-minute slot
    lines = [line for index, line in enumerate(every) if index // 4 % 8 == 0]
    _run("smart_meters", target, tmp_path, lines)
    day = "20170726"

    result = nightly.run(
        [
            f"--bigtable_project={target.project}",
            f"--bigtable_instance={target.instance}",
            f"--date={day}",
            *MP,
        ]
    )

    expected = {
        c for c in _stored(target, "SENSOR", latest=True) if c[0].endswith(b"#" + day.encode())
    }
    assert len({c[0] for c in expected}) == 4
    assert _stored(target, f"SENSOR_{day}", latest=True) == expected
    counts = result.counters
    assert counts["verified_days"] == 1 and counts["verified_rows"] == 4
    with admin.Admin(target) as api:
        assert f"SENSOR_{day}" in api.list_tables()
