"""The layers, checked on the source: every import, function-level ones included.

transforms (pure builders, schema files, Beam transforms) < btts (the library: admin, emulator
harness, queries, advisor) < pipelines (the jobs) < btts_cli (the command line, templates, the
demo). A module may import its own layer and the ones below it, never one above.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LAYERS = ["protos", "transforms", "btts", "pipelines", "btts_cli"]
RANK = {name: i for i, name in enumerate(LAYERS)}


def _modules() -> list[Path]:
    return sorted(
        p for layer in LAYERS for p in (REPO / layer).rglob("*.py") if "_pb2" not in p.name
    )


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = set()
    for node in ast.walk(tree):  # every import, at module level or inside a function
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found & set(LAYERS)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_module_imports_a_higher_layer(path):
    own = path.relative_to(REPO).parts[0]
    higher = {p for p in _imported_packages(path) if RANK[p] > RANK[own]}
    assert not higher, f"{path.relative_to(REPO)} ({own}) imports {sorted(higher)}"


def test_the_packages_form_no_cycle():
    edges = {layer: set() for layer in LAYERS}
    for path in _modules():
        own = path.relative_to(REPO).parts[0]
        edges[own] |= _imported_packages(path) - {own}
    seen: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        assert seen.get(node) != 1, f"import cycle: {' → '.join([*trail, node])}"
        if seen.get(node) == 2:
            return
        seen[node] = 1
        for nxt in sorted(edges[node]):
            visit(nxt, [*trail, node])
        seen[node] = 2

    for layer in LAYERS:
        visit(layer, [])


def test_the_layer_check_can_fail(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("def f():\n    from pipelines import common\n")
    assert _imported_packages(bad) == {"pipelines"}
