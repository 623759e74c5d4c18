"""The registry of every declared table (SPEC §4–§5), gathered from ``transforms.declarations``."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from transforms import declarations
from transforms.schema import TableDecl


@cache
def _all() -> dict[str, TableDecl]:
    found: dict[str, TableDecl] = {}
    for info in sorted(pkgutil.iter_modules(declarations.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{declarations.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, TableDecl):
                if value.name in found and found[value.name] is not value:
                    raise ValueError(f"table {value.name} is declared twice")
                found[value.name] = value
    return dict(sorted(found.items()))


def all_tables() -> dict[str, TableDecl]:
    return _all()


def get(name: str) -> TableDecl:
    try:
        return _all()[name]
    except KeyError:
        known = ", ".join(_all())
        raise KeyError(f"no table declaration named {name!r}; known: {known}") from None
