"""Bigtable's limits, stated once: the key builders, the mutation checks, the admin guard, the
schema checker and the advisor all read them here.

From Cloud Bigtable's quotas and limits page: hard limits Bigtable enforces, and the sizes it
advises staying under (a row past 100 MB slows every read of it; 256 MB is refused).
"""

from __future__ import annotations

__all__ = [
    "MAX_CELL_BYTES",
    "MAX_FAMILIES_PER_TABLE",
    "MAX_QUALIFIER_BYTES",
    "MAX_ROW_KEY_BYTES",
    "MAX_TABLES_PER_INSTANCE",
    "ROW_ADVISED_BYTES",
    "ROW_HARD_BYTES",
]

MAX_ROW_KEY_BYTES = 4 * 1024  # a row key
MAX_QUALIFIER_BYTES = 16 * 1024  # a column qualifier
MAX_CELL_BYTES = 10 * 1024 * 1024  # a cell's value (advised)
ROW_ADVISED_BYTES = 100 * 1024 * 1024  # a row (advised)
ROW_HARD_BYTES = 256 * 1024 * 1024  # a row (hard)
MAX_FAMILIES_PER_TABLE = 100  # column families of one table
MAX_TABLES_PER_INSTANCE = 1000  # tables of one instance
