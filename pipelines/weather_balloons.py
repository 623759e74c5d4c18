"""Weather balloons → one of the four column patterns of docs/patterns.md §4, batch from files.

--balloon_pattern picks the table:
  TS-COLS (default; tall and narrow): BALLOON_TS_COLS, row LOCATION#BALLOON#YYYY-MM-DD-HHMM,
          one column per measurement;
  TS-BLOB: BALLOON_TS_BLOB, the same key, the event as one protobuf cell (measurements_blob);
  TB-CELL: BALLOON_TB_CELL, row LOCATION#BALLOON#<ISO week>, a new timestamped cell per event in
          the pressure/temperature/humidity/altitude columns;
  TB-COL:  BALLOON_TB_COL, row LOCATION#BALLOON#METRIC#<ISO week>, a new column per event named
          by the measured value.
Time labels are UTC; cell timestamps are event times.

    python -m pipelines.weather_balloons --input 'balloons/*.jsonl' --balloon_pattern TB-CELL \\
        --create_tables
"""

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import common
from pipelines.flags import weather_balloons as job_flags

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
