"""Battery levels (SPEC §5.4): one event → one row in the table of the chosen layout.

``{"user": "Corrie", "timestamp": "2015-03-01T12:45:01.001Z", "percentage": 98}`` →

* ``BATTERY`` (field promotion): ``BATTERY#Corrie#20150301124501001``, ``METRIC:PERCENTAGE=98``;
* ``BATTERY_SALTED``: ``BATTERY#<salt>#20150301124501001``, ``METRIC:USER=Corrie``,
  ``METRIC:PERCENTAGE=98``;
* ``BATTERY_TS_FIRST`` (anti-pattern): ``BATTERY#20150301124501001``, same two columns.

A layout whose key holds the user needs no USER column; the others keep it as a value. The cell
timestamp is the event time. The time may also be given as the guidance writes it,
``20150301124501001`` (17 digits, UTC), besides RFC 3339 or epoch milliseconds. Pure: no I/O.
"""

from __future__ import annotations

import calendar
import datetime as dt
from decimal import Decimal, InvalidOperation
from typing import NamedTuple

from transforms import events, keys, timefmt
from transforms.declarations import battery as decls
from transforms.errors import InvalidEvent
from transforms.mutations import Cell, RowMutation
from transforms.schema import TableDecl

FIELDS = ("user", "timestamp", "percentage")
FAMILY = "METRIC"
MAX_USER = 256
COMPACT_DIGITS = 17  # YYYYMMDDHHMMSSmmm; epoch milliseconds have at most 13

# --battery_layout → table name
LAYOUTS = {
    "promoted": decls.BATTERY.name,
    "salted": decls.BATTERY_SALTED.name,
    "timestamp_first": decls.BATTERY_TS_FIRST.name,
}


class BatteryEvent(NamedTuple):
    user: str
    ts_ms: int
    percentage: str  # the source's number text


def declarations() -> dict[str, TableDecl]:
    """Every battery table declared in :mod:`transforms.declarations.battery`, by name."""
    return {v.name: v for v in vars(decls).values() if isinstance(v, TableDecl)}


def salt_count(decl: TableDecl) -> int | None:
    """The bucket count a declaration fixes for its salt segment (None: not salted)."""
    for segment in decl.key.segments:
        if segment.kind == "salt":
            return segment.width
    return None


def salted_declarations() -> dict[int, TableDecl]:
    """Salted battery tables by bucket count: the only counts a salted job may use."""
    out: dict[int, TableDecl] = {}
    for decl in declarations().values():
        count = salt_count(decl)
        if count is not None:
            if count in out:
                raise ValueError(f"{out[count].name} and {decl.name} both salt into {count}")
            out[count] = decl
    return out


def parse_time(value: object) -> int:
    """Epoch ms from ``YYYYMMDDHHMMSSmmm`` (UTC), RFC 3339 or epoch milliseconds."""
    if isinstance(value, str) and len(value) == COMPACT_DIGITS and value.isdigit():
        try:
            moment = dt.datetime.strptime(value[:14], "%Y%m%d%H%M%S")
        except ValueError:
            raise InvalidEvent(
                f"field 'timestamp': {value!r} is not a valid YYYYMMDDHHMMSSmmm time"
            ) from None
        return timefmt.parse_event_time(
            calendar.timegm(moment.timetuple()) * 1000 + int(value[14:])
        )
    return timefmt.parse_event_time(value)


def parse(record: dict) -> BatteryEvent:
    events.check_fields(record, FIELDS)
    user = keys.check_segment(events.text_field(record, "user", MAX_USER), "field 'user'")
    ts_ms = parse_time(record["timestamp"])
    percentage = events.number_field(record, "percentage")
    try:
        level = Decimal(percentage)
    except InvalidOperation:  # the JSON grammar should prevent this; be precise anyway
        raise InvalidEvent(f"field 'percentage': {percentage!r} is not a number") from None
    if not 0 <= level <= 100:
        raise InvalidEvent(f"field 'percentage': {percentage} is outside 0..100")
    return BatteryEvent(user, ts_ms, str(percentage))


def rows(event: BatteryEvent, decl: TableDecl) -> list[RowMutation]:
    """The event's row in ``decl``; USER is a column only when the key does not hold it."""
    ts_us = timefmt.micros(event.ts_ms)
    cells = [] if "user" in decl.key.fields else [Cell(FAMILY, b"USER", event.user.encode(), ts_us)]
    cells.append(Cell(FAMILY, b"PERCENTAGE", event.percentage.encode("ascii"), ts_us))
    key = decl.key.build({"user": event.user, "ts": event.ts_ms})
    return [RowMutation(decl.name, key, tuple(cells))]


class Builder:
    """The pipeline's builder for one table: a plain picklable object holding the table name
    (the declaration is looked up on the worker)."""

    def __init__(self, table: str) -> None:
        if table not in declarations():
            raise ValueError(f"{table} is not a battery table; known: {sorted(declarations())}")
        self.table = table
        self._decl: TableDecl | None = None

    def __getstate__(self) -> dict:
        return {"table": self.table}

    def __setstate__(self, state: dict) -> None:
        self.table = state["table"]
        self._decl = None

    def __call__(self, record: dict) -> list[RowMutation]:
        if self._decl is None:
            self._decl = declarations()[self.table]
        return rows(parse(record), self._decl)


def build(record: dict) -> list[RowMutation]:
    """The default layout (field promotion)."""
    return rows(parse(record), decls.BATTERY)
