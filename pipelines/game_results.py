"""Game results → GAME_BY_PLAYER and GAME_BY_DATE (docs/patterns.md §5.5), batch from JSON-lines or
CSV.

Two queries need two keys, so every result is written to both tables with the same cells:
``GAME#PLAYER#YYYYMMDD`` (one player's games over a period) and ``GAME#YYYYMMDD#PLAYER`` (every
game over a period). Cell timestamps are midnight UTC of the result's date.

    python -m pipelines.game_results --input 'results/*.jsonl' --create_tables
"""

from __future__ import annotations

from pipelines import common

__all__ = ["JOB", "OPTION_CLASSES", "build", "run"]

JOB = common.builtin_job("game_results", __doc__)


# What run() parses and --help shows.
OPTION_CLASSES = common.option_classes("game_results")


ENTRY = common.IngestEntry(JOB.name, __doc__, OPTION_CLASSES, JOB)
build, run = ENTRY.build, ENTRY.run

if __name__ == "__main__":
    ENTRY.main()
