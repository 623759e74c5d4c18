"""The nightly job's single-table layout (docs/patterns.md §5.3, ``--layout single_table``),
declared in
``smart_meters.yaml`` next to SENSOR, whose families it shares (a YAML anchor).

The per-day tables ``SENSOR_YYYYMMDD`` are not declared: the job derives each one from
SENSOR's declaration when it creates it (same families, same keys).
"""

from __future__ import annotations

from transforms.schema_file import builtin_tables

SENSOR_DAILY = builtin_tables("smart_meters")["SENSOR_DAILY"]
