"""The jobs' flags: their option classes (one per flag group of :mod:`pipelines.flags`, made from
the group's declarations) and their parsing (one clear line for a typo or a bad value, never
Beam's usage or a traceback). What a run makes of them is :mod:`.config`'s."""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import sys
from collections.abc import Sequence

from apache_beam.options.pipeline_options import (
    PipelineOptions,
)

from btts import errors
from pipelines import flags
from transforms.text import timefmt

__all__ = [
    "BigtableOptions",
    "FileInputOptions",
    "StreamingInputOptions",
    "option_classes",
    "options_class",
    "parse_args",
    "timezone",
]


def _made(group: flags.Group) -> type[PipelineOptions]:
    """The PipelineOptions class of a flag group: Beam's parser takes the group's flags from its
    ``_add_argparse_args`` and ``options.view_as(cls)`` reads their values; named after the
    group (``file_input`` → ``FileInputOptions``)."""

    def add_flags(cls, parser: argparse.ArgumentParser) -> None:
        flags.add_group(parser, group)

    name = "".join(word.capitalize() for word in group.name.split("_")) + "Options"
    return type(
        name,
        (PipelineOptions,),
        {
            "__module__": __name__,
            "__qualname__": name,
            "__doc__": f"The flags of {group.title!r}, as pipelines.flags declares them.",
            "GROUP": group,
            "_add_argparse_args": classmethod(add_flags),
        },
    )


# One class per declared group, every one made here, once, from the declarations: which classes
# exist does not depend on which job modules were imported (Beam parses every class there is,
# and a second class of one group would declare its flags twice).
def _declared_classes() -> dict[str, type[PipelineOptions]]:
    made: dict[str, type[PipelineOptions]] = {}
    for group in (g for groups in flags.GROUPS.values() for g in groups):
        if group.name not in made:
            made[group.name] = _made(group)
        elif made[group.name].GROUP is not group:
            raise ValueError(f"two flag groups are named {group.name!r}")
    return made


_CLASSES = _declared_classes()


def options_class(group: flags.Group) -> type[PipelineOptions]:
    """The PipelineOptions class of a declared flag group (made once, above); a group that is
    not the one declared under its name is a ValueError."""
    made = _CLASSES.get(group.name)
    if made is None:
        raise ValueError(f"no flag group {group.name!r} is declared in pipelines.flags.GROUPS")
    if made.GROUP is not group:
        raise ValueError(f"two flag groups are named {group.name!r}")
    return made


# The groups every job shares, by the names the jobs read them with.
BigtableOptions = options_class(flags.BIGTABLE)
FileInputOptions = options_class(flags.FILE_INPUT)
StreamingInputOptions = options_class(flags.STREAMING)
TimeOptions = options_class(flags.TIME_ZONE)


def option_classes(job: str) -> tuple[type[PipelineOptions], ...]:
    """The option classes of ``job``: one per group of :data:`pipelines.flags.GROUPS`, in
    ``--help`` order."""
    return tuple(options_class(group) for group in flags.GROUPS[job])


def timezone(options: PipelineOptions) -> dt.tzinfo:
    """The configured zone; an unknown name is a configuration error."""
    name = options.view_as(TimeOptions).timezone or "UTC"
    found = timefmt.zone(name)
    if found is None:
        raise errors.ConfigError(f"unknown time zone {name!r} (use an IANA name)")
    return found


def option_classes_help(
    prog: str, description: str, classes: Sequence[type[PipelineOptions]], input_text: str = ""
) -> argparse.ArgumentParser:
    """A parser holding only these classes' flags (added by Beam's hook, as a run adds them),
    for a ``--help`` a person can read: the parser of :func:`pipelines.flags.help_parser`, which
    ``btts JOB --help`` prints without importing Beam."""
    parser = flags.help_parser(prog, description, (), input_text)
    for cls in classes:
        cls._add_argparse_args(parser)
    return parser


class _FlagParser(argparse.ArgumentParser):
    """An argparse parser whose mistakes are a :class:`~btts.errors.FlagValueError` (one line
    for the job to print), not a usage text and an exit."""

    def error(self, message: str):
        """Raises FlagValueError (a UserError, said with argparse's status)."""
        raise errors.FlagValueError(_flag_error(message))


def _flag_error(message: str) -> str:
    """argparse's complaint about a value, said as the flag and what it takes."""
    text = message.removeprefix("argument ")
    flag, sep, rest = text.partition(": ")
    flag = flag.split("/")[0]
    if not sep:
        return text
    for kind, wanted in (("float", "a number, e.g. 0.01"), ("int", "a whole number")):
        start = f"invalid {kind} value: "
        if rest.startswith(start):
            return f"{flag}: {rest.removeprefix(start)} is not {wanted}"
    return f"{flag}: {rest}"


def _parser(classes: Sequence[type[PipelineOptions]]) -> _FlagParser:
    parser = _FlagParser(add_help=False, allow_abbrev=False)
    for cls in classes:
        try:
            cls._add_argparse_args(parser)
        except argparse.ArgumentError:
            continue  # some SDK components define overlapping flags; theirs, not ours
    return parser


def _flag_names(parser: argparse.ArgumentParser) -> list[str]:
    """The flags of ``parser``, as ``--name`` (from its defaults: argparse lists no flags)."""
    return [f"--{dest}" for dest in vars(parser.parse_known_args([])[0])]


def did_you_mean(flag: str, own: Sequence[str], others: Sequence[str]) -> str:
    """`` (did you mean --x?)`` for the closest flag to ``flag``, the job's own first."""
    name = flag.split("=", 1)[0]
    for names in (own, others):
        close = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
        if close:
            return f" (did you mean {close[0]}?)"
    return ""


def parse_args(
    argv: Sequence[str] | None,
    prog: str,
    description: str,
    classes: Sequence[type[PipelineOptions]],
    name: str = "",
) -> PipelineOptions:
    """Pipeline options from ``argv`` for a run (:func:`_run_options`); or, with ``--help``,
    this job's flags and input printed, and the command ended as argparse's own ``--help``
    ends it. An unknown flag (a typo Beam would only warn about and ignore) or a bad value is a
    ConfigError of one line naming the flag (Beam would print its whole usage first).
    ``--input_subscription`` implies Beam's ``--streaming``: the options come out as the run
    uses them."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not flags.wants_help(argv):
        return _run_options(argv, prog, classes)
    text = flags.input_help(name, argv) if name else ""
    shown = option_classes_help(prog, description, classes, text)
    shown.print_help()
    shown.exit()


def _run_options(
    argv: list[str], prog: str, classes: Sequence[type[PipelineOptions]]
) -> PipelineOptions:
    """The options of a run: its runner loaded first (its flags are then known), then every
    flag parsed strictly: Beam's and the runner's, and of ours the job's own (``classes``), as
    declared, whichever other jobs were imported."""
    load_runner(argv)  # its options class declares its flags (Beam's Dask runner: --dask_…)
    known = _parser([*_beam_option_classes(), *classes])
    given, unknown = known.parse_known_args(argv)
    strays = [a for a in unknown if a.startswith("--")]
    if strays:
        hint = did_you_mean(strays[0], _flag_names(_parser(classes)), _flag_names(known))
        plural = "s" if len(strays) > 1 else ""
        raise errors.ConfigError(
            f"unknown option{plural} {' '.join(strays)}{hint}; see {prog} --help"
        )
    if getattr(given, "input_subscription", None) and not getattr(given, "streaming", False):
        argv.append("--streaming")  # Pub/Sub input is a streaming pipeline, whatever runs it
    return PipelineOptions(argv)


def _beam_option_classes() -> list[type[PipelineOptions]]:
    """The options classes of Beam and of the runners loaded (subclasses of subclasses
    included): those Beam itself parses. Ours are not among them: a job parses its own groups,
    not whichever other jobs' happen to be imported."""
    found, todo = [], list(PipelineOptions.__subclasses__())
    while todo:
        cls = todo.pop(0)
        if cls not in found:
            found.append(cls)
            todo.extend(cls.__subclasses__())
    return [cls for cls in found if cls.__module__ != __name__]


def runner_name(argv: Sequence[str]) -> str | None:
    """``--runner``'s value in ``argv`` (the last one given, as argparse reads it), or None."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--runner")
    return parser.parse_known_args(list(argv))[0].runner


def load_runner(argv: Sequence[str]) -> None:
    """Import the module of ``--runner`` (a name Beam maps, or ``package.module.Class``) as
    Beam would when the pipeline is made, so that its options class declares its flags before
    they are parsed: a runner's own flags are then known (not refused as typos), and a runner
    that cannot be loaded is one line now, not a traceback later."""
    name = runner_name(argv)
    if not name:
        return
    from apache_beam.runners import runner as beam_runner

    try:
        beam_runner.create_runner(name)
    except ImportError as err:
        raise errors.ConfigError(
            f"--runner {name}: cannot load it ({err}); install what it needs (for Beam's own "
            "runners, the apache-beam extra of that name, e.g. apache-beam[dask])"
        ) from None
    except (ValueError, AttributeError) as err:
        raise errors.ConfigError(f"--runner {name}: {str(err).splitlines()[0]}") from None
