"""Which records of a run overwrite one another, cell by cell: the exact comparison behind the
overwrite check, on the few records the fingerprints point at (batch,
:mod:`transforms.ingest.fingerprints`) or on a worker's recent rows (streaming,
:class:`RecentRows`).

A **cell** is (table, row key, family, qualifier, timestamp): Bigtable keeps one value per cell,
so when two records write one cell with different values one value survives, and which one the
job cannot know (the order in which concurrent writes reach the server). Such records **conflict**:
each may have lost a cell. Records whose cells all equal an earlier record's (a resent message)
are **duplicates**: writing them again changes nothing. Cells with a server-assigned timestamp
(negative) never collide: each write is a new cell. Aggregate (AddToCell) tables sum by design
and are never compared.

Pure: no Beam, no client.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from transforms.metrics import DUPLICATE_RECORDS, OVERWRITE_CELLS, OVERWRITE_RECORDS

__all__ = [
    "FIRST_NAMESPACE",
    "Findings",
    "Place",
    "RecentRows",
    "analyze",
    "counted",
    "duplicates",
    "first_from_metric_name",
    "first_metric_name",
]

SHOWN_CHARS = 80  # of a key or a value in the report


class Place(NamedTuple):
    """Where a record is: its source, a position that orders it in the source (a byte offset
    or an ordinal), and its line when known (``None``: a Parquet/Avro record, or a line not
    counted yet; ``ordinal`` then names it)."""

    source: str
    position: int
    line: int | None = None
    ordinal: int | None = None

    def describe(self) -> str:
        if self.line:
            return f"{self.source}:{self.line}"
        if self.ordinal is not None:
            return f"{self.source} (record {self.ordinal + 1:,})"
        return self.source


class Conflict(NamedTuple):
    """The first cell two records of the run wrote with different values, in input order: the
    earliest record that rewrote a cell, and the record it rewrote."""

    table: str
    key: bytes
    family: str
    qualifier: bytes
    timestamp_us: int
    first: Place
    first_value: bytes
    second: Place
    second_value: bytes

    def describe(self) -> str:
        """One line: where, which cell, which two values."""
        when = _time_text(self.timestamp_us)
        return (
            f"{self.first.describe()} and {self.second.describe()} both write "
            f"{self.table} row {_shown(self.key)} column "
            f"{self.family}:{_shown(self.qualifier, quoted=False)} at {when}: "
            f"{_shown(self.first_value)} then {_shown(self.second_value)}"
        )


@dataclass
class Findings:
    """What the comparison found: cells written with different values, the records that wrote
    them (each may have lost one), records repeating an earlier record exactly, and the first
    conflict in input order."""

    cells: int = 0
    records: int = 0
    duplicates: int = 0
    first: Conflict | None = None
    conflicting: set = field(default_factory=set, repr=False)  # the records' places


def _shown(raw: bytes, quoted: bool = True) -> str:
    """Bytes as text for a person: cut at SHOWN_CHARS, quoted (a qualifier of plain printable
    text without quotes)."""
    text = raw.decode("utf-8", "backslashreplace")
    text = text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"
    if not quoted and text.isprintable() and " " not in text and text:
        return text
    return repr(text)


def _time_text(timestamp_us: int) -> str:
    try:
        moment = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(
            microseconds=timestamp_us
        )
    except OverflowError:
        return f"{timestamp_us} µs"
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _cells(rows: Sequence[tuple]):
    """``(cell, value)`` of the rows; never a cell of the server's time (every write of one is
    a cell of its own)."""
    for table, key, cells in rows:
        for family, qualifier, value, stamp in cells:
            if stamp >= 0:
                yield (table, key, family, qualifier, stamp), value


def analyze(records: Iterable[tuple[Place, Sequence[tuple]]]) -> Findings:
    """Records (their place and their rows of checked tables) compared cell by cell, in input
    order (by source, then position). A record given twice (the same place) counts once. Two passes,
    one state per distinct cell: the first finds the cells written with several values (and
    the first such pair), the second the records that wrote one."""
    ordered = sorted(dict(records).items(), key=lambda item: (item[0].source, item[0].position))
    first_write: dict[tuple, tuple[bytes, int]] = {}  # cell → its first value and writer
    several: set[tuple] = set()  # the cells written with different values
    out = Findings()
    for index, (place, rows) in enumerate(ordered):
        for cell, value in _cells(rows):
            seen = first_write.setdefault(cell, (value, index))
            if seen[0] != value and seen[1] != index:
                several.add(cell)
                if out.first is None:
                    out.first = Conflict(*cell, ordered[seen[1]][0], seen[0], place, value)
    out.cells = len(several)
    for place, rows in ordered:
        if several and any(cell in several for cell, _ in _cells(rows)):
            out.conflicting.add(place)
    out.records = len(out.conflicting)
    out.duplicates = duplicates({place: hash(tuple(rows)) for place, rows in ordered}, out)
    return out


def duplicates(signatures: Mapping[Place, int], found: Findings) -> int:
    """Records whose rows (``signatures``: a hash of each record's rows) equal an earlier
    record's, not counting records in a conflict."""
    seen: set[int] = set()
    count = 0
    for place in sorted(signatures, key=lambda p: (p.source, p.position)):
        signature = signatures[place]
        if signature in seen and place not in found.conflicting:
            count += 1
        seen.add(signature)
    return count


def counted(found: Findings) -> tuple[tuple[str, int], ...]:
    """The findings as the job's counters (:mod:`transforms.metrics`), those not zero."""
    named = ((OVERWRITE_CELLS, found.cells), (OVERWRITE_RECORDS, found.records))
    return tuple((n, v) for n, v in (*named, (DUPLICATE_RECORDS, found.duplicates)) if v)


# The first conflict of a run, for the job's report: one metric whose name holds it as JSON
# (metrics are what a runner hands back to the launcher).
FIRST_NAMESPACE = "btts.overwrites.first"


def first_metric_name(conflict: Conflict) -> str:
    """The first conflict as a metric name (JSON), read back by :func:`first_from_metric_name`."""
    return json.dumps(
        [
            conflict.table,
            _shown(conflict.key),
            conflict.family,
            _shown(conflict.qualifier, quoted=False),
            conflict.timestamp_us,
            conflict.first.describe(),
            _shown(conflict.first_value),
            conflict.second.describe(),
            _shown(conflict.second_value),
        ],
        ensure_ascii=False,
    )


def first_from_metric_name(name: str) -> str:
    """The one-line description of a conflict named by :func:`first_metric_name`."""
    table, key, family, qualifier, stamp, first, value1, second, value2 = json.loads(name)
    return (
        f"{first} and {second} both write {table} row {key} column {family}:{qualifier} at "
        f"{_time_text(stamp)}: {value1} then {value2}"
    )


class RecentRows:
    """A streaming worker's recent rows, to compare each new row with: at most ``limit`` rows,
    none older than ``ttl_s`` seconds (of the worker's clock). Rows of one table, key and
    stamp are compared cell by cell; a record is counted once however many of its cells
    conflict, and both records of a conflict are counted (either may have lost the cell).
    Holds the builder's own row tuples (no copy)."""

    def __init__(
        self, limit: int, ttl_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._limit = limit
        self._ttl = ttl_s
        self._clock = clock
        self._rows: dict[tuple, tuple[float, Place, tuple]] = {}  # row id → (seen, place, cells)
        self._counted: dict[Place, None] = {}  # records already counted as conflicting
        self._records = 0  # records added: each one's own place, whatever its line
        self._lock = threading.Lock()  # one memory per worker process, its threads share it
        self._first: Conflict | None = None
        self.found = Findings()

    def add(self, source: str, line: int | None, rows: Sequence[tuple]) -> None:
        """One record's rows of checked tables: compared with the rows held, then held."""
        with self._lock:
            self._records += 1
            self._add(Place(source, self._records, line), rows)

    def _add(self, place: Place, rows: Sequence[tuple]) -> None:
        now = self._clock()
        conflict = False
        considered = same = 0
        for table, key, cells in rows:
            if not cells or cells[0][3] < 0:
                continue
            considered += 1
            rid = (table, key, cells[0][3])
            held = self._rows.get(rid)
            kept = cells
            if held is not None and held[1] != place and now - held[0] <= self._ttl:
                if held[2] == cells:
                    same += 1
                else:
                    clash = _clash(table, key, held[1], held[2], place, cells)
                    if clash is not None:
                        conflict = True
                        self._count(held[1])
                        self.found.cells += clash[1]
                        if self.found.first is None:
                            self.found.first = clash[0]
                    # both rows' cells, the later value of a cell both write (what lands)
                    kept = tuple({(c[0], c[1], c[3]): c for c in (*held[2], *cells)}.values())
            self._rows.pop(rid, None)
            self._rows[rid] = (now, place, kept)
        if conflict:
            self._count(place)
        elif considered and same == considered:
            self.found.duplicates += 1
        self._evict(now)

    def _count(self, place: Place) -> None:
        """A record in a conflict, counted once (both sides of a conflict may have lost)."""
        if place not in self._counted:
            self._counted[place] = None
            self.found.records += 1
            if len(self._counted) > self._limit:
                del self._counted[next(iter(self._counted))]

    def _evict(self, now: float) -> None:
        rows = self._rows
        while rows:
            oldest = next(iter(rows))
            if len(rows) <= self._limit and now - rows[oldest][0] <= self._ttl:
                return
            del rows[oldest]

    def first_reported(self, conflict: Conflict) -> bool:
        """Whether ``conflict`` is the first this memory reports (one, not one per bundle)."""
        with self._lock:
            first, self._first = self._first is None, self._first or conflict
        return first

    def drain(self) -> Findings:
        """What was found since the last drain (the rows stay held)."""
        with self._lock:
            found, self.found = self.found, Findings()
        return found


def _clash(
    table: str, key: bytes, held_place: Place, held: tuple, place: Place, cells: tuple
) -> tuple[Conflict, int] | None:
    """The first cell two rows of one row id write with different values and how many such
    cells; None when they agree on every cell both write."""
    before = {(c[0], c[1], c[3]): c[2] for c in held}
    first, count = None, 0
    for family, qualifier, value, stamp in cells:
        old = before.get((family, qualifier, stamp))
        if old is not None and old != value:
            count += 1
            if first is None:
                first = Conflict(
                    table, key, family, qualifier, stamp, held_place, old, place, value
                )
    return None if first is None else (first, count)
