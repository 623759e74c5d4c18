"""The registry of every built-in table: the tables of every schema file in
``transforms/declarations/`` (docs/patterns.md describes their patterns)."""

from __future__ import annotations

from functools import cache

from transforms import schema as schema_lib
from transforms.errors import Undeclared
from transforms.table_model import TableDecl

__all__ = ["all_tables", "builtin_datasets", "dataset_of", "get", "index_tables"]


def builtin_datasets() -> list[str]:
    """The built-in schema files' names (``server_metrics``, ``smart_meters``…)."""
    return sorted(path.stem for path in schema_lib.DECLARATIONS.glob("*.yaml"))


@cache
def _registry() -> tuple[dict[str, TableDecl], dict[str, str]]:
    """Every built-in table's declaration, and the dataset whose file declares it."""
    found: dict[str, TableDecl] = {}
    origin: dict[str, str] = {}
    for dataset in builtin_datasets():
        for name, decl in schema_lib.builtin(dataset).decls().items():
            if name in found:
                raise ValueError(f"table {name} is declared in {origin[name]} and {dataset}")
            found[name], origin[name] = decl, dataset
    return dict(sorted(found.items())), origin


def all_tables() -> dict[str, TableDecl]:
    """Every built-in data table's declaration (not the series indexes: :func:`index_tables`)."""
    return _registry()[0]


@cache
def index_tables() -> dict[str, TableDecl]:
    """The series index of every built-in dataset that declares one, by table name."""
    found = {}
    for dataset in builtin_datasets():
        index = schema_lib.builtin(dataset).index
        if index is not None:
            found[index.table] = index.decl()
    return dict(sorted(found.items()))


def dataset_of(table: str) -> str | None:
    """The built-in dataset whose schema file declares ``table`` (None: no built-in does)."""
    return _registry()[1].get(table)


def get(name: str) -> TableDecl:
    """A built-in table's declaration, a series index's too.
    Raises Undeclared (a UserError naming the names there are)."""
    found = all_tables().get(name) or index_tables().get(name)
    if found is None:
        known = ", ".join(all_tables())
        raise Undeclared(f"no table declaration named {name!r}; known: {known}")
    return found
