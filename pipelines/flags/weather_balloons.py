"""The balloon job's own flag (prefixed: Beam registers each flag once across
all jobs)."""

from __future__ import annotations

from pipelines.flags.spec import Flag, Group

__all__ = ["GROUP", "PATTERNS"]

# --balloon_pattern → the table of that column pattern (the same events land in any of them).
PATTERNS = {
    "TS-COLS": "BALLOON_TS_COLS",
    "TS-BLOB": "BALLOON_TS_BLOB",
    "TB-CELL": "BALLOON_TB_CELL",
    "TB-COL": "BALLOON_TB_COL",
}

GROUP = Group.of(
    "balloon_pattern",
    "Weather-balloon column pattern",
    Flag(
        "--balloon_pattern",
        default="TS-COLS",
        choices=tuple(PATTERNS),
        help="TS-COLS (default): one row per balloon and minute, a column per measurement "
        "(table BALLOON_TS_COLS); TS-BLOB: the same rows, the event as one protobuf cell "
        "(BALLOON_TS_BLOB); TB-CELL: one row per balloon and ISO week, a new cell per event "
        "in each measurement column (BALLOON_TB_CELL); TB-COL: one row per balloon, metric "
        "and ISO week, a new column per event named by its value (BALLOON_TB_COL).",
    ),
)
