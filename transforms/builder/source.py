"""The writer of generated source: lines, indentation, and the constants its names stand for.
Both generated functions (the builder of :mod:`.codegen`, the request framing of :mod:`.wire`)
are written with it; a user's text only ever reaches them as a bound constant, never as source."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["SourceWriter"]


class SourceWriter:
    """A generated function's lines and the constants its names stand for."""

    def __init__(self, namespace: dict[str, object] | None = None) -> None:
        self.lines: list[str] = []
        self.namespace: dict[str, object] = dict(namespace or {})
        self._count = 0
        self.shared: dict[tuple, str] = {}  # locals computed once for several tables

    def const(self, value: object, prefix: str = "k") -> str:
        """A fresh name bound to ``value`` (never the value's text in the source)."""
        name = f"{prefix}{self._count}"
        self._count += 1
        self.namespace[name] = value
        return name

    def add(self, line: str, indent: int = 1) -> None:
        self.lines.append("    " * indent + line)

    def function(self, name: str, filename: str) -> Callable:
        """Compiles the lines and returns the function ``name`` they define, with its source
        as ``.source`` (for tests and curious readers)."""
        source = "\n".join(self.lines)
        exec(compile(source, filename, "exec"), self.namespace)  # generated names only
        fn = self.namespace[name]
        fn.source = source
        return fn
