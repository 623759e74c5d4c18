"""The jobs' flags: the option classes every job shares, their parsing (one clear line for a
typo, a bad value or a missing input, never Beam's usage or a traceback), and their checks."""

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
from pipelines.common.report import BadRecordLimit, parse_bad_records
from transforms import schema as schema_lib
from transforms.ingest.readers import INPUT_FORMATS
from transforms.schema import builtin_tables
from transforms.text import timefmt

__all__ = [
    "BigtableOptions",
    "FileInputOptions",
    "FlagValueError",
    "StreamingInputOptions",
    "TimeOptions",
    "bad_record_limit",
    "check_inputs_exist",
    "input_patterns",
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


AUTO_ON_OFF = ("auto", "on", "off")


def _auto_on_off(group, flag: str, help: str) -> None:  # group: an argparse argument group
    """A setting that is on, off, or decided by the job ('auto', the default)."""
    group.add_argument(flag, type=str, choices=AUTO_ON_OFF, default="auto", help=help)


@dataclasses.dataclass(frozen=True)
class WriteSettings:
    """The write path's auto/on/off flags, resolved once for the whole job."""

    flow_control: bool  # --flow_control: auto = on for Dataflow
    collapse_latest: bool  # --collapse_latest: auto = on for Pub/Sub input


def write_settings(options: PipelineOptions) -> WriteSettings:
    """Where ``--flow_control`` and ``--collapse_latest`` are decided: 'auto' by the runner and
    by the input, 'on'/'off' as given."""
    flags = options.view_as(BigtableOptions)
    runner = str(options.view_as(StandardOptions).runner or "")
    streaming = bool(options.view_as(StreamingInputOptions).input_subscription)

    def decide(value: str, auto: bool) -> bool:
        return auto if value == "auto" else value == "on"

    return WriteSettings(
        flow_control=decide(flags.flow_control, "dataflow" in runner.lower()),
        collapse_latest=decide(flags.collapse_latest, streaming),
    )


class BigtableOptions(PipelineOptions):
    """Where rows go. Shared by every job (Beam registers each flag once across all jobs)."""

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("Bigtable")
        group.add_argument(
            "--bigtable_project",
            help="Project of the Bigtable instance. Default: --project, or 'test-project' on the "
            "emulator (when BIGTABLE_EMULATOR_HOST is set).",
        )
        group.add_argument(
            "--bigtable_instance",
            help="Bigtable instance ID. Default on the emulator: 'test-instance'.",
        )
        group.add_argument(
            "--create_tables",
            action="store_true",
            help="Create missing tables and column families (from the declarations) before "
            "writing. Without it, a missing table stops the job before any data is read.",
        )
        group.add_argument(
            "--write_timeout_seconds",
            type=float,
            default=300.0,
            help="Give up a write (retries of transient errors included) after this many "
            "seconds, failing the job with the server's error instead of hanging. Default: 300.",
        )
        _auto_on_off(
            group,
            "--flow_control",
            "Bigtable batch write flow control: the writes follow the rate the cluster "
            "asks for (RateLimitInfo), back off on RESOURCE_EXHAUSTED and keep at most 16 "
            "requests (64 MiB) in flight per worker and table. 'auto' (default): on for "
            "Dataflow, off elsewhere (the emulator never asks to slow down).",
        )
        _auto_on_off(
            group,
            "--collapse_latest",
            "For column families that keep one version (max_versions: 1), write per row "
            "key and column only the cell Bigtable keeps of what a bundle holds (the newest; "
            "the later write of equal timestamps): readers of the newest cell see the same, "
            "the cluster gets far fewer writes of busy keys. 'auto' (default): on for Pub/Sub "
            "input, off for files (there it costs the job CPU per row and the writes end).",
        )
        group.add_argument(
            "--skip_preflight",
            action="store_true",
            help="Do not check that the tables exist before running (the launcher then needs no "
            "Bigtable admin permission).",
        )


def _dead_letter_flags(group) -> None:  # group: an argparse argument group
    """Where bad records go, and how many of them a run may have before it fails."""
    group.add_argument(
        "--dead_letter",
        help="Path prefix of the dead-letter files (JSON lines: pipeline, source file, reason, "
        "raw line). Default: dead-letters/<job> in the working directory.",
    )
    group.add_argument(
        "--max_dead_letter_ratio",
        type=float,
        help="Fail the job (non-zero exit) when dead letters are more than this share of the "
        "records read, e.g. 0.01; what was valid is written first. Default: fail only when "
        "no record at all was valid.",
    )
    group.add_argument(
        "--max_bad_records",
        default="10%",
        help="Fail the job (non-zero exit) when more records than this are dead letters: a "
        "count (e.g. 0: any bad record fails the job) or a share of the records read "
        "(e.g. 1%%); what was valid is written first. Default: 10%%.",
    )


class FileInputOptions(PipelineOptions):
    """Batch input from files and where bad lines go."""

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("Input and dead letters")
        group.add_argument(
            "--input",
            action="append",
            help="Input file(s): a local path, gs:// path or glob. Repeat the flag or "
            "separate patterns with commas for several.",
        )
        group.add_argument(
            "--input_format",
            default="auto",
            choices=INPUT_FORMATS,
            help="jsonl (or json): one JSON object per line; json_array: one top-level JSON "
            "array of objects; csv: a header line, then one record per line (quoted fields may "
            "span lines); parquet; avro. gzip and bzip2 are read as what they hold. auto "
            "(default): each file's name (.csv, .parquet, .avro, .jsonl) and content ('[' "
            "first: an array) decide.",
        )
        group.add_argument(
            "--time_format",
            action="append",
            metavar="FIELD=FORMAT",
            help="How a time field of the input is written, when not as the schema says: a named "
            "format (auto, rfc3339, epoch_s, epoch_ms, epoch_us, date, yyyymmddhhmmssmmm) or a "
            "strptime pattern, e.g. --time_format 'timestamp=%%d/%%m/%%Y %%H:%%M'. Repeatable.",
        )
        group.add_argument(
            "--input_timezone",
            help="IANA zone of input times written without a UTC offset (default: such times "
            "are dead letters, never guessed).",
        )
        group.add_argument(
            "--ambiguous_times",
            choices=("error", "earliest", "latest"),
            help="With --input_timezone, a local time the autumn clock change repeats: a dead "
            "letter (error, the default) or its earliest or latest instant.",
        )
        _dead_letter_flags(group)
        group.add_argument(
            "--validate_only",
            action="store_true",
            help="Read and validate the input and print the summary (counts, top dead-letter "
            "reasons); write nothing: no Bigtable, no dead-letter files. Needs no Bigtable.",
        )


class StreamingInputOptions(PipelineOptions):
    """Continuous ingest from Pub/Sub, and the hourly rollup."""

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("Streaming and rollup")
        group.add_argument(
            "--input_subscription",
            help="Read events from this Pub/Sub subscription (projects/P/subscriptions/S) "
            "instead of files; implies --streaming. A message holds one JSON event, or several, "
            "one per line (batching events into messages raises the rate a stream can take).",
        )
        group.add_argument(
            "--dead_letter_topic",
            help="Publish dead letters (JSON) to this Pub/Sub topic (projects/P/topics/T). "
            "Otherwise they go to files under --dead_letter (when streaming: one file per "
            "bundle that has any).",
        )
        group.add_argument(
            "--hourly_rollup",
            action="store_true",
            help="Also write hourly sums and counts per entity into the job's rollup table "
            "(how: --rollup_mode).",
        )
        group.add_argument(
            "--rollup_mode",
            default="exact",
            choices=("exact", "add"),
            help="exact (default): keep each hour's totals in pipeline state and write them with "
            "SetCell into the exact_sum/exact_count families, so retried bundles and re-runs "
            "rewrite the same values. add: AddToCell deltas into the sum/count aggregate "
            "families (the guidance's pattern; a retried bundle or a re-run adds again).",
        )
        group.add_argument(
            "--allowed_lateness_minutes",
            type=int,
            default=120,
            help="How late (event time behind the watermark) a point may arrive and still be "
            "added to its hour; later points go to the dead letters. Default: 120.",
        )


class TimeOptions(PipelineOptions):
    """How event times become calendar labels (day rows, HHMM columns, nightly tables)."""

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("Time")
        group.add_argument(
            "--timezone",
            default="UTC",
            help="IANA time zone of day boundaries and time-of-day labels (e.g. "
            "Europe/Paris). Cell timestamps stay absolute epoch times. Default: UTC.",
        )


def timezone(options: PipelineOptions) -> dt.tzinfo:
    """The configured zone; an unknown name is a configuration error."""
    name = options.view_as(TimeOptions).timezone or "UTC"
    found = timefmt.zone(name)
    if found is None:
        raise errors.ConfigError(f"unknown time zone {name!r} (use an IANA name)")
    return found


def input_help(name: str, argv: Sequence[str]) -> str:
    """The input section of a job's ``--help``: the fields and an example line, from the
    built-in schema of ``name``, or from the ``--schema`` file given with ``--help``."""
    if name in builtin_tables.builtin_datasets():
        return schema_lib.describe_input(schema_lib.builtin(name))
    path = next((a.split("=", 1)[1] for a in argv if a.startswith("--schema=")), None)
    if path is None and "--schema" in argv[:-1]:
        path = argv[list(argv).index("--schema") + 1]
    if path:
        try:
            return schema_lib.describe_input(schema_lib.load(path))
        except (OSError, schema_lib.SchemaError) as err:
            return f"Input: the fields of the --schema file ({err})"
    return "Input: the fields the --schema file declares (--help --schema FILE lists them)."


def option_classes_help(
    prog: str, description: str, classes: Sequence[type[PipelineOptions]], input_text: str = ""
) -> argparse.ArgumentParser:
    """A parser holding only this job's flags, for a ``--help`` a person can read (Beam's own
    parser would list every runner flag of every SDK component)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=f"{description.rstrip()}\n\n{input_text}" if input_text else description,
        epilog="Any Beam pipeline option is also accepted (e.g. --runner, --project, --region, "
        "--temp_location, --direct_num_workers).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for cls in classes:
        cls._add_argparse_args(parser)
    return parser


class FlagValueError(errors.ConfigError):
    """A flag's value is not one it takes (argparse's kind of error: the job prints it as one
    line on stderr and exits 2, as argparse would, without Beam's usage text)."""


class _FlagParser(argparse.ArgumentParser):
    """An argparse parser whose mistakes are a :class:`FlagValueError` (one line for the job
    to print), not a usage text and an exit."""

    def error(self, message: str):
        raise FlagValueError(_flag_error(message))


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
    """Pipeline options from ``argv``; ``--help`` prints this job's flags and input. An unknown
    flag (a typo Beam would only warn about and ignore) or a bad value is a ConfigError of one
    line naming the flag (Beam would print its whole usage first)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "-h" in argv or "--help" in argv:
        text = input_help(name, argv) if name else ""
        option_classes_help(prog, description, classes, text).print_help()
        raise SystemExit(0)
    known = _parser(PipelineOptions.__subclasses__())
    _, unknown = known.parse_known_args(argv)
    flags = [a for a in unknown if a.startswith("--")]
    if flags:
        hint = did_you_mean(flags[0], _flag_names(_parser(classes)), _flag_names(known))
        plural = "s" if len(flags) > 1 else ""
        raise errors.ConfigError(
            f"unknown option{plural} {' '.join(flags)}{hint}; see {prog} --help"
        )
    return PipelineOptions(argv)


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
        raise errors.ConfigError(str(err)) from None


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
