"""Server metrics tables (docs/patterns.md §5.2), declared in ``server_metrics.yaml`` (the schema
file the
generic pipeline also reads: one source of truth)."""

from __future__ import annotations

from transforms.schema_file import builtin_tables

_TABLES = builtin_tables("server_metrics")
METRIC = _TABLES["METRIC"]
CURRENT_METRIC = _TABLES["CURRENT_METRIC"]
METRIC_HOURLY = _TABLES["METRIC_HOURLY"]
