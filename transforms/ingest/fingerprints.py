"""Fixed-size fingerprints of the rows a batch run writes, so that two records writing one cell
are found across every worker at a cost of bytes per row, not of the rows themselves.

A row write is ``(table, key, cells)`` whose cells share one timestamp (every builder stamps a
row's cells with its event time, or the start of its bucket). Two rows can write the same cell
(table, key, family, qualifier, timestamp) only if they have the same **row id**: the table, the
key and that timestamp. Per row the build step keeps three 64-bit numbers:

* ``kh``: a hash of the table and the key (the distinct rows of a table are its distinct
  ``kh``, counted exactly over the whole run);
* ``rid``: ``kh`` mixed with the timestamp (the row id), or ``kh`` itself where the key holds
  the timestamp (``epoch_ms`` of the stamping time: METRIC, QUOTE, TICK…), which spares
  reading it;
* ``loc``: where the row's record is, to read it again: a 24-bit hash of the source and, for a
  JSON-lines block, its byte offset (0: read the source whole).

Rows are buffered per table and hashed in one vectorised pass per :data:`FLUSH_ROWS` rows: the
keys as one fixed-width byte array viewed as 64-bit words. Everything is deterministic (no
Python ``hash``, which differs between processes), so two workers' fingerprints of one row are
equal. :func:`repeats` finds, per shard, the rows whose row id occurs more than once: the only
rows that can overwrite one another (or repeat one another). Those few are read and built again
and compared cell by cell (:mod:`transforms.ingest.overwrites`); a hash collision can only make
a row a candidate there, never a finding.

Pure: numpy and the standard library, no Beam.
"""

from __future__ import annotations

import operator
import zlib
from collections.abc import Iterable, Mapping
from typing import NamedTuple

import numpy as np

__all__ = [
    "Candidates",
    "Prints",
    "RowPrints",
    "key_hashes",
    "repeats",
    "row_ids",
    "split_loc",
    "table_salt",
]

SHARDS = 16  # the global pass runs per shard of kh (the top 4 bits)
FLUSH_ROWS = 16_384  # rows buffered (keys and stamps) before one vectorised hash
_SHARD_SHIFT = np.uint64(64 - 4)
_OFFSET_BITS = 40  # a JSON-lines block's byte offset + 1 (files up to 1 TiB); 0: whole source
_OFFSET_MASK = (1 << _OFFSET_BITS) - 1

_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_S29, _S32, _S33 = np.uint64(29), np.uint64(32), np.uint64(33)
# One odd multiplier per 8-byte word of a key (keys are at most 4 KiB: 512 words).
_WORDS = (np.arange(1, 513, dtype=np.uint64) * _GOLD) | np.uint64(1)

_TABLE = operator.itemgetter(0)
_KEY = operator.itemgetter(1)
_CELLS = operator.itemgetter(2)
_FIRST = operator.itemgetter(0)
_STAMP = operator.itemgetter(3)


def _fmix(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser, in place: every input bit moves every output bit."""
    h ^= h >> _S33
    h *= _M1
    h ^= h >> _S33
    h *= _M2
    h ^= h >> _S33
    return h


def table_salt(table: str) -> int:
    """A table's own 64-bit constant, mixed into its keys' hashes (same key, other table)."""
    return zlib.crc32(table.encode("utf-8")) * 0x9E3779B1 | 1 << 63


def key_hashes(keys: list[bytes], salt: int = 0) -> np.ndarray:
    """A deterministic 64-bit hash of each key (``uint64``), ``salt`` mixed in.

    The keys become one fixed-width byte array (numpy pads them with zero bytes, so the true
    lengths are mixed in too: ``b"a"`` and ``b"a\\0"`` differ), viewed as 64-bit words; each
    word is mixed with its position's multiplier, the words summed, the sum finalised."""
    n = len(keys)
    if not n:
        return np.zeros(0, np.uint64)
    arr = np.array(keys, dtype=bytes)
    width = arr.dtype.itemsize
    if width % 8:
        arr = arr.astype(f"S{width + 8 - width % 8}")
    words = arr.view("<u8").reshape(n, -1)
    lengths = np.fromiter(map(len, keys), np.uint64, n)
    with np.errstate(over="ignore"):
        mixed = words * _WORDS[: words.shape[1]]
        mixed ^= mixed >> _S32
        mixed *= _M1
        mixed ^= mixed >> _S29
        h = mixed.sum(axis=1, dtype=np.uint64)
        h += lengths * _M2 + np.uint64(salt & 0xFFFFFFFFFFFFFFFF)
        return _fmix(h)


def row_ids(kh: np.ndarray, stamps: np.ndarray | None) -> np.ndarray:
    """The row ids of rows whose keys hash to ``kh`` and whose cells are stamped ``stamps``
    (µs, int64); ``kh`` itself where the key holds the stamp (``stamps`` None)."""
    if stamps is None:
        return kh
    with np.errstate(over="ignore"):
        return _fmix(kh ^ _fmix(stamps.astype(np.uint64) * _GOLD))


def source_id(source: str) -> int:
    """A source's 24-bit id in ``loc`` (several sources may share one: all are read again)."""
    return zlib.crc32(source.encode("utf-8")) & 0xFFFFFF


def loc_of(source: str, kind: str, offset: int) -> int:
    """Where a block's records are read again: the source, and a JSON-lines block's offset."""
    position = offset + 1 if kind == "jsonl" and 0 <= offset < _OFFSET_MASK else 0
    return source_id(source) << _OFFSET_BITS | position


def split_loc(loc: int) -> tuple[int, int | None]:
    """``(source id, offset of a JSON-lines block or None: the source whole)`` of a ``loc``."""
    position = loc & _OFFSET_MASK
    return loc >> _OFFSET_BITS, position - 1 if position else None


def table_slices(rows: list) -> Iterable[tuple[str, list]]:
    """``(table, its rows)`` of a batch: the batch itself when it is one table's, one slice per
    table when every event wrote the same tables in the same order (a schema's builder), else
    grouped row by row."""
    if not rows:
        return ()
    tables = list(map(_TABLE, rows))
    first = tables[0]
    if tables.count(first) == len(tables):
        return ((first, rows),)
    period = len(dict.fromkeys(tables[:8]))
    if period < len(tables) and tables == tables[:period] * (len(tables) // period):
        return ((table, rows[i::period]) for i, table in enumerate(tables[:period]))
    grouped: dict[str, list] = {}
    for row in rows:
        grouped.setdefault(row[0], []).append(row)
    return grouped.items()


class Prints(NamedTuple):
    """One shard's fingerprints from one bundle: per table ``(kh, rid or None, loc)`` (rid None:
    the table's keys hold the stamp, rid is kh), and the sources behind the ``loc`` ids."""

    tables: dict[str, tuple[np.ndarray, np.ndarray | None, np.ndarray]]
    sources: dict[int, set[str]]


class _Buffer:
    """One table's rows not yet hashed: keys, stamps (unless the key holds them), and runs of
    ``(rows, loc)``; then its hashed arrays."""

    def __init__(self, table: str, stamped_by_key: bool) -> None:
        self.salt = table_salt(table)
        self.keys: list[bytes] = []
        self.stamps: list[int] | None = None if stamped_by_key else []
        self.runs: list[tuple[int, int]] = []
        self.hashed: list[tuple[np.ndarray, np.ndarray | None, np.ndarray]] = []

    def add(self, rows: list, loc: int) -> None:
        self.keys += map(_KEY, rows)
        if self.stamps is not None:
            self.stamps += map(_STAMP, map(_FIRST, map(_CELLS, rows)))
        self.runs.append((len(rows), loc))

    def flush(self) -> None:
        if not self.keys:
            return
        kh = key_hashes(self.keys, self.salt)
        rid = None
        if self.stamps is not None:
            rid = row_ids(kh, np.array(self.stamps, np.int64))
            self.stamps = []
        counts, locs = zip(*self.runs, strict=True)
        loc = np.repeat(np.array(locs, np.uint64), counts)
        self.hashed.append((kh, rid, loc))
        self.keys, self.runs = [], []


class RowPrints:
    """A bundle's fingerprints, table by table (``tables``: each checked table → whether its
    key holds its cells' stamp), drained per shard at the end of the bundle."""

    def __init__(self, tables: Mapping[str, bool]) -> None:
        self._stamped_by_key = dict(tables)
        self._buffers: dict[str, _Buffer] = {}
        self._sources: dict[int, set[str]] = {}
        self._pending = 0
        self.rows = 0  # rows fingerprinted since the last drain

    def add(self, rows: list, source: str, kind: str, offset: int) -> None:
        """A block's rows (of any tables: those not checked are skipped)."""
        loc = loc_of(source, kind, offset)
        self._sources.setdefault(loc >> _OFFSET_BITS, set()).add(source)
        for table, part in table_slices(rows):
            buffer = self._buffers.get(table)
            if buffer is None:
                if table not in self._stamped_by_key:
                    continue
                buffer = self._buffers[table] = _Buffer(table, self._stamped_by_key[table])
            buffer.add(part, loc)
            self._pending += len(part)
        if self._pending >= FLUSH_ROWS:
            self._flush()

    def _flush(self) -> None:
        for buffer in self._buffers.values():
            buffer.flush()
        self.rows += self._pending
        self._pending = 0

    def drain(self) -> list[tuple[int, Prints]]:
        """``(shard, Prints)`` of every shard holding rows, then forgotten."""
        self._flush()
        shards: dict[int, Prints] = {}
        for table, buffer in self._buffers.items():
            if not buffer.hashed:
                continue
            kh, rid, loc = (
                np.concatenate(parts) if parts[0] is not None else None
                for parts in zip(*buffer.hashed, strict=True)
            )
            shard = (kh >> _SHARD_SHIFT).astype(np.intp)
            order = np.argsort(shard, kind="stable")
            bounds = np.searchsorted(shard[order], np.arange(SHARDS + 1))
            for index in range(SHARDS):
                pick = order[bounds[index] : bounds[index + 1]]
                if len(pick):
                    prints = shards.setdefault(index, Prints({}, self._sources))
                    prints.tables[table] = (kh[pick], None if rid is None else rid[pick], loc[pick])
        self._buffers, self._sources = {}, {}
        return sorted(shards.items())


class Candidates(NamedTuple):
    """Rows whose row id occurs more than once in the run: per table their row ids and locs,
    and the sources behind the loc ids."""

    tables: dict[str, tuple[np.ndarray, np.ndarray]]
    sources: dict[int, set[str]]


def repeats(prints: Iterable[Prints]) -> tuple[dict[str, int], Candidates]:
    """One shard's fingerprints from every bundle → the distinct rows of each table (exact:
    a row's kh is in one shard only) and the rows whose row id occurs more than once."""
    parts: dict[str, list] = {}
    sources: dict[int, set[str]] = {}
    for one in prints:
        for table, arrays in one.tables.items():
            parts.setdefault(table, []).append(arrays)
        for sid, names in one.sources.items():
            sources.setdefault(sid, set()).update(names)
    distinct: dict[str, int] = {}
    found: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for table, arrays in parts.items():
        kh = np.concatenate([a[0] for a in arrays])
        rid = kh if arrays[0][1] is None else np.concatenate([a[1] for a in arrays])
        loc = np.concatenate([a[2] for a in arrays])
        ordered = np.sort(kh)
        distinct[table] = int(np.count_nonzero(ordered[1:] != ordered[:-1])) + 1
        if rid is not kh:
            ordered = np.sort(rid)
        twice = ordered[1:][ordered[1:] == ordered[:-1]]
        if len(twice):
            mask = np.isin(rid, np.unique(twice))
            found[table] = (rid[mask], loc[mask])
    return distinct, Candidates(found, sources)
