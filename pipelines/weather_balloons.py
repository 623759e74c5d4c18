# The weather_balloons job. Its docstring, what its --help prints, is DESCRIPTION in
# pipelines/flags/weather_balloons.py, where --help reads it without importing Beam.

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import common
from pipelines.flags import weather_balloons as job_flags

__doc__ = job_flags.DESCRIPTION
__all__ = ["OPTION_CLASSES", "build", "run"]

NAME = "weather_balloons"
PATTERNS = job_flags.PATTERNS  # --balloon_pattern → the table of that column pattern


# What run() parses and --help shows.
OPTION_CLASSES = common.option_classes(NAME)


def job_for(options: PipelineOptions) -> common.JobSpec:
    """The job writing the table of the chosen column pattern."""
    own = options.view_as(common.options_class(job_flags.GROUP))
    pattern = own.balloon_pattern  # argparse checked it
    return common.builtin_job(NAME, __doc__, tables=(PATTERNS[pattern],))


ENTRY = common.IngestEntry(NAME, __doc__, OPTION_CLASSES, job_for)
build, run = ENTRY.build, ENTRY.run

if __name__ == "__main__":
    ENTRY.main()
