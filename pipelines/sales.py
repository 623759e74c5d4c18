"""Sales → SALES_MONTHLY aggregate cells (docs/patterns.md §3 rule 13, §5.6), batch from files.

Each sale adds its amount (integer cents) to ``sum:AMOUNT`` and 1 to ``sum:COUNT`` of the row
``EMPLOYEE#YYYYMM`` with ``AddToCell``, at the month's start as cell timestamp, so Bigtable keeps
one running sum per employee and month instead of one row per sale. Months follow --timezone
(default UTC).

NOT IDEMPOTENT: AddToCell adds, so running the same input twice doubles the sums (and a bundle
retried after a partial write failure re-adds what had succeeded). Run each input once; to
rebuild, drop the table (or its rows) and re-run everything.

    python -m pipelines.sales --input 'sales/*.jsonl' --create_tables
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.runner import PipelineResult

from pipelines import common

NAME = "sales"


# Months in UTC; job_for() gives the job for the configured --timezone.
JOB = common.builtin_job(NAME, __doc__)


class SalesOptions(common.FileInputOptions, common.BigtableOptions, common.TimeOptions):
    """The flags of this job: input files, dead letters, the Bigtable target and the zone."""


OPTION_CLASSES = SalesOptions.__bases__  # what run() parses and --help shows


def job_for(options: PipelineOptions) -> common.JobSpec:
    """The job with months in the configured zone (an unknown zone is a ConfigError)."""
    return common.builtin_job(NAME, __doc__, tz=common.timezone(options))


def build(
    pipeline: beam.Pipeline, options: PipelineOptions, job: common.JobSpec | None = None
) -> dict[str, beam.PCollection]:
    """Read lines → build AddCell rows (bad lines to dead letters) → AddToCell."""
    return common.build_ingest(pipeline, options, job or job_for(options))


def run(argv: Sequence[str] | None = None) -> PipelineResult:
    return common.run_file_ingest(
        argv,
        name=NAME,
        description=__doc__,
        classes=OPTION_CLASSES,
        build=build,
        job_for=job_for,
    )


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    run()
