# The nightly job. Its docstring, what its --help prints, is DESCRIPTION in
# pipelines/flags/nightly.py, where --help reads it without importing Beam.

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import common
from pipelines.flags import nightly as job_flags
from pipelines.nightly.admin_steps import prepare
from pipelines.nightly.graph import build_plan
from pipelines.nightly.plan import OPTION_CLASSES, make_plan
from pipelines.nightly.summary import NAME, summary
from transforms.errors import UserError

__doc__ = job_flags.DESCRIPTION
__all__ = ["build", "run"]

_LOG = logging.getLogger(__name__)


def build(pipeline: beam.Pipeline, options: PipelineOptions) -> dict[str, beam.PCollection]:
    """The job's graph for these options (the admin steps are :func:`prepare`, run first)."""
    return build_plan(pipeline, make_plan(options))


def run(argv: Sequence[str] | None = None, command: str | None = None) -> common.RunReport:
    """Plan, prepare the tables, copy (and verify); prints rows scanned, copied and the time,
    and returns the run's report (its ``plan`` included). ``command``: how the user started
    it when not as ``python -m pipelines.nightly``, which its errors name. A mistake the user
    can fix ends it with one line (SystemExit)."""
    said = command or NAME
    try:
        options = common.parse_args(
            argv, command or f"python -m pipelines.{NAME}", __doc__ or "", OPTION_CLASSES
        )
        plan = make_plan(options)
        started = time.monotonic()
        dry = common.is_dry_run(options)
        for line in [] if dry else prepare(plan):  # a dry run touches no table
            _LOG.info("%s", line)
    except UserError as err:
        raise common.config_exit(said, err) from None
    _LOG.info("copying %s day(s) %s of %s", len(plan.days), ", ".join(plan.days), plan.source.name)
    with common.runner_refusals(said):
        pipeline = common.new_pipeline(options, plan.runner)
        build_plan(pipeline, plan)
        result = pipeline.run()
    if dry:
        what = (
            f"create {', '.join(plan.destinations)} and copy day(s) {', '.join(plan.days)} "
            f"of {plan.source.name} into it ({plan.layout})"
        )
        print(common.dry_run_report(NAME, plan.runner, what), flush=True)
        return common.RunReport(
            NAME, {}, tables=plan.destinations, plan=plan, dry_run=True, result=result
        )
    result.wait_until_finish()
    seconds = time.monotonic() - started
    totals = common.counters(result)
    print(summary(plan, totals, seconds), flush=True)
    return common.RunReport(
        NAME, totals, seconds, plan.destinations, plan.target, plan=plan, result=result
    )
