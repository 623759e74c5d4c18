"""The project's errors, one tree, and how dead-letter reasons are grouped for a summary.

Who can act on an error decides its branch, and its branch how it ends: each is mapped to an
HTTP status in one function of ``btts serve``'s routes and to an exit status in one function
of the command line, nowhere else; below them code raises these types and never a status.

- :class:`UserError`: a mistake the user can fix (a flag, a schema file, a request): one line
  naming what to change, never a traceback.
- :class:`DataError`: one bad record; its message is the dead-letter reason and the job goes
  on (:class:`InvalidEvent`).
- :class:`SystemFailure`: not the user's doing (storage unavailable, a deadline passed, a write
  refused): worth a retry, or a report.
- :class:`RunFailed`: a job that ran and did not do its work, judged on its records as a whole
  after its summary (no valid event, too many dead letters, overwrites): neither one bad record
  nor the system's doing.

Classes that were a built-in exception before keep it as a second base, so ``except
ValueError`` around a parse still catches an :class:`InvalidEvent`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "AggregateWriteError",
    "BttsError",
    "DataError",
    "FailedEntry",
    "InvalidEvent",
    "RunFailed",
    "SchemaError",
    "SystemFailure",
    "Timeout",
    "Unavailable",
    "Undeclared",
    "UserError",
    "WriteFailed",
    "reason_kind",
]


class BttsError(Exception):
    """The base of every error this project raises on purpose; anything else is a bug."""

    cause: BaseException | None = None

    @classmethod
    def because(cls, cause: BaseException, hint: str = "", **kwargs):
        """This kind of error for one a lower layer raised, where the context, not that layer,
        knows whose mistake it is (a ValueError of the user's time, key value or file) or what
        to do about it (``hint``, said after the cause's message: "declare an index"): the
        error kept as a value (``cause``; its message is the line the user reads), not its text
        copied into another (``make lint`` refuses ``Kind(str(err))``). Raise it ``from`` the
        cause."""
        made = cls(f"{cause}; {hint}" if hint else str(cause), **kwargs)
        made.cause = cause
        return made


class UserError(BttsError):
    """A mistake the user can fix: a flag, a schema file, a request. Its message is the one
    line they read, so it names the value and what to do instead."""


class Undeclared(UserError, KeyError):
    """A name (a table, a family) the schema does not declare; the message lists the known
    ones. A KeyError too, so a lookup's callers keep their ``except KeyError``."""

    def __str__(self) -> str:  # the message, not KeyError's quoted repr of it
        return str(self.args[0]) if self.args else ""


class DataError(BttsError):
    """One bad record: its message is the record's dead-letter reason."""


class SystemFailure(BttsError):
    """Not the user's doing: storage unavailable, a deadline passed, a write refused."""


class Unavailable(SystemFailure):
    """The storage (Bigtable, its emulator, an index) cannot answer now."""


class Timeout(SystemFailure):
    """The work did not finish before its deadline (or the server cancelled it)."""


class InvalidEvent(DataError, ValueError):
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


class SchemaError(UserError, ValueError):
    """A schema file that cannot be used; ``problems`` holds ``(line, message)`` pairs."""

    def __init__(self, source: str, problems: Sequence[tuple[int, str]]) -> None:
        self.source = source
        self.problems = list(problems)
        lines = [f"{source}:{line}: {message}" for line, message in self.problems]
        super().__init__(
            f"{len(self.problems)} problem(s) in schema {source}:\n  " + "\n  ".join(lines)
        )


class FailedEntry(SystemFailure):
    """One failure of a write request, as a value (as the data client's
    ``FailedMutationEntryError`` carries its entry, index and cause): ``key`` and ``index`` (in
    the request as first sent) of the entry not written, None for a failure of the request as a
    whole; ``code`` the gRPC status code where the server gave one; ``cause`` the error, or the
    server's message, or (for a failure of no single cause) what happened."""

    def __init__(
        self,
        cause: BaseException | str,
        key: bytes | None = None,
        index: int | None = None,
        code: int | None = None,
    ) -> None:
        self.cause, self.key, self.index, self.code = cause, key, index, code
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.key is not None and self.code is not None:
            return f"row {self.key!r}: code {self.code}: {self.cause or 'no message'}"
        if isinstance(self.cause, BaseException):
            return f"{type(self.cause).__name__}: {self.cause}"
        return self.cause if self.key is None else f"row {self.key!r}: {self.cause}"


class WriteFailed(SystemFailure, RuntimeError):
    """Rows a table did not accept; the message carries the server's errors, ``failures``
    each of them as a :class:`FailedEntry`."""

    def __init__(self, message: str, failures: Sequence[FailedEntry] = ()) -> None:
        super().__init__(message)
        self.failures = list(failures)


class RunFailed(BttsError):
    """A run that finished without doing its work (nothing valid, too many dead letters,
    records overwriting one another): neither one bad record (a :class:`DataError`) nor the
    system's doing (a :class:`SystemFailure`), but the records as a whole, judged after the
    run; the command line ends with status 1 and the reason."""


class AggregateWriteError(SystemFailure, RuntimeError):
    """Some AddToCell entries were not applied. ``failed`` lists ``(row key, cause)``."""

    def __init__(self, message: str, failed: list[tuple[bytes | None, str]]) -> None:
        super().__init__(message)
        self.failed = failed
