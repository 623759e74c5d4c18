"""The nightly job's single-table layout (SPEC §5.3, ``--layout single_table``).

The per-day tables ``SENSOR_YYYYMMDD`` are not declared here: the job derives each one from
SENSOR's declaration when it creates it (same families, same keys).
"""

from __future__ import annotations

from transforms.declarations import smart_meters as _smart_meters
from transforms.schema import declare, time_label, zero_padded

SENSOR_DAILY = declare(
    "SENSOR_DAILY",
    key=[time_label("date", "yyyymmdd"), zero_padded("meter", _smart_meters.METER_DIGITS)],
    families=_smart_meters.SENSOR.families,
    pattern="SHORT-WIDE",
    doc="SENSOR's rows re-keyed DATE#METER by the nightly job (--layout single_table): all meters "
    "of one day is one prefix scan of one table, without a table per day. Date first is safe "
    "here: only the nightly batch copy writes it, never the live readings.",
    spec="5.3",
)
