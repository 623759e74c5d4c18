"""The other documented shapes, one schema file each: ``stock_prices.yaml`` (STOCK_PRICE),
``friends.yaml`` (FRIENDS), ``devices.yaml`` (DEVICE), ``web_pages.yaml`` (WEB_PAGES) and
``user_activity.yaml`` (USER_ACTIVITY)."""

from __future__ import annotations

from transforms.schema_file import builtin_tables

STOCK_PRICE = builtin_tables("stock_prices")["STOCK_PRICE"]
FRIENDS = builtin_tables("friends")["FRIENDS"]
DEVICE = builtin_tables("devices")["DEVICE"]
WEB_PAGES = builtin_tables("web_pages")["WEB_PAGES"]
USER_ACTIVITY = builtin_tables("user_activity")["USER_ACTIVITY"]
