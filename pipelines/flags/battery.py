"""The battery job's description and own flags (names prefixed: Beam registers each flag once)."""

from __future__ import annotations

import functools

from pipelines.flags.spec import Flag, Group

__all__ = ["DESCRIPTION", "GROUP", "LAYOUTS", "salt_count", "schema"]

DESCRIPTION = """\
Battery levels → BATTERY, BATTERY_SALTED or BATTERY_TS_FIRST (docs/patterns.md §5.4), batch from
files.

--battery_layout picks the table: ``promoted`` (default; ``BATTERY#USER#YYYYMMDDHHMMSSmmm``),
``salted`` (``BATTERY#<salt>#YYYYMMDDHHMMSSmmm``) or ``timestamp_first`` (the documented
anti-pattern, kept for the schema advisor's demo). Keys use UTC times.

The salt bucket count belongs to the table declaration: changing it after data exists splits
rows of one time between old and new buckets and reads over the new count miss the old ones.
--salt_buckets must therefore equal the count a declared salted table holds (3 for
BATTERY_SALTED); another count needs its own declared table.

    python -m pipelines.battery --input 'battery/*.jsonl' --battery_layout salted --create_tables
"""

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


def _salt_buckets_help() -> str:
    """--salt_buckets' help names the count the salted table declares (read from the schema
    when a help or a template is made, not when the flags are imported)."""
    buckets = salt_count(LAYOUTS["salted"])
    return (
        "Salt bucket count of --battery_layout=salted. It must equal the count the "
        f"salted table declares ({buckets} for BATTERY_SALTED, the default): changing "
        "it after data exists loses rows from reads, so another count needs another "
        "declared table."
    )


# Which table the events land in, and its salt.
GROUP = Group.of(
    "battery_layout",
    "Battery layout",
    Flag(
        "--battery_layout",
        default="promoted",
        choices=tuple(LAYOUTS),
        help="promoted (default): user before the time, table BATTERY; salted: a stable "
        "salt before the time, table BATTERY_SALTED; timestamp_first: the hotspotting "
        "anti-pattern, table BATTERY_TS_FIRST (for demonstrations only).",
    ),
    Flag(
        "--salt_buckets",
        type=int,
        help=_salt_buckets_help,
    ),
)
