"""Monthly sales per employee as aggregate cells (SPEC §3 rule 13, §5.6)."""

from __future__ import annotations

from transforms.schema import Family, declare, text, time_label

SALES_MONTHLY = declare(
    "SALES_MONTHLY",
    key=[text("employee"), time_label("ts", "yyyymm")],
    families=[
        Family(
            "sum",
            aggregate="sum",
            doc="int64 sums written with AddToCell: AMOUNT (cents) and COUNT (sales); every "
            "event of a month adds into the cell stamped with the month's start",
        )
    ],
    pattern="AGGREGATE",
    doc="Only the monthly total matters, so Bigtable keeps the sum instead of one row per sale: "
    "EMPLOYEE#YYYYMM holds sum:AMOUNT and sum:COUNT. AddToCell is not idempotent: re-running the "
    "same input adds it again.",
    spec="5.6",
)
