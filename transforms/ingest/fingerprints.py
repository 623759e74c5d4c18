"""Fixed-size fingerprints of the rows a batch run writes, so that two records writing one cell
are found across every worker at a cost of 8 bytes per row, not of the rows themselves.

A row write is ``(table, key, cells)`` whose cells share one timestamp (every builder stamps a
row's cells with its event time, or the start of its bucket). Two rows can write the same cell
(table, key, family, qualifier, timestamp) only if they have the same **row id**: the table, the
key and that timestamp. The build step hashes, per row:

* ``kh``: the table and the key (the distinct rows of a table are its distinct ``kh``, counted
  exactly over the whole run: kept once per distinct key, for tables whose key does not hold
  the stamp);
* the row id: ``kh`` mixed with the timestamp, or ``kh`` itself where the key holds the
  timestamp (``epoch_ms`` of the stamping time: METRIC, QUOTE, TICK…), which spares reading it.

and keeps one 64-bit number a row: the low 60 bits of the row id (the **identity** compared),
and in the top 4 bits which of the last 16 flushes (of :data:`FLUSH_ROWS` rows, a few blocks) it
came from, whose blocks' places (``loc``: a 24-bit hash of the source and, for a JSON-lines
block, its byte offset; 0: the source whole) travel once per flush: where to read it again.

Rows are buffered per table and hashed in one vectorised pass per flush: the keys read as 64-bit
words. Everything is deterministic (no Python ``hash``, which differs between processes), so two
workers' fingerprints of one row are equal. :func:`repeats` finds, per shard, the rows whose
identity occurs more than once: the only rows that can overwrite one another (or repeat one
another). Those few are read and built again and compared cell by cell
(:mod:`transforms.ingest.overwrites`); a hash collision can only make a row a candidate there,
never a finding.

Pure: numpy and the standard library, no Beam.
"""

from __future__ import annotations

import operator
import zlib
from collections.abc import Iterable, Mapping
from typing import NamedTuple

import numpy as np

from transforms.mutations import TableCut, first_stamps, is_lean

__all__ = [
    "IDENTITY",
    "Candidates",
    "Prints",
    "RowPrints",
    "key_hashes",
    "repeats",
    "row_ids",
    "split_loc",
    "stamp_array",
    "table_salt",
]

SHARDS = 16  # the global pass runs per shard: bits 56-59 of a key hash or an identity
FLUSH_ROWS = 8_192  # rows buffered (keys joined per block, stamps) before one hash: few calls
FLUSHES = 16  # flushes a worker holds before handing them on (4 bits of each row's number)
# so a worker holds at most FLUSHES * FLUSH_ROWS rows' fingerprints; the runner then holds them
# coded, 8 bytes a row, never a worker's copies of a whole bundle's
_SHARD_SHIFT = np.uint64(56)
_FLUSH_SHIFT = np.uint64(60)  # the flush a row came from: the top 4 bits of its number
IDENTITY = np.uint64((1 << 60) - 1)  # the rest: its identity (60 bits of its row id)
_OFFSET_BITS = 40  # a JSON-lines block's byte offset + 1 (files up to 1 TiB); 0: whole source
_OFFSET_MASK = (1 << _OFFSET_BITS) - 1

_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_S29, _S32, _S33 = np.uint64(29), np.uint64(32), np.uint64(33)
# One odd multiplier per 8-byte word of a key (keys are at most 4 KiB: 512 words).
_WORDS = (np.arange(1, 513, dtype=np.uint64) * _GOLD) | np.uint64(1)
_SEP = b"\xff"  # between joined keys: a byte no UTF-8 text holds

_KEY = operator.itemgetter(1)
_STAMP = operator.itemgetter(3)  # a lean row's stamp


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
    width = len(keys[0])
    if width >= 8:
        blob = _SEP.join(keys)
        same = _one_width(blob, n, width)
        if same is None:  # a key holds the separator, and the lengths add up
            same = max(map(len, keys)) == width
        if same:
            return _mixed(_words(blob, n, width), np.uint64(width), salt)
    fixed = np.array(keys, dtype=bytes)
    size = fixed.dtype.itemsize
    if size % 8:
        fixed = fixed.astype(f"S{size + 8 - size % 8}")
    count = fixed.dtype.itemsize // 8
    words = fixed.view("<u8").reshape(n, count).T * _WORDS[:count, None]
    return _mixed(words, np.fromiter(map(len, keys), np.uint64, n), salt)


def _one_width(blob: bytes, n: int, width: int) -> bool | None:
    """Whether ``n`` keys joined by ``_SEP`` into ``blob`` are all ``width`` bytes long; None
    when a key holds ``_SEP`` itself and their lengths add up (only measuring them tells).

    Where ``_SEP`` occurs only between the keys, they are of one width if it sits every
    ``width + 1`` bytes: two C passes over the join, not a call per key."""
    stride = width + 1
    if len(blob) != n * stride - 1:
        return False
    if blob.count(_SEP) != n - 1:
        return None
    return blob[width::stride] == _SEP * (n - 1)


def _words(blob: bytes, n: int, width: int) -> np.ndarray:
    """The words of ``n`` keys of ``width`` (≥ 8) bytes joined by ``_SEP`` into ``blob``, each
    times its position's multiplier: a row per word position, a column per key."""
    stride = width + 1
    full, part = divmod(width, 8)
    words = np.empty((full + (part > 0), n), np.uint64)
    inside = np.ndarray((full, n), "<u8", blob, 0, (8, stride))
    np.multiply(inside, _WORDS[:full, None], out=words[:full])
    if part:  # the last 8 bytes, shifted down to the partial word's bytes
        last = np.ndarray((n,), "<u8", blob, width - 8, (stride,))
        np.right_shift(last, np.uint64(8 * (8 - part)), out=words[full])
        words[full] *= _WORDS[full]
    return words


def _mixed(words: np.ndarray, lengths: np.ndarray, salt: int) -> np.ndarray:
    """The hashes of keys from their multiplied words (:func:`_words`) and lengths."""
    with np.errstate(over="ignore"):
        words ^= words >> _S32
        words *= _M1
        words ^= words >> _S29
        h = words.sum(axis=0, dtype=np.uint64)
        h += lengths * _M2 + np.uint64(salt & 0xFFFFFFFFFFFFFFFF)
        return _fmix(h)


def stamp_array(rows: list) -> np.ndarray:
    """The timestamp of each row's first cell (every row holds a cell), as ``int64``: read
    straight into the array from lean rows (no list of Python ints in between)."""
    if rows and is_lean(rows[0]) and is_lean(rows[-1]):
        try:
            return np.fromiter(map(_STAMP, rows), np.int64, len(rows))
        except (IndexError, TypeError):  # lean and full rows mixed
            pass
    return np.array(first_stamps(rows), np.int64)


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


def _loc(sid: int, kind: str, offset: int) -> int:
    """Where a block's records are read again: its source's id, and a JSON-lines block's
    offset."""
    position = offset + 1 if kind == "jsonl" and 0 <= offset < _OFFSET_MASK else 0
    return sid << _OFFSET_BITS | position


def split_loc(loc: int) -> tuple[int, int | None]:
    """``(source id, offset of a JSON-lines block or None: the source whole)`` of a ``loc``."""
    position = loc & _OFFSET_MASK
    return loc >> _OFFSET_BITS, position - 1 if position else None


class Prints(NamedTuple):
    """One shard's fingerprints from one handover. ``ids``: per table, a number per row (its
    identity, and the flush it came from: see the module docstring); ``keys``: per table whose
    keys do not hold the stamp, its distinct key hashes in this shard; ``flushes``: each
    flush's blocks (their locs); ``sources``: the sources behind loc ids; ``keyed``: the
    tables whose distinct rows are counted from ``keys`` (the others': their identities)."""

    ids: dict[str, np.ndarray]
    keys: dict[str, np.ndarray]
    flushes: tuple[np.ndarray, ...]
    sources: dict[int, set[str]]
    keyed: frozenset[str]


def _by_shard(values: np.ndarray) -> Iterable[tuple[int, np.ndarray]]:
    """``values`` cut by shard (bits 56-59), each shard's in their order: views on one
    gathered copy (one gather, not one per shard)."""
    shard = ((values >> _SHARD_SHIFT) & np.uint64(SHARDS - 1)).astype(np.uint8)
    ordered = values[np.argsort(shard, kind="stable")]  # a radix sort
    ends = np.cumsum(np.bincount(shard, minlength=SHARDS)).tolist()
    start = 0
    for index, end in enumerate(ends):
        if start < end:
            yield index, ordered[start:end]
        start = end


class _Buffer:
    """One table's rows not yet hashed (keys, and stamps unless the key holds them), then
    their numbers (identity and flush), cut by shard when handed on.

    A block's keys are joined as they come, while the block is fresh in the cache: while every
    block of a flush has keys of one width (≥ 8 bytes), the flush hashes the join of those
    joins in place (:func:`_words`); else the keys themselves (:func:`key_hashes`)."""

    def __init__(self, table: str, stamped_by_key: bool) -> None:
        self.salt = table_salt(table)
        self.count = 0  # rows since the last flush
        self.width = 0  # their keys' width, while all are joined in blobs
        self.blobs: list[bytes] = []  # each block's keys joined by _SEP
        self.keys: list[bytes] | None = None  # the keys, once one block's width differs
        self.stamps: list[np.ndarray] | None = None if stamped_by_key else []  # each block's
        self.ids: list[np.ndarray] = []
        self.hashes: list[np.ndarray] = []  # key hashes (stamps not in the key): distinct later

    def add(self, rows: list, stamps: np.ndarray | None = None) -> None:
        """A block's rows of this table, and their stamps (``stamp_array``) if already read
        (unused where the key holds them)."""
        if self.keys is None:
            blob = _SEP.join(map(_KEY, rows))
            width = self.width or len(rows[0][1])
            if width >= 8 and _one_width(blob, len(rows), width):
                self.width = width
                self.blobs.append(blob)
            else:  # (no key of the blobs holds _SEP: each blob was checked)
                self.keys = [key for joined in self.blobs for key in joined.split(_SEP)]
                self.keys += map(_KEY, rows)
        else:
            self.keys += map(_KEY, rows)
        self.count += len(rows)
        if self.stamps is not None:  # read while the block is fresh, kept as numbers
            self.stamps.append(stamp_array(rows) if stamps is None else stamps)

    def flush(self, flush: int) -> None:
        if not self.count:
            return
        if self.keys is None:
            blob = _SEP.join(self.blobs)
            kh = _mixed(_words(blob, self.count, self.width), np.uint64(self.width), self.salt)
        else:
            kh = key_hashes(self.keys, self.salt)
        if self.stamps is None:
            rid = kh & IDENTITY
        else:
            stamps = self.stamps[0] if len(self.stamps) == 1 else np.concatenate(self.stamps)
            rid = row_ids(kh, stamps) & IDENTITY
            self.hashes.append(kh)  # made distinct when handed on: one sort, not one a flush
            self.stamps = []
        rid |= np.uint64(flush) << _FLUSH_SHIFT
        self.ids.append(rid)
        self.count, self.width, self.blobs, self.keys = 0, 0, [], None

    def by_shard(self) -> Iterable[tuple[int, str, np.ndarray]]:
        """``(shard, "ids", numbers)`` and ``(shard, "keys", distinct key hashes)`` of
        everything flushed."""
        if self.ids:
            for shard, ids in _by_shard(np.concatenate(self.ids)):
                yield shard, "ids", ids
        if self.hashes:  # cut by shard first: sixteen sorts of a sixteenth each, in cache
            for shard, hashes in _by_shard(np.concatenate(self.hashes)):
                yield shard, "keys", _sorted_distinct(hashes, in_place=True)


def _sorted_distinct(values: np.ndarray, in_place: bool = False) -> np.ndarray:
    """``np.unique(values)`` of a 1-d array, by one sort (numpy's own unique hashes its input
    first: several times slower on a flush's hashes); ``in_place``: ``values`` may be
    sorted where it is (a copy of the caller's own)."""
    if in_place:
        values.sort()
        ordered = values
    else:
        ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


class RowPrints:
    """A bundle's fingerprints, table by table (``tables``: each checked table → whether its
    key holds its cells' stamp), drained per shard when :attr:`full` and at the end of the
    bundle."""

    def __init__(self, tables: Mapping[str, bool]) -> None:
        self._stamped_by_key = dict(tables)
        self._keyed = frozenset(t for t, stamped in tables.items() if not stamped)
        self._buffers: dict[str, _Buffer] = {}
        self._blocks: list[int] = []  # the locs of the blocks since the last flush
        self._flushes: list[np.ndarray] = []  # each flush's blocks, since the last drain
        self._sources: dict[int, set[str]] = {}
        self._source_ids: dict[str, int] = {}  # every source seen: its id, a crc32 once
        self._cut = TableCut()  # for callers that do not hand the cut over
        self._pending = 0
        self.rows = 0  # rows fingerprinted (the caller counts them and resets this)

    def add(
        self,
        rows: list,
        source: str,
        kind: str,
        offset: int,
        parts: list[tuple[str, list]] | None = None,
        stamps: dict[str, np.ndarray] | None = None,
    ) -> None:
        """A block's rows (of any tables: those not checked are skipped), each holding a cell.

        ``parts``: the rows cut by table (:class:`~transforms.mutations.TableCut`), when the
        caller has cut them already; ``stamps``: per table, its rows' stamps already read
        (:func:`stamp_array`), and where this adds those it reads (for the block's other
        steps: one read of a table's stamps per block)."""
        if not rows:
            return
        checked = self._stamped_by_key
        added = 0
        for table, part in self._cut(rows) if parts is None else parts:
            stamped_by_key = checked.get(table)
            if stamped_by_key is None:
                continue
            buffer = self._buffers.get(table)
            if buffer is None:
                buffer = self._buffers[table] = _Buffer(table, stamped_by_key)
            if stamped_by_key:
                buffer.add(part)
            else:
                read = stamps.get(table) if stamps is not None else None
                if read is None:
                    read = stamp_array(part)
                    if stamps is not None:
                        stamps[table] = read
                buffer.add(part, read)
            added += len(part)
        if added:
            sid = self._source_ids.get(source)
            if sid is None:
                sid = self._source_ids[source] = source_id(source)
            self._blocks.append(_loc(sid, kind, offset))
            self._sources.setdefault(sid, set()).add(source)
            self._pending += added
            if self._pending >= FLUSH_ROWS:
                self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        flush = len(self._flushes)
        for buffer in self._buffers.values():
            buffer.flush(flush)
        self._flushes.append(np.array(self._blocks, np.uint64))
        self._blocks = []
        self.rows += self._pending
        self._pending = 0

    @property
    def full(self) -> bool:
        """Whether the fingerprints held should be drained and handed on now (before a 17th
        flush, which 4 bits could not name)."""
        return len(self._flushes) >= FLUSHES

    def drain(self) -> list[tuple[int, Prints]]:
        """``(shard, Prints)`` of every shard holding rows, then forgotten."""
        self._flush()
        flushes, sources = tuple(self._flushes), self._sources
        shards: dict[int, Prints] = {}
        for table, buffer in self._buffers.items():
            for index, kind, values in buffer.by_shard():
                if index not in shards:
                    shards[index] = Prints({}, {}, flushes, sources, self._keyed)
                getattr(shards[index], kind)[table] = values
        self._buffers, self._flushes, self._sources = {}, [], {}
        return sorted(shards.items())


class Candidates(NamedTuple):
    """Rows whose identity occurs more than once in the run: per table those identities and
    the locs of blocks that hold every row of them (and some others), and the sources behind
    the loc ids."""

    tables: dict[str, tuple[np.ndarray, np.ndarray]]
    sources: dict[int, set[str]]


def _distinct(runs: list[np.ndarray]) -> int:
    """How many distinct values ``runs`` hold together, each run sorted and distinct (a
    handover's distinct key hashes of a shard): a stable sort merges two or more; one alone
    is counted as it is (a worker hands on every 16 flushes, so an input of up to about 131,072
    rows per worker gives each shard one run)."""
    if len(runs) < 2:
        return len(runs[0]) if runs else 0
    ordered = np.sort(np.concatenate(runs), kind="stable")
    return int(np.count_nonzero(ordered[1:] != ordered[:-1])) + 1 if len(ordered) else 0


def repeats(prints: Iterable[Prints]) -> tuple[dict[str, int], Candidates]:
    """One shard's fingerprints from every handover → the distinct rows of each table (exact:
    a key hash, an identity, is in one shard only) and the rows whose identity occurs more
    than once."""
    prints = list(prints)
    sources: dict[int, set[str]] = {}
    for one in prints:
        for sid, names in one.sources.items():
            sources.setdefault(sid, set()).update(names)
    distinct: dict[str, int] = {}
    found: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for table in sorted({t for one in prints for t in (*one.ids, *one.keys)}):
        ids = [one.ids[table] for one in prints if table in one.ids]
        ordered = np.concatenate(ids) if ids else np.zeros(0, np.uint64)  # a copy: in place
        ordered &= IDENTITY
        ordered.sort()
        same = ordered[1:] == ordered[:-1]
        if any(table in one.keyed for one in prints):
            distinct[table] = _distinct([one.keys[table] for one in prints if table in one.keys])
        else:  # the keys hold the stamps: an identity is a key
            distinct[table] = len(ordered) - int(np.count_nonzero(same))
        twice = np.unique(ordered[1:][same])
        if len(twice):
            found[table] = _located(table, prints, twice)
    return distinct, Candidates(found, sources)


def _located(table: str, prints: list[Prints], twice: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The identities in ``twice`` and the locs of the blocks of every flush that holds one
    of their rows (read again, they give every row of those identities)."""
    locs = []
    for one in prints:
        if table in one.ids:
            numbers = one.ids[table]
            hit = numbers[np.isin(numbers & IDENTITY, twice)]
            for flush in np.unique(hit >> _FLUSH_SHIFT).tolist():
                locs.append(one.flushes[flush])
    return twice, np.unique(np.concatenate(locs))
