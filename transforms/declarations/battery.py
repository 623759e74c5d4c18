"""Battery-level tables (docs/patterns.md §5.4), declared in ``battery.yaml``: one dataset, three
keys, to
show the hotspot remedies.

* ``BATTERY`` — field promotion, the default: the user goes in front of the time, so writes
  spread over every user's key range and "one user's levels between two times" is one range.
* ``BATTERY_SALTED`` — salting, for when no field can be promoted: a stable hash of the time
  picks one of ``SALT_BUCKETS`` buckets. The bucket count is part of this declaration, because
  changing it after data exists moves every new row to a different bucket than old rows of the
  same time and a read fanning out over the new count misses them. Another count is another
  table, declared next to this one in ``battery.yaml`` (a copy of BATTERY_SALTED with its own
  name and ``buckets: 8``); the job refuses a ``--salt_buckets`` that no declaration holds.
* ``BATTERY_TS_FIRST`` — the documented anti-pattern (the key starts with the time, so every
  write lands on the node holding "now"); kept only for the schema advisor and its demo.

The salted and time-first keys do not hold the user, so two users' readings of the same
millisecond share a row and the later write wins: that is the guidance's shape, one more reason
to prefer promotion.
"""

from __future__ import annotations

from transforms.schema_file import builtin_tables

_TABLES = builtin_tables("battery")
BATTERY = _TABLES["BATTERY"]
BATTERY_SALTED = _TABLES["BATTERY_SALTED"]
BATTERY_TS_FIRST = _TABLES["BATTERY_TS_FIRST"]

SALT_BUCKETS = BATTERY_SALTED.key.segments[1].width  # 3
TIME_FORMAT = BATTERY.key.segments[-1].arg  # yyyymmddhhmmssmmm
