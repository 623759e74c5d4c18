"""Modules loaded on their first use, so that a command pays only for what it runs: ``btts
--help`` or a query must not load Beam, and a query must not load the table admin client,
because a user iterating on a schema or a script calling ``btts query`` pays start-up on every
call."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

__all__ = ["lazy_module"]


def lazy_module(name: str) -> ModuleType:
    """The module ``name``, whose code runs at its first attribute access (importlib's
    ``LazyLoader``); one already imported is returned as it is. Its parent packages are imported
    now, so keep it to modules whose packages are light (ours, not a client library's)."""
    found = sys.modules.get(name)
    if found is not None:
        return found
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"no module named {name!r}", name=name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module
