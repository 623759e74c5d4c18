"""argparse as ``btts`` uses it: one-line errors that say what to do, btts's own ``-q``/``-v``
wherever they stand, and commands whose arguments go on to a job untouched.

Every parser of the ``btts`` tree is a :class:`Parser` (argparse makes subparsers of the class
of their parent), so a command group added with ``register(subparsers)`` gets all of it.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NoReturn, Protocol

__all__ = ["Commands", "Parser"]

# btts's own logging flags, by their spellings: no job takes them (Beam would drop them
# silently), so they are btts's wherever they stand, after a job's flags too.
LOGGING_FLAGS = {"-q": "quiet", "--quiet": "quiet", "-v": "verbose", "--verbose": "verbose"}

# A command that hands its arguments on (to a job, or to a form of its own): the arguments →
# the command's values (``func`` and what it reads), or None to parse them as declared.
RestReader = Callable[["Parser", list[str]], "dict | None"]


class Commands(Protocol):
    """What ``add_subparsers`` returns, as a command group's ``register(subparsers)`` uses it."""

    choices: dict[str, Any]

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


_CHOICE = re.compile(r"invalid choice: '?([^' ]*)'? \(choose from (.*)\)$")


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate ``word`` was most likely meant to be (difflib), or None."""
    found = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (no usage block): the command, what is
    wrong, and a "did you mean" for a misspelt flag, command or choice.

    ``rest``: set it on a command whose arguments are not its own (``btts ingest JOB …``) to
    read them itself; a leading ``-h``/``--help`` that it declines shows the command's help.
    """

    def __init__(self, *args, top: bool = False, **kwargs) -> None:
        self.flag_names: list[str] = []  # its --flags, for "did you mean"
        self.given: list[str] = []  # the arguments it was last asked to parse
        self.rest: RestReader | None = None
        super().__init__(*args, **kwargs)
        if not top:  # the top parser declares them itself, with help
            for short, long in (("-q", "--quiet"), ("-v", "--verbose")):
                self.add_argument(
                    short, long, action="store_true", default=argparse.SUPPRESS,
                    help=argparse.SUPPRESS,
                )  # fmt: skip

    def add_argument(self, *args, **kwargs) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        if kwargs.get("help") is not argparse.SUPPRESS:
            self.flag_names += [s for s in action.option_strings if s.startswith("--")]
        return action

    def parse_known_args(
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Like argparse's, except that an argument nobody knows is an error here, where the
        command's flags are known (so it can say which one was meant)."""
        args = list(sys.argv[1:] if args is None else args)
        self.given = args  # what error() looks at for a misspelt flag
        namespace = argparse.Namespace() if namespace is None else namespace
        if self.rest is not None:
            values = self.rest(self, [a for a in args if a not in LOGGING_FLAGS])
            if values is not None:
                for flag in args:
                    if flag in LOGGING_FLAGS:
                        setattr(namespace, LOGGING_FLAGS[flag], True)
                for name, value in values.items():
                    setattr(namespace, name, value)
                return namespace, []
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(self.unrecognized(extras))
        return namespace, extras

    def unrecognized(self, extras: list[str]) -> str:
        """What argparse says of unknown arguments, with the flag the first one likely meant."""
        message = f"unrecognized arguments: {' '.join(extras)}"
        flags = [a.split("=", 1)[0][2:] for a in extras if a.startswith("--")]
        meant = closest(flags[0], [f[2:] for f in self.flag_names]) if flags else None
        return f"{message}; did you mean --{meant}?" if meant else message

    def error(self, message: str) -> NoReturn:
        """One line on stderr, exit status 2 (argparse's)."""
        if message.startswith("the following arguments are required"):
            # `--strat` leaves `--start` missing: the misspelling is the error to show
            own = set(self.flag_names) | set(LOGGING_FLAGS)
            unknown = [a for a in getattr(self, "given", ()) if a.startswith("--")]
            unknown = [a for a in unknown if a.split("=", 1)[0] not in own]
            if unknown:
                message = self.unrecognized(unknown)
        choice = _CHOICE.search(message)
        if choice:
            names = [c.strip().strip("'") for c in choice.group(2).split(",")]
            meant = closest(choice.group(1), names)
            if meant:
                message += f"; did you mean {meant}?"
        if "did you mean" not in message:
            message += f" (see `{self.prog} --help`)"
        self.exit(2, f"{self.prog}: error: {message}\n")
