"""Reading a salted table by time (docs/patterns.md §3 rule 5, §5.4): one scan per salt bucket,
merged.

A salted key is ``<constants>#<salt>#<time>…``. Rows of one time range sit in every bucket, so a
time-range read issues one range scan per bucket and merges the scans on the key *after* the
salt: each scan is in time order already, so a k-way merge gives the global time order.

:func:`merge_in_time_order` is pure; the ranges are planned beside every other time range
(:func:`transforms.scans.key_ranges.salted_scans`).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

from transforms.scans.key_ranges import salt_prefixes
from transforms.table_model import TableDecl

__all__ = ["merge_in_time_order"]


def merge_in_time_order(decl: TableDecl, scans: Sequence[Iterable]) -> list:
    """Merge per-bucket scans (each in key order; items have a ``key`` attribute) into one list
    in time order (newest first for a reversed time). Ties (same time, different buckets) fall
    back to the full key."""
    # Time order is the key after the salt's delimiter (every salt has the same width).
    prefixes, _ = salt_prefixes(decl)
    skip = len(prefixes[0].encode("utf-8"))
    return list(heapq.merge(*scans, key=lambda row: (row.key[skip:], row.key)))
