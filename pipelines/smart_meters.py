"""Smart-meter readings → SENSOR (docs/patterns.md §5.3), batch from JSON-lines or CSV files.

Each reading lands in its meter's day row ``METER#YYYYMMDD`` (meter id zero-padded to 10 digits)
as a column named by its time of day ``HHMM``, beside ``ID`` (the meter id). The day boundary and
the ``HHMM`` names follow --timezone (default UTC); cell timestamps are the event times.

    python -m pipelines.smart_meters --input 'readings/*.jsonl' --timezone Europe/Paris
    python -m pipelines.smart_meters --input_subscription projects/P/subscriptions/S \\
        --dead_letter_topic projects/P/topics/T --hourly_rollup   # streaming, with SENSOR_HOURLY
"""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import common

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
