"""Idempotence (docs/patterns.md §6): every pipeline run twice on the same input leaves identical
tables,
compared as full dumps, cell timestamps included.

The exceptions are the aggregate writers (AddToCell): the sales job and the hourly rollup with
--rollup_mode add, so a second run doubles every sum and count. They are documented as not
idempotent (the docstring of pipelines/sales.py, the --rollup_mode help in
pipelines/common/options.py); the tests pin exactly that: doubled, nothing else changed. The
default exact rollup is idempotent.
"""

from __future__ import annotations

import json
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from btts import config
from btts.samples import data as samples
from btts_cli import demo
from pipelines import battery as battery_job
from pipelines import job_modules, nightly
from pipelines import weather_balloons as balloon_job
from pipelines.nightly import plan
from tests.support import REPO
from tests.support.jobs import dump, run_job, snapshot, write_lines
from transforms.metrics import CHECK_CPU_US, INDEX_CPU_US
from transforms.schema import builtin_tables

SENSOR = builtin_tables.get("SENSOR")

IOT_SCHEMA = REPO / "docs" / "schemas" / "tb-cell-iot-temperatures.yaml"


def _json_lines(records) -> list[str]:
    return [json.dumps(r) for r in records]


@dataclass(frozen=True)
class Pipeline:
    """One way to run a job: its name, flags and a small input (a few hundred lines at most)."""

    id: str
    job: str
    lines: Callable[[], list[str]]
    flags: tuple[str, ...] = ()
    aggregate_tables: tuple[str, ...] = ()  # AddToCell tables: documented to add on a re-run

    def run(self, target: config.Target, source: Path, dead: Path):
        spec = {"metric_recent": demo.RECENT_JOB, "device": demo.DEVICE_JOB}.get(self.job)
        if spec is None:
            return run_job(self.job, target, source, dead, self.flags)
        return demo.run_job_spec(
            spec,
            [
                f"--input={source}",
                f"--dead_letter={dead}",
                f"--bigtable_project={target.project}",
                f"--bigtable_instance={target.instance}",
                "--create_tables",
                "--max_bad_records=100%",  # the sample's bad lines, in a small input
                *self.flags,
            ],
        )


def metrics() -> list[str]:
    return list(samples.metric_events(hosts=3, seconds=30)) + list(samples.BAD_METRIC_LINES)


def meters() -> list[str]:
    return _json_lines(samples.meter_records(meters=3, days=2)) + list(samples.BAD_METER_LINES)


def balloons() -> list[str]:
    return _json_lines(samples.balloon_records(1, 30)) + list(samples.BAD_BALLOON_LINES)


def batteries() -> list[str]:
    return _json_lines(samples.battery_records(3, 120, 15)) + list(samples.BAD_BATTERY_LINES)


PIPELINES = [
    Pipeline("server_metrics", "server_metrics", metrics),
    Pipeline("server_metrics+rollup", "server_metrics", metrics, ("--hourly_rollup",)),
    Pipeline(
        "server_metrics+rollup/add",
        "server_metrics",
        metrics,
        ("--hourly_rollup", "--rollup_mode=add"),
        aggregate_tables=("METRIC_HOURLY",),
    ),
    Pipeline("metric_recent", "metric_recent", metrics),
    Pipeline(
        "market_data",
        "market_data",
        lambda: _json_lines(samples.tick_records(2, every_s=1800)) + list(samples.BAD_TICK_LINES),
    ),
    Pipeline("smart_meters", "smart_meters", meters),
    Pipeline("smart_meters+rollup", "smart_meters", meters, ("--hourly_rollup",)),
    Pipeline(
        "smart_meters+rollup/add",
        "smart_meters",
        meters,
        ("--hourly_rollup", "--rollup_mode=add"),
        aggregate_tables=("SENSOR_HOURLY",),
    ),
    *(
        Pipeline(f"weather_balloons/{p}", "weather_balloons", balloons, (f"--balloon_pattern={p}",))
        for p in balloon_job.PATTERNS
    ),
    Pipeline("battery/promoted", "battery", batteries, ("--battery_layout=promoted",)),
    Pipeline("battery/salted", "battery", batteries, ("--battery_layout=salted",)),
    Pipeline(
        "battery/timestamp_first", "battery", batteries, ("--battery_layout=timestamp_first",)
    ),
    Pipeline(
        "game_results",
        "game_results",
        lambda: _json_lines(samples.game_records(3)) + list(samples.BAD_GAME_LINES),
    ),
    Pipeline(
        "garden/both",
        "garden",
        lambda: _json_lines(samples.garden_records()) + list(samples.BAD_GARDEN_LINES),
        ("--garden_layout=both",),
    ),
    Pipeline(
        "sales",
        "sales",
        lambda: _json_lines(samples.sales_records(2)) + list(samples.BAD_SALES_LINES),
        aggregate_tables=("SALES_MONTHLY",),
    ),
    Pipeline("device", "device", lambda: _json_lines(samples.device_records(devices=1, days=1))),
    Pipeline("generic/iot", "generic", lambda: iot_lines(), (f"--schema={IOT_SCHEMA}",)),
]


def iot_lines() -> list[str]:
    """Readings of the schema-file example (docs/schemas): two devices, every 10 min, for the
    last 3 hours. Recent on purpose: the family keeps 90 days (max_age), and the emulator
    collects older cells at a moment of its choosing, between two dumps as well."""
    now = int(time.time() * 1000)
    start = now - now % 3_600_000 - 3 * 3_600_000
    return [
        json.dumps(
            {
                "device": f"dev-{d}",
                "ts": samples.iso_ms(start + minute * 60_000),
                "temperature_c": round(20 + d + minute / 100, 2),
                "humidity": 40 + minute % 7,
            }
        )
        for minute in range(0, 180, 10)
        for d in range(2)
    ] + ['{"device": "dev#1", "ts": 0, "temperature_c": 1}', "{oops"]


def _int64(value: bytes) -> int:
    return struct.unpack(">q", value)[0]


def _without(snap: dict[str, list[tuple]], tables: Sequence[str]) -> dict[str, list[tuple]]:
    return {t: cells for t, cells in snap.items() if t not in tables}


def test_every_job_and_layout_is_covered():
    """A new job, balloon pattern or battery layout needs its idempotence case here."""
    covered = {p.job for p in PIPELINES}
    assert set(job_modules()) <= covered
    flags = {f for p in PIPELINES for f in p.flags}
    assert {f"--balloon_pattern={p}" for p in balloon_job.PATTERNS} <= flags
    assert {f"--battery_layout={layout}" for layout in battery_job.LAYOUTS} <= flags


@pytest.mark.parametrize("pipeline", PIPELINES, ids=[p.id for p in PIPELINES])
def test_running_twice_leaves_identical_tables(pipeline, target, tmp_path):
    source = write_lines(tmp_path / "in.jsonl", pipeline.lines())
    first_result = pipeline.run(target, source, tmp_path / "dead1")
    first = snapshot(target)
    second_result = pipeline.run(target, source, tmp_path / "dead2")
    second = snapshot(target)

    assert first and all(first[t] for t in first), f"nothing written: {first.keys()}"

    # Rows and cells copied and verified match; how many ranges the reader split the scan into
    # follows sample_row_keys, which depends on the server's state, not on the data.
    # (and the CPU the overwrite check and the series index spent is measured, not counted)
    def copied(counters: dict) -> dict:
        return {
            k: v
            for k, v in counters.items()
            if not k.startswith("read_ranges_") and k not in (CHECK_CPU_US, INDEX_CPU_US)
        }

    assert copied(first_result.counters) == copied(second_result.counters)
    assert _without(second, pipeline.aggregate_tables) == _without(first, pipeline.aggregate_tables)
    for table in pipeline.aggregate_tables:
        # AddToCell adds: the documented exception (pipelines/sales.py, --hourly_rollup help).
        # Same cells at the same timestamps, every sum and count exactly doubled.
        assert any(_int64(c[3]) for c in first[table]), f"{table}: nothing summed"
        assert [c[:3] + c[4:] for c in second[table]] == [c[:3] + c[4:] for c in first[table]]
        assert [_int64(c[3]) for c in second[table]] == [2 * _int64(c[3]) for c in first[table]]


@pytest.mark.parametrize("layout", plan.LAYOUTS)
def test_the_nightly_job_run_twice_leaves_identical_tables(layout, target, tmp_path):
    source = write_lines(tmp_path / "in.jsonl", meters())
    run_job("smart_meters", target, source, tmp_path / "dead")
    days = sorted({key.rsplit(b"#", 1)[1].decode() for key, *_ in dump(target, SENSOR.name)})
    assert len(days) >= 2
    flags = [
        f"--bigtable_project={target.project}",
        f"--bigtable_instance={target.instance}",
        f"--layout={layout}",
        f"--dates={days[0]}..{days[-1]}",
    ]
    first_result = nightly.run(flags)
    first = snapshot(target)
    second_result = nightly.run(flags)
    second = snapshot(target)

    assert len(first) > 1 and all(first.values())  # SENSOR and at least one copy, not empty
    assert second == first

    # Rows and cells copied and verified match; how many ranges the reader split the scan into
    # follows sample_row_keys, which depends on the server's state, not on the data.
    def copied(counters: dict) -> dict:
        return {k: v for k, v in counters.items() if not k.startswith("read_ranges_")}

    assert copied(first_result.counters) == copied(second_result.counters)
