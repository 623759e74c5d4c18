"""Smart-meter readings (SPEC §5.3)."""

from __future__ import annotations

from transforms.schema import Family, declare, text, time_label, zero_padded

METER_DIGITS = 10

SENSOR = declare(
    "SENSOR",
    key=[zero_padded("meter", METER_DIGITS), time_label("date", "yyyymmdd")],
    families=[
        Family(
            "METER",
            max_versions=1,
            doc="ID = the meter id; one column per reading named by its time of day (HHMM); "
            "the newest event time wins a column",
        )
    ],
    pattern="SHORT-WIDE",
    doc="One row per meter per day (METER#YYYYMMDD, day in the configured zone): one meter's day "
    "is a single-row read; meter first so midnight does not send every meter to one node. "
    "All meters of one day come from the nightly SENSOR_YYYYMMDD copy.",
    spec="5.3",
)

SENSOR_HOURLY = declare(
    "SENSOR_HOURLY",
    key=[text("meter"), time_label("hour", "hour")],
    families=[
        Family("sum", aggregate="sum", doc="READING: sum of the hour's readings x 10^6"),
        Family("count", aggregate="sum", doc="READING: number of readings in the hour"),
    ],
    pattern="AGGREGATE",
    doc="Hourly sum and count of readings per meter (AddToCell, fed by the rollup; UTC hours). "
    "The meter stays zero-padded, as in SENSOR.",
    spec="3.13",
)
