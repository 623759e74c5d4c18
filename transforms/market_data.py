"""Financial market data (SPEC §5.1): one message → one QUOTE row and one TRADE row.

``{"exchange": "NASDAQ", "symbol": "ZXZZT", "bid": 600.55, "ask": 600.60, "bid_size": 500,
"ask_size": 1500, "last_sale": 600.58, "last_size": 300, "quote_time": "2015-03-16T19:53:32.156Z",
"trade_time": "2015-03-16T19:53:32.045Z", "volume": 89000}`` → QUOTE row
``NASDAQ#ZXZZT#1426535612156`` (bid, ask, sizes, quote time) and TRADE row
``NASDAQ#ZXZZT#1426535612045`` (last sale, last size, trade time, volume). Queries read one or the
other, so each row is keyed and timestamped by its own time. Values are the source's decimal text.
"""

from __future__ import annotations

from typing import NamedTuple

from transforms import events, keys, timefmt
from transforms.declarations.market_data import EXCHANGE_WIDTH, QUOTE, SYMBOL_WIDTH, TRADE
from transforms.errors import InvalidEvent
from transforms.mutations import Cell, RowMutation

FIELDS = (
    "exchange",
    "symbol",
    "bid",
    "ask",
    "bid_size",
    "ask_size",
    "last_sale",
    "last_size",
    "quote_time",
    "trade_time",
    "volume",
)
FAMILY = "MD"
TABLES = ("QUOTE", "TRADE")
_QUOTE_KEY = QUOTE.key.build
_TRADE_KEY = TRADE.key.build


class MarketEvent(NamedTuple):
    exchange: str
    symbol: str
    bid: str
    ask: str
    bid_size: str
    ask_size: str
    last_sale: str
    last_size: str
    quote_ms: int
    trade_ms: int
    volume: str


def _fixed_width_code(obj: dict, field: str, width: int) -> str:
    """Exchange and symbol are space-padded in the key: a longer code would break the fixed
    width, and a space inside or around one would make ``IBM`` and ``IBM `` the same key."""
    value = events.text_field(obj, field)
    if any(ch.isspace() for ch in value):
        raise InvalidEvent(f"field {field!r}: {value[:40]!r} contains whitespace")
    keys.check_segment(value, f"field {field!r}")
    if len(value) > width:
        raise InvalidEvent(f"field {field!r}: {value[:40]!r} is longer than {width} characters")
    return value


def _count(obj: dict, field: str) -> str:
    """A non-negative integer (a size or a volume), kept as its source text."""
    events.int_field(obj, field, minimum=0)
    return str(events.number_field(obj, field))


def parse(obj: dict) -> MarketEvent:
    events.check_fields(obj, FIELDS)
    return MarketEvent(
        exchange=_fixed_width_code(obj, "exchange", EXCHANGE_WIDTH),
        symbol=_fixed_width_code(obj, "symbol", SYMBOL_WIDTH),
        bid=str(events.number_field(obj, "bid")),
        ask=str(events.number_field(obj, "ask")),
        bid_size=_count(obj, "bid_size"),
        ask_size=_count(obj, "ask_size"),
        last_sale=str(events.number_field(obj, "last_sale")),
        last_size=_count(obj, "last_size"),
        quote_ms=timefmt.parse_event_time(obj["quote_time"], "quote_time"),
        trade_ms=timefmt.parse_event_time(obj["trade_time"], "trade_time"),
        volume=_count(obj, "volume"),
    )


def _cells(pairs: tuple[tuple[bytes, str], ...], ts_ms: int) -> tuple[Cell, ...]:
    ts_us = timefmt.micros(ts_ms)
    return tuple(Cell(FAMILY, q, v.encode("utf-8"), ts_us) for q, v in pairs)


def rows(event: MarketEvent) -> list[RowMutation]:
    values = {
        "exchange": event.exchange,
        "symbol": event.symbol,
        "quote_time": event.quote_ms,
        "trade_time": event.trade_ms,
    }
    quote = (
        (b"SYMBOL", event.symbol),
        (b"BID", event.bid),
        (b"ASK", event.ask),
        (b"BIDSIZE", event.bid_size),
        (b"ASKSIZE", event.ask_size),
        (b"QUOTETIME", keys.epoch_ms(event.quote_ms)),
        (b"EXCHANGE", event.exchange),
    )
    trade = (
        (b"SYMBOL", event.symbol),
        (b"LASTSALE", event.last_sale),
        (b"LASTSIZE", event.last_size),
        (b"TRADETIME", keys.epoch_ms(event.trade_ms)),
        (b"EXCHANGE", event.exchange),
        (b"VOLUME", event.volume),
    )
    return [
        RowMutation("QUOTE", _QUOTE_KEY(values), _cells(quote, event.quote_ms)),
        RowMutation("TRADE", _TRADE_KEY(values), _cells(trade, event.trade_ms)),
    ]


def build(record: dict) -> list[RowMutation]:
    """The pipeline's builder: record → a QUOTE row and a TRADE row, or :class:`InvalidEvent`.
    CSV records have the same flat columns, so no adapter is needed."""
    return rows(parse(record))
