"""Battery-level tables (SPEC §5.4): one dataset, three keys, to show the hotspot remedies.

Events: a user, a time (``YYYYMMDDHHMMSSmmm`` in keys, UTC) and a charge percentage.

* ``BATTERY`` — field promotion, the default: the user goes in front of the time, so writes
  spread over every user's key range and "one user's levels between two times" is one range.
* ``BATTERY_SALTED`` — salting, for when no field can be promoted: a stable hash of the time
  picks one of ``SALT_BUCKETS`` buckets. The bucket count is part of this declaration, because
  changing it after data exists moves every new row to a different bucket than old rows of the
  same time and a read fanning out over the new count misses them. Another count is another
  table, declared next to this one (e.g. ``BATTERY_SALTED_8 = salted_table("BATTERY_SALTED_8",
  8)``); the job refuses a ``--salt_buckets`` that no declaration holds.
* ``BATTERY_TS_FIRST`` — the documented anti-pattern (the key starts with the time, so every
  write lands on the node holding "now"); kept only for the schema advisor and its demo.

The salted and time-first keys do not hold the user, so two users' readings of the same
millisecond share a row and the later write wins: that is the guidance's shape, one more reason
to prefer promotion.
"""

from __future__ import annotations

from transforms.schema import Family, TableDecl, const, declare, salted, text, time_label

SALT_BUCKETS = 3
TIME_FORMAT = "yyyymmddhhmmssmmm"

_FAMILY = Family("METRIC", max_versions=1, doc="one version: a re-run rewrites the same cell")


def salted_table(name: str, buckets: int) -> TableDecl:
    """A salted battery table with its own, fixed bucket count."""
    return declare(
        name,
        key=[const("BATTERY"), salted(buckets, "ts"), time_label("ts", TIME_FORMAT)],
        families=[_FAMILY],
        pattern="TS-COLS",
        doc=f"Salted battery levels ({buckets} buckets of a stable hash of the time): writes of "
        "one moment spread over the buckets; a time-range read scans one range per bucket and "
        "merges them. The bucket count is fixed by this declaration.",
        spec="5.4",
    )


BATTERY = declare(
    "BATTERY",
    key=[const("BATTERY"), text("user"), time_label("ts", TIME_FORMAT)],
    families=[_FAMILY],
    pattern="TS-COLS",
    doc="Battery levels with the user promoted in front of the time (the preferred remedy): one "
    "user's levels between two times is one contiguous range.",
    spec="5.4",
)

BATTERY_SALTED = salted_table("BATTERY_SALTED", SALT_BUCKETS)

BATTERY_TS_FIRST = declare(
    "BATTERY_TS_FIRST",
    key=[const("BATTERY"), time_label("ts", TIME_FORMAT)],
    families=[_FAMILY],
    pattern="TS-COLS",
    doc="ANTI-PATTERN kept for the schema advisor and its demo: the key starts with the time, "
    "so every write goes to the one node holding the newest keys.",
    spec="5.4",
)
