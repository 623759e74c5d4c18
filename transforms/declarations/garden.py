"""Daily garden temperatures, tall-narrow and the bounded short-wide alternative (docs/patterns.md
§5.6),
declared in ``garden.yaml``."""

from __future__ import annotations

from transforms.schema_file import builtin_tables

_TABLES = builtin_tables("garden")
GARDEN_DAILY = _TABLES["GARDEN_DAILY"]
GARDEN_MONTHLY = _TABLES["GARDEN_MONTHLY"]
