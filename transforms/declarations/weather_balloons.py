"""Weather-balloon tables: the four column patterns of docs/patterns.md §4 for one event stream,
declared in
``weather_balloons.yaml`` (which also explains their GC rules).

A balloon at a location reports pressure, temperature, humidity and altitude once a minute. The
same events land in whichever of the four tables the job's ``--balloon_pattern`` chooses.
"""

from __future__ import annotations

from transforms.schema_file import builtin_tables

# One event a minute for a UTC ISO week (which always has 7 × 24 hours): the versions a
# time-bucket family keeps (tests check the declarations against it).
MINUTES_PER_WEEK = 7 * 24 * 60

_TABLES = builtin_tables("weather_balloons")
BALLOON_TB_COL = _TABLES["BALLOON_TB_COL"]
BALLOON_TB_CELL = _TABLES["BALLOON_TB_CELL"]
BALLOON_TS_BLOB = _TABLES["BALLOON_TS_BLOB"]
BALLOON_TS_COLS = _TABLES["BALLOON_TS_COLS"]
