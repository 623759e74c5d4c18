"""The balloon job's own flag (prefixed: Beam registers each flag once across all jobs)."""

from __future__ import annotations

import argparse

__all__ = ["PATTERNS", "pattern"]

# --balloon_pattern → the table of that column pattern (the same events land in any of them).
PATTERNS = {
    "TS-COLS": "BALLOON_TS_COLS",
    "TS-BLOB": "BALLOON_TS_BLOB",
    "TB-CELL": "BALLOON_TB_CELL",
    "TB-COL": "BALLOON_TB_COL",
}


def pattern(parser: argparse.ArgumentParser) -> None:
    """--balloon_pattern."""
    group = parser.add_argument_group("Weather-balloon column pattern")
    group.add_argument(
        "--balloon_pattern",
        default="TS-COLS",
        choices=tuple(PATTERNS),
        help="TS-COLS (default): one row per balloon and minute, a column per measurement "
        "(table BALLOON_TS_COLS); TS-BLOB: the same rows, the event as one protobuf cell "
        "(BALLOON_TS_BLOB); TB-CELL: one row per balloon and ISO week, a new cell per event "
        "in each measurement column (BALLOON_TB_CELL); TB-COL: one row per balloon, metric "
        "and ISO week, a new column per event named by its value (BALLOON_TB_COL).",
    )
