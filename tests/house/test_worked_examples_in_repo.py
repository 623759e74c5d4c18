"""The worked examples are kept in this repository (tests/data/worked_examples/): nothing needs
anything beside it. ``make check-guidance GUIDANCE=…`` compares them with a copy of the
guidance's own file (tests/guidance.py); here that comparison is held to what it must catch."""

from __future__ import annotations

import copy
import json
import re

from tests import guidance
from tests.support.golden_runs import PURE
from tests.support.worked_examples import load_worked_examples


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
            assert callable(PURE[check["fn"]]), check  # a key helper the golden test runs


def _as_guidance(cases: dict[str, dict]) -> list[dict]:
    """The in-repo cases written as the guidance's file has them: ids inside, its own prose."""
    out = []
    for case_id, case in cases.items():
        written = {"id": case_id, **copy.deepcopy(case), "note": "the guidance's wording"}
        for row in written.get("expected_rows", []):
            row["note"] = "a row note"
        out.append(written)
    return out


def test_the_guidance_comparison_passes_prose_and_catches_every_lost_fact(tmp_path):
    cases = load_worked_examples()
    original = _as_guidance(cases)
    assert guidance.differences(original, cases) == []  # prose is the repo's own

    changed = copy.deepcopy(original)
    changed[0]["spec"] = "another section"
    with_rows = next(c for c in changed[1:] if c.get("expected_rows"))
    with_rows["expected_rows"][0]["row_key"] += "x"
    changed.append({"id": "new-CASE1", "spec": "x", "checks": []})
    assert guidance.differences(changed, cases) == [
        f"{changed[0]['id']}: facts differ",
        f"{with_rows['id']}: facts differ",
        "new-CASE1: missing from tests/data/worked_examples/",
    ]

    path = tmp_path / "doc_examples.json"
    path.write_text(json.dumps({"cases": changed}))
    assert guidance.main([str(path)]) == 1
    path.write_text(json.dumps({"cases": original}))
    assert guidance.main([str(path)]) == 0
