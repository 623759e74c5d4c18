"""A run's settings, decided once: :func:`job_config` reads the parsed options and the job into
a frozen :class:`JobConfig` before anything is built, and every later step of the run (the
preflight, the graph, the summary) reads that, never the options.

Why: a flag's meaning is decided in one place, once. When each step read the options itself,
steps decided again what another had decided (the dead-letter location, an ``auto`` flag
against the runner, the job's builder compiled anew), and a check that set an option as it went
changed what the steps after it read. Every mistake a user can fix is a ConfigError of one line
here, before the pipeline exists; nothing here changes the options."""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from collections.abc import Mapping, Sequence

from apache_beam.options.pipeline_options import PipelineOptions, TestOptions

from btts import config as targets
from btts import errors
from pipelines.common.jobspec import JobSpec, index_tables, job_tables, table_decl, with_times
from pipelines.common.options import BigtableOptions, FileInputOptions, StreamingInputOptions
from pipelines.common.remote import (
    Runner,
    check_local_inputs,
    check_worker_paths,
    remote_dead_letter_base,
    runner_of,
)
from pipelines.common.report import BadRecordLimit, Limits, parse_bad_records
from transforms.ingest.build_rows import OverwriteCheck
from transforms.table_model import TableDecl

__all__ = ["JobConfig", "flow_control", "is_dry_run", "job_config", "resolve_target"]

# The streaming overwrite check's memory: each record is compared with the last RECENT_ROWS rows
# its worker built, none older than RECENT_SECONDS (bounded: a stream never ends).
RECENT_ROWS = 100_000
RECENT_SECONDS = 600.0


@dataclasses.dataclass(frozen=True)
class JobConfig:
    """What one run of a job does, as its flags decide it (see the module docstring)."""

    runner: Runner  # where it runs: the runner, its project and region, remote or not
    job: JobSpec  # the job as the time flags read its input; its builder compiled once
    run_id: str  # this run's own name: its dead-letter files carry it
    inputs: tuple[str, ...]  # --input patterns; none when streaming
    input_format: str | None
    subscription: str | None  # --input_subscription: a streaming run
    target: targets.Target | None  # where rows go; None for a check (--validate_only)
    tables: Mapping[str, TableDecl]  # every table the run writes (the job's, its rollup's, its
    # series index) and its declaration
    indexed: tuple[str, ...]  # those whose series the schema's index lists
    hourly_rollup: bool  # --hourly_rollup (the job has one)
    rollup_mode: str
    allowed_lateness_ms: int
    write_timeout_s: float
    flow_control: bool  # --flow_control; auto: on for Dataflow
    collapse_latest: bool  # --collapse_latest; auto: on for Pub/Sub input
    create_tables: bool
    skip_preflight: bool
    overwrites: OverwriteCheck | None  # --overwrite_check; None when off or nothing to check
    limits: Limits  # when it fails: --max_bad_records, --max_dead_letter_ratio, --accept_overwrites
    dead_letter_topic: str | None
    dead_letter_prefix: str  # this run's dead-letter files: the base and the run's id
    validate_only: bool
    dry_run: bool  # Beam's --dry_run: translate for the runner, launch and call nothing

    @property
    def streaming(self) -> bool:
        return self.subscription is not None

    @property
    def remote(self) -> bool:
        """The workers run where the launcher's files are not."""
        return self.runner.remote

    @property
    def dead_letters(self) -> str | None:
        """Where dead letters go, as the summary names it; None: nowhere (a check)."""
        if self.validate_only:
            return None
        return self.dead_letter_topic or f"{self.dead_letter_prefix}*.jsonl"

    @property
    def writes(self) -> bool:
        """Whether the run writes to Bigtable (a check or a dry run does not)."""
        return not (self.validate_only or self.dry_run)


def new_run_id(now: dt.datetime | None = None) -> str:
    """A run's own name: its UTC start and a short random id, e.g. ``20261125T123000Z-1a2b3c``
    (sorts by time; two runs in the same second still differ)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"


def job_config(options: PipelineOptions, job: JobSpec, run_id: str | None = None) -> JobConfig:
    """The run of ``job`` that ``options`` ask for: the flags read and checked, the job as they
    shape it, then where it runs (``runner_of``) and what follows: the workers' paths, the
    instance, flow control; each once. Raises ConfigError (a UserError: one line)."""
    files = options.view_as(FileInputOptions)
    stream = options.view_as(StreamingInputOptions)
    bt = options.view_as(BigtableOptions)
    _check_flags(files, stream, bt, job)
    subscription, topic = stream.input_subscription or None, stream.dead_letter_topic or None
    inputs = () if subscription else tuple(input_patterns(files.input))
    formats, validate_only = time_formats(files.time_format), bool(files.validate_only)
    dry_run = is_dry_run(options)
    run_id, rollup = run_id or new_run_id(), bool(stream.hourly_rollup)
    job = with_times(job, formats, files.input_timezone or "", files.ambiguous_times or "")
    indexed = index_tables(job, rollup)
    tables = {t: table_decl(job, t) for t in job_tables(job, rollup, indexed)}
    runner = runner_of(options)  # where it runs: which paths its workers can use, and more
    base = files.dead_letter or (
        remote_dead_letter_base(runner, job.name) if runner.remote else None
    )
    if runner.remote:  # every path one the workers can use
        writes_files = not (topic or validate_only)
        check_worker_paths(runner.label, job.name, inputs, base, writes_files)
    elif not subscription:
        check_local_inputs(inputs)  # one line now, not Beam's traceback once running
    target = None if validate_only else runner.bigtable(bt.bigtable_project, bt.bigtable_instance)
    flow = _decide(bt.flow_control, runner.dataflow)  # auto: see flow_control
    # a re-run never replaces an earlier run's files (Beam's sink deletes what matches its prefix)
    prefix = f"{base or f'dead-letters/{job.name}'}-{run_id}"
    stamps = job.builder.stamp_in_key() if files.overwrite_check == "on" else None
    return JobConfig(
        runner=runner,
        job=job,
        run_id=run_id,
        inputs=inputs,
        input_format=files.input_format,
        subscription=subscription,
        target=target,
        tables=tables,
        indexed=tuple(indexed),
        hourly_rollup=rollup,
        rollup_mode=stream.rollup_mode,
        allowed_lateness_ms=stream.allowed_lateness_minutes * 60_000,
        write_timeout_s=bt.write_timeout_seconds,
        flow_control=flow,
        collapse_latest=_decide(bt.collapse_latest, auto=bool(subscription)),
        create_tables=bool(bt.create_tables),
        skip_preflight=bool(bt.skip_preflight),
        overwrites=_overwrite_check(stamps, bool(subscription)),
        limits=Limits(
            bad_record_limit(files.max_bad_records),
            files.max_dead_letter_ratio,
            bool(files.accept_overwrites),
        ),
        dead_letter_topic=topic,
        dead_letter_prefix=prefix,
        validate_only=validate_only,
        dry_run=dry_run,
    )


def _check_flags(
    files: FileInputOptions, stream: StreamingInputOptions, bt: BigtableOptions, job: JobSpec
) -> None:
    """Exactly one source; streaming has somewhere to put dead letters; a rollup exists; every
    number in range."""
    if stream.input_subscription:
        if files.input:
            raise errors.ConfigError("pass --input or --input_subscription, not both")
        if not stream.dead_letter_topic and not files.dead_letter:
            raise errors.ConfigError(
                "streaming needs --dead_letter_topic or --dead_letter (a path prefix for files): "
                "bad messages must go somewhere"
            )
        if files.validate_only:
            raise errors.ConfigError(
                "--validate_only reads files: pass --input, not a subscription"
            )
        if job.schema.record_number:
            raise errors.ConfigError(
                f"field {job.schema.record_number!r} is each record's number in its file "
                "(from: record_number), and a subscription's messages come from no file: "
                "give the messages a field that tells records apart instead"
            )
    if stream.hourly_rollup and job.rollup is None:
        raise errors.ConfigError(f"{job.name} has no hourly rollup")
    ratio = files.max_dead_letter_ratio
    if ratio is not None and not 0 <= ratio <= 1:
        raise errors.ConfigError(f"--max_dead_letter_ratio {ratio}: give a share from 0 to 1")
    if bt.write_timeout_seconds <= 0:
        raise errors.ConfigError("--write_timeout_seconds must be positive")
    if stream.allowed_lateness_minutes < 0:
        raise errors.ConfigError("--allowed_lateness_minutes cannot be negative")


def input_patterns(given: Sequence[str] | None) -> list[str]:
    """``--input`` as patterns (each flag may hold several, comma-separated); none is an
    error."""
    patterns = [p.strip() for item in given or [] for p in item.split(",") if p.strip()]
    if not patterns:
        raise errors.ConfigError(
            "no input: pass --input with a file, gs:// path or glob (or --input_subscription)"
        )
    return patterns


def time_formats(items: Sequence[str] | None) -> dict[str, str]:
    """``--time_format FIELD=FORMAT`` (repeated) as field → format.
    Raises ConfigError (a UserError: one line naming what to change)."""
    formats = {}
    for item in items or []:
        name, sep, fmt = item.partition("=")
        if not sep or not name or not fmt:
            raise errors.ConfigError(f"--time_format {item!r}: give FIELD=FORMAT")
        formats[name] = fmt
    return formats


def bad_record_limit(text: str | None) -> BadRecordLimit:
    """``--max_bad_records`` as a limit; a bad value is a one-line ConfigError."""
    try:
        return parse_bad_records(text or "10%")
    except ValueError as err:
        raise errors.ConfigError.because(err) from err


def _overwrite_check(stamps: dict[str, bool] | None, streaming: bool) -> OverwriteCheck | None:
    """The build step's overwrite check (``--overwrite_check``) of the tables ``stamps`` names
    (``Builder.stamp_in_key``: every SetCell table the job writes from events; aggregates sum
    by design, the rollup writes its own totals); None when off or nothing to check."""
    if not stamps:
        return None
    if streaming:
        return OverwriteCheck(stamps, RECENT_ROWS, RECENT_SECONDS)
    return OverwriteCheck(stamps)


def _decide(value: str, auto: bool) -> bool:
    """An auto/on/off flag: ``auto`` as the run's circumstances say, on and off as given."""
    return auto if value == "auto" else value == "on"


def flow_control(options: PipelineOptions, runner: Runner) -> bool:
    """``--flow_control``: auto is on for Dataflow (the emulator and local runners never get
    RateLimitInfo); on and off as given."""
    return _decide(options.view_as(BigtableOptions).flow_control, runner.dataflow)


def is_dry_run(options: PipelineOptions) -> bool:
    """Beam's ``--dry_run``: translate the job for its runner and launch nothing. Nothing of
    ours may then call Google either (no preflight, no table admin, no metrics to read)."""
    return bool(options.view_as(TestOptions).dry_run)


def resolve_target(options: PipelineOptions, runner: Runner) -> targets.Target:
    """The Bigtable instance the flags name (``--bigtable_project`` defaults to ``--project``,
    the runner's)."""
    bt = options.view_as(BigtableOptions)
    return runner.bigtable(bt.bigtable_project, bt.bigtable_instance)
