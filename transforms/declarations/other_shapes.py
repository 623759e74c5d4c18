"""The other documented shapes (SPEC §5.6, §3 rules 3, 10 and 11), one table each."""

from __future__ import annotations

from transforms.schema import (
    Family,
    declare,
    epoch_ms,
    reverse_domain,
    reverse_id,
    tenant,
    text,
    time_label,
)

STOCK_PRICE = declare(
    "STOCK_PRICE",
    key=[text("symbol"), time_label("ts", "yyyymmdd")],
    families=[
        Family(
            "STOCK",
            max_versions=5,
            doc="history of corrections: a correction is a newer cell version, the wrong value "
            "stays as an older one",
        )
    ],
    pattern="VERSIONED",
    doc="Closing price per symbol and day, SYMBOL#YYYYMMDD → STOCK:PRICE. A correction writes a "
    "newer version of the same cell (never a new row); latest-value reads see the correction.",
    spec="5.6",
)

FRIENDS = declare(
    "FRIENDS",
    key=[text("person")],
    families=[Family("Friends", max_versions=1, doc="qualifier = friend's name, value = circle")],
    pattern="QUALIFIER-DATA",
    doc="Qualifiers as data: one row per person, one column per friend (value: the circle), so "
    "'who are Jose's friends' is one row read.",
    spec="5.6",
)

DEVICE = declare(
    "DEVICE",
    key=[tenant("tenant"), text("kind"), text("device"), time_label("ts", "yyyymmdd")],
    families=[
        Family(
            "STATS",
            max_versions=24 * 60,
            doc="one column per reading name, a timestamped cell per reading; keeps the day "
            "bucket's cells at one reading a minute",
        )
    ],
    pattern="TB-CELL",
    doc="Multi-tenant device data in one table: TENANT#KIND#DEVICE#YYYYMMDD "
    "(altostrat#phone#4c410523#20190501). A tenant's rows share its prefix, so offboarding drops "
    "that row range; no table per tenant.",
    spec="5.6",
)

WEB_PAGES = declare(
    "WEB_PAGES",
    key=[reverse_domain("domain"), time_label("ts", "yyyymmdd")],
    families=[Family("CRAWL", max_versions=1, doc="STATUS and BYTES of the day's crawl")],
    pattern="TS-COLS",
    doc="Daily crawl results keyed by reversed domain (com.google.maps#20150301): the pages of "
    "one site and its subdomains sort together and scan as one prefix.",
    spec="5.6",
)

USER_ACTIVITY = declare(
    "USER_ACTIVITY",
    key=[reverse_id("user_id"), epoch_ms("ts")],
    families=[Family("ACT", max_versions=1, doc="ACTION of one event")],
    pattern="TS-COLS",
    doc="User events keyed by the reversed sequential numeric user ID (12345 → 54321), so new "
    "users' writes spread over the key space instead of piling onto its end.",
    spec="5.6",
)
