"""Record numbers (a schema's ``from: record_number`` field) for a file read in ranges: what
each range's first record is numbered, counted once before the ranges are read.

A record's number is its position among the records the reader reads from its file, 1 the
first: a CSV's records after its header (a record whose quoted field spans lines counts once;
a blank line counts as one), a JSON-lines file's lines (so its number is its line number), a
JSON array's elements, a Parquet or Avro file's rows in the file's order. It depends on the
file's bytes only, so a retry, a re-run, a range of a large file and the overwrite check's
second read give every record the same number.

Pure (no Beam): the readers (:mod:`transforms.ingest.readers`) hand it handles and lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["first_lines", "records_before"]


def first_lines(handle, starts: Sequence[int], chunk_bytes: int = 1 << 20) -> list[int]:
    """The number of the first line that starts at or after each byte offset of ``starts``
    (ascending) in ``handle`` (bytes, from its start): 1 for offset 0, else 2 plus the newlines
    before byte ``start - 1`` — the line a JSON-lines range owns first (the line that begins
    before ``start`` belongs to the range before). One pass at the speed of ``bytes.count``."""
    out: list[int] = []
    newlines = position = 0
    for start in starts:
        if start == 0:
            out.append(1)
            continue
        while position < start - 1:
            data = handle.read(min(chunk_bytes, start - 1 - position))
            if not data:
                break
            newlines += data.count(b"\n")
            position += len(data)
        out.append(2 + newlines)
    return out


def records_before(record_lines: Iterable[int], cut_lines: Sequence[int]) -> list[int]:
    """How many records start before each of ``cut_lines`` (ascending line numbers where
    ranges start), given the line every record of the file starts on, in order."""
    out: list[int] = []
    seen = 0
    for line in record_lines:
        while len(out) < len(cut_lines) and line >= cut_lines[len(out)]:
            out.append(seen)
        seen += 1
    out += [seen] * (len(cut_lines) - len(out))
    return out
