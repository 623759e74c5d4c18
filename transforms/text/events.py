"""Parsing source lines into field dicts while keeping every number's decimal text.

The guidance stores values as the source wrote them (``600.60``, ``0.00``): a float round trip
would turn those into ``600.6`` and ``0.0``. Numbers therefore parse to :class:`Num`, a ``str``
that remembers it was a JSON number.
"""

from __future__ import annotations

import csv
import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence

from transforms.errors import InvalidEvent

__all__ = [
    "CsvText",
    "Num",
    "array_hint",
    "as_number",
    "check_fields",
    "describe",
    "integral_text",
    "looks_like_csv",
    "parse_csv_header",
    "parse_csv_line",
    "parse_json_object",
    "scan_json",
]


class Num(str):
    """A JSON number, kept as its source text."""

    __slots__ = ()


class CsvText(str):
    """A CSV cell: untyped text that the field validators convert where it fits the type."""

    __slots__ = ()


_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?\Z")


def _reject_constant(name: str) -> None:
    raise InvalidEvent(f"{name} is not a number Bigtable rows can hold")


def _object(pairs: list) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):  # last-wins would silently drop a value
        seen: set = set()
        for key, _ in pairs:
            if key in seen:
                raise InvalidEvent(f"invalid JSON: field {key[:40]!r} repeated in one object")
            seen.add(key)
    return obj


_decoder = json.JSONDecoder(
    parse_float=Num, parse_int=Num, parse_constant=_reject_constant, object_pairs_hook=_object
)
_decode = _decoder.decode
# The C scanner, (text, index) -> (value, end): decode() without its two whitespace regexes.
scan_json = _decoder.scan_once

_ARRAY_HINT = (
    " (the line looks like part of one JSON array: read the file as an array with "
    "--input_format=json_array, or let --input_format=auto detect it)"
)


_CSV_HINT = " (the line looks like CSV: read the file as CSV with --input_format=csv)"


def array_hint(raw: bytes | str, reason: str) -> str:
    """A JSON-lines reason, saying so when the line looks like a piece of a top-level array
    (``[{...},``, ``{...},``, ``]``) or like a CSV record: the usual exports that are not JSON
    lines at all."""
    if not reason.startswith("invalid JSON"):  # a whole value (even an array) is not a piece
        return reason
    text = raw.strip()
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if text.startswith("[") or text.endswith(",") or text in ("]", "],"):
        return reason + _ARRAY_HINT
    if looks_like_csv(text):
        return reason + _CSV_HINT
    return reason


def looks_like_csv(text: str, delimiter: str = ",") -> bool:
    """Whether the first lines of ``text`` read as CSV records of two or more fields split by
    ``delimiter``, the same number on each, and not as JSON (a line of JSON starts with ``{``
    or ``[``)."""
    lines = text.removeprefix("\ufeff").lstrip().splitlines()[:2]
    if not lines or lines[0][:1] in ("{", "[") or delimiter not in lines[0]:
        return False
    widths = {len(record) for record in csv.reader(lines, delimiter=delimiter)}
    return len(widths) == 1 and widths.pop() >= 2


def _utf8(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InvalidEvent(f"not UTF-8: byte {err.start} is {raw[err.start]:#04x}") from None


def parse_json_object(raw: bytes | str) -> dict:
    """One JSON object per line. Raises :class:`InvalidEvent` with a precise reason."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode()
        except UnicodeDecodeError:
            raw = _utf8(raw)  # raises with the offending byte
    try:
        obj, end = scan_json(raw, 0)  # the common case: an object from the first character on
        if end != len(raw) and not raw[end:].isspace():
            obj = _decode(raw)  # says what the extra data is
    except (StopIteration, json.JSONDecodeError, RecursionError):
        obj = None  # leading whitespace or an error: the full decoder, for its exact message
    else:
        if type(obj) is dict:
            return obj
    try:
        obj = _decode(raw)
    except json.JSONDecodeError as err:
        raise InvalidEvent(f"invalid JSON: {err.msg} at column {err.colno}") from None
    except RecursionError:
        raise InvalidEvent("invalid JSON: nested too deeply") from None
    if type(obj) is not dict:
        raise InvalidEvent(f"expected a JSON object, got {describe(obj)}")
    return obj


def parse_csv_line(raw: bytes | str, header: Sequence[str]) -> dict:
    """One CSV record (one line) under its file's header. Empty cells are absent fields.
    Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
    if isinstance(raw, bytes):
        raw = _utf8(raw)
    try:
        (cells,) = csv.reader([raw], strict=True)
    except (csv.Error, ValueError) as err:
        raise InvalidEvent(f"invalid CSV: {err}") from None
    if len(cells) != len(header):
        raise InvalidEvent(f"CSV line has {len(cells)} cells; the header has {len(header)}")
    return {name: CsvText(cell) for name, cell in zip(header, cells, strict=True) if cell != ""}


def parse_csv_header(raw: bytes | str) -> tuple[str, ...]:
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    raw = raw.removeprefix("\ufeff")  # a byte-order mark is not part of the first name
    (names,) = csv.reader([raw])
    return tuple(name.strip() for name in names)


def describe(value: object) -> str:
    """The JSON type of a parsed value, as an error message names it."""
    if isinstance(value, CsvText):
        return "CSV text"
    if isinstance(value, Num):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def check_fields(obj: Mapping, required: Sequence[str], optional: Iterable[str] = ()) -> None:
    """Missing and unexpected fields are both errors: a typo must not silently drop data. A
    JSON ``null`` is no value (as a Parquet null is never read): an undeclared field holding
    one drops nothing, so it is no unexpected field."""
    if len(obj) == len(required):  # the common case, checked cheaply
        for name in required:
            if name not in obj:
                break
        else:
            return
    missing = [f for f in required if f not in obj]
    if missing:
        raise InvalidEvent(f"missing field(s): {', '.join(missing)}")
    allowed = set(required) | set(optional)
    extra = sorted(k for k in obj if k not in allowed and obj[k] is not None)
    if extra:
        close = nearest(extra[0], allowed)
        if close:
            hint = f" (nearest declared field: {close!r})"
        else:  # nothing alike: say what is declared, and how to let other columns through
            names = sorted(allowed)
            shown = ", ".join(names[:8]) + (", …" if len(names) > 8 else "")
            hint = f" (declared: {shown}; event.extra_fields: ignore drops the others)"
        raise InvalidEvent(f"unexpected field(s): {', '.join(extra)}{hint}")


def nearest(name: str, declared: Iterable[str]) -> str:
    """The declared name closest to ``name``, if any is alike (a refusal names it: a typo is
    seen at once), else ""."""
    best, score = "", 0.5
    for candidate in sorted(declared):
        ratio = difflib.SequenceMatcher(None, name.lower(), candidate.lower()).ratio()
        if ratio > score:
            best, score = candidate, ratio
    return best


_INTEGRAL = re.compile(r"(-?[0-9]+)\.0+\Z")


def integral_text(text: str) -> str:
    """``1956.0`` → ``1956``: the whole number a float column holds (pandas writes integer
    columns that have a gap as floats, in JSON, CSV and Parquet alike); any other text as is."""
    match = _INTEGRAL.match(text)
    return match.group(1) if match else text


def as_number(value: object) -> object:
    """A CSV cell that is a number becomes :class:`Num`; anything else is returned unchanged."""
    if type(value) is CsvText and _NUMBER.match(value):
        return Num(value)
    return value
