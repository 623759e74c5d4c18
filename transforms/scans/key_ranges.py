"""The reads each schema was designed for, computed from the table declarations (docs/patterns.md
§2 (c)).

Pure: no Beam, no client. A query is planned as a :class:`Scan` — the table, the row keys or
``[start, end)`` key ranges, an optional cell-time window and row limit — built from the same
:class:`~transforms.table_model.KeyRecipe` that builds the keys at write time, so a read can never
disagree with a write about a padding width, a label format or a delimiter. ``btts.query.engine``
executes the scans and decodes the rows.

* :func:`row_scan` — whole rows (all the key's fields given): the keys the writer built.
* :func:`key_prefix` / :func:`prefix_scan` — every row whose leading segments are fixed.
* :func:`time_range` — the rows of ``start_ms <= t < end_ms`` after the fixed leading segments:
  the time segment that follows them gives the bounds (13-digit epoch ms, a calendar label, or a
  reversed timestamp, whose newest row sorts first).
* :func:`time_scans` / :func:`salted_scans` — a time window over many series, or over every salt
  bucket: the key ranges a time-series read (``btts query``, ``btts serve``) plans.

Calendar labels (days, weeks, months) are coarser than a time range, so a bucket row can hold
cells outside it: scans carry the time window, which the reader applies to cell timestamps (the
event times), making every answer exact.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from transforms.errors import InvalidEvent
from transforms.table_model import (
    TIME_FORMATS,
    TIME_KINDS,
    KeyRecipe,
    Segment,
    TableDecl,
    cell_micros,
)
from transforms.text import keys, timefmt

__all__ = [
    "WHOLE_TABLE",
    "KeyRange",
    "Scan",
    "Window",
    "key_prefix",
    "prefix_range",
    "prefix_scan",
    "row_scan",
    "salt_prefixes",
    "salted_scans",
    "split_key",
    "time_scan",
    "time_scans",
]

KeyRange = tuple[bytes, bytes]  # [start, end); b"" as end = to the end of the table
WHOLE_TABLE: KeyRange = (b"", b"")
UTC = timefmt.UTC


@dataclass(frozen=True)
class Window:
    """A span of time in epoch ms, planned once and passed whole: ``[start_ms, end_ms)`` read
    or bucketed, or the ``[start_ms, end_ms]`` an OpenTSDB answer shows (it includes the
    end)."""

    start_ms: int
    end_ms: int


@dataclass(frozen=True)
class Scan:
    """One planned read of one table.

    ``row_keys`` or ``ranges`` select rows (both empty: nothing); ``start_ms``/``end_ms`` keep
    only cells stamped in ``[start_ms, end_ms)`` (event times: ``cell_timestamp`` is how the
    table's cell timestamps hold them, see :meth:`cell_window`); ``latest_only`` keeps the
    newest cell of each column; ``limit`` stops after that many rows (in key order).
    """

    table: str
    ranges: tuple[KeyRange, ...] = ()
    row_keys: tuple[bytes, ...] = ()
    start_ms: int | None = None
    end_ms: int | None = None
    latest_only: bool = False
    limit: int | None = None
    cell_timestamp: str = "unix"

    def cell_window(self) -> tuple[int | None, int | None]:
        """``[start, end)`` of the cell timestamps (µs) the time window keeps, as the table
        stores them (None: unbounded). Never below 0: no cell timestamp is."""
        start = end = None
        if self.start_ms is not None:
            start = max(cell_micros(self.start_ms, self.cell_timestamp), 0)
        if self.end_ms is not None:
            end = max(cell_micros(self.end_ms, self.cell_timestamp), 0)
        return start, end

    def describe(self) -> str:
        """What the scan reads, in words a person can check against ``cbt read``."""
        if self.row_keys:
            what = "row " + ", ".join(_show(k) for k in self.row_keys)
        elif self.ranges == (WHOLE_TABLE,):
            what = "the whole table"
        else:
            what = " + ".join(f"[{_show(s)}, {_show(e) if e else 'end'})" for s, e in self.ranges)
        extra = []
        if self.start_ms is not None or self.end_ms is not None:
            low = timefmt.iso(self.start_ms) if self.start_ms is not None else "-∞"
            high = timefmt.iso(self.end_ms) if self.end_ms is not None else "∞"
            extra.append(f"cells stamped [{low}, {high})")
        if self.latest_only:
            extra.append("newest cell per column")
        if self.limit:
            extra.append(f"first {self.limit} row(s)")
        return f"{self.table}: {what}" + (f"; {'; '.join(extra)}" if extra else "")

    def cbt_args(self) -> list[str] | None:
        """The ``cbt read`` arguments reading the same rows (one range or one row), or None."""
        args = ["read", self.table]
        if len(self.row_keys) == 1 and not self.ranges:
            args.append(f"prefix={self.row_keys[0].decode('utf-8')}")
        elif len(self.ranges) == 1 and not self.row_keys:
            start, end = self.ranges[0]
            if start:
                args.append(f"start={start.decode('utf-8')}")
            if end:
                args.append(f"end={end.decode('utf-8')}")
        else:
            return None
        if self.limit:
            args.append(f"count={self.limit}")
        if self.latest_only:
            args.append("cells-per-column=1")
        return args


def _show(key: bytes) -> str:
    return key.decode("utf-8", errors="backslashreplace")


# -- keys and prefixes from the declarations ---------------------------------------------------


def _fixed_count(decl: TableDecl, values: Mapping[str, object]) -> int:
    """How many leading segments ``values`` determines. A given field that is not part of that
    leading run is an error: it could not narrow a contiguous range, only a full scan."""
    segments = decl.key.segments
    count = next((i for i, s in enumerate(segments) if not _is_fixed(s, values)), len(segments))
    later = {s.field for s in segments[count:] if s.field}
    stray = sorted(f for f in values if f in later)
    unknown = sorted(f for f in values if f not in decl.key.fields and f not in _salt_inputs(decl))
    if unknown:
        raise ValueError(f"{decl.name}: {', '.join(unknown)} not in the key {decl.key.describe()}")
    if stray:
        missing = segments[count].label
        raise ValueError(
            f"{decl.name}: {', '.join(stray)} cannot narrow the read without {missing} "
            f"(key {decl.key.describe()}): only leading segments make a contiguous range"
        )
    return count


def _is_fixed(seg: Segment, values: Mapping[str, object]) -> bool:
    if seg.kind == "const":
        return True
    if seg.kind == "salt":
        return all(f in values for f in seg.of)
    return bool(seg.field) and seg.field in values


def _salt_inputs(decl: TableDecl) -> set[str]:
    return {f for s in decl.key.segments if s.kind == "salt" for f in s.of}


def _partial(decl: TableDecl, count: int) -> KeyRecipe:
    return KeyRecipe(tuple(decl.key.segments[:count]), decl.key.delimiter)


def key_prefix(decl: TableDecl, values: Mapping[str, object], tz: dt.tzinfo = UTC) -> bytes:
    """The key text of the leading segments ``values`` fixes, with the delimiter after it
    (``acme#`` never matches ``acme2#…``); ``b""`` when nothing is fixed (the whole table)."""
    count = _fixed_count(decl, values)
    if count == 0:
        return b""
    if count == len(decl.key.segments):
        raise ValueError(f"{decl.name}: every key field is given; read the row with row_key()")
    return _partial(decl, count).build(values, tz) + decl.key.delimiter.encode("utf-8")


def prefix_range(prefix: bytes) -> KeyRange:
    """The key range of every key starting with ``prefix`` (``b""`` = the whole table)."""
    return (prefix, keys.prefix_end(prefix)) if prefix else WHOLE_TABLE


def prefix_scan(decl: TableDecl, values: Mapping[str, object], tz: dt.tzinfo = UTC) -> Scan:
    """Every row whose leading segments equal ``values`` (the whole table for none)."""
    return Scan(decl.name, ranges=(prefix_range(key_prefix(decl, values, tz)),))


def time_range(
    decl: TableDecl, values: Mapping[str, object], start_ms: int, end_ms: int, tz: dt.tzinfo = UTC
) -> KeyRange:
    """``[start, end)`` keys holding every row of ``values`` whose time segment falls in
    ``start_ms <= t < end_ms``. A calendar label covers its whole bucket (the row of the day,
    week… holding ``end_ms - 1`` is included); a reversed timestamp swaps the bounds."""
    if end_ms <= start_ms:
        raise ValueError(
            f"the time range ends at {timefmt.iso(end_ms)} (--end), at or before its start "
            f"{timefmt.iso(start_ms)} (--start)"
        )
    count = _fixed_count(decl, values)
    segments = decl.key.segments
    if count >= len(segments) or segments[count].kind not in TIME_KINDS:
        found = segments[count].label if count < len(segments) else "nothing"
        raise ValueError(
            f"{decl.name}: after the given fields the key {decl.key.describe()} has {found}, "
            "not a time: a time range is not one contiguous range here"
        )
    seg = segments[count]  # the segment right after the fixed ones holds the time
    recipe = _partial(decl, count + 1)
    if seg.kind in ("epoch_ms", "reverse_ts"):  # epoch keys hold no time before 1970
        start_ms, end_ms = max(start_ms, 0), max(end_ms, 1)

    def key_at(ms: int) -> bytes:
        return recipe.build({**values, seg.field: ms}, tz)

    def after(last_ms: int, next_ms: int) -> bytes:
        """The exclusive end past the bucket of ``last_ms``: the key of ``next_ms`` when it
        starts a later bucket (readable: ``host#<end ms>``), else just past that bucket."""
        last = key_at(last_ms)
        try:  # a time the segment cannot hold (an epoch key before 1970…): past the bucket
            following = key_at(next_ms)
        except (InvalidEvent, ValueError, OverflowError):
            return keys.prefix_end(last)
        if following > last and len(following) == len(last):  # fixed-width labels
            return following
        return keys.prefix_end(last)

    if seg.kind == "reverse_ts":  # newest first: the end bound gives the smallest key
        return key_at(end_ms - 1), after(start_ms, start_ms - 1)
    return key_at(start_ms), after(end_ms - 1, end_ms)


def time_scan(
    decl: TableDecl, values: Mapping[str, object], window: Window, tz: dt.tzinfo = UTC
) -> Scan:
    """The range of :func:`time_range`, keeping only cells stamped in the ``window``."""
    span = time_range(decl, values, window.start_ms, window.end_ms, tz)
    return Scan(
        decl.name,
        ranges=(span,),
        start_ms=window.start_ms,
        end_ms=window.end_ms,
        cell_timestamp=decl.cell_timestamp,
    )


def time_scans(
    decl: TableDecl,
    combos: Sequence[Mapping[str, object]],
    window: Window,
    tz: dt.tzinfo = UTC,
) -> list[Scan]:
    """:func:`time_scan` of each of ``combos`` (the same fields given in each), the time
    bounds worked out once: every combo's range is its own key prefix before the same time
    text (a ``*`` over 10,000 series is 10,000 ranges)."""
    if not combos:
        return []
    first = time_scan(decl, combos[0], window, tz)
    count = _fixed_count(decl, combos[0])
    if any(s.kind == "salt" for s in decl.key.segments[: count + 1]):
        return [first] + [time_scan(decl, c, window, tz) for c in combos[1:]]
    recipe, delimiter = _partial(decl, count), decl.key.delimiter.encode("utf-8")
    head = recipe.build(combos[0], tz) + delimiter
    (low, high), tail = first.ranges[0], []
    if not (low.startswith(head) and high.startswith(head)):  # a bound past every prefix
        return [first] + [time_scan(decl, c, window, tz) for c in combos[1:]]
    tail = [low[len(head) :], high[len(head) :]]
    out = [first]
    for combo in combos[1:]:
        prefix = recipe.build(combo, tz) + delimiter
        span = (prefix + tail[0], prefix + tail[1])
        out.append(replace(first, ranges=(span,)))
    return out


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


def salted_time_ranges(decl: TableDecl, window: Window, tz: dt.tzinfo = UTC) -> list[KeyRange]:
    """``[start, end)`` key ranges, one per salt bucket in key order, covering the events of
    the ``window`` (at the time segment's granularity: exact for milliseconds). A salted key is
    ``<constants>#<salt>#<time>…``: rows of one time range sit in every bucket."""
    start_ms, end_ms = window.start_ms, window.end_ms
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


def salted_scans(decl: TableDecl, window: Window, tz: dt.tzinfo = UTC) -> tuple[Scan, ...]:
    """A salted table's time ``window``: one range per salt bucket
    (:func:`salted_time_ranges`), each keeping only cells
    stamped in the window; the reader merges them in time order."""
    ranges = salted_time_ranges(decl, window, tz)
    return tuple(
        Scan(
            decl.name,
            ranges=(r,),
            start_ms=window.start_ms,
            end_ms=window.end_ms,
            cell_timestamp=decl.cell_timestamp,
        )
        for r in ranges
    )


def row_scan(decl: TableDecl, rows: Sequence[Mapping[str, object]], tz: dt.tzinfo = UTC) -> Scan:
    """Exactly the rows of these key values (point reads)."""
    return Scan(decl.name, row_keys=tuple(decl.row_key(v, tz) for v in rows))


# -- calendar helpers for the CLI and the query functions --------------------------------------


# -- reading keys back ------------------------------------------------------------------------


def split_key(decl: TableDecl, key: bytes) -> dict[str, object]:
    """The field values a row key holds, by field name: the inverse of the key recipe where it
    has one. Integers come back as ints (zero-padded numbers, epoch ms, reversed timestamps are
    un-reversed), padded text is stripped, reversed IDs and domains are turned back; calendar
    labels stay text (``20150301``). Constants are checked, a salt is returned as ``"salt"``.
    Works because no segment can hold the delimiter (the writer refuses such values)."""
    text = key.decode("utf-8")
    parts = text.split(decl.key.delimiter)
    segments = decl.key.segments
    if len(parts) != len(segments):
        raise ValueError(f"{decl.name}: key {text!r} does not have {len(segments)} segments")
    out: dict[str, object] = {}
    for seg, part in zip(segments, parts, strict=True):
        if seg.kind == "const":
            if part != seg.arg:
                raise ValueError(f"{decl.name}: key {text!r} lacks its constant {seg.arg!r}")
        elif seg.kind == "salt":
            out["salt"] = part
        elif seg.kind in ("zero_pad", "epoch_ms"):
            out[seg.field] = int(part)
        elif seg.kind == "reverse_ts":
            out[seg.field] = keys.unreverse_timestamp(part)
        elif seg.kind == "space_pad":
            out[seg.field] = part.rstrip(" ")
        elif seg.kind == "reverse_id":
            out[seg.field] = part[::-1]
        elif seg.kind == "reverse_domain":
            out[seg.field] = ".".join(reversed(part.split(".")))
        else:  # text, tenant, time labels
            out[seg.field] = part
    return out
