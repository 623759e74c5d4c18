"""No product function past what a reader can hold: 60 lines from its ``def`` to its last line
(decorators not counted), methods and nested functions included; generated ``_pb2`` files
excluded. A long function is split into helpers that each say why they exist."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support import REPO

TOPS = ("protos", "transforms", "btts", "pipelines", "btts_cli")
MAX_FUNCTION_LINES = 60

# Functions allowed over the limit for a while (none now). The list can only shrink: a name here
# that is no longer over the limit fails the test, so it is taken off as soon as it is split.
PENDING: set[str] = set()


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def long_functions(source: str, module: str, limit: int = MAX_FUNCTION_LINES) -> dict[str, int]:
    """``module:qualified name`` → length of every function of ``source`` over ``limit``."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                length = child.end_lineno - child.lineno + 1
                if length > limit:
                    found[f"{module}:{name}"] = length
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def product_long_functions(root: Path = REPO) -> dict[str, int]:
    found: dict[str, int] = {}
    for top in TOPS:
        for path in sorted((root / top).rglob("*.py")):
            if path.name.endswith("_pb2.py"):
                continue
            module = _module_name(path, root)
            found |= long_functions(path.read_text(encoding="utf-8"), module)
    return found


def test_no_product_function_over_the_limit():
    offenders = {name: n for name, n in product_long_functions().items() if name not in PENDING}
    assert not offenders, "functions over 60 lines (split them): " + ", ".join(
        f"{name} ({n})" for name, n in sorted(offenders.items())
    )


def test_pending_functions_are_still_long_so_the_list_only_shrinks():
    done = PENDING - product_long_functions().keys()
    assert not done, f"no longer over 60 lines, take them off PENDING: {sorted(done)}"


def test_the_check_can_fail(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(59))
    source = (
        "@decorator\n"
        f"def fits():\n{body}\n"  # 60 lines: the def, 59 statements
        f"class C:\n    def long(self):\n{body.replace('    ', '        ')}        y = 1\n\n"
        f"def outer():\n    def inner():\n{body.replace('    ', '        ')}        y = 1\n"
    )
    assert long_functions(source, "m") == {"m:C.long": 61, "m:outer": 62, "m:outer.inner": 61}
    (tmp_path / "transforms").mkdir()
    (tmp_path / "transforms" / "x_pb2.py").write_text(source)
    (tmp_path / "transforms" / "__init__.py").write_text(source)
    assert set(product_long_functions(tmp_path)) == {
        "transforms:C.long",
        "transforms:outer",
        "transforms:outer.inner",
    }
