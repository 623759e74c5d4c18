"""Fixtures: one Bigtable emulator per test session (per worker under pytest-xdist), a fresh
instance per test."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
import yaml

from btts import config
from btts.emulator import ENV_HOST, Emulator, PubSubEmulator

REPO = Path(__file__).resolve().parent.parent
WORKED_EXAMPLES = REPO / "tests" / "data" / "worked_examples"


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``make test``), the tests marked slow go first: the worker that
    takes one then spends its minute while the other works through the rest, rather than both
    waiting on it at the end. A single process keeps the files' order."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(scope="session")
def bigtable_emulator():
    """A real cbtemulator on a free loopback port; BIGTABLE_EMULATOR_HOST points at it."""
    with Emulator() as emu:
        yield emu


@pytest.fixture(scope="session")
def pubsub_emulator():
    """A real Pub/Sub emulator; PUBSUB_EMULATOR_HOST points at it."""
    with PubSubEmulator() as emu:
        yield emu


@pytest.fixture
def target(bigtable_emulator) -> config.Target:
    """A fresh instance on the shared emulator: tests never see each other's tables."""
    assert os.environ[ENV_HOST] == bigtable_emulator.endpoint
    return config.Target("test-project", f"t{uuid.uuid4().hex[:12]}")


def _cell(cell: list) -> dict:
    out = {"family": cell[0], "qualifier": cell[1], "value": cell[2]}
    if len(cell) > 3:
        out["timestamp_ms"] = cell[3]
    return out


def _case(case_id: str, case: dict) -> dict:
    """One worked example in the shape the tests read (tests/data/worked_examples/README.md)."""
    out: dict = {"id": case_id, "spec": case["section"]}
    if "pattern" in case:
        out["pattern"] = case["pattern"]
    if "events" in case:
        out["input_lines"] = list(case["events"])
    if "rows" in case:
        rows = []
        for row in case["rows"]:
            expected = {"row_key": row["key"]}
            for name in ("table", "layout", "columns"):
                if name in row:
                    expected[name] = row[name]
            if "cells" in row:
                expected["cells"] = [_cell(c) for c in row["cells"]]
            rows.append(expected)
        out["expected_rows"] = rows
    if "latest" in case:
        out["expected_latest"] = [
            {"table": x["table"], "row_key": x["key"], **_cell(x["cell"])} for x in case["latest"]
        ]
    if "nightly" in case:
        n = case["nightly"]
        out["nightly"] = {
            "date": n["date"],
            "expected_table": n["table"],
            "expected_row_keys": n["keys"],
        }
    if "salt_buckets" in case:
        out["salt_buckets"] = case["salt_buckets"]
    if "key_pattern" in case:
        out["expected_row_key_regex"] = case["key_pattern"]
    if "checks" in case:
        out["checks"] = [{"fn": f, "input": i, "output": o} for f, i, o in case["checks"]]
    return out


def load_worked_examples() -> dict[str, dict]:
    """Every worked example, by case id, from tests/data/worked_examples/."""
    cases: dict[str, dict] = {}
    for path in sorted(WORKED_EXAMPLES.glob("*.yaml")):
        for case_id, case in yaml.safe_load(path.read_text(encoding="utf-8")).items():
            assert case_id not in cases, f"{path.name}: case {case_id} is also elsewhere"
            cases[case_id] = _case(case_id, case)
    return cases


@pytest.fixture(scope="session")
def golden_cases() -> dict[str, dict]:
    return load_worked_examples()


def load_golden_ids() -> list[str]:
    return list(load_worked_examples())
