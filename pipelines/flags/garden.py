"""The garden job's own flag: which table(s) it writes."""

from __future__ import annotations

from pipelines.flags.spec import Flag, Group

__all__ = ["DEFAULT_LAYOUT", "GROUP", "LAYOUTS"]

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
