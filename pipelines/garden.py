# The garden job. Its docstring, what its --help prints, is DESCRIPTION in
# pipelines/flags/garden.py, where --help reads it without importing Beam.

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import common
from pipelines.flags import garden as job_flags

__doc__ = job_flags.DESCRIPTION
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
