"""Decimal years (``1960.25``, ``1969.0833333``): the time format R's ``ts`` objects are
exported with (their ``time()`` is ``start + i / frequency``), read with defined semantics.

A decimal year ``Y.f`` is the instant ``f`` of the way through year ``Y`` — the start of the year
plus the fraction of its length (365 or 366 days), as lubridate's ``date_decimal`` reads it —
rounded to the nearest start of a stated unit (year, quarter, month, day, hour, minute, second or
ms; a tie goes to the later one). The rounding is what lands a ``ts`` on its period: for a monthly
series ``1969.0833333`` is 1969-01-31T10:00 exactly, and the nearest month start is 1969-02-01;
for a quarterly one ``1960.25`` is 1960-04-01T12:00 (1960 has 366 days), whose quarter is
1960-04-01. Every month start lies within two days of ``k/12`` of its year, so a monthly series
rounds to its months whatever the year's length; quarters likewise.

Exact: the decimal text is read as a :class:`~decimal.Decimal`, never a float. Pure.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import ROUND_HALF_UP, Decimal, localcontext

__all__ = ["ROUND_UNITS", "wall_time"]

ROUND_UNITS = ("year", "quarter", "month", "day", "hour", "minute", "second", "ms")
_TEXT = re.compile(r"([0-9]{1,4})(?:\.([0-9]*))?\Z")
_MICROS = {"day": 86_400_000_000, "hour": 3_600_000_000, "minute": 60_000_000}
_MICROS |= {"second": 1_000_000, "ms": 1000}
_PER_YEAR = {"year": 1, "quarter": 4, "month": 12}


def _starts(year: int, unit: str) -> list[dt.datetime]:
    """The starts of the year's periods of ``unit`` (year, quarter, month) and the next year's."""
    months = range(1, 13, 12 // _PER_YEAR[unit])
    return [dt.datetime(year, m, 1) for m in months] + [dt.datetime(year + 1, 1, 1)]


def wall_time(text: str, unit: str) -> dt.datetime:
    """The wall time (naive) of decimal year ``text`` rounded to ``unit``; ValueError when the
    text is not a decimal year 1..9998 (``1960``, ``1960.25``, ``1960.``): year 9999's length
    would need the start of year 10000, which no datetime holds."""
    match = _TEXT.match(text.strip())
    if not match or int(match.group(1)) == 0:
        raise ValueError(f"{text!r} is not a decimal year such as 1960.25")
    year = int(match.group(1))
    if year == 9999:
        raise ValueError(f"{text!r} is too late: years end at 9999")
    start = dt.datetime(year, 1, 1)
    end = dt.datetime(year + 1, 1, 1)
    length = (end - start) // dt.timedelta(microseconds=1)
    with localcontext() as context:
        context.prec = 60
        offset = Decimal("0." + (match.group(2) or "0")) * length  # µs into the year, exact
        if unit in _MICROS:
            step = _MICROS[unit]
            units = (offset / step).to_integral_value(ROUND_HALF_UP)
            return start + dt.timedelta(microseconds=int(units) * step)
    if unit not in _PER_YEAR:
        raise ValueError(f"unknown unit {unit!r}; use one of {', '.join(ROUND_UNITS)}")
    starts = _starts(year, unit)
    micros = [(s - start) // dt.timedelta(microseconds=1) for s in starts]
    later = next(i for i, m in enumerate(micros) if m > offset)
    before, after = micros[later - 1], micros[later]
    return starts[later] if offset - before >= after - offset else starts[later - 1]
