"""Every worked example of the guidance (tests/data/worked_examples/), run through the real
pipeline on the emulator and read back through the Bigtable client, byte for byte."""

from __future__ import annotations

import re

import pytest

from btts.query import engine
from pipelines import job_modules
from tests.support.golden_runs import PURE, RUNS, check_row, table_of
from tests.support.jobs import read_dead_letters, run_job, write_lines
from tests.support.worked_examples import load_golden_ids


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
        check_row(target, table_of(expected, table_map), expected)
    for expected in case.get("expected_latest", []):
        table = table_of(expected, table_map)
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
