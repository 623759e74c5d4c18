"""Compare the in-repo worked examples with a copy of the guidance's own examples file.

The suite never reads outside the repository; a maintainer who has the guidance's
``doc_examples.json`` runs ``make check-guidance GUIDANCE=path/to/doc_examples.json`` to see that
every case id and every fact of it is still here (the prose is the repository's own)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

PROSE = ("note", "input_format")  # explanations, not facts: the repo words its own


def facts(case: dict) -> dict:
    out = {k: v for k, v in case.items() if k not in PROSE}
    if "expected_rows" in out:
        out["expected_rows"] = [
            {k: v for k, v in row.items() if k not in PROSE} for row in out["expected_rows"]
        ]
    return out


def differences(original: list[dict], cases: dict[str, dict]) -> list[str]:
    """One line per case of ``original`` missing from ``cases`` or holding other facts."""
    out = []
    for case in original:
        mine = cases.get(case["id"])
        if mine is None:
            out.append(f"{case['id']}: missing from tests/data/worked_examples/")
        elif facts(case) != mine:
            out.append(f"{case['id']}: facts differ")
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tests.guidance PATH/doc_examples.json", file=sys.stderr)
        return 2
    from tests.support.worked_examples import load_worked_examples

    original = json.loads(Path(args[0]).read_text(encoding="utf-8"))["cases"]
    found = differences(original, load_worked_examples())
    for line in found:
        print(line)
    print(f"{len(original)} guidance cases, {len(found)} differing")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
