"""Financial market data tables (docs/patterns.md §5.1), declared in ``market_data.yaml``.

Queries read quotes or trades, never both, for one exchange + symbol over a time range; so each
source message is split into a QUOTE row and a TRADE row, each keyed by its own time.
"""

from __future__ import annotations

from transforms.schema_file import builtin_tables

_TABLES = builtin_tables("market_data")
QUOTE = _TABLES["QUOTE"]
TRADE = _TABLES["TRADE"]
EXCHANGE_WIDTH = QUOTE.key.segments[0].width  # 6
SYMBOL_WIDTH = QUOTE.key.segments[1].width  # 5
