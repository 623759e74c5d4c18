"""The nightly job's own flags (unique names across all jobs: Beam parses them
together)."""

from __future__ import annotations

import argparse

from pipelines.flags.spec import Flag, Group

__all__ = ["GROUP", "LAYOUTS", "MAX_DATES", "SINGLE_TABLE_SUFFIX"]

# One run covers at most this many days (the day filter is one regex, at most 16 KiB).
MAX_DATES = 366
SINGLE_TABLE_SUFFIX = "DAILY"
LAYOUTS = ("per_day_table", "single_table")


def _flag(text: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "yes", "1", "on"):
        return True
    if value in ("false", "no", "0", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


# Which days, where they go, retention and verification.
GROUP = Group.of(
    "nightly",
    "Nightly copy",
    Flag(
        "--date",
        help="Day to copy, YYYYMMDD. Default: yesterday in --timezone.",
    ),
    Flag(
        "--dates",
        help="Days to copy for a backfill, START..END (YYYYMMDD..YYYYMMDD, inclusive), read "
        f"in one scan of the source; at most {MAX_DATES} days. Not with --date.",
    ),
    Flag(
        "--keep_days",
        type=int,
        help="Retention: keep the daily tables of the N days ending with the run date and "
        "drop older <source>_YYYYMMDD tables (single_table layout: older day prefixes). "
        "Default: drop nothing.",
    ),
    Flag(
        "--layout",
        default="per_day_table",
        choices=LAYOUTS,
        help="per_day_table (default): one table <source>_YYYYMMDD per day. single_table: "
        f"one table <source>_{SINGLE_TABLE_SUFFIX} keyed YYYYMMDD#METER.",
    ),
    Flag(
        "--source_table",
        default="SENSOR",
        help="Declared table to copy from; its keys must end with #YYYYMMDD. Default: SENSOR.",
    ),
    Flag(
        "--verify",
        type=_flag,
        nargs="?",
        const=True,
        default=True,
        help="After the copy, compare row count and content checksum of source and "
        "destination per day and fail on any difference (default; --verify=false or "
        "--no_verify to skip).",
    ),
    Flag(
        "--no_verify",
        dest="verify",
        action="store_false",
        help="Skip the verification.",
    ),
)
