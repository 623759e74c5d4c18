# The smart_meters job. Its docstring, what its --help prints, is DESCRIPTION in
# pipelines/flags/smart_meters.py, where --help reads it without importing Beam.

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import common
from pipelines.flags import smart_meters as job_flags

__doc__ = job_flags.DESCRIPTION
__all__ = ["JOB", "OPTION_CLASSES", "build", "run"]

# The job with its default flags (UTC days); job_for binds the configured zone.
JOB = common.builtin_job("smart_meters", __doc__)


# What run() parses and --help shows.
OPTION_CLASSES = common.option_classes("smart_meters")


def job_for(options: PipelineOptions) -> common.JobSpec:
    """The job for these options: the builder labels days and times in --timezone (an unknown
    zone raises ConfigError before anything runs)."""
    return common.builtin_job("smart_meters", __doc__, tz=common.timezone(options))


ENTRY = common.IngestEntry(JOB.name, __doc__, OPTION_CLASSES, job_for)
build, run = ENTRY.build, ENTRY.run

if __name__ == "__main__":
    ENTRY.main()
