"""What every ingest job shares, and the run of one: parse and check the flags, preflight the
tables, build the graph (:class:`Ingest`), run it, print the summary and return a
:class:`RunReport`; a run that did not do its work exits non-zero.

The parts live by concern: :mod:`.options` (flags, parsing, checks), :mod:`.jobspec` (what a
job is), :mod:`.graph` (the ingest graph and dead-letter names), :mod:`.runner` (preflight,
runner, dry runs), :mod:`.remote` (what workers elsewhere can read), :mod:`.report`
(counters, summary, exit policy, the report)."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from btts import exits
from btts.config import Target
from pipelines.common.graph import Ingest, dead_letter_location, new_run_id
from pipelines.common.jobspec import (
    JobSpec,
    builtin_job,
    job_tables,
    schema_job,
    with_time_input,
)
from pipelines.common.options import (
    BigtableOptions,
    FileInputOptions,
    StreamingInputOptions,
    bad_record_limit,
    check_inputs_exist,
    input_patterns,
    option_classes,
    options_class,
    parse_args,
    resolve_target,
    timezone,
    validate_input,
)
from pipelines.common.remote import check_worker_paths
from pipelines.common.report import (
    JobFailed,
    RunReport,
    counters,
    dead_letter_reasons,
    failure,
    first_overwrite,
    sample_lines,
    summary,
)
from pipelines.common.runner import (
    COMMAND,
    config_exit,
    dry_run_report,
    is_dry_run,
    job_command,
    new_pipeline,
    prepare,
    runner_refusals,
)
from transforms.errors import UserError

__all__ = [
    "BigtableOptions",
    "FileInputOptions",
    "IngestEntry",
    "JobSpec",
    "RunReport",
    "builtin_job",
    "config_exit",
    "counters",
    "dry_run_report",
    "ingest",
    "is_dry_run",
    "main",
    "new_pipeline",
    "option_classes",
    "options_class",
    "parse_args",
    "resolve_target",
    "run_file_ingest",
    "runner_refusals",
    "schema_job",
    "timezone",
]

_LOG = logging.getLogger(__name__)

# What a job's graph function takes: the pipeline, the options, the job and this run's id.
Build = Callable[..., dict]


def ingest(
    pipeline: beam.Pipeline, options: PipelineOptions, job: JobSpec, run_id: str | None = None
) -> dict[str, beam.PCollection]:
    """The job's :class:`Ingest` applied to ``pipeline``: its outputs by tag."""
    return pipeline | "Ingest" >> Ingest(options, job, run_id)


@dataclasses.dataclass(frozen=True)
class IngestEntry:
    """A job module's entry points from what it declares: its name, its docstring, its option
    classes and its :class:`JobSpec` (or a function of the options for jobs whose flags choose
    the tables); ``graph`` replaces :func:`ingest` for a job that does more (sales)."""

    name: str
    description: str
    classes: Sequence[type[PipelineOptions]]
    job_for: JobSpec | Callable[[PipelineOptions], JobSpec]
    graph: Build | None = None

    def build(
        self,
        pipeline: beam.Pipeline,
        options: PipelineOptions,
        job: JobSpec | None = None,
        run_id: str | None = None,
    ) -> dict[str, beam.PCollection]:
        """The job's graph on ``pipeline`` (its outputs by tag), testable without running."""
        job = job or (self.job_for(options) if callable(self.job_for) else self.job_for)
        return (self.graph or ingest)(pipeline, options, job, run_id=run_id)

    def run(self, argv: Sequence[str] | None = None) -> RunReport:
        """Parse, check, prepare the tables, run, summarize: see :func:`run_file_ingest`."""
        return run_file_ingest(
            argv,
            classes=self.classes,
            job_for=self.job_for,
            build=self.graph,
            name=self.name,
            description=self.description,
        )

    def main(self) -> None:
        """The module run as a script (``python -m pipelines.<job>``)."""
        main(self.run)


def run_file_ingest(
    argv: Sequence[str] | None,
    *,
    classes: Sequence[type[PipelineOptions]],
    job_for: JobSpec | Callable[[PipelineOptions], JobSpec],
    build: Build | None = None,
    name: str | None = None,
    description: str | None = None,
) -> RunReport:
    """The body of every ingest job's ``run``. ``job_for`` is the job's :class:`JobSpec`, or a
    function of the options for jobs whose flags choose the tables (it may raise ConfigError;
    pass ``name`` and ``description`` then); ``build(pipeline, options, job, run_id=...)``
    makes the graph (default :func:`ingest`)."""
    if isinstance(job_for, JobSpec):
        name = name or job_for.name
        description = description or job_for.description
    if not name or description is None:
        raise TypeError("run_file_ingest needs name and description when job_for is a function")
    build = build or ingest
    options, job, target = _prepared(argv, name, description, classes, job_for)
    dry = is_dry_run(options)
    run_id = new_run_id()
    letters = dead_letter_location(options, job.name, run_id)
    tables = tuple(job_tables(options, job))
    started = time.monotonic()
    with runner_refusals(name):
        pipeline = new_pipeline(options)
        build(pipeline, options, job, run_id=run_id)
        result = pipeline.run()
    if dry:
        print(dry_run_report(name, options, f"write {', '.join(tables)}"), flush=True)
        return RunReport(name, {}, tables=tables, dead_letters=letters, dry_run=True, result=result)
    subscription = options.view_as(StreamingInputOptions).input_subscription
    if subscription:
        _LOG.info(
            "%s: streaming from %s; stop it with Ctrl-C or by cancelling the job",
            name,
            subscription,
        )
    result.wait_until_finish()
    seconds = time.monotonic() - started
    totals = counters(result)
    reasons = tuple(dead_letter_reasons(result))
    written = letters if target is not None else None  # a check writes no dead letters
    report = RunReport(
        name,
        totals,
        seconds,
        tables,
        target,
        reasons,
        written,
        overwrite=first_overwrite(result),
        result=result,
    )
    _summarize(name, job, options, report)
    return report


def _prepared(
    argv: Sequence[str] | None,
    name: str,
    description: str,
    classes: Sequence[type[PipelineOptions]],
    job_for: JobSpec | Callable[[PipelineOptions], JobSpec],
) -> tuple[PipelineOptions, JobSpec, Target | None]:
    """The options, the job and its prepared target (None for a check or a dry run, which need
    no Bigtable), every mistake a user can fix as one line before anything runs."""
    try:
        options = parse_args(argv, job_command(name), description, classes, name)
        job = job_for(options) if callable(job_for) else job_for
        validate_input(options, job)
        with_time_input(options, job)  # refuse a bad --time_format before anything runs
        check_only = options.view_as(FileInputOptions).validate_only
        _check_worker_paths(options, job.name, check_only)
        writes = not (check_only or is_dry_run(options))  # a check or a dry run: no Bigtable
        target = prepare(options, job_tables(options, job), job) if writes else None
        if not options.view_as(StreamingInputOptions).input_subscription:
            check_inputs_exist(input_patterns(options))  # not Beam's traceback once running
    except UserError as err:
        raise config_exit(name, err) from None
    return options, job, target


def _check_worker_paths(options: PipelineOptions, name: str, check_only: bool) -> None:
    """The file paths the workers are given: remote URIs where they run elsewhere
    (:func:`.remote.check_worker_paths`)."""
    stream = options.view_as(StreamingInputOptions)
    inputs = [] if stream.input_subscription else input_patterns(options)
    dead_letter = options.view_as(FileInputOptions).dead_letter
    files = not (stream.dead_letter_topic or check_only)  # else no dead-letter files
    check_worker_paths(options, name, inputs, dead_letter, files)


def _summarize(name: str, job: JobSpec, options: PipelineOptions, report: RunReport) -> None:
    """Print the run's summary; a run over its dead-letter limit, or whose records overwrote
    one another, fails (after it wrote what was valid), naming the top reasons or the first
    overwrite and the flag that accepts them."""
    label = name if job.name == name else f"{name} ({job.name})"
    reasons = report.reasons
    given = options.view_as(FileInputOptions)
    print(
        summary(
            label,
            report.counters,
            report.seconds,
            report.target,
            reasons,
            dead_letters=report.dead_letters,
            samples=sample_lines(reasons),
            overwrite=report.overwrite,
            accepted=given.accept_overwrites,
        ),
        flush=True,
    )
    why = failure(
        report.counters,
        reasons,
        given.max_dead_letter_ratio,
        bad_record_limit(options),
        report.overwrite,
        given.accept_overwrites,
    )
    if why:
        if report.dead_letters:
            why += f" (dead letters: {report.dead_letters})"
        raise JobFailed(why, report, COMMAND.get() or name)


def main(run: Callable[[], RunReport]) -> None:
    """A job module run as a script (``python -m pipelines.<job>``): INFO logs, then its run;
    a run that did not do its work ends the script with its line (:func:`btts.exits.stop`)."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        run()
    except JobFailed as err:
        raise exits.stop(err, err.command) from None
