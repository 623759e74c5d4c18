"""Collapsing a batch's row writes to what Bigtable keeps, for families that keep one version.

A family declared ``max_versions: 1`` keeps only the newest cell of each column: a batch that
writes one row key many times (every event of a host rewrites its CURRENT_METRIC row) sends
cells that are dead on arrival, and the Bigtable emulator in particular slows down as such
versions pile up in a few rows. Writing, per row key and column, only the cell Bigtable would
keep lands the same latest values with a fraction of the writes.

The cell kept is the one with the highest timestamp; among cells of equal timestamp, the one
written last (a later write of the same timestamp replaces the earlier). Dropping the others
changes nothing a reader of the newest cell (``CellsColumnLimitFilter(1)``, ``latest_only``)
sees: the cell it would read is still written, with the same timestamp and value, so a retried
write (event-time timestamps) still rewrites the same cells.

Only keys whose every row is plain SetCells (non-negative timestamps) in one-version families
are collapsed; a key with any other row (an AddToCell, a cell of a family that keeps more
versions, a server-assigned timestamp) keeps all its rows, untouched and in order. A key
written once keeps its row and its builder-made entry as they are.

Pure: no Beam, no client.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Collection, Mapping, Sequence

from transforms.mutations import Cell, RowMutation
from transforms.table_model import TableDecl

__all__ = ["LatestHolder", "latest_only_families"]

_TABLE = operator.itemgetter(0)
_KEY = operator.itemgetter(1)
_CELLS = operator.itemgetter(2)
_FAMILY = operator.itemgetter(0)
_QUALIFIER = operator.itemgetter(1)
_STAMP = operator.itemgetter(3)
_COLUMN = operator.itemgetter(0, 1)
_CELL_TYPES = frozenset((tuple, Cell))  # plain SetCells (AddCell is a type of its own)
_ROW_TYPES = frozenset((tuple, RowMutation))


def latest_only_families(decl: TableDecl) -> frozenset[str]:
    """The families of ``decl`` that keep one version of a cell (``max_versions: 1``; with a
    ``max_age`` too, Bigtable drops a cell that breaks either rule, so still one)."""
    return frozenset(f.name for f in decl.families if f.max_versions == 1 and not f.aggregate)


class Collapsed:
    """What :func:`collapse_latest` returns: the rows to send, their entries (None where the
    writer must encode the row; ``entries`` None when none were given) and how many row writes
    were folded into another row of the same key (rows given − rows returned)."""

    __slots__ = ("entries", "rows", "superseded")

    def __init__(self, rows: list, entries: list | None, superseded: int) -> None:
        self.rows = rows
        self.entries = entries
        self.superseded = superseded


def collapse_latest(
    rows: Sequence,
    entries: Sequence | None,
    latest: Mapping[str, Collection[str]],
    one_table: str | None = None,
) -> Collapsed:
    """``rows`` (``(table, key, cells)`` tuples, any tables) with each key of a table in
    ``latest`` (table → its one-version families) written once: at the place of its last row,
    one row holding, per column, the cell Bigtable keeps. ``entries[i]``: the framed entry of
    ``rows[i]`` or None; a key's surviving row keeps its entry when the collapsed row is that
    row unchanged, else gets None (the writer encodes it). Every other row stays, in order.
    ``one_table``: every row is taken as that table's, whatever it names (a writer's rows all
    go to its one table)."""
    n = len(rows)
    if one_table is None:
        idents = list(zip(map(_TABLE, rows), map(_KEY, rows), strict=True))
    else:
        idents = list(map(_KEY, rows))
    if len(set(idents)) == n:  # no key written twice (in C): nothing to collapse
        return Collapsed(list(rows), None if entries is None else list(entries), 0)
    order = sorted(range(n), key=idents.__getitem__)  # stable: a key's rows in write order
    out_rows = list(rows)
    out_entries = None if entries is None else list(entries)
    skip: set[int] = set()
    for ident, run in itertools.groupby(order, idents.__getitem__):
        group = list(run)
        if len(group) == 1:
            continue
        families = latest.get(ident[0] if one_table is None else one_table)
        merged = _merge([rows[i] for i in group], families) if families else None
        if merged is None:
            continue
        source, row = merged
        last = group[-1]
        skip.update(group[:-1])
        if source is not None:  # one row holds every surviving cell: send it as built
            out_rows[last] = rows[group[source]]
            if out_entries is not None:
                out_entries[last] = entries[group[source]]
        else:
            out_rows[last] = row
            if out_entries is not None:
                out_entries[last] = None
    if not skip:
        return Collapsed(out_rows, out_entries, 0)
    keep = sorted(set(range(n)).difference(skip))
    out_rows = list(map(out_rows.__getitem__, keep))
    if out_entries is not None:
        out_entries = list(map(out_entries.__getitem__, keep))
    return Collapsed(out_rows, out_entries, n - len(keep))


def _merge(group: list, families: Collection[str]) -> tuple[int | None, tuple] | None:
    """One key's rows (in write order) as one: ``(i, None)`` when ``group[i]`` alone holds
    every surviving cell, ``(None, row)`` for a new row, None when the key cannot collapse.
    (Checked in C-level passes over the cells: this runs for every row of a busy key.)"""
    if not set(map(type, group)) <= _ROW_TYPES:
        return None
    cells = list(itertools.chain.from_iterable(map(_CELLS, group)))
    if not set(map(type, cells)) <= _CELL_TYPES:
        return None  # an AddToCell, or not a cell at all
    in_families = list(map(_FAMILY, cells))
    if not set(in_families) <= families:
        return None
    try:
        stamps = list(map(_STAMP, cells))
        if min(stamps) < 0:  # server-assigned time: the order of arrival decides, not ours
            return None
    except (IndexError, TypeError):  # not a (family, qualifier, value, timestamp) cell
        return None
    same = _same_layout(group, cells, in_families, stamps)
    if same is not None:  # the usual case, every row one event's: the newest row wins whole
        return same, ()
    ordered = sorted(cells, key=_STAMP)  # stable: equal timestamps in write order
    winners = dict(zip(map(_COLUMN, ordered), ordered, strict=True))  # the last one stays
    kept = set(map(id, winners.values()))
    for index in range(len(group) - 1, -1, -1):
        row_cells = group[index][2]
        if len(row_cells) == len(kept) and set(map(id, row_cells)) == kept:
            return index, ()
    last = group[-1]
    merged = tuple(winners.values())
    if type(last) is RowMutation:
        return None, RowMutation(last[0], last[1], merged)
    return None, (last[0], last[1], merged)


def _same_layout(group: list, cells: list, families: list, stamps: list) -> int | None:
    """When every row of ``group`` writes the same columns in the same order (each once), all
    at one timestamp: the index of the row that wins every column (the last of the newest);
    else None. ``cells``, ``families``, ``stamps``: the group's cells, row after row."""
    rows = len(group)
    width = len(group[0][2])
    if not width or len(cells) != width * rows:
        return None
    if set(map(len, map(_CELLS, group))) != {width}:
        return None
    qualifiers = list(map(_QUALIFIER, cells))
    if qualifiers != qualifiers[:width] * rows or families != families[:width] * rows:
        return None
    if len(set(zip(families[:width], qualifiers[:width], strict=True))) != width:
        return None  # a column written twice within a row
    per_row = stamps[::width]
    for column in range(1, width):  # a pass per column, not per cell
        if stamps[column::width] != per_row:
            return None  # several timestamps within a row
    newest = max(per_row)
    return rows - 1 - per_row[::-1].index(newest)


class LatestHolder:
    """One table's rows held across a bundle and collapsed when drained: at most ``max_rows``
    rows and ``max_bytes`` bytes of builder-made entries are held (:meth:`add` says when the
    holder is full), so memory stays within one request's worth."""

    def __init__(self, table: str, families: Collection[str], max_rows: int, max_bytes: int):
        self._table = table
        self._latest = {table: frozenset(families)}
        self._max_rows = max_rows
        self._max_bytes = max_bytes
        self._clear()

    def _clear(self) -> None:
        self._rows: list = []
        self._entries: list = []
        self._framed = False  # whether any held row came with a builder-made entry
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._rows)

    @staticmethod
    def holds(rows: Sequence) -> bool:
        """Whether ``rows`` are all row tuples the holder takes (other kinds go past it)."""
        return set(map(type, rows)) <= _ROW_TYPES

    def add(self, rows: Sequence, entries: Sequence | None) -> bool:
        """Hold ``rows`` (with their entries, or None); True when the holder should be drained."""
        self._rows += rows
        if entries is None:
            self._entries += [None] * len(rows)
        else:
            self._entries += entries
            self._framed = True
            self._bytes += sum(map(len, filter(None, entries)))
        return len(self._rows) >= self._max_rows or self._bytes >= self._max_bytes

    def drain(self) -> Collapsed:
        """The held rows, collapsed; the holder is empty after."""
        rows, entries = self._rows, self._entries if self._framed else None
        self._clear()
        return collapse_latest(rows, entries, self._latest, one_table=self._table)
