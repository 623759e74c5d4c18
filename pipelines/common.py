"""What every ingest job shares: options, validation, preflight, the file-ingest graph, and the
end-of-run summary."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import functools
import logging
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import (
    GoogleCloudOptions,
    PipelineOptions,
    StandardOptions,
    TestOptions,
)
from apache_beam.runners.direct.direct_runner import SwitchingDirectRunner
from apache_beam.runners.runner import PipelineResult

from btts import admin
from transforms import builtin_tables, generic, timefmt
from transforms import schema as schema_lib
from transforms.bigtable_write import WriteRows
from transforms.ingest import (
    DEAD_LETTER,
    NAMESPACE,
    REASONS_NAMESPACE,
    ROWS,
    Builder,
    BuildRows,
    CsvAdapter,
    ReadPubSubLines,
    WriteDeadLetterFiles,
    WriteDeadLetters,
    WriteDeadLettersToPubSub,
    split_reason_metric_name,
)
from transforms.readers import INPUT_FORMATS, ReadRecords
from transforms.rollup import TOO_LATE, Rollup, RollupSpec
from transforms.rollup_core import schema_rollups
from transforms.table_model import TableDecl

_LOG = logging.getLogger(__name__)


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
        group.add_argument(
            "--flow_control",
            type=str,
            choices=("auto", "on", "off"),
            default="auto",
            help="Bigtable batch write flow control: the writes follow the rate the cluster "
            "asks for (RateLimitInfo), back off on RESOURCE_EXHAUSTED and keep at most 16 "
            "requests (64 MiB) in flight per worker and table. 'auto' (default): on for "
            "Dataflow, off elsewhere (the emulator never asks to slow down).",
        )
        group.add_argument(
            "--skip_preflight",
            action="store_true",
            help="Do not check that the tables exist before running (the launcher then needs no "
            "Bigtable admin permission).",
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
        raise admin.ConfigError(f"unknown time zone {name!r} (use an IANA name)")
    return found


@dataclass(frozen=True)
class JobSpec:
    """What distinguishes one file-ingest job from another."""

    name: str
    description: str
    builder: Builder
    tables: Sequence[str]
    decls: Mapping[str, TableDecl]  # every table of the job's schema file
    csv_adapter: CsvAdapter | None = None
    rollup: RollupSpec | None = None
    schema_source: str | None = None  # a user's schema file, named in messages
    # A rule on every event's rows beyond the schema's (raises InvalidEvent), e.g. sales'
    # --replace_months; kept apart from the builder so --time_format can rebuild that.
    check_rows: Callable[[Sequence[tuple]], None] | None = None

    def rows_fn(self) -> Callable[[dict], Sequence[tuple]]:
        """What BuildRows runs per record: the builder's plain rows, checked if asked."""
        if self.check_rows is None:
            return self.builder.rows
        return functools.partial(_checked_rows, self.builder.rows, self.check_rows)


def _checked_rows(rows: Callable, check: Callable, record: dict) -> Sequence[tuple]:
    out = rows(record)
    check(out)
    return out


def schema_job(
    schema: schema_lib.Schema,
    *,
    description: str,
    name: str | None = None,
    tables: Sequence[str] | None = None,
    tz: dt.tzinfo = dt.timezone.utc,
    builtin: bool = True,
) -> JobSpec:
    """The job of a schema file: its compiled builder (for ``tables``, default every table it
    writes from events), its declarations, and the hourly rollup it declares for them, if any.
    A built-in schema's tables need no ``--schema`` to create; a user's file is named in hints."""
    try:
        builder = generic.Builder(schema, list(tables) if tables else None, tz)
    except ValueError as err:
        raise admin.ConfigError(str(err)) from None
    rollups = schema_rollups(schema)
    rollup = next((rollups[t] for t in builder.tables if t in rollups), None)
    return JobSpec(
        name=name or schema.dataset,
        description=description,
        builder=builder,
        tables=tuple(builder.tables),
        decls=schema.decls(),
        csv_adapter=builder.csv_adapter,
        rollup=rollup,
        schema_source=None if builtin else str(schema.source),
    )


def builtin_job(dataset: str, description: str, **kwargs) -> JobSpec:
    """The job of the built-in dataset ``dataset`` (``transforms/declarations/<dataset>.yaml``)."""
    return schema_job(schema_lib.builtin(dataset), description=description, **kwargs)


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


def parse_args(
    argv: Sequence[str] | None,
    prog: str,
    description: str,
    classes: Sequence[type[PipelineOptions]],
    name: str = "",
) -> PipelineOptions:
    """Pipeline options from ``argv``; ``--help`` prints this job's flags and input; an unknown
    flag (a typo Beam would only warn about and ignore) is an error."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "-h" in argv or "--help" in argv:
        text = input_help(name, argv) if name else ""
        option_classes_help(prog, description, classes, text).print_help()
        raise SystemExit(0)
    known = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for cls in PipelineOptions.__subclasses__():
        try:
            cls._add_argparse_args(known)
        except argparse.ArgumentError:
            continue  # some SDK components define overlapping flags; theirs, not ours
    _, unknown = known.parse_known_args(argv)
    flags = [a for a in unknown if a.startswith("--")]
    if flags:
        raise admin.ConfigError(f"unknown option(s): {' '.join(flags)} (see {prog} --help)")
    return PipelineOptions(argv)


def resolve_target(options: PipelineOptions) -> admin.Target:
    bt = options.view_as(BigtableOptions)
    project = bt.bigtable_project or options.view_as(GoogleCloudOptions).project
    return admin.resolve_target(project, bt.bigtable_instance)


def input_patterns(options: PipelineOptions) -> list[str]:
    raw = options.view_as(FileInputOptions).input or []
    patterns = [p.strip() for item in raw for p in item.split(",") if p.strip()]
    if not patterns:
        raise admin.ConfigError(
            "no input: pass --input with a file, gs:// path or glob (or --input_subscription)"
        )
    return patterns


def dead_letter_prefix(options: PipelineOptions, job: str) -> str:
    return options.view_as(FileInputOptions).dead_letter or f"dead-letters/{job}"


def validate_input(options: PipelineOptions, job: JobSpec) -> None:
    """Exactly one source; streaming has somewhere to put dead letters; a rollup exists."""
    stream = options.view_as(StreamingInputOptions)
    files = options.view_as(FileInputOptions).input
    if stream.input_subscription:
        if files:
            raise admin.ConfigError("pass --input or --input_subscription, not both")
        if not stream.dead_letter_topic and not options.view_as(FileInputOptions).dead_letter:
            raise admin.ConfigError(
                "streaming needs --dead_letter_topic or --dead_letter (a path prefix for files): "
                "bad messages must go somewhere"
            )
        options.view_as(StandardOptions).streaming = True
    else:
        input_patterns(options)
    if stream.hourly_rollup and job.rollup is None:
        raise admin.ConfigError(f"{job.name} has no hourly rollup")
    ratio = options.view_as(FileInputOptions).max_dead_letter_ratio
    if ratio is not None and not 0 <= ratio <= 1:
        raise admin.ConfigError(f"--max_dead_letter_ratio {ratio}: give a share from 0 to 1")
    if options.view_as(FileInputOptions).validate_only and stream.input_subscription:
        raise admin.ConfigError("--validate_only reads files: pass --input, not a subscription")
    if options.view_as(BigtableOptions).write_timeout_seconds <= 0:
        raise admin.ConfigError("--write_timeout_seconds must be positive")
    if stream.allowed_lateness_minutes < 0:
        raise admin.ConfigError("--allowed_lateness_minutes cannot be negative")


def with_time_input(options: PipelineOptions, job: JobSpec) -> JobSpec:
    """The job reading its input's times as --time_format, --input_timezone and
    --ambiguous_times say (unchanged without them); a bad choice is a ConfigError."""
    opts = options.view_as(FileInputOptions)
    if not (opts.time_format or opts.input_timezone or opts.ambiguous_times):
        return job
    formats = {}
    for item in opts.time_format or []:
        name, sep, fmt = item.partition("=")
        if not sep or not name or not fmt:
            raise admin.ConfigError(f"--time_format {item!r}: give FIELD=FORMAT")
        formats[name] = fmt
    builder = job.builder
    try:
        schema = schema_lib.with_times(
            builder.schema, formats, opts.input_timezone or "", opts.ambiguous_times or ""
        )
    except schema_lib.SchemaError as err:
        raise admin.ConfigError(str(err)) from None
    builder = generic.Builder(schema, builder.tables, builder.tz)
    return dataclasses.replace(job, builder=builder, csv_adapter=builder.csv_adapter)


def job_tables(options: PipelineOptions, job: JobSpec) -> list[str]:
    tables = list(job.tables)
    if options.view_as(StreamingInputOptions).hourly_rollup and job.rollup:
        tables.append(job.rollup.table)
    return tables


def build_ingest(
    pipeline: beam.Pipeline, options: PipelineOptions, job: JobSpec
) -> dict[str, beam.PCollection]:
    """Read (files or Pub/Sub) → build rows (bad input to dead letters) → write each table,
    and, with --hourly_rollup, the hourly aggregates."""
    from transforms.aggregate_write import WriteAggregates

    job = with_time_input(options, job)
    stream = options.view_as(StreamingInputOptions)
    if stream.input_subscription:
        lines = pipeline | "ReadMessages" >> ReadPubSubLines(stream.input_subscription)
    else:
        input_format = options.view_as(FileInputOptions).input_format
        lines = pipeline | "ReadLines" >> ReadRecords(input_patterns(options), input_format)
    built = lines | "ParseAndBuild" >> BuildRows(
        job.rows_fn(), job.name, job.csv_adapter, batched=True
    )
    rows = built[ROWS]  # lists of rows, one per input block
    if options.view_as(FileInputOptions).validate_only:  # counted by BuildRows; nothing written
        return {"rows": rows, "dead_letter": built[DEAD_LETTER]}
    target = resolve_target(options)
    timeout = options.view_as(BigtableOptions).write_timeout_seconds
    # AddToCell rows go through the data client (one table each), SetCell rows through the sink.
    add_cells = functools.partial(
        WriteAggregates, target.project, target.instance, operation_timeout=timeout
    )
    set_cells = functools.partial(WriteRows, target.project, target.instance, timeout_s=timeout)
    aggregates = [t for t in job.tables if any(f.aggregate for f in job.decls[t].families)]
    plain = [t for t in job.tables if t not in aggregates]
    if aggregates:
        split = rows | "SplitAggregates" >> beam.ParDo(_SplitAggregates(aggregates)).with_outputs(
            *aggregates, main="cells"
        )
        for table in aggregates:
            split[table] | f"WriteAggregates_{table}" >> add_cells(table)
        cells = split["cells"]
    else:
        cells = rows
    if plain:
        cells | "WriteBigtable" >> set_cells(plain)
    dead = [built[DEAD_LETTER]]
    out = {"rows": rows}
    if stream.hourly_rollup and job.rollup:
        rolled = (
            rows
            | "Unbatch" >> beam.FlatMap(list)
            | "HourlyRollup"
            >> Rollup(job.rollup, stream.allowed_lateness_minutes * 60_000, stream.rollup_mode)
        )
        if stream.rollup_mode == "exact":  # SetCell totals: idempotent, through the sink
            rolled["rows"] | "WriteRollup" >> set_cells([job.rollup.table])
        else:
            rolled["rows"] | "WriteRollup" >> add_cells(job.rollup.table)
        dead.append(rolled[TOO_LATE])
        out["rollup"] = rolled["rows"]
    letters = dead[0] if len(dead) == 1 else dead | "AllDeadLetters" >> beam.Flatten()
    write_dead_letters(letters, options, job.name)
    out["dead_letter"] = letters
    return out


class _SplitAggregates(beam.DoFn):
    """A batch of rows split: aggregate tables' rows to their table's output (a list each),
    every other row to the main one (one list)."""

    def __init__(self, aggregate_tables: Sequence[str]) -> None:
        self._aggregate = frozenset(aggregate_tables)

    def process(self, batch: list):
        by_table: dict[str, list] = {}
        cells = []
        for row in batch:  # rows are (table, key, cells) tuples
            if row[0] in self._aggregate:
                by_table.setdefault(row[0], []).append(row)
            else:
                cells.append(row)
        for table, rows in by_table.items():
            yield beam.pvalue.TaggedOutput(table, rows)
        if cells:
            yield cells


def write_dead_letters(letters: beam.PCollection, options: PipelineOptions, job: str) -> None:
    """To --dead_letter_topic; else to files, one per bundle when streaming (Beam's windowed
    file sinks fail on the streaming DirectRunner), sharded JSON lines in batch."""
    stream = options.view_as(StreamingInputOptions)
    if stream.dead_letter_topic:
        letters | "DeadLettersToPubSub" >> WriteDeadLettersToPubSub(stream.dead_letter_topic)
    elif stream.input_subscription:
        letters | "DeadLetterFiles" >> WriteDeadLetterFiles(dead_letter_prefix(options, job))
    else:
        letters | "WriteDeadLetters" >> WriteDeadLetters(dead_letter_prefix(options, job))


def prepare(
    options: PipelineOptions, tables: Sequence[str], job: JobSpec | None = None
) -> admin.Target:
    """Validate and preflight before any data moves: fail early, with the fix in the message.
    The tables' declarations come from ``job``, else from the built-in ones."""
    target = resolve_target(options)
    bt = options.view_as(BigtableOptions)
    if not bt.skip_preflight:
        decls = [job.decls[t] if job is not None else builtin_tables.get(t) for t in tables]
        try:
            for line in admin.preflight(target, decls, create=bt.create_tables):
                _LOG.info("%s", line)
        except admin.ConfigError as err:
            if job is None or not job.schema_source:
                raise
            hint = f"btts tables create --schema {job.schema_source}"
            raise admin.ConfigError(str(err).replace("btts tables create", hint)) from None
    return target


LOCAL_RUNNERS = frozenset({"DirectRunner", "SwitchingDirectRunner"})


def new_pipeline(options: PipelineOptions) -> beam.Pipeline:
    """A pipeline on the runner the options name; for Beam's local default, its DirectRunner
    without the first attempt on Prism. Beam 2.77 tries Prism before the in-process runner,
    which means fetching a Prism binary from GitHub: on a machine without internet that fails
    after 0.3 to 6 seconds per job, and with internet the job runs on another runner than the
    one its tests and benchmarks measure. Beam skips Prism for interactive runs; so do we."""
    name = options.view_as(StandardOptions).runner or "DirectRunner"
    if name not in LOCAL_RUNNERS:
        return beam.Pipeline(options=options)
    runner = SwitchingDirectRunner()
    runner.is_interactive()  # Beam's own switch: Prism is not tried, nothing else changes
    return beam.Pipeline(runner=runner, options=options)


def is_dry_run(options: PipelineOptions) -> bool:
    """Beam's ``--dry_run``: translate the job for its runner and launch nothing. Nothing of
    ours may then call Google either (no preflight, no table admin, no metrics to read)."""
    return bool(options.view_as(TestOptions).dry_run)


def dry_run_report(name: str, options: PipelineOptions, what: str) -> str:
    """What a dry run would have launched, instead of a summary of what it did."""
    runner = options.view_as(StandardOptions).runner or "DirectRunner"
    cloud = options.view_as(GoogleCloudOptions)
    where = ", ".join(
        f"{label} {value}"
        for label, value in (("project", cloud.project), ("region", cloud.region))
        if value
    )
    mode = "streaming" if options.view_as(StandardOptions).streaming else "batch"
    return (
        f"{name}: dry run: the {mode} job translated for {runner}"
        f"{f' ({where})' if where else ''}; it would {what}. Nothing was launched or written."
    )


def counters(result: PipelineResult) -> dict[str, int]:
    """This run's btts counters (committed where the runner has them, else attempted); empty
    for a Dataflow flex-template launch, which only writes the job spec: no job to ask yet."""
    if getattr(result, "has_job", True) is False:
        return {}
    out: dict[str, int] = {}
    for counter in result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))["counters"]:
        name = counter.key.metric.name
        out[name] = out.get(name, 0) + int(_metric_value(counter) or 0)
    return out


@dataclass(frozen=True)
class Reason:
    """One kind of dead letter in a run: how many, and where it first happened."""

    kind: str
    count: int
    source: str
    line: int | None  # first line number in ``source``, when the reader knows lines


def dead_letter_reasons(result: PipelineResult) -> list[Reason]:
    """This run's dead letters by reason kind, most frequent first (from BuildRows' metrics)."""
    if getattr(result, "has_job", True) is False:
        return []
    counts: dict[str, int] = {}
    firsts: dict[str, str] = {}  # each kind's first source (by name) when no line is known
    query = result.metrics().query(MetricsFilter().with_namespace(REASONS_NAMESPACE))
    for counter in query["counters"]:
        kind, source = split_reason_metric_name(counter.key.metric.name)
        counts[kind] = counts.get(kind, 0) + int(_metric_value(counter) or 0)
        firsts[kind] = min(firsts.get(kind, source), source)
    lines: dict[tuple[str, str], int] = {}
    for dist in query["distributions"]:
        value = _metric_value(dist)
        if value is not None and value.count:
            lines[split_reason_metric_name(dist.key.metric.name)] = int(value.min)
    out = []
    for kind, count in counts.items():
        known = sorted((src, line) for (k, src), line in lines.items() if k == kind)
        source, line = known[0] if known else (firsts[kind], None)
        out.append(Reason(kind, count, source, line))
    return sorted(out, key=lambda r: (-r.count, r.kind))


def _metric_value(result):
    try:
        value = result.committed
    except Exception:  # runners without committed metrics raise here
        value = None
    return result.attempted if value is None else value


def summary(
    job: str,
    totals: dict[str, int],
    seconds: float,
    target: admin.Target | None,
    reasons: Sequence[Reason] = (),
    top: int = 5,
) -> str:
    events = totals.get("events_valid", 0)
    where = f"into {target.describe()}" if target else "(validate only: nothing written)"
    lines = [
        f"{job}: done in {seconds:.1f}s {where}",
        f"  lines read      {totals.get('lines_read', 0):>12,}",
        f"  valid events    {events:>12,}   ({events / max(seconds, 1e-9):,.0f} events/s)",
        f"  dead letters    {totals.get('dead_letters', 0):>12,}",
    ]
    if totals.get("blank_lines"):
        lines.append(f"  blank lines     {totals['blank_lines']:>12,}")
    for table in sorted(name[5:] for name in totals if name.startswith("rows_")):
        rows = totals["rows_" + table]
        line = f"  rows {table:<15}{rows:>8,}   cells {totals.get('cells_' + table, 0):,}"
        distinct = totals.get("distinct_rows_" + table)
        if distinct and distinct < rows and not totals.get("distinct_unknown_" + table):
            plural = "s" if distinct > 1 else ""
            line += f"   ({rows:,} row writes into {distinct:,} distinct row{plural})"
        lines.append(line)
    if reasons:
        lines.append("  top dead-letter reasons:")
        for reason in reasons[:top]:
            at = f"{reason.source}:{reason.line}" if reason.line else reason.source
            lines.append(f"  {reason.count:>14,}  {reason.kind}  (first: {at})")
        if len(reasons) > top:
            rest = sum(r.count for r in reasons[top:])
            lines.append(f"  {rest:>14,}  ({len(reasons) - top} other reasons)")
    return "\n".join(lines)


class JobFailed(SystemExit):
    """The job ran but did not do its work (nothing valid, too many dead letters): a non-zero
    exit with the reason, after the summary. ``result`` is the finished pipeline's."""

    def __init__(self, message: str, result: PipelineResult) -> None:
        super().__init__(message)
        self.result = result


def failure(
    totals: Mapping[str, int], reasons: Sequence[Reason], max_ratio: float | None
) -> str | None:
    """Why a finished batch run failed its purpose, or None: input but no valid event, or more
    dead letters than ``max_ratio`` of the records read."""
    records = totals.get("lines_read", 0) - totals.get("blank_lines", 0)
    dead = totals.get("dead_letters", 0)
    if records <= 0:
        return None
    top = f"; top reason: {reasons[0].kind}" if reasons else ""
    if totals.get("events_valid", 0) == 0:
        return f"no valid event in {records:,} records read, nothing written{top}"
    if max_ratio is not None and dead / records > max_ratio:
        return (
            f"{dead:,} dead letters in {records:,} records ({dead / records:.2%}), over "
            f"--max_dead_letter_ratio {max_ratio:g}{top}"
        )
    return None


def run_file_ingest(
    argv: Sequence[str] | None,
    *,
    classes: Sequence[type[PipelineOptions]],
    job_for: JobSpec | Callable[[PipelineOptions], JobSpec],
    build: Callable[[beam.Pipeline, PipelineOptions, JobSpec], dict] | None = None,
    name: str | None = None,
    description: str | None = None,
) -> PipelineResult:
    """The body of every ingest job's ``run``. ``job_for`` is the job's :class:`JobSpec`, or a
    function of the options for jobs whose flags choose the tables (it may raise ConfigError;
    pass ``name`` and ``description`` then); ``build`` gets the options and that job
    (default :func:`build_ingest`)."""
    if isinstance(job_for, JobSpec):
        name = name or job_for.name
        description = description or job_for.description
    if not name or description is None:
        raise TypeError("run_file_ingest needs name and description when job_for is a function")
    build = build or build_ingest
    try:
        options = parse_args(argv, f"python -m pipelines.{name}", description, classes, name)
        job = job_for(options) if callable(job_for) else job_for
        validate_input(options, job)
        with_time_input(options, job)  # refuse a bad --time_format before anything runs
        check_only = options.view_as(FileInputOptions).validate_only
        dry = is_dry_run(options)
        writes = not (check_only or dry)  # a check or a dry run needs no Bigtable
        target = prepare(options, job_tables(options, job), job) if writes else None
    except admin.ConfigError as err:
        raise SystemExit(f"{name}: error: {err}") from None
    started = time.monotonic()
    pipeline = new_pipeline(options)
    build(pipeline, options, job)
    result = pipeline.run()
    if dry:
        result.btts_counters = {}
        tables = ", ".join(job_tables(options, job))
        print(dry_run_report(name, options, f"write {tables}"), flush=True)
        return result
    subscription = options.view_as(StreamingInputOptions).input_subscription
    if subscription:
        _LOG.info(
            "%s: streaming from %s; stop it with Ctrl-C or by cancelling the job",
            name,
            subscription,
        )
    result.wait_until_finish()
    seconds = time.monotonic() - started
    result.btts_counters = totals = counters(result)
    reasons = dead_letter_reasons(result)
    label = name if job.name == name else f"{name} ({job.name})"
    print(summary(label, totals, seconds, target, reasons), flush=True)
    why = failure(totals, reasons, options.view_as(FileInputOptions).max_dead_letter_ratio)
    if why:
        if not check_only:
            why += f" (dead letters: {dead_letter_prefix(options, job.name)}*)"
        raise JobFailed(f"{name}: error: {why}", result)
    return result


def main(run: Callable[[], PipelineResult]) -> None:
    """A job module run as a script (``python -m pipelines.<job>``): INFO logs, then its run."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    run()
