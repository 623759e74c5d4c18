"""``btts query`` output beyond the table: ``--format csv`` and ``--plot FILE.png|FILE.svg`` on
every query form (built-in, declared, ``--schema --table``), the series read back from the
drawn figure; the schema-file forms' help and decoded ``--field`` reads."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from decimal import Decimal
from zoneinfo import ZoneInfo

import matplotlib.dates as mdates
import pytest

from btts.query import plot, render
from btts.samples import data
from btts_cli import main as cli
from tests.support import REPO
from tests.support.jobs import run_job, write_lines

TICKS = REPO / "docs" / "schemas" / "ts-cols-stock-ticks.yaml"
IOT = REPO / "docs" / "schemas" / "tb-cell-iot-temperatures.yaml"
TICK_LINES = [
    '{"symbol": "GOOG", "ts": "2024-05-01T10:00:00Z", "price": 170.10, "size": 5}',
    '{"symbol": "GOOG", "ts": "2024-05-01T10:00:01.500Z", "price": 170.25, "size": 7}',
    '{"symbol": "GOOG", "ts": "2024-05-01T10:30:00Z", "price": 171.00, "size": 1}',
    '{"symbol": "GOOGL", "ts": "2024-05-01T10:00:02Z", "price": 1.50, "size": 2}',
]
WINDOW = ["--start", "2024-05-01T10:00:00Z", "--end", "2024-05-01T11:00:00Z"]


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    done = capsys.readouterr()
    return code, done.out, done.err


@pytest.fixture
def drawn(monkeypatch) -> list:
    """Every Figure ``--plot`` draws (the real one, saved as usual)."""
    figures: list = []
    real = plot.figure

    def spy(*args, **kwargs):
        figures.append(real(*args, **kwargs))
        return figures[-1]

    monkeypatch.setattr(plot, "figure", spy)
    return figures


def _lines(figure) -> dict[str, list[tuple[int, float]]]:
    """label → [(epoch ms, value)] of every line of the figure's axes."""
    (axes,) = figure.axes
    out = {}
    for line in axes.get_lines():
        xs = [mdates.num2date(x) if isinstance(x, float) else x for x in line.get_xdata()]
        ms = [round(x.timestamp() * 1000) for x in xs]
        out[line.get_label()] = list(zip(ms, map(float, line.get_ydata()), strict=True))
    return out


def _expected(records: list[dict], entity: tuple[str, ...]) -> dict[str, list[tuple[int, float]]]:
    """The series the records make, computed here: one per entity and numeric field."""
    out: dict[str, list] = {}
    for r in records:
        who = ", ".join(f"{f}={r[f]}" for f in entity)
        for name, value in r.items():
            if name in ("key", "ts_ms", "time", *entity) or isinstance(value, bool):
                continue
            items = value.items() if isinstance(value, dict) else [(None, value)]
            for k, v in items:
                label = f"{name}.{k}" if k is not None else name
                out.setdefault(f"{label} ({who})", []).append((r["ts_ms"], float(Decimal(v))))
    return out


@pytest.fixture
def ticks(target, tmp_path, capsys) -> list[str]:
    """TICK_LINES landed by the generic job; the flags that reach the emulator."""
    where = ["--project", target.project, "--instance", target.instance]
    source = write_lines(tmp_path / "ticks.jsonl", TICK_LINES)
    assert cli.main(["tables", "create", "--schema", str(TICKS), *where]) == 0
    argv = ["ingest", "--schema", str(TICKS), f"--input={source}"]
    assert cli.main([*argv, f"--dead_letter={tmp_path / 'dead'}", *where]) == 0
    capsys.readouterr()
    return where


# -- pure: CSV and series ------------------------------------------------------------------------


def test_csv_keeps_decimals_exact_and_spreads_dict_fields():
    records = [
        {"host": "a", "ts_ms": 0, "m": {"X": Decimal("1.10")}, "ok": True, "key": "a#0"},
        {"host": "b,c", "ts_ms": 1000, "m": {"Y": 2}, "ok": None, "key": "b#1"},
    ]
    rows = list(csv.reader(io.StringIO(render.to_csv(records))))
    assert rows == [
        ["host", "ts_ms", "time", "m.X", "m.Y", "ok", "key"],
        ["a", "0", "1970-01-01T00:00:00.000Z", "1.10", "", "true", "a#0"],
        ["b,c", "1000", "1970-01-01T00:00:01.000Z", "", "2", "", "b#1"],
    ]
    assert render.to_csv([]) == "\n"


def test_series_are_one_per_entity_and_numeric_field():
    records = [
        {"sym": "A", "ts_ms": 2, "price": Decimal("1.5"), "up": True, "key": "k"},
        {"sym": "B", "ts_ms": 1, "price": Decimal("7"), "up": False, "key": "k"},
        {"sym": "A", "ts_ms": 1, "price": Decimal("1.0"), "up": True, "key": "k"},
    ]
    got = {s.label: (s.x, s.y) for s in plot.series(records, ("sym",))}
    assert got == {"price (sym=A)": ((1, 2), (1.0, 1.5)), "price (sym=B)": ((1,), (7.0,))}
    with pytest.raises(plot.NothingToPlot, match="no records"):
        plot.series([])
    with pytest.raises(plot.NothingToPlot, match="no numeric field"):
        plot.series([{"sym": "A", "ts_ms": 1, "up": True}], ("sym",))


def test_the_time_axis_is_in_the_zone_asked_for():
    lines = plot.series([{"ts_ms": 0, "v": 1}, {"ts_ms": 3_600_000, "v": 2}])
    paris = ZoneInfo("Europe/Paris")
    figure = plot.figure(lines, paris)
    (axes,) = figure.axes
    assert axes.get_xlabel() == "time (Europe/Paris)" and axes.get_ylabel() == "v"
    (line,) = axes.get_lines()
    first = line.get_xdata()[0]
    assert first == dt.datetime(1970, 1, 1, 1, 0, tzinfo=paris)
    assert _lines(figure) == {"v": [(0, 1.0), (3_600_000, 2.0)]}


def test_wide_rows_are_drawn_against_their_qualifiers_one_line_per_row():
    readings = {f"{h:02d}00": Decimal(h) for h in range(12)}
    (line,) = plot.series([{"meter": 7, "date": "20170725", "ts_ms": 5, "reading": readings}])
    assert line.x == tuple(readings) and line.y == tuple(float(v) for v in readings.values())
    other = {k: v + 1 for k, v in readings.items()}
    rows = [{"meter": m, "ts_ms": 5, "reading": r} for m, r in ((7, readings), (8, other))]
    lines = plot.series(rows, ("meter",))
    assert [(s.label, s.y[0]) for s in lines] == [
        ("reading (meter=7)", 0.0),
        ("reading (meter=8)", 1.0),
    ]


def test_a_text_column_names_a_series_when_the_key_cannot():
    from btts.query import engine
    from btts.query import records as query_records
    from transforms import schema as schema_lib

    battery = schema_lib.builtin("battery")
    # salt + time key, user a column
    assert query_records.entity_fields(battery, "BATTERY_SALTED") == ("user",)
    assert query_records.entity_fields(battery, "BATTERY") == ("user",)
    query = engine.builtin_query("market_data", "quotes", {"exchange": "X", "symbol": "Y"}, 0, 1)
    assert query.entity == ("exchange", "symbol")


# -- the CLI: every query form ------------------------------------------------------------------


def test_a_declared_query_plots_its_records(ticks, tmp_path, capsys, drawn):
    argv = ["query", "--schema", str(TICKS), "ticks", "--symbol", "GOOG", *WINDOW, *ticks]
    code, out, _ = _cli(capsys, *argv, "--format", "json")
    assert code == 0
    records = json.loads(out)
    assert len(records) == 3
    png = tmp_path / "ticks.png"
    code, out, _ = _cli(capsys, *argv, "--plot", str(png), "--timezone", "America/New_York")
    assert code == 0 and f"plotted 2 series to {png}" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (figure,) = drawn
    assert _lines(figure) == _expected(records, ("symbol",))
    assert figure.axes[0].get_xlabel() == "time (America/New_York)"


def test_a_table_read_decodes_records_and_plots_them(ticks, tmp_path, capsys, drawn):
    argv = ["query", "--schema", str(TICKS), "--field", "symbol=GOOG", *WINDOW, *ticks]
    code, out, _ = _cli(capsys, *argv, "--format", "json")
    assert code == 0
    records = json.loads(out)  # decoded like the declared query's, not key/cells
    assert [(r["symbol"], r["ts_ms"], r["price"], r["size"]) for r in records] == [
        ("GOOG", 1714557600000, "170.10", 5),
        ("GOOG", 1714557601500, "170.25", 7),
        ("GOOG", 1714559400000, "171.00", 1),
    ]
    code, out, _ = _cli(capsys, *argv, "--format", "table")
    assert code == 0 and "170.25" in out and "3 record(s)" in out and "t:price" not in out
    svg = tmp_path / "ticks.svg"
    code, _, err = _cli(capsys, *argv, "--format", "csv", "--plot", str(svg))
    assert code == 0 and svg.read_text().lstrip().startswith("<?xml")
    assert f"plotted 2 series to {svg}" in err  # stdout stays CSV only
    (figure,) = drawn
    assert _lines(figure) == _expected(records, ("symbol",))
    code, out, _ = _cli(capsys, *argv, "--raw", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {(r["qualifier"], r["value"]) for r in rows} >= {("price", "170.10"), ("size", "5")}
    code, _, err = _cli(capsys, *argv, "--raw", "--plot", str(svg))
    assert code == 2 and "drop --raw" in err


def test_a_declared_query_prints_csv(ticks, capsys):
    argv = ["query", "--schema", str(TICKS), "ticks", "--symbol", "GOOG", *WINDOW, *ticks]
    code, out, _ = _cli(capsys, *argv, "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["time"], r["price"], r["size"]) for r in rows] == [
        ("2024-05-01T10:00:00.000Z", "170.10", "5"),
        ("2024-05-01T10:00:01.500Z", "170.25", "7"),
        ("2024-05-01T10:30:00.000Z", "171.00", "1"),
    ]


def test_nothing_to_plot_says_so_and_writes_no_file(ticks, tmp_path, capsys):
    png = tmp_path / "none.png"
    argv = ["query", "--schema", str(TICKS), "ticks", "--symbol", "NONE", *WINDOW, *ticks]
    code, out, err = _cli(capsys, *argv, "--plot", str(png))
    assert code == 1 and "(no rows)" in out
    assert err.strip() == f"btts: nothing to plot: the query returned no records; {png} not written"
    assert not png.exists()
    with pytest.raises(SystemExit) as usage:  # argparse's usage error, before any read
        cli.main([*argv, "--plot", str(tmp_path / "x.jpg")])
    assert usage.value.code == 2 and "must end in .png or .svg" in capsys.readouterr().err


def test_a_builtin_query_plots_one_line_per_metric(target, tmp_path, capsys, drawn):
    events = list(data.metric_records(2, 40))
    source = tmp_path / "metrics.jsonl"
    data.write_jsonl(source, events)
    run_job("server_metrics", target, source, tmp_path / "dead")
    host = events[0]["hostname"]
    where = ["--project", target.project, "--instance", target.instance]
    start, end = data.METRICS_START_MS, data.METRICS_START_MS + 3_600_000
    argv = ["query", "metrics", "--host", host, "--start", str(start), "--end", str(end), *where]
    capsys.readouterr()
    code, out, _ = _cli(capsys, *argv, "--format", "json")
    records = json.loads(out)
    assert code == 0 and records
    png = tmp_path / "m.png"
    code, out, _ = _cli(capsys, *argv, "--plot", str(png))
    assert code == 0 and png.stat().st_size > 0
    (figure,) = drawn
    want = _expected(records, ("hostname",))
    assert _lines(figure) == want and len(want) == len(data.METRIC_NAMES)
    code, out, _ = _cli(capsys, *argv, "--format", "csv")
    header = next(csv.reader(io.StringIO(out)))
    assert header[:3] == ["hostname", "ts_ms", "time"]
    assert {f"metrics.{m.upper()}" for m in data.METRIC_NAMES} <= set(header)


# -- help of the schema-file forms --------------------------------------------------------------


def test_schema_help_lists_the_declared_queries_with_their_flags(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["query", "--schema", str(TICKS), "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "Queries stock_ticks declares" in out
    assert "ticks --symbol SYMBOL" in out and "one symbol's ticks between two times" in out
    assert "--plot" in out and "csv" in out
    with pytest.raises(SystemExit):
        cli.main(["query", "--schema", str(TICKS), "ticks", "--help"])
    out = capsys.readouterr().out
    assert "positional arguments" not in out and "--symbol SYMBOL" in out
    assert out.startswith("usage: btts query --schema FILE ticks ")
