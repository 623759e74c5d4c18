"""Client-neutral row mutations: what the pure builders return and the writers consume.

Plain named tuples pickle cheaply and compare by value, so tests can assert on them and a
distributed runner can ship them between workers; conversion to client objects happens only at
the write step.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from transforms.limits import MAX_CELL_BYTES, MAX_QUALIFIER_BYTES

__all__ = [
    "MAX_MUTATIONS_PER_REQUEST",
    "AddCell",
    "Cell",
    "FramedRows",
    "ReadCell",
    "ReadRow",
    "RowMutation",
    "TableCut",
    "cell_count",
    "cell_total",
    "check_limits",
    "first_stamps",
    "is_lean",
    "table_parts",
    "take",
    "without_empty_rows",
]


def table_parts(tables: list[str]) -> list[tuple[str, slice | list[int]]]:
    """Where each table's rows sit in a batch whose rows write ``tables`` (in order, not
    empty): the whole batch when it is one table's; a stride when every event wrote the same
    tables in the same order (a schema's builder: each table's rows cut in C); else each
    table's positions."""
    first = tables[0]
    if tables.count(first) == len(tables):
        return [(first, slice(None))]
    period = len(dict.fromkeys(tables[:8]))
    if period < len(tables) and tables == tables[:period] * (len(tables) // period):
        return [(table, slice(i, None, period)) for i, table in enumerate(tables[:period])]
    at: dict[str, list[int]] = {}
    for i, table in enumerate(tables):
        at.setdefault(table, []).append(i)
    return list(at.items())


def take(items: list, where: slice | list[int]) -> list:
    """The items of one :func:`table_parts` part (``items`` itself when it is the whole)."""
    if type(where) is slice:
        return items if where == _WHOLE else items[where]
    return [items[i] for i in where]


_WHOLE = slice(None)
_TABLE = operator.itemgetter(0)


class TableCut:
    """Each table's rows of a batch, as ``(table, rows)`` pairs: the build step cuts a block
    once for every step that reads it table by table (its event spans, its fingerprints).

    Why a class: a schema's builder lays out every block as the one before (each event's
    tables in one order), so the cut of the last block is kept and only the tables compared;
    and a job writing one table (``only``) never reads a row's table at all."""

    def __init__(self, only: str | None = None) -> None:
        self._only = only
        self._tables: list[str] = []
        self._where: list[tuple[str, slice | list[int]]] = []

    def __call__(self, rows: list) -> list[tuple[str, list]]:
        if not rows:
            return []
        if self._only is not None:
            return [(self._only, rows)]
        tables = list(map(_TABLE, rows))
        if tables != self._tables:
            self._where = table_parts(tables)
            self._tables = tables
        return [(table, take(rows, where)) for table, where in self._where]


class Cell(NamedTuple):
    """SetCell: ``timestamp_us`` is the event time in microseconds (millisecond granularity)."""

    family: str
    qualifier: bytes
    value: bytes
    timestamp_us: int


class AddCell(NamedTuple):
    """AddToCell into an aggregate family (sum of int64)."""

    family: str
    qualifier: bytes
    amount: int
    timestamp_us: int


class RowMutation(NamedTuple):
    """One row's cells. The builders' hot path returns the same shape as plain tuples
    (``(table, key, cells)`` of plain ``(family, qualifier, value, timestamp_us)``), which
    compare equal to these: every consumer unpacks by position."""

    table: str
    key: bytes
    cells: tuple


class FramedRows(list):
    """A batch of rows (a list, for every consumer that reads rows) carrying ``entries``:
    ``entries[i]`` the framed ``MutateRowsRequest`` entry of ``self[i]``, made while the row
    was built, or None where the writer must encode the row itself. A row with an entry may
    be lean (:func:`is_lean`); a row without one never is."""

    def __init__(self, rows=(), entries: list | None = None) -> None:
        super().__init__(rows)
        self.entries = entries if entries is not None else [None] * len(self)

    def __reduce__(self):  # pickled as rows and entries (other runners, other processes)
        return (FramedRows, (list(self), self.entries))


# -- lean rows --------------------------------------------------------------------------------
#
# A *lean row* is ``(table, key, count, stamp_us)``: a row whose framed request entry the
# builder made (its FramedRows entry, which is what lands, byte for byte), carrying of its cells
# only what the steps after the build step read: how many there are (``count``: 0 for a row
# without a cell, falsy as an empty cells tuple is, so ``row[2]`` tells "holds a cell" for
# either form) and the timestamp they share (every builder stamps a row's cells with one time).
# Why: the writer sends the entry as it is, so building a tuple per cell as well cost a job's
# build step several percent of its CPU for nothing. Only a batch job's build step makes them
# (``Builder.framer`` given lean tables), for tables whose cells nothing after it reads (not
# collapsed, rolled up, compared by a stream's check, or folded into the index from rows);
# every other row is a full ``(table, key, cells)``, and a row the writer must encode (no
# entry) is always full. A lean row's cells all had one-byte lengths (the builder's fast path),
# so it is within Bigtable's limits. Read a row's count and stamp through the functions below,
# never by position: a step that unpacks ``table, key, cells`` fails on a lean row, loudly.

_COUNT = operator.itemgetter(2)  # a lean row's count; a full row's cells
_FIRST = operator.itemgetter(0)
_STAMP = operator.itemgetter(3)  # a lean row's stamp; a cell's timestamp


def is_lean(row) -> bool:
    """Whether ``row`` is a lean row (its cells' count and stamp in place of its cells)."""
    return len(row) == 4


def cell_count(row) -> int:
    """How many cells ``row`` (lean or full) holds."""
    cells = row[2]
    return cells if type(cells) is int else len(cells)


def cell_total(rows: Sequence) -> int:
    """How many cells ``rows`` (lean or full, mixed) hold: one C-level sum when they are all
    of one form (a build step's batch nearly always is)."""
    counts = list(map(_COUNT, rows))
    if not counts:
        return 0
    try:
        return sum(counts) if type(counts[0]) is int else sum(map(len, counts))
    except TypeError:  # lean and full rows mixed
        return sum([c if type(c) is int else len(c) for c in counts])


def first_stamps(rows: Sequence) -> list[int]:
    """The timestamp of each row's first cell (every row of ``rows`` holds a cell; lean or
    full, mixed): one C-level pass when they are all of one form."""
    if not rows:
        return []
    try:
        if is_lean(rows[0]):
            return list(map(_STAMP, rows))
        return list(map(_STAMP, map(_FIRST, map(_COUNT, rows))))
    except (IndexError, TypeError):  # lean and full rows mixed (or a row without a cell)
        return [row[3] if is_lean(row) else row[2][0][3] for row in rows]


def without_empty_rows(rows: list) -> list:
    """The rows that hold a cell, in order (with their entries for :class:`FramedRows`).

    Why: an event whose values are all absent makes a row without a cell, and Bigtable refuses
    a MutateRows entry without mutations (the emulator takes it), failing the whole request."""
    keep = [i for i, row in enumerate(rows) if row[2]]
    if type(rows) is FramedRows:
        return FramedRows([rows[i] for i in keep], [rows.entries[i] for i in keep])
    return [rows[i] for i in keep]


def stored_cells(row) -> tuple[Cell, ...]:
    """A data-client ``Row``'s cells as :class:`Cell` s, every version as stored."""
    return tuple(
        Cell(c.family, bytes(c.qualifier), bytes(c.value), c.timestamp_micros) for c in row.cells
    )


MAX_MUTATIONS_PER_REQUEST = 100_000  # Bigtable refuses a MutateRows request with more


def check_limits(rows: Iterable[RowMutation]) -> None:
    """Refuse cells Bigtable would refuse or should not hold (qualifier over 16 KiB, value over
    10 MB), naming the table and column, before anything is written (a lean row's cells are
    all short: nothing to check). Raises InvalidEvent (a DataError)."""
    from transforms.errors import InvalidEvent

    for row in rows:
        if is_lean(row):  # every length fitted one byte
            continue
        table, _key, cells = row
        for cell in cells:
            family, qualifier, value = cell[0], cell[1], cell[2]
            if len(qualifier) > MAX_QUALIFIER_BYTES:
                raise InvalidEvent(
                    f"{table}: qualifier of {len(qualifier):,} bytes is over Bigtable's "
                    f"16 KiB limit"
                )
            if type(cell) is not AddCell and len(value) > MAX_CELL_BYTES:
                raise InvalidEvent(
                    f"{table} {family}:{qualifier[:40]!r}: value of {len(value):,} "
                    f"bytes is over Bigtable's 10 MB cell limit"
                )


ReadCell = Cell  # a cell read back is the builders' Cell: (family, qualifier, value, timestamp_us)


class ReadRow(NamedTuple):
    key: bytes
    cells: tuple[ReadCell, ...]

    def latest(self) -> dict[tuple[str, bytes], bytes]:
        """The newest value of each column (cells come newest first per column)."""
        out: dict[tuple[str, bytes], bytes] = {}
        for cell in self.cells:
            out.setdefault((cell.family, cell.qualifier), cell.value)
        return out

    @classmethod
    def of(cls, row) -> ReadRow:
        """A data-client ``Row`` as plain tuples, cells as stored."""
        return cls(bytes(row.row_key), stored_cells(row))
