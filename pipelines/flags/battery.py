"""The battery job's own flags (names prefixed: Beam registers each flag once)."""

from __future__ import annotations

import argparse
import functools

__all__ = ["LAYOUTS", "layout", "salt_count", "schema"]

NAME = "battery"
# --battery_layout → table
LAYOUTS = {
    "promoted": "BATTERY",
    "salted": "BATTERY_SALTED",
    "timestamp_first": "BATTERY_TS_FIRST",
}


@functools.cache
def schema():
    """The battery dataset's built-in schema (loaded once, when first asked for)."""
    from transforms import schema as schema_lib

    return schema_lib.builtin(NAME)


def salt_count(table: str) -> int | None:
    """The bucket count a table's declaration fixes for its salt segment (None: not salted)."""
    segments = schema().table(table).decl.key.segments
    return next((s.width for s in segments if s.kind == "salt"), None)


def layout(parser: argparse.ArgumentParser) -> None:
    """Which table the events land in, and its salt."""
    buckets = salt_count(LAYOUTS["salted"])
    group = parser.add_argument_group("Battery layout")
    group.add_argument(
        "--battery_layout",
        default="promoted",
        choices=tuple(LAYOUTS),
        help="promoted (default): user before the time, table BATTERY; salted: a stable "
        "salt before the time, table BATTERY_SALTED; timestamp_first: the hotspotting "
        "anti-pattern, table BATTERY_TS_FIRST (for demonstrations only).",
    )
    group.add_argument(
        "--salt_buckets",
        type=int,
        help="Salt bucket count of --battery_layout=salted. It must equal the count the "
        f"salted table declares ({buckets} for BATTERY_SALTED, the default): changing "
        "it after data exists loses rows from reads, so another count needs another "
        "declared table.",
    )
