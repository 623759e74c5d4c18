"""Every job's flags, declared once and without Beam: each group is a function adding its
arguments to any argparse parser. The jobs' PipelineOptions classes delegate to these functions
(what a run parses), and a job's ``--help`` builds a plain argparse parser from the same
functions, so ``btts ingest JOB --help`` and ``btts nightly --help`` answer without importing
Beam. :data:`GROUPS` names each job's groups in ``--help`` order; a job's own groups live in its
module here (``pipelines.flags.<job>``)."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
from collections.abc import Callable, Sequence

from transforms.ingest.formats import INPUT_FORMATS

__all__ = [
    "GROUPS",
    "bigtable",
    "file_input",
    "help_parser",
    "input_help",
    "print_help",
    "streaming",
    "time_zone",
    "wants_help",
]

Group = Callable[[argparse.ArgumentParser], None]

AUTO_ON_OFF = ("auto", "on", "off")


def _auto_on_off(group, flag: str, help: str) -> None:  # group: an argparse argument group
    """A setting that is on, off, or decided by the job ('auto', the default)."""
    group.add_argument(flag, type=str, choices=AUTO_ON_OFF, default="auto", help=help)


def bigtable(parser: argparse.ArgumentParser) -> None:
    """Where rows go. Shared by every job (Beam registers each flag once across all jobs)."""
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
        "raw line). Default: dead-letters/<job> in the working directory; where the workers "
        "run elsewhere (Dataflow, a cluster) it must be a gs:// URI, by default "
        "<temp_location>/dead-letters/<job>.",
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


def file_input(parser: argparse.ArgumentParser) -> None:
    """Batch input from files and where bad lines go."""
    group = parser.add_argument_group("Input and dead letters")
    group.add_argument(
        "--input",
        action="append",
        help="Input file(s): a local path, gs:// path or glob (gs:// on Dataflow or any "
        "runner whose workers run elsewhere). Repeat the flag or separate patterns with "
        "commas for several.",
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


def streaming(parser: argparse.ArgumentParser) -> None:
    """Continuous ingest from Pub/Sub, and the hourly rollup."""
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


def time_zone(parser: argparse.ArgumentParser) -> None:
    """How event times become calendar labels (day rows, HHMM columns, nightly tables)."""
    group = parser.add_argument_group("Time")
    group.add_argument(
        "--timezone",
        default="UTC",
        help="IANA time zone of day boundaries and time-of-day labels (e.g. "
        "Europe/Paris). Cell timestamps stay absolute epoch times. Default: UTC.",
    )


# Imported here, after the shared groups: each job's own groups, by job.
from pipelines.flags import battery, garden, generic, nightly, sales, weather_balloons  # noqa: E402

# Every job's flag groups, in --help order (a job's run parses its option classes, which
# delegate to the same functions: pipelines.common.option_classes maps one to the other).
GROUPS: dict[str, tuple[Group, ...]] = {
    "battery": (file_input, bigtable, battery.layout),
    "game_results": (file_input, bigtable),
    "garden": (file_input, bigtable, garden.layout),
    "generic": (generic.schema, file_input, streaming, bigtable, time_zone),
    "market_data": (file_input, streaming, bigtable),
    "sales": (file_input, bigtable, time_zone, sales.replace),
    "server_metrics": (file_input, streaming, bigtable),
    "smart_meters": (file_input, streaming, bigtable, time_zone),
    "weather_balloons": (file_input, bigtable, weather_balloons.pattern),
    "nightly": (nightly.nightly, bigtable, time_zone),
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
    for add in groups:
        add(parser)
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
    """The job module's docstring, read from its source without running it (running it would
    import Beam)."""
    spec = importlib.util.find_spec(f"pipelines.{job}")
    if spec is None or not spec.origin:
        raise KeyError(job)
    with open(spec.origin, encoding="utf-8") as source:
        return ast.get_docstring(ast.parse(source.read()), clean=False) or ""


def wants_help(argv: Sequence[str]) -> bool:
    return "-h" in argv or "--help" in argv


def print_help(job: str, argv: Sequence[str], prog: str) -> None:
    """``JOB --help``: the job's description, its input (ingest jobs) and its flags."""
    text = "" if job == "nightly" else input_help(job, argv)
    help_parser(prog, description(job), GROUPS[job], text).print_help(sys.stdout)
