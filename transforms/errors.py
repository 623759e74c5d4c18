"""The one exception type that turns an input event into a dead letter, and how its reasons
are grouped for a summary."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["AggregateWriteError", "InvalidEvent", "SchemaError", "WriteFailed", "reason_kind"]


class InvalidEvent(ValueError):
    """An event that cannot become rows. Its message is the dead-letter reason, so say what and
    where (``field 'hostname': contains '#'``), never just "bad input"."""


_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
# Numbers that are values (after ": " or a word that introduces a position or a value), not
# those that name things (RFC 3339, UTF-8) or state a limit (16 KiB, its maximum 10).
_NUMBER = re.compile(
    r"(: |\b(?:line|column|char|byte|index|element|got|int|float|number) )"
    r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])"
)
_FIELD = re.compile(r"(?:key )?field (?:'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\S+)")
_SPACE = re.compile(r"\s+")
MAX_KIND_CHARS = 160


def reason_kind(reason: str) -> str:
    """The dead-letter reason with its values generalised, so that 1,461 lines failing the same
    way count as one reason in a summary: ``field 'date': '2012/01/01' is not a date`` →
    ``field 'date': '…' is not a date``. The field a reason names is kept; quoted values and
    value-like numbers after it become ``'…'`` and ``N``."""
    field = _FIELD.match(reason)
    head = field.group() if field else ""
    kind = head + _NUMBER.sub(r"\1N", _QUOTED.sub("'…'", reason[len(head) :]))
    kind = _SPACE.sub(" ", kind).strip()
    return kind if len(kind) <= MAX_KIND_CHARS else kind[: MAX_KIND_CHARS - 1] + "…"


class SchemaError(ValueError):
    """A schema file that cannot be used; ``problems`` holds ``(line, message)`` pairs."""

    def __init__(self, source: str, problems: Sequence[tuple[int, str]]) -> None:
        self.source = source
        self.problems = list(problems)
        lines = [f"{source}:{line}: {message}" for line, message in self.problems]
        super().__init__(
            f"{len(self.problems)} problem(s) in schema {source}:\n  " + "\n  ".join(lines)
        )


class WriteFailed(RuntimeError):
    """Rows a table did not accept; the message carries the server's errors."""


class AggregateWriteError(RuntimeError):
    """Some AddToCell entries were not applied. ``failed`` lists ``(row key, cause)``."""

    def __init__(self, message: str, failed: list[tuple[bytes | None, str]]) -> None:
        super().__init__(message)
        self.failed = failed
