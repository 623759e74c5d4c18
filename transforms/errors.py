"""The one exception type that turns an input event into a dead letter, and how its reasons
are grouped for a summary."""

import re

__all__ = ["MAX_KIND_CHARS", "InvalidEvent", "reason_kind"]


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
