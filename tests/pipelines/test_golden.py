"""Every worked example of the guidance (tests/data/worked_examples/), run through the real
pipeline on the emulator and read back through the Bigtable client, byte for byte."""

from __future__ import annotations

import re

import pytest

from btts import config
from btts.query import engine
from pipelines import job_modules
from tests.support.jobs import read_dead_letters, recipe_key, run_job, write_lines
from tests.support.worked_examples import load_golden_ids
from transforms.text import keys

# How each case is produced: the job, its flags, and which table a case's rows name.
# ``None`` is the table of a case whose rows name none (the job writes one table).
RUNS: dict[str, tuple[str, list[str], dict]] = {
    "market-quote-trade-split": ("market_data", [], {}),
    "market-key-padding": ("market_data", [], {}),
    "server-metrics-fanout": ("server_metrics", [], {}),
    "current-metric-late-event": ("server_metrics", [], {}),
    "smart-meter-day-row": ("smart_meters", [], {}),
    "balloon-TB-COL": ("weather_balloons", ["--balloon_pattern=TB-COL"], {None: "BALLOON_TB_COL"}),
    "balloon-TB-CELL": (
        "weather_balloons",
        ["--balloon_pattern=TB-CELL"],
        {None: "BALLOON_TB_CELL"},
    ),
    "balloon-TS-BLOB": (
        "weather_balloons",
        ["--balloon_pattern=TS-BLOB"],
        {None: "BALLOON_TS_BLOB"},
    ),
    "balloon-TS-COLS": (
        "weather_balloons",
        ["--balloon_pattern=TS-COLS"],
        {None: "BALLOON_TS_COLS"},
    ),
    "battery-promotion": ("battery", ["--battery_layout=promoted"], {None: "BATTERY"}),
    "battery-timestamp-leading-antipattern": (
        "battery",
        ["--battery_layout=timestamp_first"],
        {None: "BATTERY_TS_FIRST"},
    ),
    "battery-salting": (
        "battery",
        ["--battery_layout=salted", "--salt_buckets=3"],
        {None: "BATTERY_SALTED"},
    ),
    "game-denormalized": (
        "game_results",
        [],
        {"by player": "GAME_BY_PLAYER", "by date": "GAME_BY_DATE"},
    ),
    "veggie-tall-and-month": (
        "garden",
        ["--garden_layout=both"],
        {"tall": "GARDEN_DAILY", "month": "GARDEN_MONTHLY"},
    ),
}

PURE = {
    "reverse_timestamp": keys.reverse_timestamp,
    "reverse_domain": keys.reverse_domain,
    "reverse_numeric_id": lambda digits: recipe_key(("reverse_id", digits)),
    "zero_pad": keys.zero_pad,
    "tenant_key": lambda tenant, *rest: recipe_key(
        ("tenant", tenant), *(("text", s) for s in rest)
    ),
}


def _table_of(expected: dict, table_map: dict) -> str:
    if "table" in expected:
        return table_map.get(expected["table"], expected["table"])
    if "layout" in expected:
        return table_map[expected["layout"]]
    return table_map[None]


def _check_row(target: config.Target, table: str, expected: dict) -> None:
    key = expected["row_key"].encode("utf-8")
    rows = engine.read_rows(target, table, start=key, end=key + b"\x00", latest_only=True)
    assert [r.key for r in rows] == [key], f"{table}: no row {expected['row_key']!r}"
    row = rows[0]
    if "cells" in expected:
        got = {(c.family, c.qualifier): c for c in row.cells}
        families = {c.family for c in row.cells}
        want = set()
        for cell in expected["cells"]:
            family = cell["family"]
            if family is None:  # the implementation's own short family: the row has just one
                assert len(families) == 1, f"{table}: expected one family, got {families}"
                family = next(iter(families))
            qualifier = cell["qualifier"].encode("utf-8")
            want.add((family, qualifier))
            assert (family, qualifier) in got, f"{table} {key!r}: no cell {family}:{qualifier!r}"
            stored = got[(family, qualifier)]
            assert stored.value == cell["value"].encode("utf-8"), (family, qualifier)
            if "timestamp_ms" in cell:
                assert stored.timestamp_us == cell["timestamp_ms"] * 1000, (family, qualifier)
        assert set(got) == want, f"{table} {key!r}: columns differ from the guidance"
    if "columns" in expected:
        assert {c.qualifier.decode() for c in row.cells} == set(expected["columns"])


def _run_of(case_id: str) -> tuple[str, list[str], dict]:
    """How a case runs; a job that is no module of pipelines/ (renamed, removed) fails the case:
    a golden case never turns into a skip."""
    job, flags, table_map = RUNS[case_id]
    if job not in job_modules():
        pytest.fail(f"golden case {case_id}: no job module pipelines.{job} (renamed or removed?)")
    return job, flags, table_map


def test_every_case_names_a_job_that_exists():
    for case_id in RUNS:
        _run_of(case_id)


def test_a_case_whose_job_is_missing_fails_not_skips(monkeypatch):
    monkeypatch.setitem(RUNS, "market-key-padding", ("no_such_job", [], {}))
    with pytest.raises(pytest.fail.Exception, match=r"no job module pipelines\.no_such_job"):
        _run_of("market-key-padding")


@pytest.mark.parametrize("case_id", load_golden_ids())
def test_golden_case(case_id, golden_cases, target, tmp_path):
    case = golden_cases[case_id]
    if "checks" in case:  # pure key helpers
        for check in case["checks"]:
            args = check["input"] if isinstance(check["input"], list) else [check["input"]]
            assert PURE[check["fn"]](*args) == check["output"], check
        return
    job, flags, table_map = _run_of(case_id)
    if "salt_buckets" in case:
        assert f"--salt_buckets={case['salt_buckets']}" in flags
    source = write_lines(tmp_path / "input.jsonl", case["input_lines"])
    dead = tmp_path / "dead" / "letters"
    result = run_job(job, target, source, dead, flags)

    assert read_dead_letters(dead) == []
    assert result.counters["events_valid"] == len(case["input_lines"])
    for expected in case.get("expected_rows", []):
        _check_row(target, _table_of(expected, table_map), expected)
    for expected in case.get("expected_latest", []):
        table = _table_of(expected, table_map)
        key = expected["row_key"].encode("utf-8")
        (row,) = engine.read_rows(target, table, start=key, end=key + b"\x00", latest_only=True)
        qualifier = expected["qualifier"].encode("utf-8")
        assert row.latest()[(expected["family"], qualifier)] == expected["value"].encode("utf-8")
    if "nightly" in case:  # the day's rows copied by the nightly job into their own table
        from pipelines import nightly

        spec = case["nightly"]
        nightly.run(
            [
                f"--date={spec['date']}",
                f"--bigtable_project={target.project}",
                f"--bigtable_instance={target.instance}",
            ]
        )
        copied = engine.read_rows(target, spec["expected_table"])
        assert [r.key.decode() for r in copied] == spec["expected_row_keys"]
        source = {r.key: r.cells for r in engine.read_rows(target, "SENSOR", latest_only=True)}
        assert all(r.cells == source[r.key] for r in copied)
    if "expected_row_key_regex" in case:
        table = table_map[None]
        found = [r.key.decode() for r in engine.read_rows(target, table)]
        assert len(found) == 1 and re.match(case["expected_row_key_regex"], found[0]), found
