"""Client-neutral row mutations: what the pure builders return and the writers consume.

Plain named tuples pickle cheaply and compare by value, so tests can assert on them and a
distributed runner can ship them between workers; conversion to client objects happens only at
the write step.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple


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
    table: str
    key: bytes
    cells: tuple


_new = tuple.__new__


def cells_at(
    family: str, pairs: Iterable[tuple[bytes, bytes]], timestamp_us: int
) -> tuple[Cell, ...]:
    """Cells of one family at one timestamp, from ``(qualifier, value)`` pairs: the hot path's
    constructor (half the cost of calling ``Cell(...)`` per cell)."""
    return tuple([_new(Cell, (family, q, v, timestamp_us)) for q, v in pairs])


def row_bytes(row: RowMutation) -> int:
    """Approximate mutation size, for batching and the 100 MB row guidance."""
    size = len(row.key)
    for cell in row.cells:
        value = cell.value if isinstance(cell, Cell) else b"12345678"
        size += len(cell.family) + len(cell.qualifier) + len(value) + 8
    return size
