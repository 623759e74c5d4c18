"""Game results, denormalised into two tables for two queries (docs/patterns.md §5.5), declared in
``game_results.yaml``."""

from __future__ import annotations

from transforms.schema_file import builtin_tables

_TABLES = builtin_tables("game_results")
GAME_BY_PLAYER = _TABLES["GAME_BY_PLAYER"]
GAME_BY_DATE = _TABLES["GAME_BY_DATE"]
