"""Public datasets in the shapes real files come in land from the original file, with no
pre-processing, and read back exactly (tests/data/shapes/README.md says where each is from):
float years and quarters as pandas writes them, one time from year + quarter, wide by month,
wide by entity (unpivoted, or kept wide with rows_per), multi-entity long, times before 1970.

Expected values are computed here from the files with the csv and json modules (never from
the keys); every run must land every record (``--max_bad_records=0``)."""

from __future__ import annotations

import calendar
import csv
import datetime as dt
import json
from decimal import Decimal

import pytest

from btts_cli import main as cli
from tests.support import REPO
from tests.support.jobs import run_job

SHAPES = REPO / "tests" / "data" / "shapes"
MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
WINDOW = ("--start", "1700-01-01", "--end", "2100-01-01")


def _ms(year: int, month: int = 1, day: int = 1) -> int:
    return calendar.timegm((year, month, day, 0, 0, 0)) * 1000


def _land(target, tmp_path, schema: str, data: str):
    report = run_job(
        "generic",
        target,
        SHAPES / data,
        tmp_path / "dead" / schema,
        [f"--schema={SHAPES / schema}.yaml", "--max_bad_records=0"],
    )
    assert report.counters.get("dead_letters", 0) == 0
    return report


def _query(capsys, target, schema: str, *argv: str) -> list[dict]:
    capsys.readouterr()
    args = ["query", "--schema", str(SHAPES / f"{schema}.yaml"), *argv, *WINDOW]
    assert cli.main([*args, "--format", "json", "--instance", target.instance]) == 0
    return json.loads(capsys.readouterr().out, parse_float=Decimal)


def _csv(name: str) -> list[dict]:
    with open(SHAPES / name, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _values(records: list[dict], *fields: str) -> dict[int, tuple]:
    return {r["ts_ms"]: tuple(Decimal(r[f]) for f in fields) for r in records}


def test_float_years_in_json_lines_land_from_1700(target, tmp_path, capsys):
    _land(target, tmp_path, "sunspots", "sunspots.jsonl")
    with open(SHAPES / "sunspots.jsonl", encoding="utf-8") as f:
        lines = [json.loads(line, parse_float=Decimal) for line in f]
    expected = {_ms(int(r["YEAR"])): (r["SUNACTIVITY"],) for r in lines}
    got = _values(_query(capsys, target, "sunspots", "years"), "SUNACTIVITY")
    assert got == expected and len(got) == 309 and min(got) == _ms(1700)


@pytest.mark.parametrize("data", ["macrodata.csv", "macrodata.parquet"])
def test_year_and_quarter_as_floats_make_one_time(target, tmp_path, capsys, data):
    """`1959.0`, `2.0` → 1959-04-01, from CSV and Parquet alike; undeclared columns ignored."""
    _land(target, tmp_path, "macrodata", data)
    expected = {
        _ms(int(float(r["year"])), 3 * int(float(r["quarter"])) - 2): (
            Decimal(r["realgdp"]),
            Decimal(r["cpi"]),
            Decimal(r["unemp"]),
        )
        for r in _csv("macrodata.csv")
    }
    got = _values(_query(capsys, target, "macrodata", "quarters"), "realgdp", "cpi", "unemp")
    assert got == expected and len(got) == 203


def test_a_wide_file_by_month_lands_one_event_per_month(target, tmp_path, capsys):
    _land(target, tmp_path, "elnino", "elnino.csv")
    expected = {
        _ms(int(r["YEAR"]), month): (Decimal(r[name]),)
        for r in _csv("elnino.csv")
        for month, name in enumerate(MONTHS, start=1)
    }
    records = _query(capsys, target, "elnino", "months")
    assert _values(records, "sst") == expected and len(records) == 61 * 12
    assert [r["ts_ms"] for r in records] == sorted(expected)  # months in time order


def _prices_by_symbol() -> dict[str, dict[int, tuple]]:
    out: dict[str, dict[int, tuple]] = {}
    for r in _csv("stocks.csv"):
        day = dt.datetime.strptime(r["date"], "%b %d %Y")
        out.setdefault(r["symbol"], {})[_ms(day.year, day.month, day.day)] = (Decimal(r["price"]),)
    return out


@pytest.mark.parametrize(
    ("schema", "data"), [("stocks_wide", "stocks_wide.csv"), ("stocks", "stocks.csv")]
)
def test_wide_by_entity_and_long_land_the_same_prices(target, tmp_path, capsys, schema, data):
    """A column per ticker (an empty cell: no event) and a line per ticker and month read
    back the same, each ticker's query holding its ticker."""
    report = _land(target, tmp_path, schema, data)
    prices = _prices_by_symbol()
    assert sum(map(len, prices.values())) == 560
    assert report.counters["rows_SHAPES_STOCK"] == 560  # GOOG before its listing: no row
    for symbol, expected in prices.items():
        records = _query(capsys, target, schema, "prices", "--symbol", symbol)
        assert {r["symbol"] for r in records} == {symbol}
        assert _values(records, "price") == expected, symbol


def test_rows_per_reads_back_every_ticker_of_every_month(target, tmp_path, capsys):
    """The wide file kept wide (rows_per, the price a column): one ticker's query, and the
    `per:` query putting each month back together with every ticker (was: the last only)."""
    _land(target, tmp_path, "stocks_rows_per", "stocks_wide.csv")
    prices = _prices_by_symbol()
    for symbol, expected in prices.items():
        records = _query(capsys, target, "stocks_rows_per", "prices", "--symbol", symbol)
        assert _values(records, symbol) == expected, symbol
    months = _query(capsys, target, "stocks_rows_per", "all_prices")
    assert len(months) == 123
    assert months[-1]["key"].split() == [f"{s}#20100301" for s in sorted(prices)]  # --keys
    got = {(s, r["ts_ms"]): Decimal(r[s]) for r in months for s in prices if s in r}
    want = {(s, ms): v[0] for s, by_ms in prices.items() for ms, v in by_ms.items()}
    assert got == want and len(got) == 560


def test_multi_entity_long_before_1970(target, tmp_path, capsys):
    _land(target, tmp_path, "grunfeld", "grunfeld.csv")
    firms: dict[str, dict[int, tuple]] = {}
    for r in _csv("grunfeld.csv"):
        values = tuple(Decimal(r[f]) for f in ("invest", "value", "capital"))
        firms.setdefault(r["firm"], {})[_ms(int(r["year"]))] = values
    assert len(firms) == 11
    for firm, expected in firms.items():
        records = _query(capsys, target, "grunfeld", "firm_years", "--firm", firm)
        assert {r["firm"] for r in records} == {firm}
        assert _values(records, "invest", "value", "capital") == expected, firm


def test_empty_cells_of_listed_columns_are_counted_not_dead_lettered(target, tmp_path, capsys):
    schema = tmp_path / "wide.yaml"
    text = (SHAPES / "stocks_wide.yaml").read_text(encoding="utf-8")
    schema.write_text(
        text.replace('{match: "[A-Z]+", ', "{columns: [AAPL, AMZN, GOOG, IBM, MSFT], ")
    )
    report = run_job(
        "generic", target, SHAPES / "stocks_wide.csv", tmp_path / "dead",
        [f"--schema={schema}", "--max_bad_records=0"],
    )  # fmt: skip
    assert report.counters["empty_cells"] == 123 * 5 - 560
    assert report.counters["rows_SHAPES_STOCK"] == 560
    assert "empty cells               55   (unpivoted columns without a value" in (
        capsys.readouterr().out
    )
