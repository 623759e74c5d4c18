"""Field parsers: the checked value of one event field from its raw value, as the schema's
``event.fields`` declares it. Pure: no Beam, no client.

Each parser is a closure specialised for one field (its type, limits, whitespace and case
rules, the delimiters of the keys it is text of), so the builder's hot path pays no dispatch.
Every refusal is an :class:`~transforms.errors.InvalidEvent` naming the field. The generated
builder (:mod:`transforms.builder.codegen`) writes the common case of some checks inline and calls
these for everything else, so these are what a value must pass.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from transforms.errors import InvalidEvent
from transforms.limits import MAX_QUALIFIER_BYTES
from transforms.schema import FieldSpec
from transforms.text import events, keys, timefmt
from transforms.text.events import CsvText, Num

__all__ = ["field_parser", "map_columns_parser"]

_INT64 = (-(2**63), 2**63 - 1)
_CACHED_NAMES = 64  # a map's name lists longer than this are checked without being cached
_describe = events.describe
_NUMBERS_ONLY = {Num}
_encode = str.encode
_DOUBLE = struct.Struct(">d")

FieldParser = Callable[[object], object]


def _bounds_check(spec: FieldSpec) -> Callable[[str], None] | None:
    """The min/max check of a number field (exact: decimal text compared as Decimal)."""
    if spec.minimum is None and spec.maximum is None:
        return None
    name = spec.name
    low = Decimal(spec.minimum) if spec.minimum is not None else None
    high = Decimal(spec.maximum) if spec.maximum is not None else None

    def check(number: str) -> None:
        """Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
        try:
            value = Decimal(number)
        except InvalidOperation:
            raise InvalidEvent(f"field {name!r}: {number!r} is not a number") from None
        if low is not None and value < low:
            raise InvalidEvent(f"field {name!r}: {number} is below its minimum {spec.minimum}")
        if high is not None and value > high:
            raise InvalidEvent(f"field {name!r}: {number} is above its maximum {spec.maximum}")

    return check


def _text_parser(spec: FieldSpec, key_delimiters: str) -> FieldParser:
    name = spec.name
    limit = spec.max_length or 1024
    whitespace = spec.whitespace
    case = spec.case
    delimiters = tuple(key_delimiters)

    def text(value: object) -> str:
        """Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
        if type(value) is not str:
            if type(value) is not CsvText:
                raise InvalidEvent(f"field {name!r}: expected a string, got {_describe(value)}")
            value = str(value)
        if not value:
            raise InvalidEvent(f"field {name!r}: empty")
        if len(value) > limit:
            raise InvalidEvent(f"field {name!r}: longer than {limit} characters")
        if whitespace != "allow":
            if whitespace == "trimmed" and value != value.strip():
                raise InvalidEvent(f"field {name!r}: {value!r} has leading or trailing whitespace")
            if whitespace == "none" and value.split() != [value]:
                raise InvalidEvent(f"field {name!r}: {value[:40]!r} contains whitespace")
        if case != "as_is":
            value = value.lower() if case == "lower" else value.upper()
        # A key field is checked here, whichever of the schema's tables a job writes: an event
        # is valid or not whatever the layout.
        for delimiter in delimiters:
            if delimiter in value or not value.isprintable():
                keys.check_segment(value, f"field {name!r}", delimiter)
        return value

    return text


def _number_parser(spec: FieldSpec) -> FieldParser:
    name = spec.name
    limit = spec.max_length
    bounds = _bounds_check(spec)

    def number(value: object) -> str:
        """Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
        if type(value) is not Num:
            value = events.as_number(value)
            if type(value) is not Num:
                raise InvalidEvent(f"field {name!r}: expected a number, got {_describe(value)}")
        if limit and len(value) > limit:
            raise InvalidEvent(f"field {name!r}: number longer than {limit} characters")
        if bounds is not None:
            bounds(value)
        return str(value)

    return number


def _integer_parser(spec: FieldSpec) -> FieldParser:
    name = spec.name
    bounds = _bounds_check(spec)
    low, high = _INT64

    def integer(value: object) -> int:
        """Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
        if type(value) is CsvText and value.isascii() and value.isdigit() and value[0] != "0":
            number = int(value)  # the commonest cell (1956): what the general reading gives it
        else:
            if type(value) is not Num:
                value = events.as_number(value)
            if type(value) is Num and "." in value:  # 1.0: a whole number written as a float
                value = Num(events.integral_text(value))
            if type(value) is not Num or not value.lstrip("-").isdigit():
                raise InvalidEvent(
                    f"field {name!r}: expected an integer, got {_describe(value)} {value!r}"
                )
            number = int(value)
        if not low <= number <= high:
            raise InvalidEvent(f"field {name!r}: {number} is outside {low}..{high}")
        if bounds is not None:
            bounds(value)
        return number

    return integer


def _id_parser(spec: FieldSpec, key_delimiters: str) -> FieldParser:
    name = spec.name
    limit = spec.max_length
    as_text = _text_parser(
        FieldSpec(name, "text", max_length=spec.max_length or 1024), key_delimiters
    )

    def ident(value: object) -> str:
        """Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
        value = events.as_number(value)
        if type(value) is not Num:
            return as_text(value)  # which checks the same max_length
        if not (value.isascii() and value.isdigit()):
            raise InvalidEvent(
                f"field {name!r}: expected a non-negative integer or a text id, got {value}"
            )
        if limit and len(value) > limit:
            raise InvalidEvent(f"field {name!r}: longer than {limit} characters")
        return str(value)

    return ident


def _boolean_parser(spec: FieldSpec) -> FieldParser:
    name = spec.name

    def boolean(value: object) -> str:
        """Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
        if value is True or value is False:
            return "true" if value else "false"
        if type(value) is CsvText and value in ("true", "false"):
            return str(value)
        raise InvalidEvent(f"field {name!r}: expected true or false, got {_describe(value)}")

    return boolean


def _float64_parser(spec: FieldSpec) -> FieldParser:
    """A binary64 float kept bit for bit as its 8 big-endian IEEE 754 bytes: a Python float
    (NaN payloads, such as Prometheus' staleness marker, and ±Inf included), an int, number
    text, or ``0x`` and 16 hex digits of the bits (how JSON, which has no NaN, can carry one)."""
    name = spec.name
    pack = _DOUBLE.pack

    def float64(value: object) -> bytes:
        kind = type(value)
        if kind is float:
            return pack(value)
        try:
            if kind is int or kind is Num or kind is CsvText:
                return pack(float(value))
            if kind is str and value[:2] in ("0x", "0X") and len(value) == 18:
                return bytes.fromhex(value[2:])
        except (ValueError, OverflowError):
            pass
        raise InvalidEvent(
            f"field {name!r}: expected a float64 (a number, or 0x and 16 hex digits of its bits), "
            f"got {_describe(value)}"
        )

    return float64


def _time_parser(spec: FieldSpec, advice: str = "") -> FieldParser:
    earliest = spec.earliest_ms
    if spec.format == "auto" and not spec.timezone:  # the common case: one C call inside
        name = spec.name
        parse = timefmt.parse_event_time
        if earliest or advice:
            return lambda value: parse(value, name, earliest, advice)
        return lambda value: parse(value, name)
    zone = timefmt.zone(spec.timezone) if spec.timezone else None
    return timefmt.make_parser(
        spec.format, spec.name, zone, spec.ambiguous, earliest, advice, round_to=spec.round
    )


def _check_names(name: str, upper: bool, names: tuple) -> tuple[bytes, ...]:
    """A map field's entry names → their qualifiers, every one checked, collisions refused."""
    out = []
    seen: dict[bytes, str] = {}
    for entry in names:
        if type(entry) is not str or not entry:
            raise InvalidEvent(f"field {name!r}: entry name {entry!r}: expected non-empty text")
        if not entry.isprintable() or entry.split() != [entry]:
            raise InvalidEvent(
                f"field {name!r}: entry {entry[:80]!r} contains whitespace or a control character"
            )
        qualifier = (entry.upper() if upper else entry).encode("utf-8")
        if len(qualifier) > MAX_QUALIFIER_BYTES:
            raise InvalidEvent(f"field {name!r}: entry {entry[:40]!r}… is over 16 KiB")
        if qualifier in seen:
            raise InvalidEvent(
                f"field {name!r}: entry {entry!r} collides with {seen[qualifier]!r}"
                + (" once upper-cased" if upper else "")
            )
        seen[qualifier] = entry
        out.append(qualifier)
    return tuple(out)


def _map_parser(spec: FieldSpec, columns: bool = False) -> FieldParser:
    """A map field's parser; ``columns``: returning ``(pairs, qualifiers)``, the qualifiers
    one cached tuple per distinct name list (what the builder's index fold keys series by)."""
    name = spec.name
    upper = spec.qualifier == "upper"
    most = spec.max_entries

    @lru_cache(maxsize=4096)  # a source reports the same few name lists over and over
    def cached(names: tuple) -> tuple[bytes, ...]:
        return _check_names(name, upper, names)

    def slow_values(entries: dict) -> list[bytes]:
        """Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
        out = []
        for entry, value in entries.items():
            number = events.as_number(value)
            if type(number) is not Num:
                raise InvalidEvent(
                    f"field {name!r}: entry {entry!r}: expected a number, got {_describe(number)}"
                )
            out.append(number.encode("ascii"))
        return out

    def mapping(entries: object) -> tuple[tuple[bytes, bytes], ...]:
        """Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
        if type(entries) is not dict:
            raise InvalidEvent(f"field {name!r}: expected an object, got {_describe(entries)}")
        if not entries:
            raise InvalidEvent(f"field {name!r}: empty; an event needs at least one entry")
        if most and len(entries) > most:
            raise InvalidEvent(f"field {name!r}: {len(entries)} entries, over {most}")
        names = tuple(entries)
        if len(names) <= _CACHED_NAMES:
            qualifiers = cached(names)
        else:
            qualifiers = _check_names(name, upper, names)
        values = entries.values()
        if set(map(type, values)) == _NUMBERS_ONLY:  # the common case, in C
            pairs = tuple(zip(qualifiers, map(_encode, values), strict=True))
        else:
            pairs = tuple(zip(qualifiers, slow_values(entries), strict=True))
        return (pairs, qualifiers) if columns else pairs

    return mapping


def map_columns_parser(spec: FieldSpec) -> FieldParser:
    """A map field's value and its qualifiers: ``(((qualifier, value text), …), (qualifier,
    …))``, refusing what :func:`field_parser` refuses (InvalidEvent, a DataError)."""
    return _map_parser(spec, columns=True)


def field_parser(spec: FieldSpec, key_delimiters: str = "", advice: str = "") -> FieldParser:
    """The checked value of one field from its raw value: text (str), number/id (their source
    text), integer (int), boolean ("true"/"false"), time (epoch ms), map (((qualifier, value
    text), …)). ``key_delimiters``: the delimiters of the keys a text field is part of;
    ``advice``: how to land a time before the field's earliest (:func:`timefmt.range_problem`)."""
    if spec.type in ("text", "id"):  # the two that may be key text
        return (_text_parser if spec.type == "text" else _id_parser)(spec, key_delimiters)
    if spec.type == "time":
        return _time_parser(spec, advice)
    return _PARSERS[spec.type](spec)


_PARSERS = {
    "number": _number_parser,
    "integer": _integer_parser,
    "boolean": _boolean_parser,
    "time": _time_parser,
    "map": _map_parser,
    "float64": _float64_parser,
}
