"""A flag said once: a frozen declaration (name, help, type, default, choices…) that every reader
of the jobs' flags takes as it is. Beam's option classes add it to their parser, a job's
``--help`` adds it to a plain argparse parser (no Beam imported), and the flex templates'
metadata is written from it, so the three cannot say different things about one flag."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Flag", "Group", "add_group"]


@dataclasses.dataclass(frozen=True)
class Flag:
    """One flag, in the words of ``argparse.add_argument`` (a field left None is not passed).

    ``help`` is the text a person reads (a ``%`` is a percent sign, escaped only for argparse);
    a function when the text needs what is costly to load (a built-in schema), called when a
    help or a template is made, never at import."""

    name: str  # "--input"
    help: str | Callable[[], str] = ""
    type: Callable[[str], Any] | None = None
    default: Any = None
    choices: Sequence[str] | None = None
    action: str | None = None
    metavar: str | None = None
    nargs: str | None = None
    const: Any = None
    dest: str | None = None

    @property
    def key(self) -> str:
        """The name without its dashes (``input``): a template parameter's name."""
        return self.name.removeprefix("--")

    def help_text(self) -> str:
        return self.help() if callable(self.help) else self.help

    def argparse_kwargs(self) -> dict[str, Any]:
        """What ``add_argument`` takes for this flag, besides its name."""
        given = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in ("name", "help") and getattr(self, f.name) is not None
        }
        return {**given, "help": self.help_text().replace("%", "%%")}


@dataclasses.dataclass(frozen=True)
class Group:
    """A titled section of flags: one argument group of a parser, one option class of a job.
    ``name`` (snake_case) is unique across jobs and names the group's option class
    (``file_input`` → ``FileInputOptions``)."""

    name: str
    title: str
    flags: tuple[Flag, ...]

    @classmethod
    def of(cls, name: str, title: str, *flags: Flag) -> Group:
        return cls(name, title, tuple(flags))


def add_group(parser: argparse.ArgumentParser, group: Group) -> None:
    """Add ``group``'s flags to ``parser`` as one argument group: what a job's option class
    (Beam's ``_add_argparse_args``) and its plain ``--help`` parser both call."""
    section = parser.add_argument_group(group.title)
    for flag in group.flags:
        section.add_argument(flag.name, **flag.argparse_kwargs())
