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
FLUSH_ROWS = 4_096  # rows buffered (keys and stamps) before one hash: few calls, cache-warm keys
# Rows whose fingerprints a worker holds before handing them on (RowPrints.full): the runner then
# holds them coded, 12 bytes a row, never a worker's copies of a whole bundle's.
HANDOVER_ROWS = 65_536
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

    A key is read as little-endian 64-bit words, the last one zero-padded; each word is mixed
    with its position's multiplier and the mixes are summed with the key's length (so
    ``b"a"`` and ``b"a\\0"`` differ), then finalised. A zero word adds nothing, so a key
    padded with zero words hashes the same: keys of one length are read in place from their
    join (no copy per key), others from numpy's zero-padded fixed-width array."""
    n = len(keys)
    if not n:
        return np.zeros(0, np.uint64)
    blob = b"".join(keys)
    width = len(keys[0])
    if width >= 8 and len(blob) == n * width and max(map(len, keys)) == width:
        columns = [np.ndarray((n,), "<u8", blob, at, (width,)) for at in range(0, width - 7, 8)]
        if width % 8:  # the last 8 bytes, shifted down to the partial word's bytes
            last = np.ndarray((n,), "<u8", blob, width - 8, (width,))
            columns.append(last >> np.uint64(8 * (8 - width % 8)))
        lengths = np.uint64(width)
    else:
        fixed = np.array(keys, dtype=bytes)
        size = fixed.dtype.itemsize
        if size % 8:
            fixed = fixed.astype(f"S{size + 8 - size % 8}")
        words = fixed.view("<u8").reshape(n, -1)
        columns = [words[:, at] for at in range(words.shape[1])]
        lengths = np.fromiter(map(len, keys), np.uint64, n)
    with np.errstate(over="ignore"):
        h = lengths * _M2 + np.full(n, salt & 0xFFFFFFFFFFFFFFFF, np.uint64)
        for at, column in enumerate(columns):
            mixed = column * _WORDS[at]
            mixed ^= mixed >> _S32
            mixed *= _M1
            mixed ^= mixed >> _S29
            h += mixed
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
    """One shard's fingerprints from one bundle. ``ids``: per table, the row ids that fall in
    this shard and the bundle's block each row came from; ``keys``: per table whose keys do not
    hold the stamp, its distinct key hashes in this shard (a stamped-by-key table's row ids are
    its key hashes); ``blocks``: each block's loc; ``sources``: the sources behind loc ids."""

    ids: dict[str, tuple[np.ndarray, np.ndarray]]
    keys: dict[str, np.ndarray]
    blocks: np.ndarray
    sources: dict[int, set[str]]
    keyed: frozenset[str]  # the tables whose distinct rows are counted from ``keys``


def _by_shard(values: np.ndarray, *more: np.ndarray) -> Iterable[tuple[int, tuple]]:
    """``values`` (and arrays aligned with it) cut by shard (the top bits of ``values``)."""
    shard = (values >> _SHARD_SHIFT).astype(np.uint8)  # small ints: a radix sort, O(n)
    order = np.argsort(shard, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(shard, minlength=SHARDS))))
    for index in range(SHARDS):
        if bounds[index] < bounds[index + 1]:
            pick = order[bounds[index] : bounds[index + 1]]
            yield index, tuple(a[pick] for a in (values, *more))


class _Buffer:
    """One table's rows not yet hashed (keys, stamps unless the key holds them, runs of
    ``(rows, block)``), and then their fingerprints, cut by shard when handed on."""

    def __init__(self, table: str, stamped_by_key: bool) -> None:
        self.salt = table_salt(table)
        self.keys: list[bytes] = []
        self.stamps: list[int] | None = None if stamped_by_key else []
        self.runs: list[tuple[int, int]] = []
        self.ids: list[np.ndarray] = []  # row ids
        self.blocks: list[np.ndarray] = []  # each row's block
        self.distinct: list[np.ndarray] = []  # distinct key hashes (stamps not in the key)

    def add(self, rows: list, block: int) -> None:
        self.keys += map(_KEY, rows)
        if self.stamps is not None:
            self.stamps += map(_STAMP, map(_FIRST, map(_CELLS, rows)))
        self.runs.append((len(rows), block))

    def flush(self) -> None:
        if not self.keys:
            return
        kh = key_hashes(self.keys, self.salt)
        counts, blocks = zip(*self.runs, strict=True)
        self.blocks.append(np.repeat(np.array(blocks, np.uint32), counts))
        if self.stamps is None:
            self.ids.append(kh)
        else:
            self.ids.append(row_ids(kh, np.array(self.stamps, np.int64)))
            self.distinct.append(np.unique(kh))
            self.stamps = []
        self.keys, self.runs = [], []

    def by_shard(self) -> Iterable[tuple[int, str, tuple]]:
        """``(shard, "ids", (row ids, blocks))`` and ``(shard, "keys", (distinct key
        hashes,))`` of everything flushed."""
        if self.ids:
            for shard, pair in _by_shard(np.concatenate(self.ids), np.concatenate(self.blocks)):
                yield shard, "ids", pair
        if self.distinct:
            for shard, unique in _by_shard(np.unique(np.concatenate(self.distinct))):
                yield shard, "keys", unique


class RowPrints:
    """A bundle's fingerprints, table by table (``tables``: each checked table → whether its
    key holds its cells' stamp), drained per shard when :attr:`full` and at the end of the
    bundle."""

    def __init__(self, tables: Mapping[str, bool]) -> None:
        self._stamped_by_key = dict(tables)
        self._buffers: dict[str, _Buffer] = {}
        self._blocks: list[int] = []  # each block's loc
        self._sources: dict[int, set[str]] = {}
        self._pending = 0
        self._held = 0
        self.rows = 0  # rows fingerprinted (the caller counts them and resets this)

    def add(self, rows: list, source: str, kind: str, offset: int) -> None:
        """A block's rows (of any tables: those not checked are skipped)."""
        loc = loc_of(source, kind, offset)
        block = len(self._blocks)
        self._blocks.append(loc)
        self._sources.setdefault(loc >> _OFFSET_BITS, set()).add(source)
        for table, part in table_slices(rows):
            buffer = self._buffers.get(table)
            if buffer is None:
                if table not in self._stamped_by_key:
                    continue
                buffer = self._buffers[table] = _Buffer(table, self._stamped_by_key[table])
            buffer.add(part, block)
            self._pending += len(part)
        if self._pending >= FLUSH_ROWS:
            self._flush()

    def _flush(self) -> None:
        for buffer in self._buffers.values():
            buffer.flush()
        self.rows += self._pending
        self._held += self._pending
        self._pending = 0

    @property
    def full(self) -> bool:
        """Whether the fingerprints held should be drained and handed on now."""
        return self._held >= HANDOVER_ROWS

    def drain(self) -> list[tuple[int, Prints]]:
        """``(shard, Prints)`` of every shard holding rows, then forgotten."""
        self._flush()
        blocks = np.array(self._blocks, np.uint64)
        keyed = frozenset(t for t, stamped in self._stamped_by_key.items() if not stamped)
        shards: dict[int, Prints] = {}

        def shard_prints(index: int) -> Prints:
            if index not in shards:
                shards[index] = Prints({}, {}, blocks, self._sources, keyed)
            return shards[index]

        for table, buffer in self._buffers.items():
            for index, kind, arrays in buffer.by_shard():
                if kind == "ids":
                    shard_prints(index).ids[table] = arrays
                else:
                    shard_prints(index).keys[table] = arrays[0]
        self._buffers, self._blocks, self._sources = {}, [], {}
        self._held = 0
        return sorted(shards.items())


class Candidates(NamedTuple):
    """Rows whose row id occurs more than once in the run: per table their row ids and locs,
    and the sources behind the loc ids."""

    tables: dict[str, tuple[np.ndarray, np.ndarray]]
    sources: dict[int, set[str]]


def _distinct(values: np.ndarray) -> int:
    ordered = np.sort(values)
    return int(np.count_nonzero(ordered[1:] != ordered[:-1])) + 1 if len(ordered) else 0


def repeats(prints: Iterable[Prints]) -> tuple[dict[str, int], Candidates]:
    """One shard's fingerprints from every bundle → the distinct rows of each table (exact:
    a key hash is in one shard only) and the rows whose row id occurs more than once."""
    prints = list(prints)
    sources: dict[int, set[str]] = {}
    for one in prints:
        for sid, names in one.sources.items():
            sources.setdefault(sid, set()).update(names)
    distinct: dict[str, int] = {}
    found: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for table in sorted({t for one in prints for t in (*one.ids, *one.keys)}):
        rids = [one.ids[table][0] for one in prints if table in one.ids]
        ordered = np.sort(np.concatenate(rids)) if rids else np.zeros(0, np.uint64)
        same = ordered[1:] == ordered[:-1]
        if any(table in one.keyed for one in prints):
            keys = [one.keys[table] for one in prints if table in one.keys]
            distinct[table] = _distinct(np.concatenate(keys)) if keys else 0
        else:  # the keys hold the stamps: a row id is a key
            distinct[table] = len(ordered) - int(np.count_nonzero(same))
        twice = np.unique(ordered[1:][same])
        if len(twice):
            found[table] = _located(table, prints, twice)
    return distinct, Candidates(found, sources)


def _located(table: str, prints: list[Prints], twice: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``table`` whose row id is in ``twice``: their row ids and locs."""
    rids, locs = [], []
    for one in prints:
        if table in one.ids:
            rid, block = one.ids[table]
            mask = np.isin(rid, twice)
            rids.append(rid[mask])
            locs.append(one.blocks[block[mask]])
    return np.concatenate(rids), np.concatenate(locs)
