"""Running a job: the preflight before any data moves, the pipeline on the chosen runner, and
what a dry run reports instead of running."""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator, Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import (
    GoogleCloudOptions,
    PipelineOptions,
    StandardOptions,
    TestOptions,
)
from apache_beam.runners.direct.direct_runner import SwitchingDirectRunner

from btts import admin, config, errors, exits
from pipelines.common.jobspec import JobSpec, table_decl
from pipelines.common.options import BigtableOptions, resolve_target
from transforms.errors import UserError
from transforms.schema import builtin_tables

__all__ = [
    "COMMAND",
    "config_exit",
    "dry_run_report",
    "is_dry_run",
    "job_command",
    "new_pipeline",
    "prepare",
    "runner_refusals",
]

_LOG = logging.getLogger(__name__)
# How the user started the job when not as ``python -m pipelines.JOB`` (``btts ingest --schema
# FILE``): its errors and ``--help`` pointers then speak of that command (set by btts_cli).
COMMAND: contextvars.ContextVar[str | None] = contextvars.ContextVar("COMMAND", default=None)


def job_command(name: str) -> str:
    """The command a job's messages name: the one the user typed."""
    return COMMAND.get() or f"python -m pipelines.{name}"


def prepare(
    options: PipelineOptions, tables: Sequence[str], job: JobSpec | None = None
) -> config.Target:
    """Validate and preflight before any data moves: fail early, with the fix in the message.
    The tables' declarations come from ``job``, else from the built-in ones."""
    target = resolve_target(options)
    bt = options.view_as(BigtableOptions)
    if not bt.skip_preflight:
        decls = [table_decl(job, t) if job is not None else builtin_tables.get(t) for t in tables]
        schema = job.schema_source if job is not None else None
        for line in admin.preflight(target, decls, create=bt.create_tables, schema=schema):
            _LOG.info("%s", line)
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


# How Beam's runners start the ValueError listing the options they refuse (Dataflow: no region,
# no temp_location, a malformed project).
_REFUSED_OPTIONS = "Pipeline has validations errors"


@contextlib.contextmanager
def runner_refusals(name: str) -> Iterator[None]:
    """Around making and running a pipeline: the runner's refusal of its options (raised when
    the pipeline is made or run) becomes one line that names them (``<job>: error: …``), not a
    traceback, since they are the user's to fix."""
    try:
        yield
    except ValueError as err:
        text = str(err)
        if not text.startswith(_REFUSED_OPTIONS):
            raise
        refused = "; ".join(line.strip() for line in text.splitlines()[1:] if line.strip())
        why = errors.ConfigError(f"the runner refuses the options: {refused}")
        raise config_exit(name, why) from None


def config_exit(name: str, err: UserError) -> SystemExit:
    """The end of job ``name`` for a mistake the user can fix, said under the command that
    started it: one line ``<command>: error: …``, no traceback (:func:`btts.exits.stop`)."""
    return exits.stop(err, COMMAND.get() or name)
