"""Input records as files hold them → the events a schema declares (pure; no Beam, no client).

What real files need before their records are events, each declared in the schema's
``event:`` section and applied here, before the compiled builder sees the record:

* ``missing``: texts that mean "no value" (R's ``NA``, ``NaN``, ``null``) make a value absent,
  as an empty CSV cell is (a field's own ``missing:`` list replaces the event's);
* ``unpivot``: a wide file (a column per month, per ticker) becomes one event per column, the
  column's name in one field and its value in another; an empty cell is no event.
* times ``from:`` several fields (year + quarter, year + month [+ day [+ hour …]], date + time
  of day), some parts possibly constants (``year: 1973``): the made time is written as a wall
  time into its field, whose parser then applies its ``timezone`` and ``earliest`` as for any
  time.
* ``extra_fields: ignore``: columns the event does not declare are dropped, not refused.

A schema using none of them gets no shaper (:func:`shaper` returns None): the builder's hot path
is unchanged.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence

from transforms.errors import InvalidEvent
from transforms.text.events import integral_text
from transforms.text.timepatterns import compile_pattern

__all__ = ["made_time", "shaper"]

MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_TIME_OF_DAY = re.compile(r"([0-9]{1,2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,6}))?)?\Z")
_DATE = re.compile(r"([0-9]{1,4})-([0-9]{2})-([0-9]{2})")

Shaper = Callable[[dict], list]


def _whole(value: object, field: str, role: str, low: int, high: int) -> int:
    text = integral_text(str(value).strip()) if value is not None else ""
    if not text.lstrip("-").isdigit() or not low <= int(text) <= high:
        raise InvalidEvent(f"field {field!r}: {role} {value!r} is not a whole number {low}-{high}")
    return int(text)


def _month(value: object, field: str) -> int:
    text = str(value).strip().lower().rstrip(".") if value is not None else ""
    if text in MONTHS:
        return MONTHS[text]
    return _whole(value, field, "month", 1, 12)


DateReader = Callable[[str], dt.datetime]


def made_time(parts: dict[str, object], field: str, read_date: DateReader | None = None) -> str:
    """The wall time ``YYYY-MM-DDTHH:MM:SS.ffffff`` the roles' raw values make (year, quarter,
    month, week, day, hour, minute, second, date, time), or InvalidEvent naming the field and
    the part that is wrong. A week is the ISO 8601 week of the year (its Monday). ``read_date``
    reads a date part written otherwise than YYYY-MM-DD (the field's compiled ``format:``).
    ``24:00`` (or hour 24) is the end of its day, as NOAA's and TMY weather files write it."""
    if "date" in parts:
        year, month, day = _date_part(parts["date"], field, read_date)
    else:
        year = _whole(parts["year"], field, "year", 1, 9999)
        month, day = 1, 1
        if "quarter" in parts:
            month = 3 * _whole(parts["quarter"], field, "quarter", 1, 4) - 2
        elif "month" in parts:
            month = _month(parts["month"], field)
        elif "week" in parts:
            week = _whole(parts["week"], field, "week", 1, 53)
            try:
                monday = dt.date.fromisocalendar(year, week, 1)
            except ValueError:
                raise InvalidEvent(f"field {field!r}: {year} has no ISO week {week}") from None
            year, month, day = monday.year, monday.month, monday.day
        if "day" in parts:
            day = _whole(parts["day"], field, "day", 1, 31)
    clock = _clock(parts, field)
    if clock.startswith("24"):  # the end of the day: the next day's midnight
        try:
            following = dt.date(year, month, day) + dt.timedelta(days=1)
        except (ValueError, OverflowError):
            raise InvalidEvent(f"field {field!r}: {year}-{month}-{day} has no next day") from None
        year, month, day = following.year, following.month, following.day
        clock = "00" + clock[2:]
    return f"{year:04d}-{month:02d}-{day:02d}T{clock}"


def _date_part(value: object, field: str, read_date: DateReader | None) -> tuple[int, int, int]:
    text = str(value).strip()
    if read_date is None:
        match = _DATE.match(text)
        if not match:
            raise InvalidEvent(f"field {field!r}: date {value!r} is not YYYY-MM-DD")
        year, month, day = (int(g) for g in match.groups())
        return year, month, day
    try:
        moment = read_date(text)
    except ValueError:
        raise InvalidEvent(f"field {field!r}: date {value!r} does not match its format") from None
    return moment.year, moment.month, moment.day


def _clock(parts: dict[str, object], field: str) -> str:
    """The time of day ``HH:MM:SS.ffffff`` of ``time`` or hour [+ minute [+ second]]; hour 24
    only as 24:00:00, the end of the day."""
    if "hour" in parts:
        hour = _whole(parts["hour"], field, "hour", 0, 24)
        minute = _whole(parts["minute"], field, "minute", 0, 59) if "minute" in parts else 0
        second = _whole(parts["second"], field, "second", 0, 59) if "second" in parts else 0
        if hour == 24 and minute + second:
            raise InvalidEvent(f"field {field!r}: hour 24 is only 24:00, the end of the day")
        return f"{hour:02d}:{minute:02d}:{second:02d}.000000"
    if "time" not in parts:
        return "00:00:00.000000"
    match = _TIME_OF_DAY.match(str(parts["time"]).strip())
    hour, minute, second, frac = match.groups() if match else ("99", "0", "0", "")
    end = (int(hour), int(minute), int(second or 0), int(frac or 0)) == (24, 0, 0, 0)
    if not end and (int(hour) > 23 or int(minute) > 59 or int(second or 0) > 59):
        raise InvalidEvent(
            f"field {field!r}: time {parts['time']!r} is not HH:MM[:SS[.fff]] (00:00..24:00)"
        )
    return f"{int(hour):02d}:{minute}:{second or '00'}.{(frac or '').ljust(6, '0')}"


def unpivoted(record: dict, columns: Sequence[str], name: str, value: str) -> list[dict]:
    """One event per column of ``columns`` in ``record`` whose cell is not empty, holding the
    column's name in ``name`` and its cell in ``value``; every other column is copied."""
    listed = set(columns)
    base = {k: v for k, v in record.items() if k not in listed}
    out = []
    for column in columns:
        cell = record.get(column)
        if cell is None or (isinstance(cell, str) and not cell.strip()):
            continue  # an empty cell: nothing measured, no event
        out.append({**base, name: column, value: cell})
    return out


def _absent(schema) -> Callable[[dict], dict] | None:
    """``record → record`` without the values its schema's ``missing`` tokens call absent (a
    field's own list, else the event's; a map's entries too), or None when nothing is declared."""
    default = frozenset(schema.missing)
    own = {f.name: frozenset(f.missing) for f in schema.fields if f.missing is not None}
    if not default and not any(own.values()):
        return None

    def strip(record: dict) -> dict:
        out = {}
        for name, value in record.items():
            tokens = own.get(name, default)
            if type(value) is dict:
                value = {k: v for k, v in value.items() if not (isinstance(v, str) and v in tokens)}
                if not value:
                    continue  # every entry missing: the map is absent
            elif isinstance(value, str) and value in tokens:
                continue
            out[name] = value
        return out

    return strip


def _date_reader(fmt: str) -> DateReader | None:
    """The compiled reader of a made time's date part (None: YYYY-MM-DD)."""
    return compile_pattern(fmt) if fmt else None


def shaper(schema) -> Shaper | None:
    """``record → events`` for ``schema`` (a :class:`transforms.schema.Schema`), or None when
    it declares no missing tokens, no unpivot, no time made from fields and keeps refusing
    extra fields."""
    made = [
        (f.name, dict(f.sources), dict(f.constants), _date_reader(f.date_format))
        for f in schema.fields
        if f.sources
    ]
    spread = schema.unpivot
    ignore = schema.extra_fields == "ignore"
    absent = _absent(schema)
    if not (made or spread or ignore or absent):
        return None
    declared = frozenset(f.name for f in schema.fields)
    pattern = re.compile(spread.match) if spread is not None and spread.match else None

    def columns_of(record: dict) -> Sequence[str]:
        if pattern is None:
            return [c for c in spread.columns if c in record]
        return [c for c in record if c not in declared and pattern.fullmatch(c)]

    empty = [0]  # unpivoted cells without a value so far (see Builder.take_empty_cells)

    def shape(record: dict) -> list[dict]:
        """Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
        if absent is not None:
            record = absent(record)
        events = [record]
        if spread is not None:
            columns = columns_of(record)
            events = unpivoted(record, columns, spread.name, spread.value)
            if not events:  # (every cell empty or null: the record's other fields have no event)
                wanted = spread.columns or (f"columns matching {spread.match!r}",)
                raise InvalidEvent(f"no column to unpivot: expected {', '.join(wanted)}")
            # listed columns without a value (an empty CSV cell is an absent field); a
            # matched one is known only when present
            empty[0] += len(spread.columns or columns) - len(events)
        for event in events:
            for field, roles, constants, read_date in made:
                missing = [s for s in roles.values() if event.get(s) is None]
                if missing:
                    raise InvalidEvent(f"missing field(s): {', '.join(missing)}")
                parts = {**constants, **{r: event[s] for r, s in roles.items()}}
                event[field] = made_time(parts, field, read_date)
        if ignore:
            events = [{k: v for k, v in e.items() if k in declared} for e in events]
        return events

    def take_empty() -> int:
        count, empty[0] = empty[0], 0
        return count

    shape.take_empty = take_empty  # type: ignore[attr-defined]
    return shape
