"""Dead private names: `make lint`'s vulture skips a module's or a class's ``_name = ...`` (its
convention for "unused on purpose"), and tests/house/test_private_access.py keeps such a name from
being read outside its module, so one its own module never reads is dead. This finds them."""

from __future__ import annotations

import ast

from tests.surface import MODULES, REPO

FILES = {**MODULES, **{f"benchmarks.{p.stem}": p for p in (REPO / "benchmarks").glob("*.py")}}


def read_names(tree: ast.AST) -> set[str]:
    """Every name the module reads: loaded or deleted, as an attribute, or spelled in a string
    (``getattr(self, "_x")``, a ``__slots__`` entry)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.add(node.value)
    return out


def private_assignments(tree: ast.Module) -> list[tuple[str, int]]:
    """``(name, line)`` of each ``_name`` bound at module or class level by an assignment."""
    bodies = [tree.body] + [n.body for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    out = []
    for body in bodies:
        for node in body:
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets = [node.target]
            else:
                continue
            names = [leaf.id for t in targets for leaf in ast.walk(t) if isinstance(leaf, ast.Name)]
            out += [(n, node.lineno) for n in names if n.startswith("_") and n[1:2] != "_"]
    return out


def test_every_private_name_is_read_in_its_module():
    dead = []
    for module, path in sorted(FILES.items()):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        read = read_names(tree)
        dead += [
            f"{module}.{n} (line {line})" for n, line in private_assignments(tree) if n not in read
        ]
    assert not dead, "assigned, never read: " + ", ".join(dead)


def test_the_check_finds_a_dead_private_name():
    tree = ast.parse("_USED = 1\n_DEAD = 2\nclass C:\n    _gone = 3\nprint(_USED)\n")
    read = read_names(tree)
    assert [n for n, _ in private_assignments(tree) if n not in read] == ["_DEAD", "_gone"]


def test_the_check_reads_every_product_package():
    assert {m.split(".")[0] for m in FILES} >= {"benchmarks", "btts", "btts_cli", "pipelines"}
