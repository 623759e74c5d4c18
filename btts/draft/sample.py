"""A bounded sample of an input file: the records ``btts init`` drafts a schema from.

Why bounded: a draft must come back in seconds whatever the file's size, so the sample reads at
most :data:`HEAD_BYTES` from the start plus :data:`SPREAD_WINDOWS` windows of
:data:`WINDOW_BYTES` spread over an uncompressed file (a file no larger than the sum is read
whole); a gzip or bzip2 file gives its first :data:`HEAD_BYTES` decompressed, a Parquet file the
first rows of a spread of its row groups. Records come back as the ingest readers decode them
(CSV cells as :class:`~transforms.text.events.CsvText`, an empty cell absent; JSON numbers as
:class:`~transforms.text.events.Num`; a Parquet null absent), so what the draft sees is what the
job will check. The format is chosen by the same rules as
``transforms.ingest.readers.detect`` (the tests hold the two to the same answer) without importing
Beam.
"""

from __future__ import annotations

import bz2
import codecs
import csv
import gzip
import io
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from btts.draft import dialect as dialect_mod
from transforms.errors import InvalidEvent, UserError
from transforms.ingest import json_array
from transforms.text import csv_dialect, events
from transforms.text.csv_dialect import CsvDialect

__all__ = ["DraftError", "Sample", "open_input", "read_sample"]

HEAD_BYTES = 2 << 20
SPREAD_WINDOWS = 32
WINDOW_BYTES = 64 << 10
MAX_RECORDS = 20_000
_EXTENSIONS = {
    ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": None, ".csv": "csv",
    ".parquet": "parquet", ".avro": "avro",
}  # fmt: skip


@dataclass
class Sample:
    """What was read of one file: its records, format, and how much of it they stand for."""

    path: str
    fmt: str
    compression: str
    columns: list[str] = field(default_factory=list)  # in the order the file gives them
    records: list[dict] = field(default_factory=list)
    complete: bool = True  # every record of the file is in ``records``
    bytes_read: int = 0
    size: int = 0
    skipped: int = 0  # lines of the sample that did not parse (a window's cut record)
    total: int | None = None  # the file's record count, where its metadata says (Parquet)
    dialect: CsvDialect = csv_dialect.DEFAULT  # a CSV file's, as init saw it

    def describe(self) -> str:
        how = "the whole file" if self.complete else f"{self.bytes_read:,} of {self.size:,} bytes"
        if self.total is not None and not self.complete:
            how = f"of its {self.total:,}"
        return f"{len(self.records):,} {self.fmt} records ({how})"


class DraftError(UserError, ValueError):
    """Input from which no schema can be drafted (no time, an unknown --query field…)."""


class SampleError(DraftError):
    """A file that cannot be sampled: unreadable, empty, or in a format with no records."""


def _compression(head: bytes) -> str:
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    return "bzip2" if head.startswith(b"BZh") else ""


def open_input(path: str, compression: str):
    """The file's bytes, decompressed."""
    if compression == "gzip":
        return gzip.open(path, "rb")
    return bz2.open(path, "rb") if compression == "bzip2" else open(path, "rb")


def _name_format(path: str) -> str | None:
    name = path.lower()
    for suffix in (".gz", ".gzip", ".bz2"):
        name = name.removesuffix(suffix)
    return next((fmt for ext, fmt in _EXTENSIONS.items() if name.endswith(ext)), None)


def detect(path: str) -> tuple[str, str]:
    """``(format, compression)`` of a file, by the rules of the ingest readers: magic bytes,
    then JSON shown by the content, then the name, then CSV shown by the content."""
    with open(path, "rb") as handle:
        head = handle.read(4)
    compression = _compression(head)
    if head.startswith(b"PAR1"):
        return "parquet", ""
    if head.startswith(b"Obj\x01"):
        return "avro", ""
    fmt = _name_format(path)
    if fmt in (None, "jsonl", "csv"):
        with open_input(path, compression) as handle:
            text = handle.read(64 << 10).removeprefix(codecs.BOM_UTF8).lstrip()
        text = text.decode("utf-8", errors="replace")
        if text[:1] in ("[", "{"):
            return ("json_array" if text[:1] == "[" else "jsonl"), compression
        if fmt is None and (events.looks_like_csv(text) or dialect_mod.sniff(text)):
            fmt = "csv"
    return fmt or "jsonl", compression


def _windows(path: str, size: int) -> Iterator[tuple[int, bytes]]:
    """The head, then windows spread evenly over the rest (each from its first line start)."""
    with open(path, "rb") as handle:
        if size <= HEAD_BYTES + SPREAD_WINDOWS * WINDOW_BYTES:
            yield 0, handle.read()
            return
        yield 0, handle.read(HEAD_BYTES)
        step = (size - HEAD_BYTES) // SPREAD_WINDOWS
        for i in range(SPREAD_WINDOWS):
            handle.seek(HEAD_BYTES + i * step)
            yield HEAD_BYTES + i * step, handle.read(WINDOW_BYTES)


def _lines(chunk: bytes, first: bool, last: bool) -> list[bytes]:
    """Whole lines of a chunk: a window drops its first (cut) line and its last when cut."""
    lines = chunk.split(b"\n")
    if not first:
        lines = lines[1:]
    if not last and lines:
        lines = lines[:-1]
    return [line.rstrip(b"\r") for line in lines]


def _quota(index: int, chunks: int) -> int | None:
    """How many records chunk ``index`` of ``chunks`` gives: all of a file read whole; else
    half the sample from the head and the other half shared by the windows."""
    if chunks == 1:
        return None
    return MAX_RECORDS // 2 if index == 0 else MAX_RECORDS // (2 * SPREAD_WINDOWS)


def _csv_records(sample: Sample, chunks: list[tuple[bytes, bool]]) -> None:
    """The records of the sample's chunks, read in the dialect the head shows (its encoding
    from every chunk): the one the draft declares, so the job reads them the same way."""
    encoding = dialect_mod.encoding_of(chunk for chunk, _ in chunks)
    head = chunks[0][0].decode(encoding, errors="replace").removeprefix("\ufeff")
    found = dialect_mod.sniff(head, chunks[0][1]) or csv_dialect.DEFAULT
    dialect = found._replace(encoding=encoding)
    args = csv_dialect.reader_args(dialect)
    header: tuple[str, ...] = ()
    cells_seen: list[list[str]] = []
    for index, (chunk, whole) in enumerate(chunks):
        if not header:  # the head: decoded once, above
            text = head.split("\n", dialect.skip)[-1] if dialect.skip else head
            rows = csv.reader(io.StringIO(text, newline=""), strict=True, **args)
            try:
                names = next(rows)
            except (StopIteration, csv.Error) as err:
                raise SampleError(f"{sample.path}: no CSV header ({err})") from None
            dialect = dialect.with_columns(dialect_mod.repeated_columns(csv_dialect.named(names)))
            header = csv_dialect.named(names, dialect)  # as the job names them
            sample.columns = list(header)
        else:
            text = chunk.decode(encoding, errors="replace").split("\n", 1)[-1]
            rows = csv.reader(io.StringIO(text, newline=""), strict=True, **args)
        rows_list = _safe_rows(rows)
        if not whole and rows_list:
            rows_list = rows_list[:-1]  # the window's last record may be cut
        cells_seen += rows_list[:_MARK_ROWS]
        for cells in rows_list[: _quota(index, len(chunks))]:
            if len(cells) != len(header):
                sample.skipped += 1
                continue
            sample.records.append(
                {n: events.CsvText(c) for n, c in zip(header, cells, strict=True) if c != ""}
            )
    sample.dialect = dialect_mod.decimal_marks(dialect, cells_seen)


_MARK_ROWS = 2_000  # rows of each chunk whose numbers show the decimal marks


def _safe_rows(rows) -> list[list[str]]:
    out = []
    try:
        for cells in rows:
            out.append(cells)
    except csv.Error:
        pass  # a window cut inside a quoted field: keep what parsed before it
    return out


def _json_records(sample: Sample, chunks: list[tuple[bytes, bool]]) -> None:
    """JSON lines (each chunk's whole lines), or an array: its head element by element, then
    the windows' lines that hold one object each (``{…},``, the usual array layout)."""
    for index, (chunk, whole) in enumerate(chunks):
        quota = _quota(index, len(chunks))
        if index == 0 and sample.fmt == "json_array":
            _array_head(sample, chunk, whole, quota)
            continue
        for line in _lines(chunk, index == 0, whole)[:quota]:
            text = line.strip().rstrip(b",").strip()
            if not text.startswith(b"{"):
                continue
            try:
                sample.records.append(events.parse_json_object(text))
            except InvalidEvent:
                sample.skipped += 1


def _array_head(sample: Sample, chunk: bytes, whole: bool, quota: int | None) -> None:
    items = json_array.elements(sample.path, io.BytesIO(chunk), 1 << 20)
    try:
        for count, (_, text) in enumerate(items):
            if quota is not None and count >= quota:
                break
            try:
                sample.records.append(events.parse_json_object(text))
            except InvalidEvent:
                sample.skipped += 0 if not whole else 1  # the head's last element may be cut
    except json_array.ArrayError as err:  # the file as a whole: no sample of it
        raise SampleError.because(err) from err


def _columnar(sample: Sample) -> None:
    """The first rows of a spread of row groups (Parquet), decoded as the ingest reader does."""
    if sample.fmt != "parquet":
        raise SampleError(f"{sample.path}: Avro files are not sampled yet; convert to Parquet")
    import pyarrow.parquet as pq

    from transforms.ingest.columnar import columnar_record

    handle = pq.ParquetFile(sample.path)
    groups = handle.num_row_groups
    picks = sorted(
        {round(i * (groups - 1) / max(1, SPREAD_WINDOWS - 1)) for i in range(SPREAD_WINDOWS)}
    )
    per_group = max(1, MAX_RECORDS // len(picks))
    sample.columns = list(handle.schema_arrow.names)
    twice = [n for n, count in Counter(sample.columns).items() if count > 1]
    if twice:  # (read as records, one column of the name would be lost)
        raise SampleError(
            f"{sample.path}: two columns are named {twice[0]!r}: one would be lost; rename one"
        )
    for group in picks:  # the first batch of each picked group only: never a whole group
        batch = next(handle.iter_batches(batch_size=per_group, row_groups=[group]), None)
        if batch is not None:
            sample.records += [columnar_record(r) for r in batch.to_pylist()]
    sample.complete = len(picks) == groups and all(
        handle.metadata.row_group(g).num_rows <= per_group for g in picks
    )
    sample.bytes_read = sample.size
    sample.total = handle.metadata.num_rows


def read_sample(path: str) -> Sample:
    """A bounded sample of one input file (see the module's docstring for the bounds)."""
    try:
        fmt, compression = detect(path)
        size = os.path.getsize(path)
    except OSError as err:
        raise SampleError(f"cannot read {path}: {err.strerror or err}") from None
    if size == 0:
        raise SampleError(f"{path}: empty file")
    sample = Sample(path, fmt, compression, size=size)
    if fmt in ("parquet", "avro"):
        _columnar(sample)
    else:
        chunks = _chunks(sample)
        if fmt == "csv":
            _csv_records(sample, chunks)
        else:
            _json_records(sample, chunks)
    if len(sample.records) > MAX_RECORDS:  # every k-th record: the spread is kept
        step = -(-len(sample.records) // MAX_RECORDS)
        sample.records = sample.records[::step]
        sample.complete = False
    if not sample.records:
        where = "" if sample.complete else f" in its first {HEAD_BYTES >> 20} MiB"
        raise SampleError(f"{path}: no {fmt} record found{where}")
    if not sample.columns:
        sample.columns = list(dict.fromkeys(k for r in sample.records for k in r))
    return sample


def _chunks(sample: Sample) -> list[tuple[bytes, bool]]:
    """The sample's byte chunks, each with whether it ends where the file ends."""
    if sample.compression:
        with open_input(sample.path, sample.compression) as handle:
            head = handle.read(HEAD_BYTES + 1)
        sample.complete = len(head) <= HEAD_BYTES
        sample.bytes_read = len(head[:HEAD_BYTES])
        return [(head[:HEAD_BYTES], sample.complete)]
    chunks = []
    for offset, data in _windows(sample.path, sample.size):
        sample.bytes_read += len(data)
        chunks.append((data, offset + len(data) >= sample.size))
    sample.complete = len(chunks) == 1
    return chunks
