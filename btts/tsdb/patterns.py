"""Tag-filter patterns of ``btts serve`` compiled with RE2 (pure).

Every regular expression a client sends runs on RE2, whose matching time is linear in the
length of the text for any pattern: no shape of pattern (nested quantifiers, long chains of
``.*``, alternations) can make a match backtrack. RE2 is also the syntax Bigtable's row-key
and qualifier filters take, so a pattern that compiles here means the same thing there.
Compiled patterns and per-filter matchers are kept in bounded (LRU) caches, so a client
varying its filters cannot grow memory.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import re2

from btts.tsdb.errors import BadRequest

__all__ = ["compile_regex", "matcher"]

MAX_PATTERN = 200  # characters of one client pattern
MAX_PROGRAM = 1 << 20  # bytes RE2 may spend on one compiled pattern (its DFA/NFA budget)
_BACKREF = re.compile(r"\\[1-9]|\(\?P=|\(\?[=!<]")


class PatternError(BadRequest):
    """A client pattern RE2 refuses (syntax, back-reference, too long, too large): a 400."""


def _options(ignore_case: bool = False) -> re2.Options:
    opts = re2.Options()
    opts.max_mem = MAX_PROGRAM
    opts.case_sensitive = not ignore_case
    opts.log_errors = False
    return opts


def compile_regex(pattern: str) -> object:
    """A client's ``regexp`` filter compiled by RE2; a :class:`PatternError` saying why not."""
    if len(pattern) > MAX_PATTERN:
        raise PatternError(f"Regular expression longer than {MAX_PATTERN} characters")
    if _BACKREF.search(pattern):
        raise PatternError("Back-references and lookarounds are not allowed in regexp filters")
    return _compiled(pattern, False)


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str, ignore_case: bool) -> object:
    try:
        return re2.compile(pattern, _options(ignore_case))
    except re2.error as exc:
        why = exc.args[0] if exc.args else exc
        why = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
        raise PatternError(f"Invalid regexp {pattern[:60]!r}: {why}") from None


def wildcard_regex(pattern: str) -> str:
    """OpenTSDB's ``wildcard`` filter (``*`` any run of characters) as an anchored regex."""
    return "(?s)" + ".*".join(re2.escape(p) for p in pattern.split("*")) + r"\z"


def _anything(value: str) -> bool:
    return True


@functools.lru_cache(maxsize=2048)
def matcher(kind: str, text: str) -> Callable[[str], bool]:
    """The predicate of one tag filter (``kind`` is OpenTSDB's filter type): built once per
    filter, so a value is tested by a set lookup or one linear-time RE2 match."""
    if kind in ("literal_or", "not_literal_or"):
        values = frozenset(text.split("|"))
        if kind == "literal_or":
            return values.__contains__
        return lambda v: v not in values
    if kind in ("iliteral_or", "not_iliteral_or"):
        lowered = frozenset(text.lower().split("|"))
        if kind == "iliteral_or":
            return lambda v: v.lower() in lowered
        return lambda v: v.lower() not in lowered
    if kind in ("wildcard", "iwildcard"):  # OpenTSDB's wildcard is case-sensitive
        if text and not text.strip("*"):  # a * (Grafana's every value): nothing to match
            return _anything
        wild = _compiled(wildcard_regex(text), kind == "iwildcard")
        return lambda v: wild.match(v) is not None
    rx = compile_regex(text)
    return lambda v: rx.search(v) is not None
