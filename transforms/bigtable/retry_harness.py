"""Test hook: replay every bundle's writes as a runner retrying the bundle would.

Dataflow re-runs a failed bundle whole, and what the failed attempt had already written stays.
The DirectRunner never retries, so tests build the write transforms with ``retry_harness=MODE``
(:class:`transforms.bigtable.write.WriteRows`, :class:`transforms.bigtable.write_aggregates.
WriteAggregates`): their DoFns hold each bundle's rows and send them at ``finish_bundle`` as the
attempts below. Production code never sets it.

* ``twice``: the bundle is written whole, then written whole again (a retry after a failure
  that came after the writes).
* ``half``: the first attempt is abandoned half-way, then the bundle is retried whole.

Pure: no Beam, no client.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["attempts", "parse"]

MODES = ("twice", "half")


def parse(value: str | None) -> str | None:
    """A harness mode from text (any case); None when empty. A typo fails loudly."""
    value = (value or "").strip().lower()
    if not value:
        return None
    if value not in MODES:
        raise ValueError(f"retry harness {value!r}: expected one of {', '.join(MODES)} (or none)")
    return value


def attempts(rows: Sequence, how: str) -> list[Sequence]:
    """The successive write attempts of one bundle's ``rows`` under mode ``how``."""
    if how == "twice":
        return [rows, rows]
    if how == "half":
        return [rows[: (len(rows) + 1) // 2], rows]
    raise ValueError(f"unknown retry harness mode {how!r}")
