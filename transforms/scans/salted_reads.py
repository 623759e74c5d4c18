"""Reading a salted table by time (docs/patterns.md §3 rule 5, §5.4): one scan per salt bucket,
merged.

A salted key is ``<constants>#<salt>#<time>…``. Rows of one time range sit in every bucket, so a
time-range read issues one range scan per bucket and merges the scans on the key *after* the
salt: each scan is in time order already, so a k-way merge gives the global time order.

:func:`salted_time_ranges` and :func:`merge_in_time_order` are pure; the scans are planned beside
every other time range (:func:`transforms.scans.key_ranges.salted_scans`).
"""

from __future__ import annotations

import datetime as dt
import heapq
from collections.abc import Iterable, Sequence

from transforms.table_model import TIME_FORMATS, TableDecl
from transforms.text import keys

__all__ = ["merge_in_time_order", "salted_time_ranges"]


def salt_prefixes(decl: TableDecl) -> tuple[list[str], object]:
    """The key text before the time segment in each salt bucket (``BATTERY#0#``…, in key order),
    and that segment. Only constants may precede the salt and a time must follow it — a label,
    epoch ms or a reversed time (the draft's ``salt, epoch_ms``): otherwise a time range is not
    one contiguous range per bucket."""
    segments = decl.key.segments
    at = next((i for i, s in enumerate(segments) if s.kind == "salt"), None)
    if at is None:
        raise ValueError(f"{decl.name}: the key has no salt segment")
    if any(s.kind != "const" for s in segments[:at]):
        raise ValueError(f"{decl.name}: only constant segments may precede the salt")
    after = segments[at + 1] if at + 1 < len(segments) else None
    plain = after is not None and (after.kind in ("time", "epoch_ms") or (after.kind == "reverse_ts"
                                   and not after.arg))  # fmt: skip
    if not plain:
        raise ValueError(f"{decl.name}: the salt must be followed by a time segment")
    delimiter = decl.key.delimiter
    head = "".join(s.arg + delimiter for s in segments[:at])
    buckets = keys.salt_buckets(segments[at].width or 1)
    return [f"{head}{salt}{delimiter}" for salt in buckets], after


def salted_time_ranges(
    decl: TableDecl, start_ms: int, end_ms: int, tz: dt.tzinfo = dt.timezone.utc
) -> list[tuple[bytes, bytes]]:
    """``[start, end)`` key ranges, one per salt bucket in key order, covering the events of
    ``start_ms <= t < end_ms`` (at the time segment's granularity: exact for milliseconds)."""
    if end_ms < start_ms:
        raise ValueError(f"time range ends ({end_ms}) before it starts ({start_ms})")
    prefixes, seg = salt_prefixes(decl)
    if seg.kind == "time":
        label = TIME_FORMATS[seg.arg]
        low, high = label(start_ms, tz), label(end_ms, tz)
    elif seg.kind == "epoch_ms":  # (epoch keys hold no time before 1970)
        low, high = keys.epoch_ms(max(start_ms, 0)), keys.epoch_ms(max(end_ms, 0))
    else:  # reversed: the newest first, so the end bound gives the smallest key
        if end_ms <= 0:
            return [(p.encode("utf-8"), p.encode("utf-8")) for p in prefixes]
        low = keys.reverse_timestamp(end_ms - 1)
        return [
            ((p + low).encode("utf-8"),
             keys.prefix_end((p + keys.reverse_timestamp(max(start_ms, 0))).encode("utf-8")))
            for p in prefixes
        ]  # fmt: skip
    return [((p + low).encode("utf-8"), (p + high).encode("utf-8")) for p in prefixes]


def merge_in_time_order(decl: TableDecl, scans: Sequence[Iterable]) -> list:
    """Merge per-bucket scans (each in key order; items have a ``key`` attribute) into one list
    in time order (newest first for a reversed time). Ties (same time, different buckets) fall
    back to the full key."""
    # Time order is the key after the salt's delimiter (every salt has the same width).
    prefixes, _ = salt_prefixes(decl)
    skip = len(prefixes[0].encode("utf-8"))
    return list(heapq.merge(*scans, key=lambda row: (row.key[skip:], row.key)))
