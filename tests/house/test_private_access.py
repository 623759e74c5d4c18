"""No product module reaches into another product module's ``_private`` names (the house rule):
a private name is free to change without a search of the tree, so only its own module may use it.

The walk reads every product module with :mod:`ast` and refuses ``from x import _y`` and
``module._y`` where ``x``/``module`` is another product module. A module's own privates,
``self._x``, dunder names (``__name__``) and a package's use of its own private submodules are
fine. Third-party privates are another test's business."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.support import REPO

PACKAGES = ("transforms", "btts", "btts_cli", "pipelines", "templates")
SINGLE_FILES = ("protos/__init__.py",)


def product_files() -> list[Path]:
    """Every product module: the packages' sources, not tests or benchmarks."""
    files = [p for pkg in PACKAGES for p in sorted((REPO / pkg).rglob("*.py"))]
    files += [REPO / f for f in SINGLE_FILES if (REPO / f).exists()]
    return [f for f in files if ".venv" not in f.parts]


def module_name(path: Path, root: Path = REPO) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def may_use(importer: str, target: str, product: set[str]) -> bool:
    """Whether module ``importer`` may use the private ``target`` (a dotted name ending in the
    private part): its own names, or a private submodule of a package it belongs to."""
    owner = target.rpartition(".")[0]
    if importer == owner:
        return True
    return target in product and importer.startswith(owner + ".")


def offenders(
    source: str, module: str, product: set[str], is_package: bool = False, where: str = "<src>"
) -> list[str]:
    """``where:line: what`` for every reach into another product module's private names."""
    tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    tops = {p.split(".")[0] for p in product}
    bound: dict[str, str] = {}  # local name → the product module it stands for
    found: list[str] = []

    def check_path(node: ast.AST, what: str, dotted: str) -> None:
        """A module path's private parts (``pkg._impl.x``)."""
        parts = dotted.split(".")
        for i, part in enumerate(parts):
            if _private(part) and not may_use(module, ".".join(parts[: i + 1]), product):
                found.append(f"{where}:{node.lineno}: {what}")
                return

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] not in tops:
                    continue
                head = alias.name.split(".")[0]
                bound[alias.asname or head] = alias.name if alias.asname else head
                check_path(node, f"import {alias.name}", alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)]
                source_module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source_module = node.module or ""
            if source_module.split(".")[0] not in tops:
                continue
            for alias in node.names:
                full = f"{source_module}.{alias.name}"
                if full in product:  # a submodule, bound as a module
                    bound[alias.asname or alias.name] = full
                check_path(node, f"from {source_module} import {alias.name}", full)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        chain: list[str] = []
        base: ast.AST = node
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        if not isinstance(base, ast.Name) or base.id not in bound:
            continue
        dotted = bound[base.id]
        for attr in reversed(chain):
            target = f"{dotted}.{attr}"
            if _private(attr):
                if not may_use(module, target, product):
                    found.append(f"{where}:{node.lineno}: {base.id}.{'.'.join(reversed(chain))}")
                break
            if target not in product:
                break  # past the modules: attributes of an object, not a module's names
            dotted = target
    return sorted(set(found), key=lambda s: (s.split(":")[0], int(s.split(":")[1]), s))


def product_offenders(files: Iterable[Path], root: Path = REPO) -> list[str]:
    files = list(files)
    product = {module_name(f, root) for f in files}
    product |= {".".join(m.split(".")[:i]) for m in product for i in range(1, m.count(".") + 1)}
    out: list[str] = []
    for path in files:
        out += offenders(
            path.read_text(encoding="utf-8"),
            module_name(path, root),
            product,
            is_package=path.name == "__init__.py",
            where=str(path.relative_to(root)),
        )
    return out


def test_no_product_module_reads_another_modules_private_names():
    files = product_files()
    assert len(files) > 30  # the walk found the product
    found = product_offenders(files)
    assert not found, "private names used outside their module:\n" + "\n".join(found)


# -- the walker itself ---------------------------------------------------------------------------

PRODUCT = {"pkg", "pkg.a", "pkg.b", "pkg.sub", "pkg.sub._impl", "pkg.sub.api"}


@pytest.mark.parametrize(
    "source",
    [
        "from pkg.b import _hidden",
        "from pkg import b\nb._hidden()",
        "import pkg.b\npkg.b._hidden",
        "import pkg.b as bee\nx = bee._hidden",
        "from . import b\nb._CONST",
        "from .b import _hidden as visible",
        "def f():\n    from pkg.b import _hidden\n    return _hidden",
        "from pkg.sub import _impl",  # another package's private module
        "import pkg.sub._impl",
        "from pkg.sub._impl import helper",
    ],
)
def test_the_walker_finds_a_reach_into_another_module(source):
    assert offenders(source, "pkg.a", PRODUCT, where="pkg/a.py"), source


@pytest.mark.parametrize(
    "source",
    [
        "_mine = 1\nprint(_mine)",
        "class C:\n    def f(self):\n        return self._x",
        "from pkg import b\nprint(b.__name__, b.public)",
        "import json\njson._default_encoder",  # third party: another test's business
        "from pkg.b import public\npublic._field",  # an object's attribute, not a module's
        "from pkg import a\na._own",  # a module's own privates
    ],
)
def test_the_walker_lets_own_and_dunder_names_pass(source):
    assert not offenders(source, "pkg.a", PRODUCT, where="pkg/a.py"), source


def test_a_package_may_use_its_own_private_submodules():
    assert not offenders("from pkg.sub._impl import helper", "pkg.sub", PRODUCT, is_package=True)
    assert not offenders("from ._impl import helper", "pkg.sub.api", PRODUCT)
    assert offenders("from ._impl import _helper", "pkg.sub.api", PRODUCT)


def test_the_walk_lists_every_offender(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "b.py").write_text("_hidden = 1\n")
    (tmp_path / "pkg" / "a.py").write_text(
        "from pkg import b\nfrom pkg.b import _hidden\nprint(b._hidden)\n"
    )
    files = sorted((tmp_path / "pkg").glob("*.py"))
    assert product_offenders(files, tmp_path) == [
        "pkg/a.py:2: from pkg.b import _hidden",
        "pkg/a.py:3: b._hidden",
    ]
