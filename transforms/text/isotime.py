"""``datetime.fromisoformat`` as Python 3.11 and later read a time, on every Python the package
accepts.

Why: ``setup.py`` accepts Python 3.10, whose ``fromisoformat`` reads only what ``isoformat``
writes. A time ending in ``Z`` (``2015-03-16T19:53:32.045Z``, the guidance's own events), an
offset without a colon (``+0100``), fractions of other than 3 or 6 digits, the basic forms
(``20150316T195332Z``) and week dates are refused there, so on 3.10 an ingest would land none of
them and ``btts init`` would find no time in a file. From 3.11 on (3.11, 3.12 and 3.13 agree)
the C function reads all of them. :func:`fromisoformat` is that function where it exists, and
on 3.10 the C function for what it reads and :func:`_parse` for the rest: the same instant or
the same ValueError on every version (tests/transforms/text/test_isotime.py compares
:func:`_parse` with the 3.11+ function on thousands of strings, and ``make test-matrix`` runs
the time tests on 3.10).

The forms, as 3.11 reads them: a date ``YYYY-MM-DD``, ``YYYYMMDD``, ``YYYY-Www[-D]`` or
``YYYYWww[D]``; then, optionally, any one character and a time ``HH[:MM[:SS[.f…]]]`` or
``HH[MM[SS[.f…]]]`` (``,`` for ``.``; any number of fraction digits, the first six kept); then
``Z`` or an offset ``±HH[:MM[:SS[.f…]]]`` (or without colons)."""

from __future__ import annotations

import datetime as dt
import sys

__all__ = ["fromisoformat"]

_DIGITS = b"0123456789"


class _Text:
    """The string as 3.11 reads it: UTF-8 bytes, a NUL (``0``) past the end, a non-ASCII
    character where the separator may be read as ``T``."""

    def __init__(self, text: str) -> None:
        for pos in (7, 8, 10):  # where a separator can be
            if pos < len(text) and not text[pos].isascii():
                text = f"{text[:pos]}T{text[pos + 1 :]}"
                break
        self.data = text.encode("utf-8")  # a lone surrogate elsewhere: UnicodeEncodeError

    def at(self, pos: int) -> int:
        return self.data[pos] if pos < len(self.data) else 0

    def number(self, pos: int, width: int) -> int:
        """The ``width`` digits at ``pos`` as a number; ValueError where one is no digit."""
        digits = bytes(self.at(i) for i in range(pos, pos + width))
        if digits.strip(_DIGITS):
            raise ValueError
        return int(digits) if digits else 0


def _date_end(text: _Text) -> int:
    """Where the date ends (the separator's index): the date forms differ in length, and a
    week date's day digit or a time's first digit can follow the same characters."""
    size, at = len(text.data), text.at
    if size == 7:
        return 7
    if at(4) == ord("-"):
        if at(5) != ord("W"):
            return 10  # YYYY-MM-DD
        if size > 8 and at(8) == ord("-"):  # YYYY-Www-D, or YYYY-Www and a time after "-"
            if size == 9:
                raise ValueError
            return 8 if size > 10 and at(10) in _DIGITS else 10
        return 8  # YYYY-Www
    if at(4) != ord("W"):
        return 8  # YYYYMMDD
    end = 7
    while end < size and at(end) in _DIGITS:
        end += 1
    if end < 9:
        return end  # YYYYWww, or YYYYWwwD
    return 7 if end % 2 == 0 else 8  # a time of an even count of digits follows


def _date(text: _Text, end: int) -> dt.date:
    """The date of ``YYYY-MM-DD``, ``YYYYMMDD``, ``YYYY-Www[-D]`` or ``YYYYWww[D]``."""
    year = text.number(0, 4)
    dashed = text.at(4) == ord("-")
    pos = 5 if dashed else 4
    if text.at(pos) == ord("W"):
        week = text.number(pos + 1, 2)
        pos += 3
        weekday = 1
        if pos < end:
            if dashed:
                if text.at(pos) != ord("-"):
                    raise ValueError
                pos += 1
            weekday = text.number(pos, 1)
        return dt.date.fromisocalendar(year, week, weekday)
    month = text.number(pos, 2)
    pos += 2
    if dashed:
        if text.at(pos) != ord("-"):
            raise ValueError
        pos += 1
    return dt.date(year, month, text.number(pos, 2))


def _clock(text: _Text, pos: int, end: int) -> tuple[list[int], bool]:
    """``[hour, minute, second, microsecond]`` of ``HH[:MM[:SS]]`` (colons all or none) and a
    fraction, read from ``pos`` up to ``end``; and whether something other than the end of the
    string follows (an error where no zone follows)."""
    values = [0, 0, 0, 0]
    colons = True
    for index in range(3):
        values[index] = text.number(pos, 2)
        char = text.at(pos + 2)
        pos += 3
        if index == 0:
            colons = char == ord(":")
        if pos >= end:
            return values, char != 0
        if colons and char == ord(":"):
            continue
        if char in b".,":
            break
        if colons:
            raise ValueError
        pos -= 1
    take = min(end - pos, 6)
    values[3] = text.number(pos, take) * 10 ** (6 - take)
    pos += take
    while text.at(pos) in _DIGITS:  # digits past the sixth: dropped
        pos += 1
    return values, text.at(pos) != 0


def _time(text: _Text, start: int) -> tuple[list[int], dt.tzinfo | None]:
    """The clock from ``start`` and its zone: none, ``Z``, or ``±`` and a clock."""
    size = len(text.data)
    zone = start
    while zone < size and text.at(zone) not in b"Z+-":
        zone += 1
    values, stray = _clock(text, start, zone)
    if zone >= size:
        if stray:
            raise ValueError
        return values, None
    if text.at(zone) == ord("Z"):
        if text.at(zone + 1):
            raise ValueError
        return values, dt.timezone.utc
    (hours, minutes, seconds, micro), stray = _clock(text, zone + 1, size)
    if stray:
        raise ValueError
    sign = -1 if text.at(zone) == ord("-") else 1
    seconds += hours * 3600 + minutes * 60
    if not seconds:  # as 3.11: a zero offset is UTC, whatever its fraction of a second
        return values, dt.timezone.utc
    return values, dt.timezone(sign * dt.timedelta(seconds=seconds, microseconds=micro))


def _parse(text: str) -> dt.datetime:
    """3.11's reading of ``text``, in Python (see the module docstring); ValueError where 3.11
    raises one."""
    if not isinstance(text, str):
        raise TypeError(f"fromisoformat: argument must be str, not {type(text).__name__}")
    try:
        if len(text) < 7:
            raise ValueError
        data = _Text(text)
        end = _date_end(data)
        day = _date(data, end)
        if len(data.data) <= end:
            return dt.datetime.combine(day, dt.time())
        (hour, minute, second, micro), zone = _time(data, end + 1)
        return dt.datetime.combine(day, dt.time(hour, minute, second, micro, zone))
    except (ValueError, OverflowError, UnicodeEncodeError):
        raise ValueError(f"Invalid isoformat string: {text!r}") from None


def _fromisoformat_310(text: str) -> dt.datetime:
    """3.10's C function for what it reads (a subset of 3.11's forms, read alike), else
    :func:`_parse`."""
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        return _parse(text)


fromisoformat = dt.datetime.fromisoformat if sys.version_info >= (3, 11) else _fromisoformat_310
