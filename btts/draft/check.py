"""A draft checked by the job's own code over the whole file (up to :data:`FULL_CHECK_BYTES`),
or over the sample beyond that.

The drafted schema is compiled into the builder every job runs (:class:`Builder`) and every
record is built: a record it refuses is a value the draft's types or formats do not take, two
records whose rows share a key but not their cells are an overwrite the key lets happen (the
second replaces the first: Bigtable keeps one value per cell and time). Either way the
offending records are given back, so that the draft is made again with them in its sample:
the draft then reads everything the file says, not only what its sample happened to hold.

Each row is kept as two 64-bit hashes, of its key and of its cells (16 bytes, sorted at the
end), so a file of 10 million records takes about 160 MB. Reading is the job's: CSV cells as
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


@dataclass
class Check:
    """What building every checked record found."""

    whole: bool  # every record of every file was built (else: the sample's)
    records: int = 0
    dead: int = 0  # records the builder refuses
    reason: str = ""  # the first refusal's reason
    clashes: int = 0  # records whose row another record of the file overwrites
    clash: str = ""  # the first such key
    offenders: list[dict] = field(default_factory=list)  # refused or colliding records

    def describe(self) -> str:
        where = "the whole file" if self.whole else "the sample"
        return f"{where} ({self.records:,} records)"


def _file_records(sample: Sample) -> Iterator[dict]:
    """Every record of one file, decoded as the job decodes it."""
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
            header = csv_dialect.named(next(rows, []), dialect)  # as the job names them
            for cells in rows:
                if len(cells) == len(header):
                    yield {n: events.CsvText(c) for n, c in zip(header, cells, strict=True) if c}
                else:
                    yield {"": cells}  # a line the job refuses too (its cell count)
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


def _whole(samples: list[Sample]) -> bool:
    """Whether every file can be read whole: its sample is, or its size is within the bound."""
    size = sum(s.size * (8 if s.compression else 1) for s in samples if not s.complete)
    return all(s.complete or s.fmt != "json_array" for s in samples) and size <= FULL_CHECK_BYTES


def check(schema_text: str, samples: list[Sample]) -> Check:
    """Build every record (the whole files when :func:`_whole`, else the samples) with the
    drafted schema's builder: refusals and overwrites, with offenders."""
    from transforms import schema as schema_lib
    from transforms.build.builder import Builder

    builder = Builder(schema_lib.loads(schema_text, "draft.yaml"))
    whole = _whole(samples)
    found = Check(whole)
    keys, cells = array("q"), array("q")
    adapt = builder.csv_adapter if samples[0].fmt == "csv" else None

    def records() -> Iterator[tuple[dict, bool]]:
        """Each record, and whether it is new to the draft (read from the file, not sampled)."""
        for sample in samples:
            if whole and not sample.complete:
                yield from ((r, True) for r in _file_records(sample))
            else:
                yield from ((r, False) for r in sample.records)

    for record, new in records():
        found.records += 1
        try:
            rows = builder.rows(adapt(record) if adapt else record)
        except InvalidEvent as err:
            found.dead += 1
            found.reason = found.reason or str(err)
            if new and len(found.offenders) < KEEP:
                found.offenders.append(record)
            continue
        for _table, key, row_cells in rows:
            keys.append(hash(key))
            cells.append(hash(row_cells))
    clashing = _clashing(keys, cells, found)
    if clashing:
        for record, new in records():  # again, for the records whose keys collide
            try:
                rows = builder.rows(adapt(record) if adapt else record)
            except InvalidEvent:
                continue
            if any(hash(key) in clashing for _t, key, _c in rows):
                found.clash = found.clash or rows[0][1].decode("utf-8", "replace")
                if new:
                    found.offenders.append(record)
                if len(found.offenders) >= KEEP:
                    break
    return found


def _clashing(keys: array, cells: array, found: Check) -> set[int]:
    """The key hashes written with different cells (sets ``found.clashes``)."""
    if not keys:
        return set()
    import numpy as np

    key = np.frombuffer(keys, dtype=np.int64)
    cell = np.frombuffer(cells, dtype=np.int64)
    order = np.lexsort((cell, key))
    key, cell = key[order], cell[order]
    same_key = key[1:] == key[:-1]
    other = same_key & (cell[1:] != cell[:-1])
    found.clashes = int(np.count_nonzero(other))
    return set(key[1:][other].tolist())
