"""Errors stay in their layer: ``python -m tests.lint_errors`` (run by ``make lint``).

The project's errors are one tree (:mod:`transforms.errors`). A kind of error becomes an HTTP
status in one function of ``btts serve``'s routes (``btts.tsdb.routes.error_reply``) and an exit
status in one module (:mod:`btts.exits`); the code below them raises kinds. Read from the
product source (ast, nothing imported), this fails on:

- ``http``: an HTTP status below the HTTP layer: an error built with a status (``X(..., 504)``),
  a status compared (``exc.code == 503``), ``HttpError`` or ``http.HTTPStatus`` named;
- ``exit``: the process ended below the command line: ``sys.exit``, ``exit``, ``os._exit``,
  ``SystemExit`` raised or subclassed anywhere but ``btts_cli`` and :mod:`btts.exits`;
- ``tree``: an exception class that does not derive from ``BttsError`` (``protos`` excepted: it
  generates code at build time, below the tree);
- ``rewrap``: a caught error's message copied into another kind, the error dropped
  (``raise ConfigError(str(err)) from None``) or kept beside its copy (``… from err``): a
  failure travels as a value of its kind, not as text said again; let it through when it
  already is of the right kind, else raise the right kind where it is raised.
"""

from __future__ import annotations

import ast
import builtins
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOPS = ("protos", "transforms", "btts", "pipelines", "btts_cli")
# The HTTP layer: the wire (http_io), the two fronts and the routes, which map kinds to statuses.
HTTP_LAYER = {"btts.tsdb.http_io", "btts.tsdb.routes", "btts.tsdb.server", "btts.tsdb.stdlib_front"}
BELOW_HTTP = ("transforms", "btts", "pipelines")  # the command line (btts_cli) is above it
# Where a process may end: the command line, and the one mapping a job's own run reaches too.
EXITS = ("btts_cli", "btts.exits")
ROOT = "BttsError"
OUTSIDE_TREE = ("protos",)
BUILTIN_ERRORS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources(root: Path) -> Iterator[tuple[str, Path, ast.Module]]:
    for top in TOPS:
        for path in sorted((root / top).rglob("*.py")):
            if "_pb2" not in path.name:
                yield module_name(root, path), path, ast.parse(path.read_text("utf-8"), str(path))


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _name(node: ast.AST) -> str:
    """The last part of a dotted name (``errors.ConfigError`` → ``ConfigError``)."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _status(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and 100 <= node.value <= 599


def _exception_classes(trees: list[tuple[str, Path, ast.Module]]) -> dict[str, list[list[str]]]:
    """Class name → the bases of each class of that name in the product."""
    found: dict[str, list[list[str]]] = {}
    for _, _, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append([_name(b) for b in node.bases])
    return found


def _reaches(name: str, target: str, classes: dict[str, list[list[str]]], seen=()) -> bool:
    if name == target:
        return True
    if name in seen:
        return False
    return any(
        _reaches(base, target, classes, (*seen, name))
        for bases in classes.get(name, [])
        for base in bases
    )


def _is_exception(name: str, classes: dict[str, list[list[str]]], seen=()) -> bool:
    if name in BUILTIN_ERRORS:
        return True
    if name in seen:
        return False
    return any(
        _is_exception(base, classes, (*seen, name))
        for bases in classes.get(name, [])
        for base in bases
    )


def _http(node: ast.AST, errors: set[str]) -> str | None:
    """What names an HTTP status here, if anything."""
    if isinstance(node, ast.Call) and _name(node.func) in errors | {"HttpError"}:
        given = [*node.args, *(k.value for k in node.keywords)]
        if any(_status(a) for a in given):
            return f"{_name(node.func)}(…) is built with an HTTP status"
    if isinstance(node, ast.Compare) and _name(node.left) in ("code", "status"):
        for right in node.comparators:
            values = right.elts if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else [right]
            if any(_status(v) for v in values):
                return f"an error's .{_name(node.left)} is compared with an HTTP status"
    if isinstance(node, (ast.Name, ast.Attribute)) and _name(node) in ("HttpError", "HTTPStatus"):
        return f"{_name(node)} is named"
    if isinstance(node, ast.ImportFrom) and node.module in ("http", "http.server"):
        return f"imports from {node.module}"
    return None


def _exit(node: ast.AST) -> str | None:
    """What ends the process here, if anything."""
    if isinstance(node, ast.Call):
        called = ast.unparse(node.func)
        if called in ("sys.exit", "exit", "quit", "os._exit", "SystemExit"):
            return f"{called}(…) ends the process"
    if isinstance(node, ast.Raise) and node.exc is not None and _name(node.exc) == "SystemExit":
        return "raises SystemExit"
    if isinstance(node, ast.ClassDef) and "SystemExit" in [_name(b) for b in node.bases]:
        return f"class {node.name} is a SystemExit"
    return None


def _copies(arg: ast.AST, caught: str) -> bool:
    """Whether ``arg`` is only the caught error's message."""
    text = ast.unparse(arg)
    return text in (
        f"str({caught})",
        f"f'{{{caught}}}'",
        f"{caught}.args[0]",
        f"str({caught}.args[0])",
        f"*{caught}.args",
    )


def _rewraps(tree: ast.Module, classes: dict[str, list[list[str]]]) -> Iterator[tuple[int, str]]:
    """Raises in an ``except … as err`` that copy ``err``'s text into another error: dropping
    ``err`` (``from None``, any error), or keeping it beside its copy (``Kind(str(err)) from
    err``, a kind of the tree: ``Kind.because(err)`` keeps it as a value instead)."""
    for handler in ast.walk(tree):
        if not isinstance(handler, ast.ExceptHandler) or not handler.name:
            continue
        for node in ast.walk(handler):
            if not (
                isinstance(node, ast.Raise)
                and isinstance(node.exc, ast.Call)
                and node.exc.args
                and _copies(node.exc.args[0], handler.name)
            ):
                continue
            said, caught = ast.unparse(node.exc), handler.name
            if isinstance(node.cause, ast.Constant):  # from None
                why = f"let {caught} through, or keep it as the cause (from {caught})"
                yield node.lineno, f"{said} from None drops the error it copies: {why}"
            elif (
                isinstance(node.cause, ast.Name)
                and node.cause.id == caught
                and ast.unparse(node.exc.args[0]) in (f"str({caught})", f"f'{{{caught}}}'")
                and _is_exception(_name(node.exc.func), classes)
                and _reaches(_name(node.exc.func), ROOT, classes)
            ):
                kind = _name(node.exc.func)
                why = f"raise the right kind where {caught} is raised, or {kind}.because({caught})"
                yield node.lineno, f"{said} from {caught} says the error's text again: {why}"


def problems(root: Path = REPO) -> list[str]:
    """Every crossing found under ``root``, as ``path:line: rule: what``."""
    trees = list(_sources(root))
    classes = _exception_classes(trees)
    errors = {n for n in classes if _is_exception(n, classes)}
    found = []
    for module, path, tree in trees:
        where = path.relative_to(root)
        http = _under(module, BELOW_HTTP) and module not in HTTP_LAYER
        exits = not _under(module, EXITS)
        for node in ast.walk(tree):
            said = _http(node, errors) if http else None
            if said:
                found.append(f"{where}:{node.lineno}: http: {said} below the routes")
            said = _exit(node) if exits else None
            if said:
                found.append(f"{where}:{node.lineno}: exit: {said} below the command line")
            if (
                isinstance(node, ast.ClassDef)
                and node.name != ROOT
                and not _under(module, OUTSIDE_TREE)
                and _is_exception(node.name, classes)
                and not _reaches(node.name, ROOT, classes)
            ):
                found.append(
                    f"{where}:{node.lineno}: tree: {node.name} does not derive from {ROOT}"
                )
        found += [f"{where}:{line}: rewrap: {what}" for line, what in _rewraps(tree, classes)]
    return sorted(set(found))


def main() -> int:
    found = problems()
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} error(s) raised across a layer (see tests/lint_errors.py)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
