"""Test hook: replay every bundle's writes as a runner retrying the bundle would.

Dataflow re-runs a failed bundle whole, and what the failed attempt had already written stays.
The DirectRunner never retries, so tests set ``BTTS_TEST_RETRY_WRITES`` and the write DoFns
(:mod:`transforms.bigtable_write`, :mod:`transforms.aggregate_write`) hold each bundle's rows and
send them at ``finish_bundle`` as the attempts below. Unset (production), nothing changes.

* ``twice``: the bundle is written whole, then written whole again (a retry after a failure
  that came after the writes).
* ``half``: the first attempt is abandoned half-way, then the bundle is retried whole.

Pure: no Beam, no client.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

ENV = "BTTS_TEST_RETRY_WRITES"
MODES = ("twice", "half")


def mode() -> str | None:
    """The harness mode from the environment; None when off. A typo fails loudly."""
    value = os.environ.get(ENV, "").strip().lower()
    if not value:
        return None
    if value not in MODES:
        raise ValueError(f"{ENV}={value!r}: expected one of {', '.join(MODES)} (or unset)")
    return value


def attempts(rows: Sequence, how: str) -> list[Sequence]:
    """The successive write attempts of one bundle's ``rows`` under mode ``how``."""
    if how == "twice":
        return [rows, rows]
    if how == "half":
        return [rows[: (len(rows) + 1) // 2], rows]
    raise ValueError(f"unknown retry harness mode {how!r}")
