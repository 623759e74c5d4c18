"""What every ingest job shares, and the run of one: parse the flags and decide the run
(:class:`JobConfig`), launch it (preflight, the graph :class:`Ingest`, the runner), print the
summary and return a :class:`RunReport`; a run that did not do its work exits non-zero.

The parts live by concern: :mod:`.options` (flags, parsing), :mod:`.jobspec` (what a job is),
:mod:`.config` (what a run does: every flag decided once, and checked), :mod:`.graph` (the
ingest graph), :mod:`.runner` (preflight, runner, launch), :mod:`.remote` (what workers
elsewhere can read), :mod:`.report` (counters, summary, exit policy, dry runs, the report)."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from btts import exits
from pipelines.common.config import (
    JobConfig,
    flow_control,
    is_dry_run,
    job_config,
    resolve_target,
)
from pipelines.common.graph import Ingest
from pipelines.common.jobspec import JobSpec, builtin_job, schema_job
from pipelines.common.options import (
    BigtableOptions,
    FileInputOptions,
    option_classes,
    options_class,
    parse_args,
    timezone,
)
from pipelines.common.remote import Runner, runner_of
from pipelines.common.report import (
    JobFailed,
    RunReport,
    conclude,
    counters,
    dead_letter_reasons,
    dry_run_report,
    first_overwrite,
)
from pipelines.common.runner import (
    config_exit,
    job_command,
    launch,
    new_pipeline,
    runner_refusals,
)
from transforms.errors import UserError

__all__ = [
    "BigtableOptions",
    "FileInputOptions",
    "IngestEntry",
    "JobConfig",
    "JobSpec",
    "RunReport",
    "Runner",
    "builtin_job",
    "config_exit",
    "counters",
    "dry_run_report",
    "flow_control",
    "ingest",
    "is_dry_run",
    "main",
    "new_pipeline",
    "option_classes",
    "options_class",
    "parse_args",
    "resolve_target",
    "run_file_ingest",
    "runner_of",
    "runner_refusals",
    "schema_job",
    "timezone",
]

_LOG = logging.getLogger(__name__)

# What a job's graph function takes: the pipeline and the run's config.
Graph = Callable[[beam.Pipeline, JobConfig], dict]
# A job: its JobSpec, or a function of the options for jobs whose flags choose the tables.
JobFor = JobSpec | Callable[[PipelineOptions], JobSpec]


def ingest(pipeline: beam.Pipeline, config: JobConfig) -> dict[str, beam.PCollection]:
    """The job's :class:`Ingest` applied to ``pipeline``: its outputs by tag."""
    return pipeline | "Ingest" >> Ingest(config)


@dataclasses.dataclass(frozen=True)
class IngestEntry:
    """A job module's entry points from what it declares: its name, its docstring, its option
    classes and its :class:`JobSpec` (or a function of the options for jobs whose flags choose
    the tables); ``graph`` replaces :func:`ingest` for a job that does more (sales)."""

    name: str
    description: str
    classes: Sequence[type[PipelineOptions]]
    job_for: JobFor
    graph: Graph | None = None

    def build(
        self, pipeline: beam.Pipeline, options: PipelineOptions
    ) -> dict[str, beam.PCollection]:
        """The job's graph on ``pipeline`` (its outputs by tag), testable without running: the
        run's config made from ``options`` (:func:`job_config`), then the job's graph."""
        job = self.job_for(options) if callable(self.job_for) else self.job_for
        return (self.graph or ingest)(pipeline, job_config(options, job))

    def run(self, argv: Sequence[str] | None = None, command: str | None = None) -> RunReport:
        """Parse, check, prepare the tables, run, summarize: see :func:`run_file_ingest`."""
        return run_file_ingest(
            argv,
            command=command,
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
    job_for: JobFor,
    build: Graph | None = None,
    name: str | None = None,
    description: str | None = None,
    command: str | None = None,
) -> RunReport:
    """The body of every ingest job's ``run``. ``job_for`` is the job's :class:`JobSpec`, or a
    function of the options for jobs whose flags choose the tables (it may raise ConfigError;
    pass ``name`` and ``description`` then); ``build(pipeline, config)`` makes the graph
    (default :func:`ingest`); ``command``: how the user started the job when not as
    ``python -m pipelines.JOB`` (``btts ingest --schema FILE``), which its errors and ``--help``
    pointers then name. A mistake the user can fix ends it with one line (SystemExit); a run
    that did not do its work raises :class:`JobFailed` after its summary."""
    if isinstance(job_for, JobSpec):
        name = name or job_for.name
        description = description or job_for.description
    if not name or description is None:
        raise TypeError("run_file_ingest needs name and description when job_for is a function")
    said = command or name  # what its one-line errors are said under
    options, config = _config(argv, name, description, classes, job_for, command)
    started = time.monotonic()
    result = launch(said, options, config, build or ingest)
    tables = tuple(config.tables)
    if config.dry_run:
        print(dry_run_report(name, config.runner, f"write {', '.join(tables)}"), flush=True)
        return RunReport(
            name, {}, tables=tables, dead_letters=config.dead_letters, dry_run=True, result=result
        )
    if config.streaming:
        _LOG.info(
            "%s: streaming from %s; stop it with Ctrl-C or by cancelling the job",
            name,
            config.subscription,
        )
    result.wait_until_finish()
    report = RunReport(
        name,
        counters(result),
        time.monotonic() - started,
        tables,
        config.target,
        tuple(dead_letter_reasons(result)),
        config.dead_letters,
        overwrite=first_overwrite(result),
        result=result,
    )
    label = name if config.job.name == name else f"{name} ({config.job.name})"
    conclude(report, label, config.limits, said)
    return report


def _config(
    argv: Sequence[str] | None,
    name: str,
    description: str,
    classes: Sequence[type[PipelineOptions]],
    job_for: JobFor,
    command: str | None,
) -> tuple[PipelineOptions, JobConfig]:
    """The flags parsed (kept for Beam and the runner alone) and the run they decide: the job
    they ask for, then its config; every mistake a user can fix as one line (under
    ``command``, else the job's name) before anything runs."""
    try:
        options = parse_args(argv, job_command(name, command), description, classes, name)
        job = job_for(options) if callable(job_for) else job_for
        return options, job_config(options, job)
    except UserError as err:
        raise config_exit(command or name, err) from None


def main(run: Callable[[], RunReport]) -> None:
    """A job module run as a script (``python -m pipelines.<job>``): INFO logs, then its run;
    a run that did not do its work ends the script with its line (:func:`btts.exits.stop`)."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        run()
    except JobFailed as err:
        raise exits.stop(err, err.command) from None
