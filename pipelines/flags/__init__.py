"""Every job's flags and description, declared once and without Beam.

A flag is a :class:`~pipelines.flags.spec.Flag` (name, help, type, default, choices…) in a titled
:class:`~pipelines.flags.spec.Group`; each is declared once, here (the groups jobs share) or in
the job's module here (``pipelines.flags.<job>``: its own group and its ``DESCRIPTION``, the
job module's docstring). :data:`GROUPS` names each job's groups in ``--help`` order. Every reader
takes the declarations as they are: the jobs' PipelineOptions classes
(:func:`pipelines.common.options_class`, what a run parses), a job's ``--help`` (a plain argparse
parser, so ``btts ingest JOB --help`` and ``btts nightly --help`` answer without importing Beam)
and the flex templates' metadata (``btts_cli.templates``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pipelines.flags.spec import Flag, Group, add_group
from transforms.ingest.formats import INPUT_FORMATS

__all__ = [
    "BIGTABLE",
    "FILE_INPUT",
    "GROUPS",
    "STREAMING",
    "TIME_ZONE",
    "Flag",
    "Group",
    "add_group",
    "description",
    "help_parser",
    "input_help",
    "print_help",
    "wants_help",
]

AUTO_ON_OFF = ("auto", "on", "off")


# Where rows go. Shared by every job (Beam registers each flag once across all jobs).
BIGTABLE = Group.of(
    "bigtable",
    "Bigtable",
    Flag(
        "--bigtable_project",
        help="Project of the Bigtable instance. Default: --project, or 'test-project' on the "
        "emulator (when BIGTABLE_EMULATOR_HOST is set).",
    ),
    Flag(
        "--bigtable_instance",
        help="Bigtable instance ID. Default on the emulator: 'test-instance'.",
    ),
    Flag(
        "--create_tables",
        action="store_true",
        help="Create missing tables and column families (from the declarations) before "
        "writing. Without it, a missing table stops the job before any data is read.",
    ),
    Flag(
        "--write_timeout_seconds",
        type=float,
        default=300.0,
        help="Give up a write (retries of transient errors included) after this many "
        "seconds, failing the job with the server's error instead of hanging. Default: 300.",
    ),
    Flag(
        "--flow_control",
        type=str,
        choices=AUTO_ON_OFF,
        default="auto",
        help="Bigtable batch write flow control: the writes follow the rate the cluster "
        "asks for (RateLimitInfo), back off on RESOURCE_EXHAUSTED and keep at most 16 "
        "requests (64 MiB) in flight per worker and table. 'auto' (default): on for "
        "Dataflow, off elsewhere (the emulator never asks to slow down).",
    ),
    Flag(
        "--collapse_latest",
        type=str,
        choices=AUTO_ON_OFF,
        default="auto",
        help="For column families that keep one version (max_versions: 1), write per row "
        "key and column only the cell Bigtable keeps of what a bundle holds (the newest; "
        "the later write of equal timestamps): readers of the newest cell see the same, "
        "the cluster gets far fewer writes of busy keys. 'auto' (default): on for Pub/Sub "
        "input, off for files (there it costs the job CPU per row and the writes end).",
    ),
    Flag(
        "--skip_preflight",
        action="store_true",
        help="Do not check that the tables exist before running (the launcher then needs no "
        "Bigtable admin permission).",
    ),
)

# Where bad records go, and how many of them a run may have before it fails.
DEAD_LETTERS = (
    Flag(
        "--dead_letter",
        help="Path prefix of the dead-letter files (JSON lines: pipeline, source file, reason, "
        "raw line). Default: dead-letters/<job> in the working directory; where the workers "
        "run elsewhere (Dataflow, a cluster) it must be a gs:// URI, by default "
        "<temp_location>/dead-letters/<job>.",
    ),
    Flag(
        "--max_dead_letter_ratio",
        type=float,
        help="Fail the job (non-zero exit) when dead letters are more than this share of the "
        "records read, e.g. 0.01; what was valid is written first. Default: fail only when "
        "no record at all was valid.",
    ),
    Flag(
        "--max_bad_records",
        default="10%",
        help="Fail the job (non-zero exit) when more records than this are dead letters: a "
        "count (e.g. 0: any bad record fails the job) or a share of the records read "
        "(e.g. 1%); what was valid is written first. Default: 10%.",
    ),
)

# Records of one run that write one cell: found, and a failed run unless accepted.
OVERWRITES = (
    Flag(
        "--accept_overwrites",
        action="store_true",
        help="Let records of this run write the same cell (row key, column, timestamp) with "
        "different values: Bigtable keeps one of them, the last write to arrive (which one "
        "the job cannot know), and the run still exits 0, e.g. a file of corrections "
        "meant to replace earlier lines of the same input. Default: such a run fails "
        "(non-zero exit) after writing, naming the first two records and the cell; records "
        "that repeat another exactly are never a failure.",
    ),
    Flag(
        "--overwrite_check",
        choices=("on", "off"),
        default="on",
        help="Find records of this run that write the same cell with different values (and "
        "records that repeat another exactly). Batch: every row of the run, exactly, "
        "across workers (a few bytes per row; the rows involved are read again). Pub/Sub: "
        "each record against the last 100,000 rows its worker built in the last 10 minutes. "
        "off: no check, and no distinct-row counts in the summary. Default: on.",
    ),
)

# Batch input from files and where bad lines go.
FILE_INPUT = Group.of(
    "file_input",
    "Input and dead letters",
    Flag(
        "--input",
        action="append",
        help="Input file(s): a local path, gs:// path or glob (gs:// on Dataflow or any "
        "runner whose workers run elsewhere). Repeat the flag or separate patterns with "
        "commas for several.",
    ),
    Flag(
        "--input_format",
        default="auto",
        choices=INPUT_FORMATS,
        help="jsonl (or json): one JSON object per line; json_array: one top-level JSON "
        "array of objects; csv: a header line, then one record per line (quoted fields may "
        "span lines); parquet; avro. gzip and bzip2 are read as what they hold. auto "
        "(default): each file's name (.csv, .parquet, .avro, .jsonl) and content ('[' "
        "first: an array) decide.",
    ),
    Flag(
        "--time_format",
        action="append",
        metavar="FIELD=FORMAT",
        help="How a time field of the input is written, when not as the schema says: a named "
        "format (auto, rfc3339, epoch_s, epoch_ms, epoch_us, date, yyyymmddhhmmssmmm) or a "
        "strptime pattern, e.g. --time_format 'timestamp=%d/%m/%Y %H:%M'. Repeatable.",
    ),
    Flag(
        "--input_timezone",
        help="IANA zone of input times written without a UTC offset (default: such times "
        "are dead letters, never guessed).",
    ),
    Flag(
        "--ambiguous_times",
        choices=("error", "earliest", "latest"),
        help="With --input_timezone, a local time the autumn clock change repeats: a dead "
        "letter (error, the default) or its earliest or latest instant.",
    ),
    *DEAD_LETTERS,
    *OVERWRITES,
    Flag(
        "--validate_only",
        action="store_true",
        help="Read and validate the input and print the summary (counts, top dead-letter "
        "reasons); write nothing: no Bigtable, no dead-letter files. Needs no Bigtable.",
    ),
)

# Continuous ingest from Pub/Sub, and the hourly rollup.
STREAMING = Group.of(
    "streaming_input",
    "Streaming and rollup",
    Flag(
        "--input_subscription",
        help="Read events from this Pub/Sub subscription (projects/P/subscriptions/S) "
        "instead of files; implies --streaming. A message holds one JSON event, or several, "
        "one per line (batching events into messages raises the rate a stream can take).",
    ),
    Flag(
        "--dead_letter_topic",
        help="Publish dead letters (JSON) to this Pub/Sub topic (projects/P/topics/T). "
        "Otherwise they go to files under --dead_letter (when streaming: one file per "
        "bundle that has any).",
    ),
    Flag(
        "--hourly_rollup",
        action="store_true",
        help="Also write hourly sums and counts per entity into the job's rollup table "
        "(how: --rollup_mode).",
    ),
    Flag(
        "--rollup_mode",
        default="exact",
        choices=("exact", "add"),
        help="exact (default): keep each hour's totals in pipeline state and write them with "
        "SetCell into the exact_sum/exact_count families, so retried bundles and re-runs "
        "rewrite the same values. add: AddToCell deltas into the sum/count aggregate "
        "families (the guidance's pattern; a retried bundle or a re-run adds again).",
    ),
    Flag(
        "--allowed_lateness_minutes",
        type=int,
        default=120,
        help="How late (event time behind the watermark) a point may arrive and still be "
        "added to its hour; later points go to the dead letters. Default: 120.",
    ),
)

# How event times become calendar labels (day rows, HHMM columns, nightly tables).
TIME_ZONE = Group.of(
    "time",
    "Time",
    Flag(
        "--timezone",
        default="UTC",
        help="IANA time zone of day boundaries and time-of-day labels (e.g. "
        "Europe/Paris). Cell timestamps stay absolute epoch times. Default: UTC.",
    ),
)


# Imported here, after the shared groups: each job's description and own group, by job.
from pipelines.flags import (  # noqa: E402
    battery,
    game_results,
    garden,
    generic,
    market_data,
    nightly,
    sales,
    server_metrics,
    smart_meters,
    weather_balloons,
)

# Every job's flag groups, in --help order (a job's run parses the option classes
# pipelines.common.option_classes makes of the same groups).
GROUPS: dict[str, tuple[Group, ...]] = {
    "battery": (FILE_INPUT, BIGTABLE, battery.GROUP),
    "game_results": (FILE_INPUT, BIGTABLE),
    "garden": (FILE_INPUT, BIGTABLE, garden.GROUP),
    "generic": (generic.GROUP, FILE_INPUT, STREAMING, BIGTABLE, TIME_ZONE),
    "market_data": (FILE_INPUT, STREAMING, BIGTABLE),
    "sales": (FILE_INPUT, BIGTABLE, TIME_ZONE, sales.GROUP),
    "server_metrics": (FILE_INPUT, STREAMING, BIGTABLE),
    "smart_meters": (FILE_INPUT, STREAMING, BIGTABLE, TIME_ZONE),
    "weather_balloons": (FILE_INPUT, BIGTABLE, weather_balloons.GROUP),
    "nightly": (nightly.GROUP, BIGTABLE, TIME_ZONE),
}
# Every job's description: its module's docstring and the top of its --help.
_DESCRIPTIONS = {
    "battery": battery.DESCRIPTION,
    "game_results": game_results.DESCRIPTION,
    "garden": garden.DESCRIPTION,
    "generic": generic.DESCRIPTION,
    "market_data": market_data.DESCRIPTION,
    "sales": sales.DESCRIPTION,
    "server_metrics": server_metrics.DESCRIPTION,
    "smart_meters": smart_meters.DESCRIPTION,
    "weather_balloons": weather_balloons.DESCRIPTION,
    "nightly": nightly.DESCRIPTION,
}

BEAM_OPTIONS = (
    "Any Beam pipeline option is also accepted (e.g. --runner, --project, --region, "
    "--temp_location, --direct_num_workers)."
)


def help_parser(
    prog: str, description: str, groups: Sequence[Group], input_text: str = ""
) -> argparse.ArgumentParser:
    """A parser holding only this job's flags, for a ``--help`` a person can read (Beam's own
    parser would list every runner flag of every SDK component)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=f"{description.rstrip()}\n\n{input_text}" if input_text else description,
        epilog=BEAM_OPTIONS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for group in groups:
        add_group(parser, group)
    return parser


def input_help(name: str, argv: Sequence[str]) -> str:
    """The input section of a job's ``--help``: the fields and an example line, from the
    built-in schema of ``name``, or from the ``--schema`` file given with ``--help``."""
    from transforms import schema as schema_lib
    from transforms.schema import builtin_tables

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


def description(job: str) -> str:
    """What ``job`` does: its module's docstring, declared in ``pipelines.flags.<job>`` so that
    its ``--help`` reads it without importing the module (which imports Beam)."""
    return _DESCRIPTIONS[job]


def wants_help(argv: Sequence[str]) -> bool:
    return "-h" in argv or "--help" in argv


def print_help(job: str, argv: Sequence[str], prog: str) -> None:
    """``JOB --help``: the job's description, its input (ingest jobs) and its flags."""
    text = "" if job == "nightly" else input_help(job, argv)
    help_parser(prog, description(job), GROUPS[job], text).print_help(sys.stdout)
