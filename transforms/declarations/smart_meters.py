"""Smart-meter readings (docs/patterns.md §5.3), declared in ``smart_meters.yaml``."""

from __future__ import annotations

from transforms.schema_file import builtin_tables

_TABLES = builtin_tables("smart_meters")
SENSOR = _TABLES["SENSOR"]
SENSOR_HOURLY = _TABLES["SENSOR_HOURLY"]
METER_DIGITS = SENSOR.key.segments[0].width  # 10: the zero-padded meter id
