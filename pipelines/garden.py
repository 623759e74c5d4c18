"""Garden temperatures → GARDEN_DAILY and/or GARDEN_MONTHLY (docs/patterns.md §5.6), batch from
JSON lines or CSV.

--garden_layout picks the documented shape: ``tall`` (default) writes one row per garden per day
``GARDEN#YYYYMMDD`` with ``DAILY:TEMP``; ``month`` writes the bounded short-wide alternative, one
row per garden per month ``GARDEN#YYYYMM`` with one column per day ``TEMP:1`` … ``TEMP:31``;
``both`` writes both tables. Cell timestamps are midnight UTC of each date.

    python -m pipelines.garden --input 'temps/*.csv' --garden_layout both --create_tables
"""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import common
from pipelines.flags import garden as job_flags

__all__ = ["JOB", "OPTION_CLASSES", "build", "run"]

DEFAULT_LAYOUT, LAYOUTS = job_flags.DEFAULT_LAYOUT, job_flags.LAYOUTS  # --garden_layout → tables
# The job with its default flags (tall layout); job_for picks the tables of --garden_layout.
JOB = common.builtin_job("garden", __doc__, tables=LAYOUTS[DEFAULT_LAYOUT])


# What run() parses and --help shows.
OPTION_CLASSES = common.option_classes("garden")


def job_for(options: PipelineOptions) -> common.JobSpec:
    """The job for these options: --garden_layout chooses the tables and the rows built."""
    own = options.view_as(common.options_class(job_flags.GROUP))
    layout = own.garden_layout  # argparse checked it
    return common.builtin_job("garden", __doc__, tables=LAYOUTS[layout])


ENTRY = common.IngestEntry(JOB.name, __doc__, OPTION_CLASSES, job_for)
build, run = ENTRY.build, ENTRY.run

if __name__ == "__main__":
    ENTRY.main()
