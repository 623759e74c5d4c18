"""What each product module offers other modules, measured on the source: the names other
product modules use from it (``from m import n``, or ``m.n`` through an imported module), plus
the entry points a module is reached by by name (a job's ``run``/``build``/``OPTION_CLASSES``/
``JOB``, a script's ``main``). tests/house/test_public_surface.py holds every ``__all__`` to it;
``python -m tests.surface --fix`` rewrites the lists."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOPS = ("protos", "transforms", "btts", "pipelines", "btts_cli")
JOB_CONTRACT = {"run", "build", "OPTION_CLASSES", "JOB"}
ENTRY_POINTS = {"protos": {"generate"}, "btts_cli.main": {"main"}}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def product_modules() -> dict[str, Path]:
    return {
        module_name(p): p
        for top in TOPS
        for p in sorted((REPO / top).rglob("*.py"))
        if "_pb2" not in p.name
    }


MODULES = product_modules()


def _aliases(tree: ast.Module) -> tuple[dict[str, str], set[tuple[str, str]]]:
    """Local names bound to product modules, and the (module, name) pairs imported directly."""
    aliases: dict[str, str] = {}
    direct: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in MODULES:
                    aliases[alias.asname or alias.name] = full
                elif node.module in MODULES:
                    direct.add((node.module, alias.name))
        elif (  # name = lazy_module("a.module"): an alias that loads on first use
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "id", None) == "lazy_module"
            and node.value.args
            and isinstance(node.value.args[0], ast.Constant)
            and node.value.args[0].value in MODULES
        ):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    aliases[target.id] = node.value.args[0].value
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    aliases[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0]
                    )
    return aliases, direct


def uses(path: Path) -> set[tuple[str, str]]:
    """The (module, name) pairs a file uses from product modules."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases, found = _aliases(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        chain, base = [], node
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        if not isinstance(base, ast.Name) or base.id not in aliases:
            continue
        module, rest = aliases[base.id], chain[::-1]
        while rest and f"{module}.{rest[0]}" in MODULES:
            module, rest = f"{module}.{rest[0]}", rest[1:]
        if rest:
            found.add((module, rest[0]))
    return found


def defined(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            for leaf in ast.walk(target):
                if isinstance(leaf, ast.Name):
                    names.add(leaf.id)
    return names


def declared_all(path: Path) -> list[str] | None:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return [element.value for element in node.value.elts]
    return None


def is_facade(module: str) -> bool:
    """A package whose ``__init__`` gathers its modules' names: the one path outside it."""
    return (
        MODULES[module].name == "__init__.py"
        and bool(declared_all(MODULES[module]))
        and not defined(MODULES[module]) >= set(declared_all(MODULES[module]) or [])
    )


def offered() -> dict[str, set[str]]:
    """Module → the names other product modules use from it, with its entry points."""
    out: dict[str, set[str]] = {m: set() for m in MODULES}
    for user, path in MODULES.items():
        for module, name in uses(path):
            if module != user:
                out[module].add(name)
    for module, path in MODULES.items():
        if (module.startswith("pipelines.") and module.count(".") == 1) or module == (
            "pipelines.nightly"
        ):
            out[module] |= JOB_CONTRACT & defined(path)
        if re.search(r'^if __name__ == "__main__":', path.read_text(), re.M):
            out[module] |= {"main"} & defined(path)
        out[module] |= ENTRY_POINTS.get(module, set())
    return out


def expected_all(module: str, used: set[str]) -> list[str]:
    """The ``__all__`` a module should declare: what others use of what it defines; a facade
    also what it gathers, a package also its submodules others import."""
    path = MODULES[module]
    names = used & defined(path)
    if is_facade(module):
        names = used & set(declared_all(path) or [])
    return sorted(names, key=lambda n: (not n.isupper(), not n[:1].isupper(), n))


def _render(names: list[str]) -> str:
    """As ruff formats it: one line when it fits, else one name a line."""
    line = "__all__ = [" + ", ".join(f'"{n}"' for n in names) + "]"
    if len(line) <= 100:
        return line
    return "__all__ = [\n" + "".join(f'    "{n}",\n' for n in names) + "]"


def fix() -> list[str]:
    changed = []
    used = offered()
    for module, path in MODULES.items():
        current = declared_all(path)
        if current is None or module.split(".")[-1] == "__main__":
            continue
        want = expected_all(module, used[module])
        if sorted(current) != sorted(want):
            text = path.read_text(encoding="utf-8")
            text = re.sub(r"__all__ = \[.*?\]", _render(want), text, count=1, flags=re.S)
            path.write_text(text, encoding="utf-8")
            changed.append(module)
    return changed


if __name__ == "__main__":
    if sys.argv[1:] == ["--fix"]:
        print("\n".join(fix()))
