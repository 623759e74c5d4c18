"""Daily garden temperatures, tall-narrow and the bounded short-wide alternative (SPEC §5.6)."""

from __future__ import annotations

from transforms.schema import Family, declare, text, time_label

GARDEN_DAILY = declare(
    "GARDEN_DAILY",
    key=[text("garden"), time_label("date", "yyyymmdd")],
    families=[Family("DAILY", max_versions=1, doc="TEMP = the day's temperature")],
    pattern="TS-COLS",
    doc="Tall and narrow, one row per garden per day: a garden's days between two dates is the "
    "range GARDEN#start..GARDEN#end.",
    spec="5.6",
)

GARDEN_MONTHLY = declare(
    "GARDEN_MONTHLY",
    key=[text("garden"), time_label("date", "yyyymm")],
    families=[Family("TEMP", max_versions=1, doc="qualifier = day of month, 1..31 (unpadded)")],
    pattern="SHORT-WIDE",
    doc="Short and wide, one row per garden per month (at most 31 cells): a garden's month is a "
    "single-row read.",
    spec="5.6",
)
