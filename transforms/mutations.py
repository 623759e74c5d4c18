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


MAX_CELL_BYTES = 10 * 1024 * 1024  # Bigtable's advised cell limit
MAX_QUALIFIER_BYTES = 16 * 1024  # Bigtable's qualifier limit


def check_limits(rows: Iterable[RowMutation]) -> None:
    """Refuse cells Bigtable would refuse or should not hold (qualifier over 16 KiB, value over
    10 MB), naming the table and column, before anything is written."""
    from transforms.errors import InvalidEvent

    for row in rows:
        for cell in row.cells:
            if len(cell.qualifier) > MAX_QUALIFIER_BYTES:
                raise InvalidEvent(
                    f"{row.table}: qualifier of {len(cell.qualifier):,} bytes is over Bigtable's "
                    f"16 KiB limit"
                )
            value = getattr(cell, "value", b"")
            if len(value) > MAX_CELL_BYTES:
                raise InvalidEvent(
                    f"{row.table} {cell.family}:{cell.qualifier[:40]!r}: value of {len(value):,} "
                    f"bytes is over Bigtable's 10 MB cell limit"
                )
