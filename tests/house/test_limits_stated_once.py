"""Bigtable's limits and the time segment kinds are stated once (transforms/limits.py,
transforms/table_model.py): no other product module assigns them a number of its own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from btts.advisor import lint, table_report
from tests.support import REPO
from transforms import limits, table_model

PRODUCT = ("transforms", "btts", "pipelines", "btts_cli")
# names the advisor once gave its own copies of a limit
OLD_COPIES = {"KEY_BYTES", "MAX_FAMILIES", "MAX_TABLES"}


def _assigned(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else []
        targets += [node.target] if isinstance(node, ast.AnnAssign) else []
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


@pytest.mark.parametrize(
    "path",
    sorted(p for layer in PRODUCT for p in (REPO / layer).rglob("*.py")),
    ids=lambda p: str(p.relative_to(REPO)),
)
def test_no_module_states_a_limit_or_the_time_kinds_again(path):
    found = _assigned(path)
    if path.name != "limits.py":
        assert not found & set(limits.__all__), path
    if path.name != "table_model.py":
        assert "TIME_KINDS" not in found, path
    assert not found & OLD_COPIES, path


def test_every_reader_sees_the_same_numbers():
    assert limits.MAX_ROW_KEY_BYTES is limits.MAX_ROW_KEY_BYTES == 4096
    assert limits.MAX_CELL_BYTES is limits.MAX_CELL_BYTES
    assert limits.MAX_QUALIFIER_BYTES is limits.MAX_QUALIFIER_BYTES
    assert limits.MAX_TABLES_PER_INSTANCE == 1000
    assert table_model.TIME_KINDS is table_model.TIME_KINDS
    assert not hasattr(lint, "KEY_BYTES") and not hasattr(lint, "MAX_TABLES")
    assert table_report.MAX_ROW_KEY_BYTES is limits.MAX_ROW_KEY_BYTES
    assert "admin" not in vars(lint)  # no import of btts.admin for the number 1000


def test_the_advisor_and_query_modules_stay_under_600_lines():
    for name in ("btts/advisor/lint.py", "btts_cli/demo.py", "btts_cli/query_command.py"):
        assert len((REPO / name).read_text().splitlines()) < 600, name
