"""Plots of the shapes real data has: distinct colours however many series, a label that
fits, a map of named measurements drawn over time, a wide row's months and quarters in
period order, and the fields the user chooses (``--plot_field``)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from btts.query import plot

MONTHS = ["Apr", "Aug", "Dec", "Feb", "Jan", "Jul", "Jun", "Mar", "May", "Nov", "Oct", "Sep"]


@given(st.integers(min_value=1, max_value=120))
def test_every_series_gets_its_own_colour_and_style(count):
    styles = plot.styles(count)
    assert len(styles) == count == len(set(styles))


def test_a_map_of_many_named_measurements_is_drawn_over_time():
    names = [f"M{i}" for i in range(12)]  # more entries than a table shows as columns
    records = [
        {"host": "h", "ts_ms": t, "metrics": {n: Decimal(i + t) for i, n in enumerate(names)}}
        for t in (1000, 2000, 3000)
    ]
    lines = plot.series(records, ["host"])
    assert len(lines) == 12 and lines[0].x == (1000, 2000, 3000)
    assert lines[0].label == "metrics.M0 (host=h)"


def test_a_wide_row_of_months_is_drawn_in_month_order_and_quarters_too():
    year = {"ts_ms": 0, "sst": {m: Decimal(i) for i, m in enumerate(MONTHS)}}
    (line,) = plot.series([year])
    assert line.x == ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                      "Nov", "Dec")  # fmt: skip
    quarters = {"ts_ms": 0, "gdp": {"Q3": 3, "Q1": 1, "Q4": 4, "Q2": 2}}
    (line,) = plot.series([quarters])
    assert line.x == ("Q1", "Q2", "Q3", "Q4") and line.y == (1.0, 2.0, 3.0, 4.0)


def test_the_chosen_fields_only():
    records = [{"dev": "d", "ts_ms": 1, "temp": Decimal(1), "rh": 2, "m": {"A": 1, "B": 2}}]
    assert [s.field for s in plot.series(records, ["dev"], ["temp"])] == ["temp"]
    assert [s.field for s in plot.series(records, ["dev"], ["m"])] == ["m.A", "m.B"]
    assert [s.field for s in plot.series(records, ["dev"], ["m.B", "rh"])] == ["rh", "m.B"]
    with pytest.raises(plot.NothingToPlot, match="no series of field"):
        plot.series(records, ["dev"], ["nope"])


def test_labels_fit_and_times_before_1970_are_drawn(tmp_path):
    fields = {f"a_rather_long_field_name_{i}": Decimal(i) for i in range(30)}
    records = [{"ts_ms": t, **fields} for t in (-8_520_336_000_000, 0, 1_000)]
    lines = plot.save(records, tmp_path / "p.svg")
    assert len(lines) == 30
    fig = plot.figure(lines)
    (ax,) = fig.axes
    assert ax.get_ylabel() == "30 fields (see the legend)"
    first = ax.get_lines()[0].get_xdata()[0]
    assert first.year == 1700 and first.tzinfo == dt.timezone.utc
