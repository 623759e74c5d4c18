"""Input files as blocks of records that remember where each record starts.

Why blocks: one element per line pays the runner's per-element cost on every line; a block of
up to ``BLOCK_ITEMS`` records pays it once. Why positions: a dead letter (and the summary's top
reasons) should say *where* ("line 1,204"), so the reader, the only step that knows, records it.

Formats, chosen per file by :func:`detect` (content first, then the name) or forced:

- ``jsonl``: one JSON object per line. Uncompressed files are read as byte ranges of
  ``SPLIT_BYTES`` (a splittable DoFn), so a large file feeds several workers; a range owns the
  lines that *start* in it. A range not starting at byte 0 does not know its line numbers; they
  are counted from the file only if one of its lines is a dead letter (:func:`line_at`).
- ``json_array``: one top-level JSON array; each element is a record. Streamed element by element
  (never loaded whole); a broken element is a dead letter with its line, the rest still land.
- ``csv``: a header, then one record per line; a quoted field may span lines (a record goes on
  while its count of ``"`` is odd, RFC 4180's doubled quotes keep that count even). A large
  uncompressed file is cut, in one counting pass, at line starts outside quoted fields
  (:func:`~transforms.ingest.csv_lines.csv_boundaries`), so several workers read it, each
  knowing its line numbers. Its dialect (delimiter, quote, encoding, lines before the header,
  columns read by position) is the schema's ``event.csv``
  (:class:`~transforms.text.csv_dialect.CsvDialect`): the blocks carry it to the decoder.
- ``parquet`` / ``avro``: Beam's own columnar readers, chosen by :class:`ReadRecords`.

gzip and bzip2 are recognised by their magic bytes as well as by ``.gz``/``.bz2``; compressed
files and arrays are read whole by one worker (they cannot be entered in the middle).
"""

from __future__ import annotations

import bisect
import codecs
import csv
import itertools
import operator
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from transforms.ingest import json_array, numbering
from transforms.ingest.columnar import columnar_names, columnar_record, columnar_rows
from transforms.ingest.csv_lines import csv_boundaries, csv_records
from transforms.ingest.formats import INPUT_FORMATS
from transforms.metrics import WorkerTally
from transforms.text import csv_dialect, events
from transforms.text.csv_dialect import CsvDialect

__all__ = ["BLOCK_ITEMS", "Block", "FileRange", "ReadRecords", "detect", "line_at", "range_blocks"]

# Records per block: the per-element cost of the runner is paid per block, but a block's rows
# are what Beam samples to size its elements and what stays in cache while it is written;
# measured on the benchmark's jobs (300,000 events, issue 36), 256 costs 4-9% less CPU than 1024
# (and 128 or 512 no less than 256).
BLOCK_ITEMS = 256
CHUNK_BYTES = 1 << 20  # read size
SPLIT_BYTES = 64 << 20  # a JSON-lines or CSV file larger than this is read as several ranges

_EXTENSIONS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": None,  # lines or one array: the content decides
    ".csv": "csv",
    ".tsv": None,
    ".parquet": "parquet",
    ".pq": "parquet",
    ".avro": "avro",
}


class Block(NamedTuple):
    """Records of one source. ``first_line``: line of ``items[0]`` (1-based; 0 when a range
    read does not know it), item ``i`` on ``first_line + i`` unless ``lines`` gives each
    item's line (records spanning lines, array elements). ``offset``: byte offset of
    ``items[0]`` in the uncompressed file. ``header``: a CSV file's column names."""

    source: str
    kind: str  # "jsonl" | "json_array" | "csv" | "record" (a decoded dict, Parquet/Avro)
    items: list
    first_line: int = 1
    offset: int = 0
    lines: tuple | None = None
    header: tuple | None = None
    dialect: CsvDialect | None = None  # a CSV file's, when not the default
    first_record: int = 0  # the record number of ``items[0]`` in its file (0: not known)

    def line(self, index: int) -> int | None:
        if self.lines is not None:
            return self.lines[index]
        return self.first_line + index if self.first_line else None


class FileRange(NamedTuple):
    """Part of a matched file and how to read it (decided once, before any byte is read). A
    range owns the lines that start in ``[start, end)``; other formats are one range."""

    path: str
    format: str
    compression: str  # a CompressionTypes value
    start: int = 0
    end: int = 0
    first_line: int = 1  # the line at ``start`` (0: not known, a JSON-lines range)
    end_line: int = 0  # CSV: the first line of the next range (0: to the end)
    first_record: int = 1  # the number of the range's first record (0: not counted)


def format_from_name(path: str) -> str | None:
    """The format a file's name implies (``.csv.gz`` is CSV), or None when only the content
    can say (``.json``, no extension)."""
    name = path.lower()
    for suffix in (".gz", ".gzip", ".bz2"):
        name = name.removesuffix(suffix)
    for ext, fmt in _EXTENSIONS.items():
        if name.endswith(ext):
            return fmt
    return None


_COLUMNAR_MAGIC = {b"PAR1": "parquet", b"Obj\x01": "avro"}
_COMPRESSION_MAGIC = {b"\x1f\x8b": CompressionTypes.GZIP, b"BZh": CompressionTypes.BZIP2}


def _magic(head: bytes, table: dict[bytes, str], default: str | None = None) -> str | None:
    """What the magic bytes ``head`` starts with say, by ``table``; else ``default``."""
    return next((what for magic, what in table.items() if head.startswith(magic)), default)


_SNIFF_BYTES = 64 << 10  # enough for a CSV header and its first record


def _text_head(path: str, compression: str) -> str:
    """The (decompressed) start of the file from its first character that is not whitespace or
    a byte-order mark ("" for an empty file)."""
    with FileSystems.open(path, compression_type=compression) as handle:
        head = handle.read(4096)
        while head:
            text = head.removeprefix(codecs.BOM_UTF8).lstrip()
            if text:
                text += handle.read(_SNIFF_BYTES)
                return text.decode("utf-8", errors="replace")
            head = handle.read(4096)
    return ""


def _by_content(path: str, compression: str, dialect: CsvDialect) -> str | None:
    """The text format the content shows, or None when it shows none: ``[`` first is one JSON
    array, ``{`` first JSON lines, records of two or more fields split by the dialect's
    delimiter CSV (after the lines it skips)."""
    head = _text_head(path, compression)
    first = head[:1]
    if first in ("[", "{"):
        return "json_array" if first == "[" else "jsonl"
    if dialect.skip:
        head = head.split("\n", dialect.skip)[-1]
    return "csv" if events.looks_like_csv(head, dialect.delimiter) else None


def detect(
    path: str, forced: str = "auto", dialect: CsvDialect = csv_dialect.DEFAULT
) -> tuple[str, str]:
    """``(format, compression)`` of ``path``: its compression from its first bytes; its format
    forced; else a text file's content when it shows JSON (an array or lines, whatever the
    name); else its name; else content that shows CSV as ``dialect`` writes it (a ``data.gz``
    of CSV); else JSON lines."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        head = handle.read(4)
    compression = _magic(head, _COMPRESSION_MAGIC, CompressionTypes.UNCOMPRESSED)
    fmt = {"auto": None, "json": "jsonl"}.get(forced, forced)  # json: JSON lines, as before
    if fmt:
        return fmt, compression
    fmt = _magic(head, _COLUMNAR_MAGIC) or format_from_name(path)
    if fmt in (None, "jsonl", "csv"):
        shown = _by_content(path, compression, dialect)
        # JSON shows itself whatever the name says; CSV only where the name claims no format
        # (a .jsonl of CSV lines stays JSON lines, each dead letter saying it looks like CSV).
        if shown in ("json_array", "jsonl") or (shown and fmt is None):
            fmt = shown
    return fmt or "jsonl", compression


def file_ranges(
    path: str,
    size: int,
    forced: str = "auto",
    dialect: CsvDialect = csv_dialect.DEFAULT,
    numbered: bool = False,
) -> list[FileRange]:
    """The ranges ``path`` is read as, fixed up front (as Beam's ReadAllFromText does) so that
    every runner reads each record exactly once without claiming records one by one: about
    ``SPLIT_BYTES`` each for an uncompressed JSON-lines or CSV file, else the whole file;
    ``numbered``: each knowing its first record's number (one more pass, :mod:`.numbering`)."""
    fmt, compression = detect(path, forced, dialect)
    whole = [FileRange(path, fmt, compression, 0, size)]
    if compression != CompressionTypes.UNCOMPRESSED or size <= SPLIT_BYTES:
        return whole
    if fmt == "jsonl":
        starts = range(0, size, SPLIT_BYTES)
        firsts = [int(not start) for start in starts]
        if numbered:  # a JSON line's number is its line's
            with FileSystems.open(path, compression_type=compression) as handle:
                firsts = numbering.first_lines(handle, starts, CHUNK_BYTES)
        return [
            FileRange(path, fmt, compression, start, min(start + SPLIT_BYTES, size), n, 0, n)
            for start, n in zip(starts, firsts, strict=True)
        ]
    if fmt == "csv":
        with FileSystems.open(path, compression_type=compression) as handle:
            cuts = [
                (0, 1),
                *csv_boundaries(handle, dialect.quote_byte, SPLIT_BYTES, CHUNK_BYTES),
                (size, 0),
            ]
        firsts = [1] + [0] * (len(cuts) - 2)
        if numbered:
            firsts = [1 + n for n in _csv_records_before(path, dialect, [c[1] for c in cuts[:-1]])]
        return [
            FileRange(path, fmt, compression, start, end, line, end_line, first)
            for ((start, line), (end, end_line)), first in zip(
                itertools.pairwise(cuts), firsts, strict=True
            )
        ]
    return whole


def _csv_records_before(path: str, dialect: CsvDialect, lines: list[int]) -> list[int]:
    """How many records of an uncompressed CSV file start before each of ``lines``: the file
    read once by the reader itself, so every range numbers its records as a whole read does."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        blocks = csv_blocks(path, _line_chunks(handle, 0), dialect=dialect)
        return numbering.records_before((n for block in blocks for n in block.lines), lines)


def csv_header(path: str, compression: str, dialect: CsvDialect) -> tuple:
    """A CSV file's column names (its first record after the lines the dialect skips), for
    ranges that start further on."""
    with FileSystems.open(path, compression_type=compression) as handle:
        numbered = itertools.islice(_numbered(_line_chunks(handle, 0)), dialect.skip, None)
        for _start, record in csv_records(numbered, lambda r: True, dialect.quote_byte):
            return csv_dialect.header_names(record, dialect)
    return ()


def _strip_cr(lines: list[bytes]) -> list[bytes]:
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


def _line_chunks(handle, start: int) -> Iterator[tuple[int, list[bytes]]]:
    """``(offset of the first line, complete lines)`` per chunk read, from byte ``start`` on
    (a line beginning there); the last line may lack its newline. A line keeps its ``\r``: the
    CSV reader alone knows whether it ends a record or belongs to a quoted field's text
    (:func:`_csv_records`)."""
    for offset, lines, _crlf in _raw_chunks(handle, start):
        yield offset, lines


def _raw_chunks(handle, start: int) -> Iterator[tuple[int, list[bytes], bool]]:
    """:func:`_line_chunks`, with whether the chunk holds a ``\r`` at all (one
    search per chunk, not one per line)."""
    pending = b""
    offset = start
    while True:
        data = handle.read(CHUNK_BYTES)
        if not data:
            if pending:
                yield offset, [pending], b"\r" in pending
            return
        data = pending + data
        end = data.rfind(b"\n")
        if end < 0:
            pending = data  # a line longer than a chunk: read on
            continue
        lines = data[:end].split(b"\n")
        pending = data[end + 1 :]
        yield offset, lines, b"\r" in data
        offset += end + 1


def _blocks(
    source: str, kind: str, items: list, first_line: int, starts: list[int], crlf: bool = True
) -> Iterator[Block]:
    """``items`` (lines starting at byte ``starts[i]``) cut into blocks, CRLF endings dropped
    (``crlf``: whether any may be there); a block whose line numbers are not known keeps its
    first offset to count them later."""
    if crlf:
        items = _strip_cr(items)
    for i in range(0, len(items), BLOCK_ITEMS):
        line = first_line and first_line + i  # (a JSON line's record number is its line's)
        yield Block(source, kind, items[i : i + BLOCK_ITEMS], line, starts[i], first_record=line)


def range_blocks(part: FileRange, dialect: CsvDialect = csv_dialect.DEFAULT) -> Iterator[Block]:
    """A file range's records as blocks (see the module docstring for each format): what the
    job reads, and what the overwrite check reads again. ``dialect``: how CSV is written."""
    with FileSystems.open(part.path, compression_type=part.compression) as handle:
        if part.format == "jsonl":
            yield from jsonl_blocks(part, handle)
        elif part.format == "csv":
            header = None if part.start == 0 else csv_header(part.path, part.compression, dialect)
            if part.start:
                handle.seek(part.start)
            chunks = _line_chunks(handle, part.start)
            yield from csv_blocks(
                part.path, chunks, header, part.first_line, part.end_line, dialect,
                part.first_record,
            )  # fmt: skip
        elif part.format == "json_array":
            yield from array_blocks(part.path, handle)
        else:
            raise ValueError(f"{part.path}: {part.format} files are read by Beam's reader")


class _ReadBlocksFn(beam.DoFn):
    """A file range's records as blocks."""

    def __init__(self, dialect: CsvDialect = csv_dialect.DEFAULT) -> None:
        self._dialect = dialect

    def setup(self) -> None:
        self._tally = WorkerTally("read")  # records per worker process, when asked for

    def process(self, part: FileRange) -> Iterable[Block]:
        for block in range_blocks(part, self._dialect):
            self._tally.add(len(block.items))
            yield block

    def finish_bundle(self) -> None:
        self._tally.flush()


def jsonl_blocks(part: FileRange, handle) -> Iterator[Block]:
    """The lines that start in the range (all of them for a compressed file, whose ``end`` is
    its compressed size)."""
    start = part.start
    if start > 0:  # the line that began before this range belongs to the previous one
        handle.seek(start - 1)
        start += len(handle.readline()) - 1
    whole = part.compression != CompressionTypes.UNCOMPRESSED
    line = part.first_line
    for offset, lines, crlf in _raw_chunks(handle, start):
        if not whole and offset >= part.end:
            return
        starts = _starts(offset, lines)
        if not whole and starts[-1] >= part.end:
            lines = lines[: bisect.bisect_left(starts, part.end)]
        yield from _blocks(part.path, "jsonl", lines, line, starts, crlf)
        line = line and line + len(lines)


def _starts(offset: int, lines: list[bytes]) -> list[int]:
    """The byte offset of each line (each ends in one newline), summed in C."""
    sizes = map(operator.add, map(len, lines), itertools.repeat(1))
    out = list(itertools.accumulate(sizes, initial=offset))
    out.pop()  # where the line after the last would start
    return out


def line_at(path: str, offset: int) -> int:
    """The line number of the line starting at byte ``offset`` of an uncompressed file."""
    count = 1
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        left = offset
        while left > 0:
            data = handle.read(min(CHUNK_BYTES, left))
            if not data:
                break
            count += data.count(b"\n")
            left -= len(data)
    return count


# -- CSV ---------------------------------------------------------------------------------------


def csv_blocks(
    source: str,
    chunks: Iterable[tuple[int, list[bytes]]],
    header: tuple | None = None,
    first_line: int = 1,
    end_line: int = 0,
    dialect: CsvDialect = csv_dialect.DEFAULT,
    first_record: int = 1,
) -> Iterator[Block]:
    """Records of a CSV file (header first, after the lines the dialect skips, unless given)
    with the line each starts on, from line ``first_line`` up to (not including) ``end_line``
    (0: the end); the first numbered ``first_record`` (0: not known)."""
    args = csv_dialect.reader_args(dialect)

    def fits(record: bytes) -> bool:
        try:
            (cells,) = csv.reader([record.decode(dialect.encoding)], strict=True, **args)
        except (csv.Error, ValueError):
            return False
        return header is None or len(cells) == len(header)

    numbered = _numbered(chunks, first_line, end_line)
    if header is None and dialect.skip:
        numbered = itertools.islice(numbered, dialect.skip, None)
    records = csv_records(numbered, fits, dialect.quote_byte)
    if header is None:
        first = next(records, None)
        if first is None:
            return
        header = csv_dialect.header_names(first[1], dialect)
    shown = None if dialect == csv_dialect.DEFAULT else dialect
    yield from _numbered_blocks(source, "csv", records, header, shown, first_record)


def _numbered_blocks(
    source: str,
    kind: str,
    numbered: Iterator[tuple[int, object]],
    header: tuple | None = None,
    dialect: CsvDialect | None = None,
    first_record: int = 1,
) -> Iterator[Block]:
    """``(line, item)`` pairs as blocks of ``BLOCK_ITEMS``, each item keeping its line, the
    first item numbered ``first_record`` (0: not known)."""
    while chunk := list(itertools.islice(numbered, BLOCK_ITEMS)):
        lines, items = zip(*chunk, strict=True)
        yield Block(source, kind, list(items), 0, 0, lines, header, dialect, first_record)
        first_record = first_record and first_record + len(items)


def _numbered(
    chunks: Iterable[tuple[int, list[bytes]]], first: int = 1, end: int = 0
) -> Iterator[tuple[int, bytes]]:
    number = first
    for _offset, lines in chunks:
        for text in lines:
            if number == end:
                return
            yield number, text
            number += 1


# -- JSON arrays -------------------------------------------------------------------------------


def array_blocks(source: str, handle, chunk_bytes: int = CHUNK_BYTES) -> Iterator[Block]:
    """The elements of the top-level array in ``handle`` (bytes), as raw JSON text with the line
    each starts on. Elements are parsed later by the same decoder as JSON lines, so a broken
    element becomes a dead letter; only a broken array (no ``[``, or no element boundary at
    all) stops the file, as one bad item holding what could not be split."""
    return _numbered_blocks(source, "json_array", json_array.elements(source, handle, chunk_bytes))


# -- Parquet and Avro ----------------------------------------------------------------------------


def _record_block(pair: tuple[str, dict]) -> Block:
    return Block(pair[0], "record", [columnar_record(pair[1])], 0, -1)


class _NumberedColumnarFn(beam.DoFn):
    """A Parquet or Avro file's records in the file's order, numbered: read whole by one
    worker (Beam's readers give no record its place), as Beam's readers make them."""

    def __init__(self, fmt: str) -> None:
        self._fmt = fmt

    def process(self, path: str) -> Iterable[Block]:
        rows = enumerate(columnar_rows(path, self._fmt), start=1)
        while chunk := list(itertools.islice(rows, BLOCK_ITEMS)):
            items = [columnar_record(row) for _, row in chunk]
            yield Block(path, "record", items, 0, -1, first_record=chunk[0][0])


# -- the transform -----------------------------------------------------------------------------

COLUMNAR = ("parquet", "avro")


class _RangesFn(beam.DoFn):
    """Each matched file's ranges; Parquet and Avro paths to their own outputs."""

    def __init__(
        self,
        forced: str,
        kinds: frozenset[str],
        dialect: CsvDialect = csv_dialect.DEFAULT,
        numbered: bool = False,
    ) -> None:
        self._forced = forced
        self._kinds = kinds
        self._dialect = dialect
        self._numbered = numbered

    def process(self, metadata) -> Iterable:
        path, size = metadata.path, metadata.size_in_bytes
        ranges = file_ranges(path, size, self._forced, self._dialect, self._numbered)
        kind = ranges[0].format if ranges[0].format in COLUMNAR else "text"
        if kind not in self._kinds:  # it changed since the job was built: never drop it
            raise ValueError(
                f"{metadata.path} is now {kind}, which this job does not read (it was not when "
                f"the job was built): run it again"
            )
        if kind in COLUMNAR:
            columnar_names(metadata.path, kind)  # two columns of one name: refused
            yield beam.pvalue.TaggedOutput(ranges[0].format, metadata.path)
        else:
            yield from ranges


class ReadRecords(beam.PTransform):
    """Every record of the files matching ``patterns`` as :class:`Block` s: JSON lines, JSON
    arrays and CSV (any of them gzip or bzip2) by this module; Parquet and Avro by Beam's own
    readers, each record converted to what a JSON line would have given
    (:func:`~transforms.ingest.columnar.columnar_record`).
    ``input_format`` forces one format for every file; ``auto`` lets each file's content and
    name decide, so one glob may match files of several formats. ``inspect``: whether local
    files may be opened now to leave out readers no file needs (not where the workers do not
    share this machine's disk: then every reader is in the graph and each file's own decides).
    ``dialect``: how the CSV files are written (the schema's ``event.csv``). ``numbered``:
    every block knows its records' numbers in their file (a schema's ``from: record_number``;
    :mod:`.numbering`): a large file is then counted once before its ranges are read, and a
    Parquet or Avro file is read whole by one worker."""

    def __init__(
        self,
        patterns: list[str],
        input_format: str = "auto",
        inspect: bool = True,
        dialect: CsvDialect = csv_dialect.DEFAULT,
        numbered: bool = False,
    ) -> None:
        super().__init__()
        if input_format not in INPUT_FORMATS:
            raise ValueError(f"input format {input_format!r}: use {', '.join(INPUT_FORMATS)}")
        if not patterns:
            raise ValueError("no input pattern given")
        self._patterns = list(patterns)
        self._format = input_format
        self._inspect = inspect
        self._dialect = dialect
        self._numbered = numbered

    def _kinds(self) -> frozenset[str]:
        """The readers this job needs: ``text`` (this module), ``parquet``, ``avro``. Only
        the readers needed are put in the graph: on the DirectRunner a Flatten of
        branches that run as separate stages holds every element of its inputs in memory
        before the next step starts (the whole input, for a text file). A forced format needs
        one reader; ``auto`` looks at local files now and keeps every reader for the rest."""
        if self._format in COLUMNAR:
            return frozenset({self._format})
        if self._format != "auto":
            return frozenset({"text"})
        kinds = set()
        for pattern in self._patterns:
            if "://" in pattern or not self._inspect:
                return frozenset({"text", *COLUMNAR})  # remote: decided at run time
            try:
                matched = FileSystems.match([pattern])[0].metadata_list
            except Exception:  # unreadable now: MatchFiles reports it when the job runs
                return frozenset({"text", *COLUMNAR})
            for metadata in matched:
                fmt = detect(metadata.path)[0] if metadata.size_in_bytes else "jsonl"
                kinds.add(fmt if fmt in COLUMNAR else "text")
                if len(kinds) == 1 + len(COLUMNAR):
                    return frozenset(kinds)  # every reader already: no need to open the rest
        return frozenset(kinds) or frozenset({"text"})

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection:
        from apache_beam.io import fileio
        from apache_beam.io.avroio import ReadAllFromAvro
        from apache_beam.io.parquetio import ReadAllFromParquet

        matches = [
            pbegin | f"Match[{i}]" >> fileio.MatchFiles(pattern, empty_match_treatment="DISALLOW")
            for i, pattern in enumerate(self._patterns)
        ]
        files = matches | "FlattenMatches" >> beam.Flatten() if len(matches) > 1 else matches[0]
        kinds = self._kinds()
        parts = files | "Ranges" >> beam.ParDo(
            _RangesFn(self._format, kinds, self._dialect, self._numbered)
        ).with_outputs(*COLUMNAR, main="ranges")
        branches = []
        if "text" in kinds:
            branches.append(
                parts.ranges
                | "Reshuffle" >> beam.Reshuffle()  # ranges of one file to several workers
                | "ReadBlocks" >> beam.ParDo(_ReadBlocksFn(self._dialect))
            )
        for fmt, read_all in (("parquet", ReadAllFromParquet), ("avro", ReadAllFromAvro)):
            if fmt in kinds:
                name = fmt.title()  # ReadParquet, ParquetBlocks, ReadAvro, AvroBlocks
                if self._numbered:
                    read = beam.ParDo(_NumberedColumnarFn(fmt))
                    branches.append(parts[fmt] | f"Read{name}Numbered" >> read)
                    continue
                branches.append(
                    parts[fmt]
                    | f"Read{name}" >> read_all(with_filename=True)
                    | f"{name}Blocks" >> beam.Map(_record_block)
                )
        if len(branches) == 1:
            return branches[0]
        return tuple(branches) | "FlattenFormats" >> beam.Flatten()
