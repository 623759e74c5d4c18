"""A CSV file's own dialect: how its bytes become cells, and its numbers' marks.

Declared in a schema's ``event.csv`` (``btts init`` decides it from the file and writes it), so
the ingest reads exactly what init saw: the delimiter (``,`` ``;`` tab ``|``), the quote, the
encoding (UTF-8 with or without a byte-order mark, cp1252 or Latin-1 as European Excel writes),
the lines before the header (a preamble), a decimal comma and thousands marks of numbers, and
columns read by their position (a header that names two columns alike).

Pure (no Beam). The default dialect reads as the readers always did, through the same fast path.
"""

from __future__ import annotations

import csv
import functools
import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from transforms.errors import InvalidEvent
from transforms.text import events

__all__ = [
    "DEFAULT",
    "DELIMITERS",
    "ENCODINGS",
    "QUOTES",
    "CsvDialect",
    "as_fields",
    "header_names",
    "line_parser",
    "named",
    "number_reader",
    "numbers_in_place",
    "reader_args",
]

DELIMITERS = {",": ",", ";": ";", "tab": "\t", "\t": "\t", "|": "|"}
QUOTES = {'"': '"', "'": "'", "none": ""}
# ASCII-compatible encodings only: a line ends at the byte 0x0A in each (no UTF-16)
ENCODINGS = {
    "utf-8": "utf-8", "utf8": "utf-8", "cp1252": "cp1252", "windows-1252": "cp1252",
    "latin-1": "latin-1", "latin1": "latin-1", "iso-8859-1": "latin-1",
    "iso-8859-15": "iso-8859-15", "latin-9": "iso-8859-15",
}  # fmt: skip


class CsvDialect(NamedTuple):
    """How one schema's CSV files are written. ``skip``: lines before the header;
    ``columns``: ``(position, field)`` pairs, a column read by its position (1 is the first)
    under the field's name whatever the header calls it."""

    delimiter: str = ","
    quote: str = '"'
    encoding: str = "utf-8"
    skip: int = 0
    decimal: str = "."
    thousands: str = ""
    columns: tuple[tuple[int, str], ...] = ()

    @property
    def plain_text(self) -> bool:
        """Cells split and decoded as the default dialect does (the readers' fast path)."""
        return (self.delimiter, self.quote, self.encoding) == (",", '"', "utf-8")

    @property
    def quote_byte(self) -> bytes:
        """The byte whose count tells a record's end from a quoted field's line break."""
        return self.quote.encode("ascii") if self.quote else b""

    def with_columns(self, columns: Sequence[tuple[int, str]]) -> CsvDialect:
        return self._replace(columns=tuple(columns))


DEFAULT = CsvDialect()


def _decode(raw: bytes, encoding: str) -> str:
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as err:
        raise InvalidEvent(
            f"not {encoding}: byte {err.start} is {raw[err.start]:#04x} (declare the file's "
            "encoding in event.csv)"
        ) from None


def header_names(raw: bytes | str, dialect: CsvDialect = DEFAULT) -> tuple[str, ...]:
    """A header record's column names as the schema sees them (:func:`named`)."""
    if dialect == DEFAULT:
        return events.parse_csv_header(raw)
    if isinstance(raw, bytes):
        raw = raw.decode(dialect.encoding, errors="replace")
    (names,) = csv.reader([raw], **reader_args(dialect))
    return named(names, dialect)


def named(names: Sequence[str], dialect: CsvDialect = DEFAULT) -> tuple[str, ...]:
    """A header's cells as the schema's names: stripped, a byte-order mark dropped, each column
    the dialect reads by position named by its field. Two columns left with one name are kept
    apart by nothing: :func:`line_parser` refuses their records."""
    out = [name.strip() for name in names]
    if out:
        out[0] = out[0].removeprefix("\ufeff").strip()
    for position, field in dialect.columns:
        if 0 < position <= len(out):
            out[position - 1] = field
    return tuple(out)


def reader_args(dialect: CsvDialect) -> dict:
    if not dialect.quote:
        return {"delimiter": dialect.delimiter, "quoting": csv.QUOTE_NONE}
    return {"delimiter": dialect.delimiter, "quotechar": dialect.quote}


def repeated(header: Sequence[str]) -> str:
    """Why a record under ``header`` cannot be read ("" when every name is its own)."""
    seen: dict[str, int] = {}
    for position, name in enumerate(header, start=1):
        if name in seen:
            return (
                f"CSV columns {seen[name]} and {position} are both named {name!r}: one would "
                f"be lost; declare a field for each with from: POSITION (btts init drafts them)"
            )
        seen[name] = position
    return ""


def line_parser(header: Sequence[str], dialect: CsvDialect = DEFAULT) -> Callable:
    """``raw line → record`` (cells as :class:`~transforms.text.events.CsvText`, an empty one
    absent) under ``header``, as the dialect splits and decodes it; every record is refused
    (InvalidEvent, a dead letter) when two columns share a name, so none is lost in silence."""
    why = repeated(header)
    if why:

        def refuse(raw: bytes | str) -> dict:
            raise InvalidEvent(why)

        return refuse
    if dialect.plain_text:
        return lambda raw: events.parse_csv_line(raw, header)
    split = _splitter(dialect)
    encoding, width = dialect.encoding, len(header)
    cell = events.CsvText

    def parse(raw: bytes | str) -> dict:
        if type(raw) is bytes:
            try:
                raw = raw.decode(encoding)
            except UnicodeDecodeError:
                raw = _decode(raw, encoding)  # raises, naming the byte
        try:
            (cells,) = split([raw])
        except (csv.Error, ValueError) as err:
            raise InvalidEvent(f"invalid CSV: {err}") from None
        if len(cells) != width:
            raise InvalidEvent(f"CSV line has {len(cells)} cells; the header has {width}")
        return {name: cell(c) for name, c in zip(header, cells, strict=True) if c != ""}

    return parse


def _splitter(dialect: CsvDialect) -> Callable:
    """``csv.reader`` bound to one dialect object: its options checked once, not per line."""
    options = {"strict": True, "lineterminator": "\n", **reader_args(dialect)}
    if dialect.quote:
        options["doublequote"] = True
    fixed = type("_Dialect", (csv.Dialect,), {"quoting": csv.QUOTE_MINIMAL, **options})()
    return functools.partial(csv.reader, dialect=fixed)


def number_reader(dialect: CsvDialect) -> Callable[[str], str] | None:
    """``cell → the number's text with a dot for its decimal mark and no thousands marks``, or
    None when the dialect writes numbers as JSON does. A cell that has a thousands mark where
    no group of three digits is (``1.5`` when ``.`` marks thousands) is refused: reading it
    either way could be wrong. Plain ``str.replace`` on the common path: one C call per value."""
    decimal, thousands = dialect.decimal, dialect.thousands
    if decimal == "." and not thousands:
        return None
    grouped = (
        re.compile(
            r"[-+]?[0-9]{1,3}(?:" + re.escape(thousands) + r"[0-9]{3})+(?:"
            + re.escape(decimal) + r"[0-9]*)?\Z"
        )
        if thousands
        else None
    )  # fmt: skip

    def read(cell: str) -> str:
        if thousands and thousands in cell:
            if not grouped.match(cell.strip()):
                if not any(c.isdigit() for c in cell):
                    return cell  # no number at all (a missing token): for the field to say
                raise InvalidEvent(
                    f"{cell[:40]!r} is not a number written with {decimal!r} for decimals and "
                    f"{thousands!r} between thousands"
                )
            cell = cell.replace(thousands, "")
        elif decimal != "." and "." in cell and any(c.isdigit() for c in cell):
            raise InvalidEvent(
                f"{cell[:40]!r}: a '.' in a number written with {decimal!r} for decimals "
                "(declare thousands: '.' in event.csv if it marks thousands)"
            )
        return cell.replace(decimal, ".") if decimal != "." else cell

    return read


def numbers_in_place(dialect: CsvDialect) -> Callable[[dict, Sequence[str]], None] | None:
    """``(record, names) → None``: the cells of ``names`` read as numbers of the dialect
    (:func:`number_reader`), in place; an InvalidEvent names the field. None when the dialect
    writes numbers as JSON does."""
    read = number_reader(dialect)
    if read is None:
        return None
    cell = events.CsvText

    def numbers(record: dict, names: Sequence[str]) -> None:
        for name in names:
            value = record.get(name)
            if value is not None:
                try:
                    record[name] = cell(read(value))
                except InvalidEvent as err:
                    raise InvalidEvent(f"field {name!r}: {err}") from None

    return numbers


def as_fields(
    record: dict,
    numbers: Callable[[dict, Sequence[str]], None] | None,
    number_fields: Sequence[str],
    named: set[str],
    target: str,
) -> dict:
    """A flat CSV record as the schema's fields: the cells of ``number_fields`` read by
    ``numbers`` (:func:`numbers_in_place`; None: plain decimals) and, with a map field
    ``target``, every column not ``named`` one of its entries, each read as a number too.
    Raises InvalidEvent (a DataError) for a number the dialect does not write."""
    if numbers is not None:
        numbers(record, number_fields)
    if not target:
        return record
    out = {k: v for k, v in record.items() if k in named}
    entries = {k: v for k, v in record.items() if k not in named}
    if numbers is not None:
        numbers(entries, tuple(entries))
    out[target] = entries
    return out
