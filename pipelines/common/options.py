"""The jobs' flags: their option classes (one per flag group of :mod:`pipelines.flags`, made from
the group's declarations), their parsing (one clear line for a typo, a bad value or a missing
input, never Beam's usage or a traceback), and their checks."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import difflib
import glob
import sys
from collections.abc import Sequence
from typing import Protocol

from apache_beam.options.pipeline_options import (
    GoogleCloudOptions,
    PipelineOptions,
    StandardOptions,
)

from btts import config, errors
from pipelines import flags
from pipelines.common.report import BadRecordLimit, parse_bad_records
from transforms.text import timefmt

__all__ = [
    "BigtableOptions",
    "FileInputOptions",
    "StreamingInputOptions",
    "bad_record_limit",
    "check_inputs_exist",
    "input_patterns",
    "option_classes",
    "options_class",
    "parse_args",
    "resolve_target",
    "timezone",
    "validate_input",
    "write_settings",
]


class RollupSpec(Protocol):
    """What input validation asks of a job: its name, and whether it declares an hourly rollup."""

    name: str
    rollup: object | None


@dataclasses.dataclass(frozen=True)
class WriteSettings:
    """The write path's auto/on/off flags, resolved once for the whole job."""

    flow_control: bool  # --flow_control: auto = on for Dataflow
    collapse_latest: bool  # --collapse_latest: auto = on for Pub/Sub input


def write_settings(options: PipelineOptions) -> WriteSettings:
    """Where ``--flow_control`` and ``--collapse_latest`` are decided: 'auto' by the runner and
    by the input, 'on'/'off' as given."""
    given = options.view_as(BigtableOptions)
    runner = str(options.view_as(StandardOptions).runner or "")
    streaming = bool(options.view_as(StreamingInputOptions).input_subscription)

    def decide(value: str, auto: bool) -> bool:
        return auto if value == "auto" else value == "on"

    return WriteSettings(
        flow_control=decide(given.flow_control, "dataflow" in runner.lower()),
        collapse_latest=decide(given.collapse_latest, streaming),
    )


_CLASSES: dict[str, type[PipelineOptions]] = {}


def options_class(group: flags.Group) -> type[PipelineOptions]:
    """The PipelineOptions class of a flag group: Beam's parser takes the group's flags from its
    ``_add_argparse_args`` and ``options.view_as(cls)`` reads their values. One class per group,
    made when first asked for (Beam parses the flags of every class made so far: a job's own
    flags join when its module asks for its classes, as a class statement there would), named
    after the group (``file_input`` → ``FileInputOptions``)."""
    made = _CLASSES.get(group.name)
    if made is not None:
        if made.GROUP is not group:
            raise ValueError(f"two flag groups are named {group.name!r}")
        return made

    def add_flags(cls, parser: argparse.ArgumentParser) -> None:
        flags.add_group(parser, group)

    name = "".join(word.capitalize() for word in group.name.split("_")) + "Options"
    made = type(
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
    _CLASSES[group.name] = made
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
    """Pipeline options from ``argv``; ``--help`` prints this job's flags and input, then ends
    the command as argparse's own ``--help`` does. An unknown flag (a typo Beam would only warn
    about and ignore) or a bad value is a ConfigError of one line naming the flag (Beam would
    print its whole usage first)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if flags.wants_help(argv):
        text = flags.input_help(name, argv) if name else ""
        shown = option_classes_help(prog, description, classes, text)
        shown.print_help()
        shown.exit()
    load_runner(argv)  # its options class declares its flags (Beam's Dask runner: --dask_…)
    known = _parser(_option_classes())
    _, unknown = known.parse_known_args(argv)
    strays = [a for a in unknown if a.startswith("--")]
    if strays:
        hint = did_you_mean(strays[0], _flag_names(_parser(classes)), _flag_names(known))
        plural = "s" if len(strays) > 1 else ""
        raise errors.ConfigError(
            f"unknown option{plural} {' '.join(strays)}{hint}; see {prog} --help"
        )
    return PipelineOptions(argv)


def _option_classes() -> list[type[PipelineOptions]]:
    """Every options class loaded so far, subclasses of subclasses included."""
    found, todo = [], list(PipelineOptions.__subclasses__())
    while todo:
        cls = todo.pop(0)
        if cls not in found:
            found.append(cls)
            todo.extend(cls.__subclasses__())
    return found


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


def resolve_target(options: PipelineOptions) -> config.Target:
    bt = options.view_as(BigtableOptions)
    project = bt.bigtable_project or options.view_as(GoogleCloudOptions).project
    return config.resolve_target(project, bt.bigtable_instance)


def input_patterns(options: PipelineOptions) -> list[str]:
    raw = options.view_as(FileInputOptions).input or []
    patterns = [p.strip() for item in raw for p in item.split(",") if p.strip()]
    if not patterns:
        raise errors.ConfigError(
            "no input: pass --input with a file, gs:// path or glob (or --input_subscription)"
        )
    return patterns


def check_inputs_exist(patterns: Sequence[str]) -> None:
    """Every local input pattern matches a file: a typo or an empty glob is one line naming the
    pattern now, not a Beam traceback after the pipeline started. Remote patterns (gs://) are
    left to the read: checking them would need the cloud at launch (a dry run works offline)."""
    for pattern in patterns:
        if "://" in pattern:
            continue
        if not glob.glob(pattern, recursive=True):
            what = "no file matches" if any(c in pattern for c in "*?[") else "no such file"
            raise errors.ConfigError(f"--input {pattern}: {what}")


def bad_record_limit(options: PipelineOptions) -> BadRecordLimit:
    """``--max_bad_records`` as a limit; a bad value is a one-line ConfigError."""
    text = options.view_as(FileInputOptions).max_bad_records
    try:
        return parse_bad_records(text or "10%")
    except ValueError as err:
        raise errors.ConfigError(str(err)) from err


def validate_input(options: PipelineOptions, job: RollupSpec) -> None:
    """Exactly one source; streaming has somewhere to put dead letters; a rollup exists."""
    stream = options.view_as(StreamingInputOptions)
    files = options.view_as(FileInputOptions).input
    if stream.input_subscription:
        if files:
            raise errors.ConfigError("pass --input or --input_subscription, not both")
        if not stream.dead_letter_topic and not options.view_as(FileInputOptions).dead_letter:
            raise errors.ConfigError(
                "streaming needs --dead_letter_topic or --dead_letter (a path prefix for files): "
                "bad messages must go somewhere"
            )
        options.view_as(StandardOptions).streaming = True
    else:
        input_patterns(options)
    if stream.hourly_rollup and job.rollup is None:
        raise errors.ConfigError(f"{job.name} has no hourly rollup")
    ratio = options.view_as(FileInputOptions).max_dead_letter_ratio
    if ratio is not None and not 0 <= ratio <= 1:
        raise errors.ConfigError(f"--max_dead_letter_ratio {ratio}: give a share from 0 to 1")
    bad_record_limit(options)
    if options.view_as(FileInputOptions).validate_only and stream.input_subscription:
        raise errors.ConfigError("--validate_only reads files: pass --input, not a subscription")
    if options.view_as(BigtableOptions).write_timeout_seconds <= 0:
        raise errors.ConfigError("--write_timeout_seconds must be positive")
    if stream.allowed_lateness_minutes < 0:
        raise errors.ConfigError("--allowed_lateness_minutes cannot be negative")
