"""The other documented shapes (SPEC §5.6, §3 rules 3, 10 and 11), one table each, declared in
``other_shapes.yaml``."""

from __future__ import annotations

from transforms.schema_file import builtin_tables

_TABLES = builtin_tables("other_shapes")
STOCK_PRICE = _TABLES["STOCK_PRICE"]
FRIENDS = _TABLES["FRIENDS"]
DEVICE = _TABLES["DEVICE"]
WEB_PAGES = _TABLES["WEB_PAGES"]
USER_ACTIVITY = _TABLES["USER_ACTIVITY"]
