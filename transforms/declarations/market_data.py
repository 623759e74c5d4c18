"""Financial market data tables (SPEC §5.1).

Queries read quotes or trades, never both, for one exchange + symbol over a time range; so each
source message is split into a QUOTE row and a TRADE row, each keyed by its own time.
"""

from __future__ import annotations

from transforms.schema import Family, declare, epoch_ms, space_padded

EXCHANGE_WIDTH = 6
SYMBOL_WIDTH = 5

_MD = Family("MD", max_versions=1, doc="one event per row; a re-run rewrites the same cells")

QUOTE = declare(
    "QUOTE",
    key=[
        space_padded("exchange", EXCHANGE_WIDTH),
        space_padded("symbol", SYMBOL_WIDTH),
        epoch_ms("quote_time"),
    ],
    families=[_MD],
    pattern="TS-COLS",
    doc="Quotes of one exchange + symbol between two times: the range "
    "EXCHANGE#SYMBOL#start..EXCHANGE#SYMBOL#end (fixed-width segments keep symbols apart).",
    spec="5.1",
)

TRADE = declare(
    "TRADE",
    key=[
        space_padded("exchange", EXCHANGE_WIDTH),
        space_padded("symbol", SYMBOL_WIDTH),
        epoch_ms("trade_time"),
    ],
    families=[_MD],
    pattern="TS-COLS",
    doc="Trades of one exchange + symbol between two times: the range "
    "EXCHANGE#SYMBOL#start..EXCHANGE#SYMBOL#end.",
    spec="5.1",
)
