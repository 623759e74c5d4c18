"""The registry of every built-in table: the tables of every schema file in
``transforms/declarations/`` (docs/patterns.md describes their patterns)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from transforms import schema_file
from transforms.table_model import TableDecl

DECLARATIONS = Path(__file__).parent / "declarations"


def builtin_datasets() -> list[str]:
    """The built-in schema files' names (``server_metrics``, ``smart_meters``…)."""
    return sorted(path.stem for path in DECLARATIONS.glob("*.yaml"))


@cache
def _all() -> dict[str, TableDecl]:
    found: dict[str, TableDecl] = {}
    origin: dict[str, str] = {}
    for dataset in builtin_datasets():
        for name, decl in schema_file.builtin(dataset).decls().items():
            if name in found:
                raise ValueError(f"table {name} is declared in {origin[name]} and {dataset}")
            found[name], origin[name] = decl, dataset
    return dict(sorted(found.items()))


def all_tables() -> dict[str, TableDecl]:
    return _all()


def get(name: str) -> TableDecl:
    try:
        return _all()[name]
    except KeyError:
        known = ", ".join(_all())
        raise KeyError(f"no table declaration named {name!r}; known: {known}") from None
