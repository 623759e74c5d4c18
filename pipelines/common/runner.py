"""Running a job: :func:`launch` makes its pipeline on the chosen runner, checks the tables
before any data moves (the preflight), builds the graph and starts it; a refusal on the way is
one line for the user, never a traceback."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.direct.direct_runner import SwitchingDirectRunner
from apache_beam.runners.runner import PipelineResult

from btts import admin, errors, exits
from pipelines.common.config import JobConfig
from pipelines.common.remote import Runner
from transforms.errors import UserError

__all__ = [
    "config_exit",
    "job_command",
    "launch",
    "new_pipeline",
    "runner_refusals",
]

_LOG = logging.getLogger(__name__)


def job_command(name: str, command: str | None = None) -> str:
    """The command a job's ``--help`` pointers name: the one the user typed, ``command`` when
    the job was started by another (``btts ingest --schema FILE``), else the job's module."""
    return command or f"python -m pipelines.{name}"


def launch(
    said: str,
    options: PipelineOptions,
    config: JobConfig,
    graph: Callable[[beam.Pipeline, JobConfig], object],
) -> PipelineResult:
    """Start the run ``config`` says, without waiting for it: the pipeline on its runner (given
    ``options``, for Beam and the runner alone), then, for a run that writes, the preflight
    (:func:`prepare`), then the graph (``graph``, which may read the tables first, as the sales
    job's ``--replace_months`` does), then the runner. A refusal on the way (the preflight's,
    the runner's) ends the job with one line under ``said``."""
    with runner_refusals(said):
        pipeline = new_pipeline(options, config.runner)
        if config.writes:
            prepare(config)
        graph(pipeline, config)
        return pipeline.run()


def prepare(config: JobConfig) -> None:
    """The preflight before any data moves: the run's tables exist (or are created with
    ``--create_tables``) with the families they need; fail early, with the fix in the message
    (a user's schema file named in it)."""
    if config.skip_preflight:
        return
    decls, schema = list(config.tables.values()), config.job.schema_source
    for line in admin.preflight(config.target, decls, create=config.create_tables, schema=schema):
        _LOG.info("%s", line)


def new_pipeline(options: PipelineOptions, runner: Runner) -> beam.Pipeline:
    """A pipeline on ``runner`` (as :func:`~pipelines.common.remote.runner_of` read it from
    ``options``); for Beam's DirectRunner, by any of its names (``direct`` too), its in-process
    runner without the first attempt on Prism. Beam 2.77 tries Prism before the in-process runner,
    which means fetching a Prism binary from GitHub: on a machine without internet that fails
    after 0.3 to 6 seconds per job, and with internet the job runs on another runner than the
    one its tests and benchmarks measure. Beam skips Prism for interactive runs; so do we."""
    if not runner.direct:
        return beam.Pipeline(options=options)
    direct = SwitchingDirectRunner()
    direct.is_interactive()  # Beam's own switch: Prism is not tried, nothing else changes
    return beam.Pipeline(runner=direct, options=options)


# How Beam's runners start the ValueError listing the options they refuse (Dataflow: no region,
# no temp_location, a malformed project).
_REFUSED_OPTIONS = "Pipeline has validations errors"


@contextlib.contextmanager
def runner_refusals(said: str) -> Iterator[None]:
    """Around starting a run: a refusal the user can fix ends the job with one line
    (``<said>: error: …``, ``said`` the command or job its errors are said under), not a
    traceback: a UserError (the preflight's), or the runner's
    refusal of its options (raised when the pipeline is made or run)."""
    try:
        yield
    except UserError as err:
        raise config_exit(said, err) from None
    except ValueError as err:
        text = str(err)
        if not text.startswith(_REFUSED_OPTIONS):
            raise
        refused = "; ".join(line.strip() for line in text.splitlines()[1:] if line.strip())
        why = errors.ConfigError(f"the runner refuses the options: {refused}")
        raise config_exit(said, why) from None


def config_exit(said: str, err: UserError) -> SystemExit:
    """The end of a job for a mistake the user can fix, said under ``said`` (the command that
    started it, or the job's name): one line ``<said>: error: …``, no traceback
    (:func:`btts.exits.stop`)."""
    return exits.stop(err, said)
