"""Series identity and label matchers (pure: no client).

A series is its label set, ``__name__`` included. Its canonical text is the labels as JSON
sorted by name (no spaces, UTF-8 kept), and its id the first 128 bits of that text's SHA-256 in
hex: stable across processes, releases and machines, so every writer of a series lands it in the
same rows and a retried write rewrites the same cells.

Matchers are Prometheus': ``=``, ``!=``, ``=~``, ``!~``, a regexp anchored at both ends, a
missing label matching as the empty value. Regexps run on RE2 (linear time, the syntax of Go's
``regexp`` that Prometheus uses); one RE2 cannot compile is a :class:`BadMatcher`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import re2

from transforms.errors import UserError

__all__ = ["NAME", "Matcher", "canonical", "series_id"]

NAME = "__name__"
EQ, NEQ, RE, NRE = 0, 1, 2, 3  # prometheus.LabelMatcher.Type
_SYMBOLS = {EQ: "=", NEQ: "!=", RE: "=~", NRE: "!~"}
MAX_REGEXP = 4096  # characters of one matcher's regexp
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.max_mem = 8 << 20  # a regexp whose automaton would need more is refused


class BadMatcher(UserError):
    """A matcher that cannot be applied: an unknown type, a regexp RE2 cannot run."""


def canonical(labels: Sequence[tuple[str, str]]) -> str:
    """The label set's canonical JSON text (sorted by name); :class:`UserError` for a label
    named twice or an empty name."""
    ordered = sorted(labels)
    for (a, _), (b, _) in itertools.pairwise(ordered):
        if a == b:
            raise UserError(f"label {a!r} appears twice in one series")
    if ordered and not ordered[0][0]:
        raise UserError("a label has an empty name")
    return json.dumps(dict(ordered), ensure_ascii=False, separators=(",", ":"))


def series_id(text: str) -> str:
    """The stable id of a series from its :func:`canonical` text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class Matcher:
    """One label matcher; :meth:`test` says whether a label set passes it."""

    kind: int
    name: str
    value: str
    test: Callable[[Mapping[str, str]], bool]

    @classmethod
    def of(cls, kind: int, name: str, value: str) -> Matcher:
        """A matcher from its protobuf fields; :class:`BadMatcher` when it cannot be applied."""
        if kind not in _SYMBOLS:
            raise BadMatcher(f"matcher on {name!r}: unknown matcher type {kind}")
        if kind in (EQ, NEQ):
            same = kind == EQ
            return cls(kind, name, value, lambda labels: (labels.get(name, "") == value) is same)
        if len(value) > MAX_REGEXP:
            raise BadMatcher(f"matcher on {name!r}: regexp longer than {MAX_REGEXP} characters")
        try:
            pattern = re2.compile(f"^(?:{value})$", _OPTIONS)
        except re2.error as exc:
            raise BadMatcher(
                f"matcher {name}{_SYMBOLS[kind]}{value[:80]!r}: not an RE2 regexp ({exc})"
            ) from None
        full = pattern.fullmatch
        if kind == RE:
            return cls(kind, name, value, lambda labels: full(labels.get(name, "")) is not None)
        return cls(kind, name, value, lambda labels: full(labels.get(name, "")) is None)

    def matches_empty(self) -> bool:
        """Whether a series without this label passes (the label read as ``""``)."""
        return self.test({})

    def __str__(self) -> str:
        return f"{self.name}{_SYMBOLS[self.kind]}{json.dumps(self.value)}"
