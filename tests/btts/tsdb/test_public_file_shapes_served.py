"""`btts serve` answers the landed shapes exactly: the wide price file unpivoted (one event per
ticker) and kept wide with rows_per give each ticker's prices, as the long file says."""

from __future__ import annotations

import calendar
import csv
import datetime as dt
from decimal import Decimal

import pytest

from tests.support import REPO
from tests.support.jobs import run_job
from tests.support.serving import Server, grafana_body, grafana_query

SHAPES = REPO / "tests" / "data" / "shapes"


def _prices() -> dict[str, dict[str, Decimal]]:
    out: dict[str, dict[str, Decimal]] = {}
    with open(SHAPES / "stocks.csv", newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            day = dt.datetime.strptime(r["date"], "%b %d %Y")
            ms = calendar.timegm(day.timetuple()) * 1000
            out.setdefault(r["symbol"], {})[str(ms)] = Decimal(r["price"])
    return out


@pytest.mark.parametrize(
    ("schema", "metric"),
    [("stocks_wide", "stocks_wide.price"), ("stocks_rows_per", "stocks_rows_per.GOOG")],
)
def test_serve_answers_each_ticker_as_the_long_file_says(target, tmp_path, schema, metric):
    yaml = SHAPES / f"{schema}.yaml"
    run_job("generic", target, SHAPES / "stocks_wide.csv", tmp_path / "dead",
            [f"--schema={yaml}", "--max_bad_records=0"])  # fmt: skip
    server = Server(target, "--schema", str(yaml))
    try:
        status, listed = server.call("/api/suggest?type=metrics&max=100")
        assert status == 200 and metric in listed, listed
        prices = _prices()
        start, end = 946684800000, 1293840000000  # 2000 .. 2011
        for symbol in sorted(prices):
            if "rows_per" in schema:  # each listed field is its own metric
                query = grafana_query(f"{schema}.{symbol}", "none")
            else:
                query = grafana_query(metric, "none", tags={"symbol": symbol})
            status, answer = server.call("/api/query", grafana_body([query], start, end))
            assert status == 200, answer
            (series,) = answer
            got = {ms: Decimal(str(v)) for ms, v in series["dps"].items()}
            assert got == prices[symbol], symbol
    finally:
        server.stop()
