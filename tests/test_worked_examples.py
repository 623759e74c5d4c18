"""The worked examples are kept in this repository (tests/data/worked_examples/): nothing needs
anything beside it. When the guidance's own copy of the examples happens to sit beside the
repository (../shared/golden/doc_examples.json), the in-repo cases must still hold every case
id and every fact of it; without it this checks the in-repo data on its own."""

from __future__ import annotations

import json
import re

from tests.conftest import REPO, load_worked_examples
from transforms import keys

ORIGINAL = REPO.parent / "shared" / "golden" / "doc_examples.json"
PROSE = ("note", "input_format")  # explanations, not facts: the repo words its own


def _facts(case: dict) -> dict:
    out = {k: v for k, v in case.items() if k not in PROSE}
    if "expected_rows" in out:
        out["expected_rows"] = [
            {k: v for k, v in row.items() if k not in PROSE} for row in out["expected_rows"]
        ]
    return out


def test_the_in_repo_cases_are_well_formed():
    cases = load_worked_examples()
    assert len(cases) >= 15
    for case_id, case in cases.items():
        assert re.fullmatch(r"[a-z]+(-[A-Za-z0-9]+)+", case_id), case_id
        assert case["spec"], case_id
        assert "input_lines" in case or "checks" in case, case_id
        for line in case.get("input_lines", []):
            assert isinstance(json.loads(line), dict), (case_id, line)
        for row in case.get("expected_rows", []):
            assert row["row_key"], (case_id, row)
            for cell in row.get("cells", []):
                assert set(cell) <= {"family", "qualifier", "value", "timestamp_ms"}
        for check in case.get("checks", []):
            assert callable(getattr(keys, check["fn"])), check


def test_when_the_guidance_copy_is_beside_the_repo_every_case_and_fact_is_here():
    cases = load_worked_examples()
    if not ORIGINAL.exists():  # a clone on its own: the in-repo data is the reference
        assert cases
        return
    original = {c["id"]: c for c in json.loads(ORIGINAL.read_text())["cases"]}
    assert set(original) <= set(cases), sorted(set(original) - set(cases))
    for case_id, case in original.items():
        assert _facts(case) == cases[case_id], case_id
