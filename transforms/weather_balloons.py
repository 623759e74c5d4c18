"""Weather balloons (SPEC §4): one measurement event → the rows of one column pattern.

``{"location": "us-west2", "balloon_id": 3698, "timestamp": "2021-03-05T12:00:00Z",
"pressure": 94558, "temperature": 9.6, "humidity": 61, "altitude": 612}`` becomes

- TB-COL: four rows ``us-west2#3698#pressure#2021-W09`` … ``…#altitude#2021-W09``, each with one
  cell ``m:<value text>`` = empty;
- TB-CELL: row ``us-west2#3698#2021-W09``, one new cell in each of ``measurements:pressure``,
  ``…:temperature``, ``…:humidity``, ``…:altitude``;
- TS-BLOB: row ``us-west2#3698#2021-03-05-1200``, ``m:measurements_blob`` = the event as a
  ``btts.balloon.BalloonMeasurement`` protobuf;
- TS-COLS: the same row key, ``m:pressure`` … ``m:altitude``, one cell each.

Every cell's timestamp is the event time. Values are the source's decimal text (``9.6`` stays
``9.6``), in the protobuf too. Time labels are UTC.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from protos import balloon_pb2
from transforms import events, keys, timefmt
from transforms.declarations.weather_balloons import (
    BALLOON_TB_CELL,
    BALLOON_TB_COL,
    BALLOON_TS_BLOB,
    BALLOON_TS_COLS,
)
from transforms.errors import InvalidEvent
from transforms.mutations import Cell, RowMutation

METRICS = ("pressure", "temperature", "humidity", "altitude")
FIELDS = ("location", "balloon_id", "timestamp", *METRICS)
MAX_LOCATION = 64
MAX_BALLOON_ID = 64
MAX_VALUE = 64  # a measured value's text; in TB-COL it is a qualifier

TB_COL_FAMILY = BALLOON_TB_COL.families[0].name  # "m"
TB_CELL_FAMILY = BALLOON_TB_CELL.families[0].name  # "measurements"
TS_BLOB_FAMILY = BALLOON_TS_BLOB.families[0].name  # "m"
TS_COLS_FAMILY = BALLOON_TS_COLS.families[0].name  # "m"
BLOB_QUALIFIER = b"measurements_blob"
_QUALIFIERS = tuple(m.encode("ascii") for m in METRICS)

_TB_COL_KEY = BALLOON_TB_COL.key.build
_TB_CELL_KEY = BALLOON_TB_CELL.key.build
_TS_BLOB_KEY = BALLOON_TS_BLOB.key.build
_TS_COLS_KEY = BALLOON_TS_COLS.key.build


class BalloonEvent(NamedTuple):
    """A validated event. Measured values are the source's decimal text."""

    location: str
    balloon_id: str
    ts_ms: int
    pressure: str
    temperature: str
    humidity: str
    altitude: str

    def values(self) -> tuple[str, str, str, str]:
        """The measured values in :data:`METRICS` order."""
        return (self.pressure, self.temperature, self.humidity, self.altitude)


def _key_text(obj: dict, field: str, max_len: int) -> str:
    value = events.text_field(obj, field, max_len)
    return keys.check_segment(value, f"field {field!r}")


def _balloon_id(obj: dict) -> str:
    """A balloon ID is a non-negative integer (``3698``) or a text ID (``"B-17"``), kept as the
    source wrote it: it is a key segment, never arithmetic."""
    value = events.as_number(obj["balloon_id"])
    if type(value) is events.Num:
        if not (value.isascii() and value.isdigit()):
            raise InvalidEvent(
                f"field 'balloon_id': expected a non-negative integer or a text id, got {value}"
            )
        if len(value) > MAX_BALLOON_ID:
            raise InvalidEvent(f"field 'balloon_id': longer than {MAX_BALLOON_ID} digits")
        return str(value)
    return _key_text(obj, "balloon_id", MAX_BALLOON_ID)


def _measurement(obj: dict, field: str) -> str:
    value = events.number_field(obj, field)
    if len(value) > MAX_VALUE:
        raise InvalidEvent(f"field {field!r}: number longer than {MAX_VALUE} characters")
    return str(value)


def parse(obj: dict) -> BalloonEvent:
    """Validate one record (JSON object or CSV line); :class:`InvalidEvent` says what is wrong."""
    events.check_fields(obj, FIELDS)
    return BalloonEvent(
        location=_key_text(obj, "location", MAX_LOCATION),
        balloon_id=_balloon_id(obj),
        ts_ms=timefmt.parse_event_time(obj["timestamp"], "timestamp"),
        pressure=_measurement(obj, "pressure"),
        temperature=_measurement(obj, "temperature"),
        humidity=_measurement(obj, "humidity"),
        altitude=_measurement(obj, "altitude"),
    )


def _key_values(event: BalloonEvent) -> dict[str, object]:
    return {"location": event.location, "balloon_id": event.balloon_id, "ts": event.ts_ms}


# -- the protobuf of TS-BLOB ------------------------------------------------------------------


def to_message(event: BalloonEvent) -> balloon_pb2.BalloonMeasurement:
    return balloon_pb2.BalloonMeasurement(
        location=event.location,
        balloon_id=event.balloon_id,
        event_time_ms=event.ts_ms,
        pressure=event.pressure,
        temperature=event.temperature,
        humidity=event.humidity,
        altitude=event.altitude,
    )


def from_message(message: balloon_pb2.BalloonMeasurement) -> BalloonEvent:
    return BalloonEvent(
        location=message.location,
        balloon_id=message.balloon_id,
        ts_ms=message.event_time_ms,
        pressure=message.pressure,
        temperature=message.temperature,
        humidity=message.humidity,
        altitude=message.altitude,
    )


def encode_blob(event: BalloonEvent) -> bytes:
    """Deterministic bytes: a re-run writes the identical cell."""
    return to_message(event).SerializeToString(deterministic=True)


def decode_blob(blob: bytes) -> BalloonEvent:
    """The event a ``measurements_blob`` cell holds."""
    return from_message(balloon_pb2.BalloonMeasurement.FromString(blob))


# -- rows per pattern -------------------------------------------------------------------------


def rows_tb_col(event: BalloonEvent) -> list[RowMutation]:
    """One row per metric; the value is the qualifier, the cell itself is empty."""
    values = _key_values(event)
    ts_us = timefmt.micros(event.ts_ms)
    out = []
    for metric, value in zip(METRICS, event.values(), strict=True):
        values["metric"] = metric
        cell = Cell(TB_COL_FAMILY, value.encode("ascii"), b"", ts_us)
        out.append(RowMutation(BALLOON_TB_COL.name, _TB_COL_KEY(values), (cell,)))
    return out


def rows_tb_cell(event: BalloonEvent) -> list[RowMutation]:
    """One week row; a new timestamped cell in each measurement column."""
    ts_us = timefmt.micros(event.ts_ms)
    cells = tuple(
        Cell(TB_CELL_FAMILY, q, v.encode("ascii"), ts_us)
        for q, v in zip(_QUALIFIERS, event.values(), strict=True)
    )
    return [RowMutation(BALLOON_TB_CELL.name, _TB_CELL_KEY(_key_values(event)), cells)]


def rows_ts_blob(event: BalloonEvent) -> list[RowMutation]:
    """One minute row holding the whole event as one protobuf cell."""
    cell = Cell(TS_BLOB_FAMILY, BLOB_QUALIFIER, encode_blob(event), timefmt.micros(event.ts_ms))
    return [RowMutation(BALLOON_TS_BLOB.name, _TS_BLOB_KEY(_key_values(event)), (cell,))]


def rows_ts_cols(event: BalloonEvent) -> list[RowMutation]:
    """One minute row, one column per measurement."""
    ts_us = timefmt.micros(event.ts_ms)
    cells = tuple(
        Cell(TS_COLS_FAMILY, q, v.encode("ascii"), ts_us)
        for q, v in zip(_QUALIFIERS, event.values(), strict=True)
    )
    return [RowMutation(BALLOON_TS_COLS.name, _TS_COLS_KEY(_key_values(event)), cells)]


def build_tb_col(record: dict) -> list[RowMutation]:
    return rows_tb_col(parse(record))


def build_tb_cell(record: dict) -> list[RowMutation]:
    return rows_tb_cell(parse(record))


def build_ts_blob(record: dict) -> list[RowMutation]:
    return rows_ts_blob(parse(record))


def build_ts_cols(record: dict) -> list[RowMutation]:
    return rows_ts_cols(parse(record))


# Column pattern → (table, builder). CSV needs no adapter: its columns are the JSON fields.
PATTERNS: dict[str, tuple[str, Callable[[dict], list[RowMutation]]]] = {
    "TB-COL": (BALLOON_TB_COL.name, build_tb_col),
    "TB-CELL": (BALLOON_TB_CELL.name, build_tb_cell),
    "TS-BLOB": (BALLOON_TS_BLOB.name, build_ts_blob),
    "TS-COLS": (BALLOON_TS_COLS.name, build_ts_cols),
}
