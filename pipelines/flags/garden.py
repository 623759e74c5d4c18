"""The garden job's description and own flag: which table(s) it writes."""

from __future__ import annotations

from pipelines.flags.spec import Flag, Group

__all__ = ["DEFAULT_LAYOUT", "DESCRIPTION", "GROUP", "LAYOUTS"]

DESCRIPTION = """\
Garden temperatures → GARDEN_DAILY and/or GARDEN_MONTHLY (docs/patterns.md §5.6), batch from
JSON lines or CSV.

--garden_layout picks the documented shape: ``tall`` (default) writes one row per garden per day
``GARDEN#YYYYMMDD`` with ``DAILY:TEMP``; ``month`` writes the bounded short-wide alternative, one
row per garden per month ``GARDEN#YYYYMM`` with one column per day ``TEMP:1`` … ``TEMP:31``;
``both`` writes both tables. Cell timestamps are midnight UTC of each date.

    python -m pipelines.garden --input 'temps/*.csv' --garden_layout both --create_tables
"""

DEFAULT_LAYOUT = "tall"
# --garden_layout → the tables it writes.
LAYOUTS = {
    "tall": ("GARDEN_DAILY",),
    "month": ("GARDEN_MONTHLY",),
    "both": ("GARDEN_DAILY", "GARDEN_MONTHLY"),
}

GROUP = Group.of(
    "garden_layout",
    "Garden",
    Flag(
        "--garden_layout",
        default=DEFAULT_LAYOUT,
        choices=sorted(LAYOUTS),
        help="tall: one row per garden per day (GARDEN_DAILY); month: one row per garden per "
        "month, one column per day (GARDEN_MONTHLY); both: write both tables. "
        f"Default: {DEFAULT_LAYOUT}.",
    ),
)
