"""Market data (docs/patterns.md §5.1): the pure QUOTE/TRADE split, and the job on the emulator."""

from __future__ import annotations

import json

import pytest

from btts import admin
from btts.query import engine
from tests.support.jobs import compiled, dump, read_dead_letters, run_job, write_lines
from transforms.errors import InvalidEvent
from transforms.mutations import Cell, RowMutation
from transforms.text import events

QUOTE_MS = 1426535612156
TRADE_MS = 1426535612045
LINE = (
    '{"exchange": "NASDAQ", "symbol": "ZXZZT", "bid": 600.55, "ask": 600.60, "bid_size": 500, '
    '"ask_size": 1500, "last_sale": 600.58, "last_size": 300, '
    '"quote_time": "2015-03-16T19:53:32.156Z", "trade_time": "2015-03-16T19:53:32.045Z", '
    '"volume": 89000}'
)


def record(**changes) -> dict:
    rec = events.parse_json_object(LINE)
    for name, value in changes.items():
        if value is None:
            del rec[name]
        else:
            rec[name] = value
    return rec


def line(**changes) -> str:
    """LINE with fields replaced by JSON literals (``None`` removes a field)."""
    obj = json.loads(LINE, parse_float=str, parse_int=str)
    parts = []
    for name, value in obj.items():
        if name in changes:
            if changes[name] is None:
                continue
            value = changes[name]
        elif name in ("exchange", "symbol", "quote_time", "trade_time"):
            value = json.dumps(value)
        parts.append(f'"{name}": {value}')
    parts += [f'"{k}": {v}' for k, v in changes.items() if k not in obj and v is not None]
    return "{" + ", ".join(parts) + "}"


def expected_dump(rows: list[RowMutation], table: str) -> list[tuple]:
    return sorted(
        (r.key, c.family, c.qualifier, c.value, c.timestamp_us)
        for r in rows
        if r.table == table
        for c in r.cells
    )


# -- pure -------------------------------------------------------------------------------------


def test_one_message_splits_into_a_quote_row_and_a_trade_row():
    q, t = QUOTE_MS * 1000, TRADE_MS * 1000
    assert compiled("market_data")(record()) == [
        RowMutation(
            "QUOTE",
            b"NASDAQ#ZXZZT#1426535612156",
            (
                Cell("MD", b"SYMBOL", b"ZXZZT", q),
                Cell("MD", b"BID", b"600.55", q),
                Cell("MD", b"ASK", b"600.60", q),
                Cell("MD", b"BIDSIZE", b"500", q),
                Cell("MD", b"ASKSIZE", b"1500", q),
                Cell("MD", b"QUOTETIME", b"1426535612156", q),
                Cell("MD", b"EXCHANGE", b"NASDAQ", q),
            ),
        ),
        RowMutation(
            "TRADE",
            b"NASDAQ#ZXZZT#1426535612045",
            (
                Cell("MD", b"SYMBOL", b"ZXZZT", t),
                Cell("MD", b"LASTSALE", b"600.58", t),
                Cell("MD", b"LASTSIZE", b"300", t),
                Cell("MD", b"TRADETIME", b"1426535612045", t),
                Cell("MD", b"EXCHANGE", b"NASDAQ", t),
                Cell("MD", b"VOLUME", b"89000", t),
            ),
        ),
    ]


def test_short_codes_are_space_padded_in_the_key_only():
    quote, trade = compiled("market_data")(record(exchange="NYSE", symbol="IBM"))
    assert quote.key == b"NYSE  #IBM  #1426535612156"
    assert trade.key == b"NYSE  #IBM  #1426535612045"
    cells = {c.qualifier: c.value for c in quote.cells}
    assert cells[b"EXCHANGE"] == b"NYSE" and cells[b"SYMBOL"] == b"IBM"


def test_epoch_millisecond_times_and_decimal_text_are_kept():
    rec = events.parse_json_object(
        line(quote_time="1426535612156", trade_time="1426535612045", bid="7.00", ask="7.10")
    )
    quote, trade = compiled("market_data")(rec)
    assert (quote.key, trade.key) == (b"NASDAQ#ZXZZT#1426535612156", b"NASDAQ#ZXZZT#1426535612045")
    assert {c.qualifier: c.value for c in quote.cells}[b"BID"] == b"7.00"


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"volume": None}, "missing field(s): volume"),
        (
            {"venue": "X"},
            (
                "unexpected field(s): venue (declared: ask, ask_size, bid, bid_size, exchange, "
                "last_sale, last_size, quote_time, …; "
                "event.extra_fields: ignore drops the others)"
            ),
        ),
        ({"exchange": "NASDAQX"}, "field 'exchange': 'NASDAQX' is longer than 6 characters"),
        ({"symbol": "ZXZZTT"}, "field 'symbol': 'ZXZZTT' is longer than 5 characters"),
        ({"symbol": "ZX#ZT"}, "field 'symbol': contains the key delimiter '#'"),
        ({"symbol": "IBM "}, "field 'symbol': 'IBM ' contains whitespace"),
        ({"exchange": ""}, "field 'exchange': empty"),
        ({"exchange": events.Num("123")}, "field 'exchange': expected a string, got number"),
        ({"bid": "600.55"}, "field 'bid': expected a number, got string"),
        (
            {"bid_size": events.Num("1.5")},
            "field 'bid_size': expected an integer, got number '1.5'",
        ),
        ({"volume": events.Num("-1")}, "field 'volume': -1 is below its minimum 0"),
        (
            {"quote_time": "2015-03-16T19:53:32.156"},
            "field 'quote_time': time '2015-03-16T19:53:32.156' has no UTC offset (add 'Z')",
        ),
        ({"trade_time": "yesterday"}, "field 'trade_time': not an RFC 3339 time: 'yesterday'"),
    ],
)
def test_bad_records_are_refused_with_the_reason(changes, reason):
    with pytest.raises(InvalidEvent) as err:
        compiled("market_data")(record(**changes))
    assert str(err.value) == reason


# -- the job on the emulator -----------------------------------------------------------------

BAD_LINES = {
    line(exchange='"NASDAQ1"'): "field 'exchange': 'NASDAQ1' is longer than 6 characters",
    line(symbol='"AB#C"'): "field 'symbol': contains the key delimiter '#'",
    line(ask='"600.60"'): "field 'ask': expected a number, got string",
    line(last_size=None): "missing field(s): last_size",
    line(quote_time='"2015-03-16"'): "field 'quote_time': time '2015-03-16' has no UTC offset "
    "(add 'Z')",
    "{not json": "invalid JSON: Expecting property name enclosed in double quotes at column 2",
}


def test_job_lands_good_lines_and_dead_letters_bad_ones(target, tmp_path):
    good = [LINE, line(exchange='"NYSE"', symbol='"IBM"', volume="1000")]
    lines = [good[0], *BAD_LINES, good[1]]
    dead = tmp_path / "dead" / "md"
    result = run_job("market_data", target, write_lines(tmp_path / "in.jsonl", lines), dead)

    letters = read_dead_letters(dead)
    assert {d["raw"]: d["reason"] for d in letters} == BAD_LINES
    assert all(d["pipeline"] == "market_data" for d in letters)
    counts = result.counters
    assert counts["lines_read"] == len(lines) == counts["events_valid"] + counts["dead_letters"]
    assert (counts["events_valid"], counts["dead_letters"]) == (2, len(BAD_LINES))
    assert (counts["rows_QUOTE"], counts["cells_QUOTE"]) == (2, 14)
    assert (counts["rows_TRADE"], counts["cells_TRADE"]) == (2, 12)
    assert [r.key for r in engine.read_rows(target, "QUOTE")] == [
        b"NASDAQ#ZXZZT#1426535612156",
        b"NYSE  #IBM  #1426535612156",
    ]
    # One exchange + symbol over a time range is one contiguous scan.
    scan = engine.read_rows(
        target, "TRADE", b"NYSE  #IBM  #1426535612000", b"NYSE  #IBM  #1426535613"
    )
    assert [r.key for r in scan] == [b"NYSE  #IBM  #1426535612045"]
    families = admin.Admin(target).get_families("TRADE")
    assert list(families) == ["MD"]
    assert families["MD"].gc_rule.max_num_versions == 1


def test_csv_input_lands_the_same_cells_and_reruns_are_idempotent(target, tmp_path):
    header = (
        "symbol,exchange,bid,ask,bid_size,ask_size,last_sale,last_size,quote_time,trade_time,volume"
    )
    csv_lines = [
        header,
        "ZXZZT,NASDAQ,600.55,600.60,500,1500,600.58,300,"
        "2015-03-16T19:53:32.156Z,2015-03-16T19:53:32.045Z,89000",
        "IBM,NYSE,120.10,120.20,100,200,120.15,50,1426535612156,1426535612045,1000",
        "IBM,NYSE,120.10,,100,200,120.15,50,1426535612156,1426535612045,1000",
    ]
    source = write_lines(tmp_path / "ticks.csv", csv_lines)
    result = run_job("market_data", target, source, tmp_path / "dead1")
    assert [d["reason"] for d in read_dead_letters(tmp_path / "dead1")] == ["missing field(s): ask"]
    assert (result.counters["lines_read"], result.counters["events_valid"]) == (3, 2)

    want = compiled("market_data")(record()) + compiled("market_data")(
        record(
            exchange="NYSE",
            symbol="IBM",
            bid=events.Num("120.10"),
            ask=events.Num("120.20"),
            bid_size=events.Num("100"),
            ask_size=events.Num("200"),
            last_sale=events.Num("120.15"),
            last_size=events.Num("50"),
            volume=events.Num("1000"),
        )
    )
    first = {t: dump(target, t) for t in ("QUOTE", "TRADE")}
    assert sorted(first["QUOTE"]) == expected_dump(want, "QUOTE")
    assert sorted(first["TRADE"]) == expected_dump(want, "TRADE")

    run_job("market_data", target, source, tmp_path / "dead2")
    assert {t: dump(target, t) for t in ("QUOTE", "TRADE")} == first
