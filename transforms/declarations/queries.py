"""Tables that exist for one query shape the other declarations do not cover (SPEC §3 rule 6).

* ``METRIC_RECENT`` — the server metrics again, keyed ``HOSTNAME#<reversed timestamp>``
  (``Long.MAX_VALUE - ts``, 19 digits), for the query "the latest N readings of a host": the
  newest row sorts first, so the answer is the first N rows of the prefix ``HOSTNAME#`` (one
  short scan with a row limit), whatever the size of the host's history. METRIC answers time
  ranges; this table answers "latest first", which is the only case the guidance reverses
  timestamps for.
"""

from __future__ import annotations

from transforms.schema import Family, declare, reverse_ts, text

METRIC_RECENT = declare(
    "METRIC_RECENT",
    key=[text("hostname"), reverse_ts("ts")],
    families=[Family("METRIC", max_versions=1, doc="one cell per metric name (upper case)")],
    pattern="TS-COLS",
    doc="Server metrics newest first: HOSTNAME#(9223372036854775807 - TS), 19 digits. A host's "
    "latest N readings are the first N rows of the prefix HOSTNAME#.",
    spec="3.6",
)
