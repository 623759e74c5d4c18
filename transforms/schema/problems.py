"""The one collector every validator of a schema file reports into.

A validator never stops at the first mistake: it records ``(line, message)`` with
:meth:`Problems.bad` and carries on, so the user sees every problem of the file at once. The
reading helpers (:meth:`Problems.text`, :meth:`Problems.integer`, …) report a wrong type and
return a safe default.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence

from transforms.schema.yaml_lines import Map, Seq, line_of

__all__ = ["Problems", "suggest"]


def suggest(word: object, options: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``options``, or nothing."""
    close = difflib.get_close_matches(str(word), list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def kind_of(node: object) -> str:
    """What a node is, for a message: ``a mapping``, ``a list``, ``nothing``, ``int 3``…"""
    if isinstance(node, dict):
        return "a mapping"
    if isinstance(node, list):
        return "a list"
    if node is None:
        return "nothing"
    return f"{type(node).__name__} {node!r}"[:60]


class Problems:
    """Every problem of one schema file, as ``(line, message)`` pairs in ``found``."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.found: list[tuple[int, str]] = []

    def bad(self, line: int, message: str) -> None:
        self.found.append((line, message))

    def since(self, line: int) -> bool:
        """Whether a problem was found on ``line`` or after it."""
        return any(at >= line for at, _ in self.found)

    def keys(self, node: Map, allowed: Mapping[str, str] | Sequence[str], what: str) -> None:
        for key in node:
            if key not in allowed:
                self.bad(
                    line_of(node, key),
                    f"{what}: unknown key {key!r}{suggest(key, allowed)}; "
                    f"allowed: {', '.join(allowed)}",
                )

    def mapping(self, node: object, what: str, line: int) -> Map | None:
        if isinstance(node, Map):
            return node
        self.bad(line, f"{what}: expected a mapping (key: value lines), got {kind_of(node)}")
        return None

    def sequence(self, node: object, what: str, line: int) -> Seq | None:
        if isinstance(node, Seq):
            return node
        self.bad(line, f"{what}: expected a list (lines starting with '- '), got {kind_of(node)}")
        return None

    def text(
        self, node: Map, key: str, what: str, required: bool = False, default: str = ""
    ) -> str:
        if key not in node:
            if required:
                self.bad(node.line, f"{what}: missing {key!r}; add '{key}: …'")
            return default
        value = node[key]
        if isinstance(value, (int, float)) and not isinstance(value, bool) and key == "spec":
            return str(value)
        if not isinstance(value, str):
            self.bad(line_of(node, key), f"{what}: {key!r} must be text, got {kind_of(value)}")
            return default
        return value

    def integer(self, node: Map, key: str, what: str, minimum: int = 1) -> int | None:
        if key not in node or node[key] is None:
            return None
        value = node[key]
        if type(value) is not int or value < minimum:
            self.bad(
                line_of(node, key),
                f"{what}: {key!r} must be a whole number ≥ {minimum}, got {value!r}",
            )
            return None
        return value

    def section(self, spec: Map, key: str, where: str) -> Map:
        """``spec[key]``, an optional mapping: empty when absent (or not a mapping: reported)."""
        node = spec.get(key)
        if node is None:
            return Map()
        return self.mapping(node, f"{where}.{key}", line_of(spec, key)) or Map()

    def text_list(self, spec: Map, key: str, where: str) -> tuple[str, ...] | None:
        """``spec[key]``, an optional list of names (None when absent or reported)."""
        value = spec.get(key)
        if value is not None and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            self.bad(line_of(spec, key), f"{where}: {key} is a list of names")
            return None
        return None if value is None else tuple(value)
