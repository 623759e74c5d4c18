# The game_results job. Its docstring, what its --help prints, is DESCRIPTION in
# pipelines/flags/game_results.py, where --help reads it without importing Beam.

from __future__ import annotations

from pipelines import common
from pipelines.flags import game_results as job_flags

__doc__ = job_flags.DESCRIPTION
__all__ = ["JOB", "OPTION_CLASSES", "build", "run"]

JOB = common.builtin_job("game_results", __doc__)


# What run() parses and --help shows.
OPTION_CLASSES = common.option_classes("game_results")


ENTRY = common.IngestEntry(JOB.name, __doc__, OPTION_CLASSES, JOB)
build, run = ENTRY.build, ENTRY.run

if __name__ == "__main__":
    ENTRY.main()
