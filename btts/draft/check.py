"""A draft checked by the job's own code over the whole file (up to :data:`FULL_CHECK_BYTES`),
or over the sample beyond that.

The drafted schema is compiled into the builder every job runs (:class:`Builder`) and every
record is built: a record it refuses is a value the draft's types or formats do not take, two
records whose rows share a key but not their cells are an overwrite the key lets happen (the
second replaces the first: Bigtable keeps one value per cell and time). Either way the
offending records are given back, so that the draft is made again with them in its sample:
the draft then reads everything the file says, not only what its sample happened to hold.

Each row is kept as two 64-bit hashes, of its key and of its cells (16 bytes, sorted at the
end; and its record's index, 8 more), so a file of 10 million records takes about 240 MB.

Speed (a 100 MB file in under 30 s on 2 cores): the building is shared by a process per core
(forked, so that their string hashes agree; each reads the file and builds every other block
of records), the offenders are gathered by index in one more read without building, and a
check whose draft will be made again anyway (not ``final``) stops at its first overwrite.
Every verdict the draft reports still comes from a check that built every record.

Reading is the job's: CSV cells as
:class:`~transforms.text.events.CsvText` (an empty cell absent), JSON numbers as
:class:`~transforms.text.events.Num`, Parquet rows as the ingest reader gives them.
"""

from __future__ import annotations

import csv
import io
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field

from btts.draft.sample import Sample, open_input
from transforms.errors import InvalidEvent
from transforms.text import csv_dialect, events

__all__ = ["Check", "check"]

FULL_CHECK_BYTES = 1 << 30  # a file up to this size (as read) is checked whole
KEEP = 2_000  # offending records given back per check
_BATCH = 1 << 16
_BLOCK = 1 << 12  # records a process builds in a row (its share: every n-th block)
_PROCESSES = 2  # at most: the check's building is shared by one process per core
_PARALLEL_BYTES = 16 << 20  # a smaller file is built in one process (a fork costs more)
_PROBE = 1 << 15  # a check that may stop early looks for an overwrite after each this many


@dataclass
class Check:
    """What building every checked record found."""

    whole: bool  # every record of every file was built (else: the sample's)
    records: int = 0  # records read (a partial check: where it stopped)
    dead: int = 0  # records the builder refuses
    reason: str = ""  # the first refusal's reason
    clashes: int = 0  # records whose row another record of the file overwrites
    clash: str = ""  # the first such key
    offenders: list[dict] = field(default_factory=list)  # refused or colliding records
    partial: bool = False  # stopped at its first overwrite or KEEP refusals (not final)

    def describe(self) -> str:
        where = "the whole file" if self.whole else "the sample"
        return f"{where} ({self.records:,} records)"


def _file_records(sample: Sample, mine=None, first: int = 0) -> Iterator[dict | None]:
    """Every record of one file, decoded as the job decodes it (None for a record whose index,
    counted from ``first``, ``mine`` does not take: another process builds it)."""
    if sample.fmt == "parquet":
        import pyarrow.parquet as pq

        from transforms.ingest.columnar import columnar_record

        for batch in pq.ParquetFile(sample.path).iter_batches(batch_size=_BATCH):
            yield from (columnar_record(r) for r in batch.to_pylist())
        return
    dialect = sample.dialect
    with open_input(sample.path, sample.compression) as raw:
        text = io.TextIOWrapper(raw, encoding=dialect.encoding, errors="replace", newline="")
        if sample.fmt == "csv":
            for _ in range(dialect.skip):
                text.readline()
            rows = csv.reader(text, **csv_dialect.reader_args(dialect))
            yield from _csv_records(rows, dialect, mine, first)
            return
        if sample.fmt == "jsonl":
            for line in text:
                if line.strip():
                    try:
                        yield events.parse_json_object(line)
                    except InvalidEvent:
                        yield {"": line}
            return
    yield from sample.records  # a JSON array: as sampled (read whole up to its bound)


def _csv_records(rows, dialect, mine, index: int) -> Iterator[dict | None]:
    header = csv_dialect.named(next(rows, []), dialect)  # as the job names them
    width, text = len(header), events.CsvText
    for cells in rows:
        if mine is not None and not mine(index):
            yield None
        elif len(cells) == width:
            yield {n: text(c) for n, c in zip(header, cells, strict=True) if c}
        else:
            yield {"": cells}  # a line the job refuses too (its cell count)
        index += 1


def _whole(samples: list[Sample]) -> bool:
    """Whether every file can be read whole: its sample is, or its size is within the bound."""
    size = sum(s.size * (8 if s.compression else 1) for s in samples if not s.complete)
    return all(s.complete or s.fmt != "json_array" for s in samples) and size <= FULL_CHECK_BYTES


def _records(
    samples: list[Sample], whole: bool, mine=None
) -> Iterator[tuple[dict | None, bool, int]]:
    """Each record (None where ``mine(index)`` says another process builds it), whether it
    is new to the draft (read from the file, not sampled), and its number in its file (1 the
    first; a sample's records numbered in the sample's order: the check needs numbers that
    tell apart the records of one file, as the job's do, not the job's own)."""
    index = 0
    for sample in samples:
        if whole and not sample.complete:
            records, new = _file_records(sample, mine, index), True
        else:
            records, new = iter(sample.records), False
        for number, record in enumerate(records, start=1):
            yield (record if mine is None or mine(index) else None), new, number
            index += 1


def _rows(builder, samples: list[Sample], record: dict, number: int) -> list:
    """The record's rows as the job builds them: CSV records reshaped by the builder's adapter,
    then given their number when the schema numbers records (``from: record_number``)."""
    if samples[0].fmt == "csv":
        record = builder.csv_adapter(record)
    numbered = builder.schema.record_number
    if numbered:
        record = {**record, numbered: events.Num(str(number))}
    return builder.rows(record)


@dataclass
class _Part:
    """What one process found building its share of the records."""

    records: int = 0
    keys: array = field(default_factory=lambda: array("q"))  # per row: its key's hash
    cells: array = field(default_factory=lambda: array("q"))  # per row: its cells' hash
    owner: array = field(default_factory=lambda: array("q"))  # per row: its record's index
    dead: list[int] = field(default_factory=list)  # indices of refused records (new: KEEP)
    dead_count: int = 0
    reason: tuple[int, str] | None = None  # the first refusal: (index, reason)
    stopped: bool = False  # before its share's end (a check that is not final)


def _stops(part: _Part, stop) -> bool:
    """Whether a check that is not final stops here (and tells the other processes)."""
    if not stop.is_set() and (len(part.dead) >= KEEP or _clashing(part, Check(False))):
        stop.set()
    return stop.is_set()


def _build_part(
    builder, samples: list[Sample], whole: bool, share: tuple[int, int], stop=None
) -> _Part:
    """Build the records of ``share`` = (k, n): blocks of :data:`_BLOCK` records, every n-th
    from the k-th (every record when n is 1). ``stop`` (an event the processes share, None for
    a final check): set and stop at the first overwrite or :data:`KEEP` refusals found, or
    once another process has set it."""
    k, n = share
    mine = None if n == 1 else (lambda index: (index // _BLOCK) % n == k)
    part = _Part()
    for index, (record, new, number) in enumerate(_records(samples, whole, mine)):
        part.records += 1
        if stop is not None and index % _PROBE == _PROBE - 1 and _stops(part, stop):
            part.stopped = True
            break
        if record is None:
            continue
        try:
            rows = _rows(builder, samples, record, number)
        except InvalidEvent as err:
            part.dead_count += 1
            part.reason = part.reason or (index, str(err))
            if new and len(part.dead) < KEEP:
                part.dead.append(index)
            continue
        for _table, key, row_cells in rows:
            part.keys.append(hash(key))
            part.cells.append(hash(row_cells))
            part.owner.append(index)
    return part


def _shares(samples: list[Sample], whole: bool) -> int:
    """How many processes build the records: one per core (at most :data:`_PROCESSES`) for a
    whole file of over :data:`_PARALLEL_BYTES` where this process can fork children (their
    string hashes then agree; a daemonic process cannot), else one."""
    import multiprocessing
    import os

    size = sum(s.size for s in samples if whole and not s.complete)
    forks = "fork" in multiprocessing.get_all_start_methods()
    # a daemonic process (a pool's worker, as a corpus run or a user's own pool makes) may not
    # have children: it builds every record itself
    forks = forks and not multiprocessing.current_process().daemon
    return min(_PROCESSES, os.cpu_count() or 1) if forks and size > _PARALLEL_BYTES else 1


_FORKED: tuple = ()  # what forked processes build (set by the parent before it forks)


def _forked_part(share: tuple[int, int]) -> _Part:
    builder, samples, whole, stop = _FORKED
    return _build_part(builder, samples, whole, share, stop)


def _build_all(builder, samples: list[Sample], whole: bool, final: bool) -> _Part:
    """Every record built (a check that is not final: up to the first overwrite), by
    :func:`_shares` processes, their findings merged."""
    global _FORKED
    import multiprocessing
    import threading

    n = _shares(samples, whole)
    if n == 1:
        stop = None if final else threading.Event()
        return _build_part(builder, samples, whole, (0, 1), stop)
    context = multiprocessing.get_context("fork")
    _FORKED = (builder, samples, whole, None if final else context.Event())
    try:
        with context.Pool(n) as pool:
            parts = pool.map(_forked_part, [(k, n) for k in range(n)])
    finally:
        _FORKED = ()
    # every process reads every record (building its share), so the records read are the
    # furthest any got; a check that stopped reports the first place a process stopped at,
    # not how far another ran on before it looked (which hangs on how they were scheduled)
    stops = [p.records for p in parts if p.stopped]
    merged = _Part(records=min(stops) if stops else max(p.records for p in parts))
    merged.stopped = bool(stops)
    for part in parts:
        for name in ("keys", "cells", "owner"):
            getattr(merged, name).extend(getattr(part, name))
        merged.dead += part.dead
        merged.dead_count += part.dead_count
    merged.dead = sorted(merged.dead)[:KEEP]
    merged.reason = min((p.reason for p in parts if p.reason), default=None)
    return merged


def check(schema_text: str, samples: list[Sample], final: bool = True) -> Check:
    """Build every record (the whole files when :func:`_whole`, else the samples) with the
    drafted schema's builder: refusals and overwrites, with offenders. The building is shared
    by processes (:func:`_shares`); a second read (no building) gathers the offenders. A check
    that is not ``final`` (its draft is made again when it finds offenders) may stop at the
    first overwrite or :data:`KEEP` refusals: ``partial``, its counts those of the records
    built so far."""
    from transforms import schema as schema_lib
    from transforms.builder.builder import Builder

    builder = Builder(schema_lib.loads(schema_text, "draft.yaml"))
    whole = _whole(samples)
    found = Check(whole)
    part = _build_all(builder, samples, whole, final)
    found.records, found.dead, found.partial = part.records, part.dead_count, part.stopped
    found.reason = part.reason[1] if part.reason else ""
    clashing = _clashing(part, found)
    if not (part.dead or clashing):
        return found
    wanted = set(part.dead) | clashing
    first_clash, last = min(clashing, default=-1), max(wanted)
    for index, (record, new, number) in enumerate(_records(samples, whole, wanted.__contains__)):
        if index > last:
            break  # (the rest of the file holds none of them)
        if record is None:
            continue
        if index == first_clash:
            rows = _rows(builder, samples, record, number)
            found.clash = rows[0][1].decode("utf-8", "replace")
        if new and len(found.offenders) < KEEP:
            found.offenders.append(record)
    return found


def _clashing(part: _Part, found: Check) -> set[int]:
    """The indices of the records whose rows are written with different cells under one key
    (sets ``found.clashes``): as many as, with the refused records first, make :data:`KEEP`
    offenders."""
    if not part.keys:
        return set()
    import numpy as np

    key = np.frombuffer(part.keys, dtype=np.int64)
    cell = np.frombuffer(part.cells, dtype=np.int64)
    order = np.lexsort((cell, key))
    key, cell = key[order], cell[order]
    same_key = key[1:] == key[:-1]
    other = same_key & (cell[1:] != cell[:-1])
    found.clashes = int(np.count_nonzero(other))
    if not found.clashes:
        return set()
    keys = np.frombuffer(part.keys, dtype=np.int64)
    owners = np.frombuffer(part.owner, dtype=np.int64)[np.isin(keys, key[1:][other])]
    return set(np.unique(owners)[: KEEP - len(part.dead)].tolist())
