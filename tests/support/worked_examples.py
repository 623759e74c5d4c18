"""The worked examples of the guidance, kept in this repository (tests/data/worked_examples/),
read into the shape the tests compare with: one loader for the golden tests, the generic job's
tests and ``make check-guidance`` (kept light: the root conftest.py imports it)."""

from __future__ import annotations

import yaml

from tests.support import REPO

WORKED_EXAMPLES = REPO / "tests" / "data" / "worked_examples"


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


def load_golden_ids() -> list[str]:
    return list(load_worked_examples())
