"""What a table really holds: key and row sizes, the largest rows against Bigtable's limits, and
whether its keys start with a monotonic value (``btts advise table TABLE``).

Rows are read in key order through :func:`btts.admin.read_rows`, a page at a time, so any table
(real or emulated) can be reported without holding it in memory; ``limit`` stops after that many
rows (the report then says it is a sample of the first rows).

Sizes are bytes as stored per cell: row bytes = key + Σ (family + qualifier + value + an 8-byte
timestamp), every stored version counted.

Monotonic prefixes are detected two ways. By shape: keys are split at the delimiter, segments that
are the same in every key (``BATTERY``) are skipped, and the first varying segment is classified
(13-digit epoch milliseconds, ``YYYYMMDD``, ``YYYYMMDDHHMMSSmmm``, ISO dates, 19-digit reversed
timestamps…). By behaviour: the rank correlation between key order and each row's newest cell
timestamp (event time) — near 1 means keys grow with time, so new writes always land at the end
of the key space, whatever the segments look like (a sequential ID, an unusual time format).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from btts import admin, config, errors
from btts.advisor.rows import CELL_OVERHEAD_BYTES, human_bytes
from btts.query import engine
from transforms import mutations
from transforms.limits import (
    MAX_CELL_BYTES,
    MAX_ROW_KEY_BYTES,
    ROW_ADVISED_BYTES,
    ROW_HARD_BYTES,
)
from transforms.text.keys import LONG_MAX

__all__ = ["as_dict", "format_report", "report"]

PAGE_ROWS = 2000
# Rows kept for the prefix analysis (every k-th row beyond this, k doubling as needed).
MAX_SAMPLE = 100_000
MAX_LISTED = 1000
MONOTONIC_CORRELATION = 0.9
MIN_ROWS_FOR_CORRELATION = 10
TIME_CLASSES = {
    "epoch-ms": "13-digit epoch milliseconds",
    "epoch-s": "10-digit epoch seconds",
    "yyyymmddhhmmssmmm": "YYYYMMDDHHMMSSmmm",
    "yyyymmddhhmmss": "YYYYMMDDHHMMSS",
    "yyyymmdd": "YYYYMMDD",
    "yyyymm": "YYYYMM",
    "iso-date": "an ISO date/time",
    "iso-week": "an ISO week",
    "iso-month": "an ISO month",
}
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T _-]\d{2}(:?\d{2}){0,2}(\.\d+)?Z?)?$")
_ISO_WEEK = re.compile(r"^\d{4}-W\d{2}$")
_ISO_MONTH = re.compile(r"^\d{4}-\d{2}$")
_MS_2000 = 946_684_800_000
_MS_2100 = 4_102_444_800_000


def classify_segment(segment: bytes) -> str:
    """What one key segment looks like: a class of :data:`TIME_CLASSES`, ``reverse-ts``,
    ``number`` or ``text``."""
    try:
        text = segment.decode("ascii")
    except UnicodeDecodeError:
        return "text"
    if text.isdigit():
        n = len(text)
        value = int(text)
        if n == 13 and _MS_2000 <= value <= _MS_2100:
            return "epoch-ms"
        if n == 19 and _MS_2000 <= LONG_MAX - value <= _MS_2100:
            return "reverse-ts"
        formats = {17: "%Y%m%d%H%M%S", 14: "%Y%m%d%H%M%S", 8: "%Y%m%d", 6: "%Y%m"}
        if n in formats and _valid_time(text[:14], formats[n]):
            return {17: "yyyymmddhhmmssmmm", 14: "yyyymmddhhmmss", 8: "yyyymmdd", 6: "yyyymm"}[n]
        if n == 10 and _MS_2000 // 1000 <= value <= _MS_2100 // 1000:
            return "epoch-s"
        return "number"
    if _ISO_DATE.match(text):
        return "iso-date"
    if _ISO_WEEK.match(text):
        return "iso-week"
    if _ISO_MONTH.match(text):
        return "iso-month"
    return "text"


def _valid_time(text: str, fmt: str) -> bool:
    try:
        moment = dt.datetime.strptime(text, fmt)
    except ValueError:
        return False
    return 1990 <= moment.year <= 2100


def spearman(values: Sequence[float]) -> float:
    """Rank correlation between position (key order) and ``values``; 0 for constant input."""
    n = len(values)
    if n < 2:
        return 0.0
    order = sorted(range(n), key=lambda i: values[i])
    ranks = [0.0] * n
    i = 0
    while i < n:  # average ranks for ties
        j = i
        while j + 1 < n and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2
        i = j + 1
    mean = (n - 1) / 2
    cov = sum((p - mean) * (r - mean) for p, r in enumerate(ranks))
    var_p = sum((p - mean) ** 2 for p in range(n))
    var_r = sum((r - mean) ** 2 for r in ranks)
    return cov / math.sqrt(var_p * var_r) if var_r else 0.0


@dataclass(frozen=True)
class RowSize:
    key: bytes
    bytes: int
    cells: int
    largest_cell: int


@dataclass(frozen=True)
class Segments:
    """The key-shape analysis: constant leading segments, then the first varying one."""

    constant: tuple[bytes, ...]
    position: int  # of the first varying segment (-1: none)
    kind: str  # classify_segment class shared by >= 90% of its values, else "mixed"
    share: float
    distinct: int
    time_position: int  # first segment whose values are time-like (-1: none)
    time_kind: str
    prefixes_before_time: int  # distinct key prefixes in front of it


@dataclass
class TableReport:
    table: str
    where: str
    rows: int
    cells: int
    total_bytes: int
    limited: bool
    key_lengths: list[int] = field(repr=False)
    row_sizes: list[int] = field(repr=False)
    largest: list[RowSize]
    largest_cell: int
    over: list[str]  # limit problems, one line each (the first MAX_LISTED)
    over_count: int
    segments: Segments | None
    correlation: float
    correlation_rows: int

    @property
    def monotonic(self) -> bool:
        return bool(self.monotonic_reasons)

    @property
    def monotonic_reasons(self) -> list[str]:
        out = []
        seg = self.segments
        if seg and seg.position >= 0 and seg.kind in TIME_CLASSES:
            after = f" after constant {_shown(seg.constant)}" if seg.constant else ""
            out.append(
                f"keys start{after} with {TIME_CLASSES[seg.kind]} (segment {seg.position + 1}, "
                f"{seg.share:.0%} of keys): new writes go to the end of the key space"
            )
        if seg and seg.position >= 0 and seg.kind == "reverse-ts":
            out.append(
                f"keys start with a reversed timestamp (segment {seg.position + 1}): new writes "
                "go to the start of the key space"
            )
        if self.correlation_rows >= MIN_ROWS_FOR_CORRELATION and (
            abs(self.correlation) >= MONOTONIC_CORRELATION
        ):
            trend = "grow" if self.correlation > 0 else "shrink"
            out.append(
                f"key order follows cell time (Spearman {self.correlation:+.2f} over "
                f"{self.correlation_rows:,} rows): keys {trend} with time"
            )
        return out


def _shown(parts: Sequence[bytes]) -> str:
    return "#".join(p.decode("utf-8", "replace") for p in parts).join("''")


def distribution(values: Sequence[int]) -> dict[str, int]:
    """The smallest, the 50th/90th/99th percentile and the largest value (0s for none)."""
    ordered = sorted(values)
    n = len(ordered)
    quantiles = {"min": 0, "p50": 0.5, "p90": 0.9, "p99": 0.99, "max": 1}
    return {name: ordered[min(n - 1, int(q * n))] if n else 0 for name, q in quantiles.items()}


def limit_problems(row_bytes: int, largest_cell: int, key_bytes: int, key: bytes) -> list[str]:
    """The limits one row breaks (docs/patterns.md §3 rule 7), one line each."""
    shown = key[:60].decode("utf-8", "replace")
    out = []
    if row_bytes > ROW_HARD_BYTES:
        out.append(f"ERROR row {shown!r}: {human_bytes(row_bytes)} over the 256 MB hard limit")
    elif row_bytes > ROW_ADVISED_BYTES:
        out.append(f"WARNING row {shown!r}: {human_bytes(row_bytes)} over the advised 100 MB")
    if largest_cell > MAX_CELL_BYTES:
        out.append(f"WARNING row {shown!r}: a {human_bytes(largest_cell)} cell (limit 10 MB)")
    if key_bytes > MAX_ROW_KEY_BYTES:
        out.append(f"ERROR row {shown!r}: a {key_bytes:,}-byte key (limit 4 KiB)")
    return out


def analyse_segments(keys: Sequence[bytes], delimiter: bytes = b"#") -> Segments | None:
    if not keys:
        return None
    split = [k.split(delimiter) for k in keys]
    depth = max(len(s) for s in split)
    constant: list[bytes] = []
    first = -1
    for pos in range(depth):
        values = {s[pos] if pos < len(s) else None for s in split}
        if len(values) == 1 and len(keys) > 1:
            constant.append(next(iter(values)) or b"")
            continue
        first = pos
        break
    time_pos, time_kind, prefixes = -1, "", 0
    for pos in range(depth):
        kind, share = _position_kind(split, pos)
        if kind in TIME_CLASSES or kind == "reverse-ts":
            time_pos, time_kind = pos, kind
            prefixes = len({tuple(s[:pos]) for s in split})
            break
    if first < 0:
        return Segments(tuple(constant), -1, "", 0.0, 1, time_pos, time_kind, prefixes)
    kind, share = _position_kind(split, first)
    distinct = len({s[first] for s in split if first < len(s)})
    return Segments(tuple(constant), first, kind, share, distinct, time_pos, time_kind, prefixes)


def _position_kind(split: Sequence[Sequence[bytes]], pos: int) -> tuple[str, float]:
    kinds: dict[str, int] = {}
    for s in split:
        kind = classify_segment(s[pos]) if pos < len(s) else "missing"
        kinds[kind] = kinds.get(kind, 0) + 1
    kind, count = max(kinds.items(), key=lambda kv: (kv[1], kv[0]))
    share = count / len(split)
    return (kind if share >= 0.9 else "mixed"), share


def summarize(
    rows: Iterable[mutations.ReadRow],
    table: str = "",
    where: str = "",
    top: int = 5,
    delimiter: bytes = b"#",
) -> TableReport:
    """The report of rows given in key order (pure: no I/O; :func:`report` sets ``limited``)."""
    key_lengths: list[int] = []
    sizes: list[int] = []
    largest: list[RowSize] = []
    over: list[str] = []
    sample_keys: list[bytes] = []
    sample_times: list[int] = []
    stride = 1
    cells = total = biggest_cell = over_count = 0
    for index, row in enumerate(rows):
        size = len(row.key)
        big = 0
        newest = 0
        for c in row.cells:
            size += len(c.family) + len(c.qualifier) + len(c.value) + CELL_OVERHEAD_BYTES
            big = max(big, len(c.value))
            newest = max(newest, c.timestamp_us)
        cells += len(row.cells)
        total += size
        biggest_cell = max(biggest_cell, big)
        key_lengths.append(len(row.key))
        sizes.append(size)
        problems = limit_problems(size, big, len(row.key), row.key)
        over_count += len(problems)
        if len(over) < MAX_LISTED:
            over += problems
        largest.append(RowSize(row.key, size, len(row.cells), big))
        if len(largest) > 4 * top:
            largest = sorted(largest, key=lambda r: (-r.bytes, r.key))[:top]
        if index % stride == 0:
            sample_keys.append(row.key)
            sample_times.append(newest)
            if len(sample_keys) >= MAX_SAMPLE:
                sample_keys, sample_times = sample_keys[::2], sample_times[::2]
                stride *= 2
    largest = sorted(largest, key=lambda r: (-r.bytes, r.key))[:top]
    return TableReport(
        table=table,
        where=where,
        rows=len(sizes),
        cells=cells,
        total_bytes=total,
        limited=False,
        key_lengths=key_lengths,
        row_sizes=sizes,
        largest=largest,
        largest_cell=biggest_cell,
        over=over,
        over_count=over_count,
        segments=analyse_segments(sample_keys, delimiter),
        correlation=spearman(sample_times),
        correlation_rows=len(sample_times),
    )


def iter_rows(
    target: config.Target, table: str, limit: int | None = None, page: int = PAGE_ROWS
) -> Iterator[mutations.ReadRow]:
    """Every row of the table in key order, read a page at a time (``limit``: at most that
    many rows)."""
    start: bytes | None = None
    seen = 0
    while limit is None or seen < limit:
        want = page if limit is None else min(page, limit - seen)
        batch = engine.read_rows(target, table, start=start, limit=want)
        yield from batch
        seen += len(batch)
        if len(batch) < want:
            return
        start = batch[-1].key + b"\x00"  # the smallest key after the last one read


def report(
    target: config.Target,
    table: str,
    limit: int | None = None,
    top: int = 5,
    delimiter: bytes = b"#",
) -> TableReport:
    """Read the table (or its first ``limit`` rows) and report on it.
    Raises ConfigError (a UserError: one line naming what to change)."""
    with admin.Admin(target) as api:
        if api.get_families(table) is None:
            raise errors.ConfigError(f"table {table} does not exist in {target.describe()}")
    rows = iter_rows(target, table, limit)
    out = summarize(rows, table, target.describe(), top=top, delimiter=delimiter)
    out.limited = limit is not None and out.rows >= limit
    return out


def format_report(rep: TableReport) -> str:
    lines = [f"Table {rep.table} in {rep.where}"]
    scope = f"the first {rep.rows:,} rows (--limit)" if rep.limited else "the whole table"
    lines.append(
        f"  {rep.rows:,} rows, {rep.cells:,} cells, {human_bytes(rep.total_bytes)} ({scope})"
    )
    if not rep.rows:
        lines.append("  (empty: nothing to report)")
        return "\n".join(lines)
    for label, values, limit in (
        ("key length", rep.key_lengths, f"limit {MAX_ROW_KEY_BYTES:,} B"),
        ("row size", rep.row_sizes, "advised 100 MB, hard 256 MB"),
    ):
        d = distribution(values)
        shown = "  ".join(f"{k} {v:,}" for k, v in d.items())
        lines.append(f"  {label + ' (bytes):':<20} {shown}   ({limit})")
    lines.append("  largest rows:")
    for r in rep.largest:
        lines.append(
            f"    {human_bytes(r.bytes):>10}  {r.key[:60].decode('utf-8', 'replace')!r}  "
            f"{r.cells:,} cells, {r.bytes / ROW_ADVISED_BYTES:.4%} of 100 MB, largest cell "
            f"{human_bytes(r.largest_cell)} of 10 MB"
        )
    if rep.over:
        lines += [f"  {line}" for line in rep.over[:20]]
        if rep.over_count > 20:
            lines.append(f"  … {rep.over_count - 20:,} more over a limit")
    else:
        lines.append("  limits: no row over 100 MB, no cell over 10 MB, no key over 4 KiB")
    if rep.segments is not None:
        lines.append("  key shape: " + "; ".join(_key_shape(rep.segments)))
    lines.append(
        f"  key order vs cell time: Spearman {rep.correlation:+.2f} over "
        f"{rep.correlation_rows:,} rows"
    )
    if rep.monotonic:
        lines.append(
            "  verdict: MONOTONIC PREFIX (docs/patterns.md §3.5) — "
            + "; ".join(rep.monotonic_reasons)
        )
        lines.append(
            "    every new write lands on the tablet at one end of the key space, so one node "
            "takes them all: promote a high-cardinality field in front (or salt)"
        )
    else:
        lines.append("  verdict: no monotonic prefix")
    return "\n".join(lines)


def _key_shape(seg: Segments) -> list[str]:
    """What the sampled keys' segments say: a constant prefix, where they first vary, and
    how many distinct prefixes come before the first time-like segment."""
    parts = []
    if seg.constant:
        parts.append(f"constant prefix {_shown(seg.constant)}")
    if seg.position >= 0:
        parts.append(
            f"first varying segment {seg.position + 1}: {seg.kind} "
            f"({seg.distinct:,} distinct in the sample)"
        )
    if seg.time_position >= 0:
        parts.append(
            f"first time-like segment {seg.time_position + 1} ({seg.time_kind}) after "
            f"{seg.prefixes_before_time:,} distinct prefixes"
        )
    return parts


def as_dict(rep: TableReport) -> dict:
    seg = rep.segments
    return {
        "table": rep.table,
        "rows": rep.rows,
        "cells": rep.cells,
        "bytes": rep.total_bytes,
        "limited": rep.limited,
        "key_length": distribution(rep.key_lengths),
        "row_size": distribution(rep.row_sizes),
        "largest": [
            {"key": r.key.decode("utf-8", "replace"), "bytes": r.bytes, "cells": r.cells}
            for r in rep.largest
        ],
        "over_limits": rep.over,
        "over_limits_count": rep.over_count,
        "segments": None
        if seg is None
        else {
            "constant": [p.decode("utf-8", "replace") for p in seg.constant],
            "first_varying": seg.position,
            "kind": seg.kind,
            "time_position": seg.time_position,
            "time_kind": seg.time_kind,
        },
        "correlation": rep.correlation,
        "monotonic": rep.monotonic,
        "monotonic_reasons": rep.monotonic_reasons,
    }
