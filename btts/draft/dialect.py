"""A CSV file's dialect, decided by ``btts init`` from the file's first bytes and written into
the draft's ``event.csv``, so that the ingest reads exactly what init saw.

Why our own few checks and not a dependency: the decisions are few (a delimiter of four, a
quote of two, the lines before the header, the decimal and thousands marks, UTF-8 or cp1252),
each made by the standard library's own CSV parser (the parser the ingest uses), and ``btts
init`` then checks the draft over the whole file with the job's own reader. DuckDB's
``sniff_csv`` is the reference the tests hold this to (tests/btts/draft/test_dialect.py; the
full corpus run: ``python -m tests.dialect_corpus``); it is not needed at run time, nor on the
workers.

The rule: of every delimiter and quote, the one under which most records (from the header on)
have one and the same width of two or more cells; the lines before that run are a preamble to
skip (and one more record when it holds values where the next holds only names: a preamble
line as wide as the data); ties go to the comma and the double quote.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from btts.draft.fields import free_name
from transforms.text.csv_dialect import DEFAULT, CsvDialect, reader_args

__all__ = ["decimal_marks", "encoding_of", "inference_numbers", "repeated_columns", "sniff"]

DELIMITERS = (",", ";", "\t", "|")
QUOTES = ('"', "'")
SNIFF_LINES = 400  # the first lines weighed (the head of a large file)
MIN_RUN = 5  # a preamble ends where a run of this many records of the width starts

# numbers as Europe writes them (1.013,25) and as the rest does (1,013.25)
_COMMA_DECIMAL = re.compile(r"[-+]?[0-9]+,[0-9]+\Z")
_EU_BOTH = re.compile(r"[-+]?[0-9]{1,3}(?:\.[0-9]{3})+,[0-9]+\Z")
_US_GROUPED = re.compile(r"[-+]?[0-9]{1,3}(?:,[0-9]{3})+\Z")
_DOT_DECIMAL = re.compile(r"[-+]?[0-9]*\.[0-9]+\Z")
_US_BOTH = re.compile(r"[-+]?[0-9]{1,3}(?:,[0-9]{3})+\.[0-9]+\Z")
_EU_GROUPED = re.compile(r"[-+]?[0-9]{1,3}(?:\.[0-9]{3})+\Z")


def encoding_of(chunks: Iterable[bytes]) -> str:
    """``utf-8`` when every chunk decodes as UTF-8 (a character cut at a chunk's ends
    forgiven), else ``cp1252`` (what European Excel writes), else ``latin-1`` (decodes any
    byte)."""
    chunks = list(chunks)
    for name in ("utf-8", "cp1252"):
        try:
            for chunk in chunks:
                decoder = codecs.getincrementaldecoder(name)()
                decoder.decode(chunk[4:] if name == "utf-8" and chunk[:1] >= b"\x80" else chunk)
        except UnicodeDecodeError:
            continue
        return name
    return "latin-1"


def _widths(text: str, delimiter: str, quote: str) -> list[tuple[int, int]]:
    """``(first line (0-based), cells)`` of each record of ``text`` (a line's start), up to a
    record the dialect cannot parse."""
    dialect = CsvDialect(delimiter=delimiter, quote=quote)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True, **reader_args(dialect))
    out = []
    start = 0
    try:
        for cells in reader:
            out.append((start, len(cells)))
            start = reader.line_num
    except csv.Error:
        pass
    return out


def _score(records: list[tuple[int, int]]) -> tuple[int, int, int]:
    """``(records of the run, width, -skip)``: the commonest width of two or more cells, and
    the first record from which ``MIN_RUN`` records (or all that are left) have it."""
    counts = Counter(w for _, w in records if w >= 2)
    if not counts:
        return (0, 0, 0)
    width = max(counts, key=lambda w: (counts[w], w))
    for i, (start, w) in enumerate(records):
        run = [x for _, x in records[i : i + MIN_RUN]]
        if w == width and all(x == width for x in run):
            tail = sum(1 for _, x in records[i:] if x == width)
            return (tail, width, -start)
    return (0, 0, 0)


def sniff(text: str, whole: bool = False) -> CsvDialect | None:
    """The dialect ``text`` (a file's decoded head; ``whole``: the file ends there) is written
    in, without decimal marks (:func:`decimal_marks`) or encoding; None when no dialect reads
    records of two cells or more."""
    lines = text.removeprefix("\ufeff").split("\n")
    if not whole:
        lines = lines[:-1]  # cut
    head = "\n".join(lines[:SNIFF_LINES])
    best, chosen = (0, 0, 0), None
    for delimiter in DELIMITERS:
        if delimiter not in head:
            continue
        for quote in QUOTES:
            if quote != '"' and quote not in head:
                continue
            records = _widths(head, delimiter, quote)
            if len(lines) > SNIFF_LINES and records:
                records = records[:-1]  # the last may be cut by the head's end
            score = _score(records)
            if score > best:
                best, chosen = score, CsvDialect(delimiter, quote, skip=-score[2])
    return chosen and _past_a_record_like_preamble(head, chosen)


_MISSING = {"", "NA", "NaN", "nan", "N/A", "null", "NULL", "None", "-", "."}
_VALUE = re.compile(r"[-+]?[0-9][0-9.,:/ T-]*\Z")  # a number, a date, a time: not a name


def _past_a_record_like_preamble(head: str, dialect: CsvDialect) -> CsvDialect:
    """The dialect with the header one record further on when the first record of the run
    holds values (a number, a date) where the next holds none and every record after it
    (up to :data:`MIN_RUN` × 4) holds one: a preamble line that happens to have as many cells
    as the data (``Exported …, 2024-05-01`` above ``rownames,value``), which no header is."""
    text = head.split("\n", dialect.skip)[-1] if dialect.skip else head
    reader = csv.reader(io.StringIO(text, newline=""), **reader_args(dialect))
    rows: list[list[bool]] = []
    texts: list[list[str]] = []
    first_lines = 0
    try:
        for cells in reader:
            texts.append([c.strip() for c in cells])
            rows.append([bool(_VALUE.match(c)) for c in texts[-1]])
            first_lines = first_lines or reader.line_num
            if len(rows) == 2 + MIN_RUN * 4:
                break
    except csv.Error:
        return dialect
    # in doubt the header stays: a year as a column's name (``2020``), a first record that
    # may be missing values (``NA``) rather than names
    dated = any(v and not c.isdigit() for v, c in zip(rows[0], texts[0], strict=True))
    if len(rows) < 3 or any(rows[1]) or not dated or set(texts[1]) & _MISSING:
        return dialect
    data = rows[2:]
    columns = [i for i, value in enumerate(rows[0]) if value]
    if all(len(r) == len(rows[0]) and all(r[i] for i in columns) for r in data):
        return dialect._replace(skip=dialect.skip + first_lines)
    return dialect


def repeated_columns(names: Sequence[str]) -> tuple[tuple[int, str], ...]:
    """Columns of a header that repeats a name, each under a name of its own (``ISE``,
    ``ISE_2``; never one the header already has): ``(position, name)`` of each column of a
    repeated name, to be read by position (``from: N``)."""
    counts = Counter(names)
    taken = set(names)
    out, seen = [], Counter()
    for position, name in enumerate(names, start=1):
        if counts[name] < 2:
            continue
        seen[name] += 1
        new = name
        if seen[name] > 1:
            new = free_name(name, taken)
            taken.add(new)
        out.append((position, new))
    return tuple(out)


def decimal_marks(dialect: CsvDialect, rows: Iterable[Sequence[str]]) -> CsvDialect:
    """The dialect with the decimal and thousands marks the cells of ``rows`` show: a decimal
    comma when numbers are written ``1,5`` or ``1.013,25`` and none ``1.5``; thousands marks
    only where a number shows both marks (``1.013,25``, ``1,013.25``)."""
    if dialect.delimiter == ",":
        return dialect
    comma = dot = eu_both = us_both = 0
    for row in rows:
        for cell in row:
            if "," in cell:
                if _EU_BOTH.match(cell):
                    eu_both += 1
                elif _US_BOTH.match(cell):
                    us_both += 1
                elif _COMMA_DECIMAL.match(cell) and not _US_GROUPED.match(cell):
                    comma += 1
            elif "." in cell and _DOT_DECIMAL.match(cell) and not _EU_GROUPED.match(cell):
                dot += 1
    if (comma or eu_both) and not (dot or us_both):
        return dialect._replace(decimal=",", thousands="." if eu_both else "")
    if us_both and not (comma or eu_both):
        return dialect._replace(thousands=",")
    return dialect


def inference_numbers(records: list[dict], dialect: CsvDialect) -> list[dict]:
    """``records`` with each cell that reads as a number of the dialect written as the job's
    number fields will read it (``1,5`` → ``1.5``), for inferring types only: the records the
    draft is checked with stay as the file writes them."""
    from transforms.errors import InvalidEvent
    from transforms.text.csv_dialect import number_reader
    from transforms.text.events import CsvText, as_number

    read = number_reader(dialect)
    if read is None or dialect == DEFAULT:
        return records
    out = []
    for record in records:
        new = dict(record)
        for name, value in record.items():
            if type(value) is CsvText and any(c in value for c in ",."):
                try:
                    text = CsvText(read(value))
                except InvalidEvent:
                    continue
                if type(as_number(text)) is not CsvText:
                    new[name] = text
        out.append(new)
    return out
