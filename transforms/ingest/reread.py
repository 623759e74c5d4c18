"""Records of a batch run read again, by the overwrite check: only the sources (and, for
uncompressed JSON lines, only the blocks) that hold a row whose row id occurs twice, each record
with a :class:`~transforms.ingest.overwrites.Place` that tells it apart from every other.

The same readers as the job (:mod:`transforms.ingest.readers`), so the same records come out
with the same text: a JSON-lines block from its byte offset (each line's place is its own
offset, so blocks read twice or overlapping count each line once); any other source whole, in
order (a record's place is its ordinal, and its line where the format has lines); Parquet and
Avro records as Beam's readers make them (``to_pydict`` of each row group; fastavro's records).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from transforms.ingest.columnar import columnar_record, columnar_rows
from transforms.ingest.numbering import first_lines
from transforms.ingest.overwrites import Place
from transforms.ingest.readers import (
    BLOCK_ITEMS,
    Block,
    FileRange,
    detect,
    range_blocks,
)
from transforms.text.csv_dialect import DEFAULT, CsvDialect

__all__ = ["records_again"]


def records_again(
    source: str,
    offsets: Collection[int] | None,
    input_format: str = "auto",
    dialect: CsvDialect = DEFAULT,
    numbered: bool = False,
) -> Iterator[tuple[Block, list[Place]]]:
    """The blocks of ``source`` to build again and the place of each of their items:
    ``offsets`` of JSON-lines blocks (an uncompressed JSON-lines file: just those blocks), or
    None for the whole source; CSV read as ``dialect`` writes it. ``numbered``: each block
    with its records' numbers, as the job's reader gave them (a JSON-lines block's first line
    counted from the file, once for every block)."""
    fmt, compression = detect(source, input_format, dialect)
    if fmt in ("parquet", "avro"):
        yield from _columnar(source, fmt)
    elif offsets is not None and fmt == "jsonl" and compression == CompressionTypes.UNCOMPRESSED:
        starts = sorted(offsets)
        lines = [0] * len(starts)
        if numbered:
            with FileSystems.open(source, compression_type=compression) as handle:
                lines = first_lines(handle, starts)
        for offset, line in zip(starts, lines, strict=True):
            yield _jsonl_block_at(source, offset, line)
    else:
        size = FileSystems.match([source])[0].metadata_list[0].size_in_bytes
        ordinal = 0  # one reader takes the whole file: no ranges to cut (nor a CSV pass for them)
        for block in range_blocks(FileRange(source, fmt, compression, 0, size), dialect):
            n = len(block.items)
            places = [Place(source, ordinal + i, block.line(i), ordinal + i) for i in range(n)]
            ordinal += n
            yield block, places


def _jsonl_block_at(source: str, offset: int, number: int = 0) -> tuple[Block, list[Place]]:
    """The lines from byte ``offset`` (a line start, line number ``number``, 0: not counted) as
    the reader cut them: up to a block's worth, without their ``\\n`` and a ``\\r`` before
    it; each placed at its own offset."""
    items: list[bytes] = []
    places: list[Place] = []
    with FileSystems.open(source, compression_type=CompressionTypes.UNCOMPRESSED) as handle:
        handle.seek(offset)
        position = offset
        while len(items) < BLOCK_ITEMS:
            line = handle.readline()
            if not line:
                break
            places.append(Place(source, position))
            position += len(line)
            line = line[:-1] if line.endswith(b"\n") else line
            items.append(line[:-1] if line.endswith(b"\r") else line)
    return Block(source, "jsonl", items, 0, offset, first_record=number), places


def _columnar(source: str, fmt: str) -> Iterator[tuple[Block, list[Place]]]:
    """A Parquet or Avro file's records, one block each (as the job reads them), in order."""
    for ordinal, record in enumerate(columnar_rows(source, fmt)):
        block = Block(source, "record", [columnar_record(record)], 0, -1, first_record=ordinal + 1)
        yield block, [Place(source, ordinal, None, ordinal)]
