"""A CSV file's physical lines as records: where a record ends when a quoted field spans
lines, and where a large file can be cut so that several workers read it.

Pure (no Beam): the readers (:mod:`transforms.ingest.readers`) feed it lines and handles.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator

__all__ = ["csv_boundaries", "csv_records"]

MAX_CSV_RECORD_LINES = 1_000  # a quoted field spans at most this many lines


def csv_boundaries(handle, quote: bytes, split: int, chunk_bytes: int) -> list[tuple[int, int]]:
    """``(offset, line)`` of record starts about every ``split`` bytes of a CSV file: line
    starts where the count of ``quote`` before them is even, i.e. outside any quoted field. One
    pass at the speed of ``bytes.count``; it is what lets a CSV whose fields span lines be
    read by several workers, each from a record's first line and knowing its number."""
    out: list[tuple[int, int]] = []
    pos = quotes = 0
    line = 1  # the number of the line that starts at ``pos``
    target = split
    while True:
        chunk = handle.read(chunk_bytes)
        if not chunk:
            return [cut for cut in out if cut[0] < pos]
        search = max(0, target - pos)
        while search < len(chunk):
            i = chunk.find(b"\n", search)
            if i < 0:
                break
            if not quote or (quotes + chunk.count(quote, 0, i)) % 2 == 0:
                out.append((pos + i + 1, line + chunk.count(b"\n", 0, i) + 1))
                target = pos + i + 1 + split
                search = max(i + 1, target - pos)
            else:
                search = i + 1
        quotes += chunk.count(quote) if quote else 0
        line += chunk.count(b"\n")
        pos += len(chunk)


def csv_records(
    physical: Iterator[tuple[int, bytes]], fits: Callable[[bytes], bool], quote: bytes = b'"'
) -> Iterator[tuple[int, bytes]]:
    """``(first line, record)``: a line whose ``"`` count is odd opens a quoted field that goes
    on to the next line with an odd count (RFC 4180 doubles quotes inside fields, so the count
    of a closed record is even). The joined lines are one record only if they make a record of
    the header's width; otherwise, or after ``MAX_CSV_RECORD_LINES`` lines or at the end, the
    opening line is a record alone (a bad one) and the lines after it are read again, so one
    stray quote costs one line, not the rest of the file. Lines come with their ``\r``: only a
    record's last one ends the record (a CRLF ending, dropped); one inside a quoted field is the
    field's own text (R writes a value's ``\r\n`` as it is), kept."""
    queue: deque[tuple[int, bytes]] = deque()
    pending: list[tuple[int, bytes]] = []
    while True:
        if queue:
            number, text = queue.popleft()
        else:
            step = next(physical, None)
            if step is None:
                if not pending:
                    return
                yield _ended(*pending[0])
                queue.extend(pending[1:])
                pending = []
                continue
            number, text = step
        odd = text.count(quote) % 2 if quote else 0
        if not pending:
            if odd:
                pending = [(number, text)]
            else:
                yield _ended(number, text)
            continue
        pending.append((number, text))
        if not odd and len(pending) < MAX_CSV_RECORD_LINES:
            continue
        record = b"\n".join(t for _, t in pending)
        if odd and fits(_ended(0, record)[1]):
            yield _ended(pending[0][0], record)
        else:
            yield _ended(*pending[0])
            queue.extendleft(reversed(pending[1:]))
        pending = []


def _ended(number: int, record: bytes) -> tuple[int, bytes]:
    """A record without the ``\r`` of its CRLF ending."""
    return number, record[:-1] if record.endswith(b"\r") else record
