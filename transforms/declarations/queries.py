"""Tables that exist for one query shape the other declarations do not cover (docs/patterns.md §3
rule 6),
declared in ``queries.yaml``.

* ``METRIC_RECENT`` — the server metrics again, keyed ``HOSTNAME#<reversed timestamp>``
  (``Long.MAX_VALUE - ts``, 19 digits), for the query "the latest N readings of a host": the
  newest row sorts first, so the answer is the first N rows of the prefix ``HOSTNAME#`` (one
  short scan with a row limit), whatever the size of the host's history. METRIC answers time
  ranges; this table answers "latest first", which is the only case the guidance reverses
  timestamps for.
"""

from __future__ import annotations

from transforms.schema_file import builtin_tables

METRIC_RECENT = builtin_tables("queries")["METRIC_RECENT"]
