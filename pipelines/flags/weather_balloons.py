"""The balloon job's description and own flag (prefixed: Beam registers each flag once across
all jobs)."""

from __future__ import annotations

from pipelines.flags.spec import Flag, Group

__all__ = ["DESCRIPTION", "GROUP", "PATTERNS"]

DESCRIPTION = """\
Weather balloons → one of the four column patterns of docs/patterns.md §4, batch from files.

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
