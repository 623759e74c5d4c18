"""Smart meters (SPEC §5.3): each reading is appended to its meter's day row in SENSOR.

``{"meter_id": 987654, "timestamp": "2017-07-26T00:15:00Z", "reading": 13.45}`` → row
``0000987654#20170726``, cells ``METER:0015 = 13.45`` and ``METER:ID = 987654``, both at the event
time. The day and the ``HHMM`` column come from the configured time zone (UTC by default); cell
timestamps stay absolute event times, so a re-run writes the very same cells.

In a zone with daylight saving time, the repeated hour of the autumn change maps two readings to
one ``HHMM`` column; the family keeps one version, so the later reading wins that column.
"""

from __future__ import annotations

import datetime as dt
from typing import NamedTuple

from transforms import events, timefmt
from transforms import rollup_core as rollup
from transforms.declarations.smart_meters import METER_DIGITS, SENSOR, SENSOR_HOURLY
from transforms.mutations import Cell, RowMutation

FIELDS = ("meter_id", "timestamp", "reading")
FAMILY = "METER"
TABLES = ("SENSOR",)
MAX_METER_ID = 10**METER_DIGITS - 1
_SENSOR_KEY = SENSOR.key.build
_new = tuple.__new__  # NamedTuple construction without its Python-level __new__ (hot path)


class Reading(NamedTuple):
    meter_id: int
    ts_ms: int
    reading: str  # the source's decimal text


def parse(obj: dict) -> Reading:
    events.check_fields(obj, FIELDS)
    return Reading(
        meter_id=events.int_field(obj, "meter_id", minimum=0, maximum=MAX_METER_ID),
        ts_ms=timefmt.parse_event_time(obj["timestamp"]),
        reading=str(events.number_field(obj, "reading")),
    )


def rows(event: Reading, tz: dt.tzinfo = timefmt.UTC) -> list[RowMutation]:
    key = _SENSOR_KEY({"meter": event.meter_id, "date": event.ts_ms}, tz)
    ts_us = timefmt.micros(event.ts_ms)
    column = timefmt.time_of_day(event.ts_ms, tz).encode("ascii")  # HHMM
    cells = (
        _new(Cell, (FAMILY, b"ID", str(event.meter_id).encode("ascii"), ts_us)),
        _new(Cell, (FAMILY, column, event.reading.encode("ascii"), ts_us)),
    )
    return [_new(RowMutation, ("SENSOR", key, cells))]


def build(record: dict, tz: dt.tzinfo = timefmt.UTC) -> list[RowMutation]:
    """The pipeline's builder (bind ``tz`` with :func:`functools.partial`): record → the cells of
    one reading in its meter's day row, or :class:`InvalidEvent`. CSV has the same flat columns."""
    return rows(parse(record), tz)


def rollup_points(row: RowMutation) -> list[rollup.RollupPoint]:
    """A SENSOR row's readings (not its ID cell) as rollup points of its meter."""
    meter = row.key.split(b"#", 1)[0].decode("ascii")
    return [
        rollup.point(meter, b"READING", c.timestamp_us // 1000, c.value.decode("ascii"))
        for c in row.cells
        if c.qualifier != b"ID"
    ]


def rollup_key(meter: str, start_ms: int) -> bytes:
    return SENSOR_HOURLY.key.build({"meter": meter, "hour": start_ms})


ROLLUP = rollup.RollupSpec("SENSOR", "SENSOR_HOURLY", rollup_points, rollup_key)
