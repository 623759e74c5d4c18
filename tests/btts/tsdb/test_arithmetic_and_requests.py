"""btts serve's pure parts: OpenTSDB's arithmetic (btts.tsdb.series), request parsing
(btts.tsdb.request) and the names the built-in schemas give (btts.tsdb.catalog)."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from btts.tsdb import catalog, mquery, request, series
from btts.tsdb.errors import BadRequest
from btts_cli import serve_command
from tests.support import REPO

DASHBOARDS = REPO / "docs" / "dashboards.md"

D = Decimal


def test_exact_decimals_stay_exact_through_sum_min_max_and_avg():
    values = [D("0.1"), D("0.2"), D("0.6")]
    assert series.run_aggregator("sum", values) == D("0.9")  # 0.1 + 0.2 in float is not 0.3
    assert series.run_aggregator("avg", values) == D("0.3")
    assert series.render_number(series.run_aggregator("sum", [D("600.55"), D("0.05")])) == "600.60"
    assert series.render_number(D("5.00")) == "5"
    # NaN as OpenTSDB's Jackson writes it: a JSON string, never a bare NaN
    assert series.render_number(float("nan")) == '"NaN"' and series.render_number(None) == "null"
    assert series.render_number(float("nan"), "null") == "null"


def test_dev_is_the_population_deviation_and_percentiles_follow_commons_math():
    assert series.run_aggregator("dev", [2, 4, 4, 4, 5, 5, 7, 9]) == 2.0
    values = list(range(1, 11))  # p50 of 1..10: position 5.5 → 5.5
    assert series.run_aggregator("p50", values) == 5.5
    assert series.run_aggregator("p90", values) == 9.9
    assert series.run_aggregator("p999", values) == 10
    assert series.run_aggregator("count", [1, None, float("nan"), 2]) == 2


@pytest.mark.parametrize(
    "fill,value", [("none", "absent"), ("zero", 0), ("null", None), ("nan", "nan")]
)
def test_downsample_fills_empty_buckets(fill, value):
    points = [(0, D(1)), (5, D(3)), (25, D(5))]
    out = dict(series.downsample(points, series.Downsample(10, "avg", fill), series.Window(0, 30)))
    assert out[0] == 2 and out[20] == 5
    if value == "absent":
        assert 10 not in out
    elif value in ("nan", None):  # both are NaN inside; only the writing differs
        assert math.isnan(out[10])
    else:
        assert out[10] == value


def test_rate_counter_wrap_reset_value_and_dropped_resets():
    pts = [(0, 10), (1000, 20), (2000, 5), (3000, 15)]
    assert series.rate_span(pts)[1:] == [(1000, 10.0), (2000, -15.0), (3000, 10.0)]
    first = series.rate_span(pts)[0]  # the rate from time zero: none for a point at 1970
    assert first[0] == 0 and math.isnan(first[1])
    assert series.rate_span([(2000, 10)]) == [(2000, 5.0)]
    assert series.rate_span(pts, series.Rate(counter=True, drop_resets=True))[1:] == [
        (1000, 10.0),
        (3000, 10.0),
    ]
    assert series.rate_span(pts, series.Rate(counter=True, counter_max=30))[1:] == [
        (1000, 10.0),
        (2000, 15.0),
        (3000, 10.0),
    ]
    assert series.rate_span(pts, series.Rate(counter=True, counter_max=30, reset_value=12))[1:] == [
        (1000, 10.0),
        (2000, 0.0),
        (3000, 10.0),
    ]


def test_aggregation_interpolates_inside_a_series_only():
    a = [(0, D(0)), (10, D(10))]
    b = [(5, D(100)), (20, D(200))]
    out = dict(series.aggregate([a, b], "sum"))
    # t=0: b has not started; t=5: a interpolated 5; t=10: b interpolated; t=20: a has ended
    assert out == {0: D(0), 5: D(105), 10: D(10) + D(100) + D(100) * 5 / 15, 20: D(200)}
    assert dict(series.aggregate([a, b], "zimsum")) == {
        0: 0,
        5: 100,
        10: 10,
        20: 200,
    }
    # rates are never interpolated: each series counts with its latest rate
    ra, rb = [(1000, 1.0), (3000, 2.0)], [(2000, 10.0), (4000, 20.0)]
    assert dict(series.aggregate([ra, rb], "sum", rates=True)) == {3000: 12.0, 4000: 20.0}


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.sampled_from([D(1), D("2.5"), 3, 4.5, math.nan, None])),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(["none", "first", "last"]),
)
def test_one_series_under_none_first_or_last_is_its_points(points, aggregator):
    """One series alone under an aggregator giving the value it gets takes a short path: the
    same points as the general loop gives (two copies of it, where each time takes the one
    series' value: the last of each time)."""
    points = sorted(points, key=lambda p: p[0])
    alone = series.aggregate([points], aggregator)
    looped = series.aggregate([points, points], aggregator)
    assert [(t, repr(v)) for t, v in alone] == [(t, repr(v)) for t, v in looped]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.sampled_from([D(1), D("2.5"), 3, 4.5, math.nan, None])),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(sorted(series.AGGREGATORS)),
    st.booleans(),
)
def test_one_series_under_any_aggregator_is_what_the_loop_gives(points, aggregator, doubles):
    """One series alone takes a short path under every aggregator: the same values and types
    at its times as the general loop gives it (beside a series of integers that only begins
    after it, which adds no value there and keeps the longs as they are)."""
    points = sorted(points, key=lambda p: p[0])
    alone = series.aggregate([points], aggregator, doubles=doubles)
    later = [(100, 7), (101, 8)]
    looped = series.aggregate([points, later], aggregator, doubles=doubles)
    looped = [(t, v) for t, v in looped if t < 100]
    assert [(t, repr(v)) for t, v in alone] == [(t, repr(v)) for t, v in looped]


def test_times_intervals_and_m_expressions():
    now = 1_700_000_000_000
    assert request.parse_time("1h-ago", now, "start") == now - 3_600_000
    assert request.parse_time(1_426_536_000, now, "start") == 1_426_536_000_000
    assert request.parse_time("1426536000000", now, "start") == 1_426_536_000_000
    assert request.parse_time("2015/03/16-20:00:00", now, "start") == 1_426_536_000_000
    assert request.parse_downsample("0all-sum") == request.Downsample(0, "sum", "none")
    assert request.parse_downsample("500ms-avg-zero").interval_ms == 500
    m = mquery.parse_m("sum:rate{counter,100,5}:10m-avg:a.b{host=x|y}{dc=regexp(^e)}")
    assert m["aggregator"] == "sum" and m["downsample"] == "10m-avg" and m["metric"] == "a.b"
    assert m["rateOptions"] == {
        "counter": True,
        "dropResets": False,
        "counterMax": 100,
        "resetValue": 5,
    }
    # Tags.parseWithMetricAndFilters: the filters' braces first, then the grouping tags
    assert m["filters"] == [
        {"type": "regexp", "tagk": "dc", "filter": "^e", "groupBy": False},
        {"type": "literal_or", "tagk": "host", "filter": "x|y", "groupBy": True},
    ]
    with pytest.raises(BadRequest):
        request.parse_interval("1 h")


def test_filters_match_like_opentsdb():
    def f(kind, text):
        return request.tag_filter("host", kind, text, True)

    assert f("literal_or", "a|b").match("b") and not f("literal_or", "a|b").match("c")
    assert f("iliteral_or", "Web01").match("web01")
    assert f("not_literal_or", "a").match("b") and not f("not_literal_or", "a").match("a")
    # OpenTSDB's wildcard is case-sensitive; iwildcard ignores case
    assert f("wildcard", "web*.com").match("web01.example.com")
    assert not f("wildcard", "web*.com").match("WEB01.example.com")
    assert f("iwildcard", "web*.com").match("WEB01.example.com")
    assert f("regexp", "^web0[12]").match("web02.x") and not f("regexp", "^web0[12]").match("web3")


def test_builtin_metrics_and_tags():
    entries = {("server_metrics", "METRIC", "metrics"): ["CPU/CPU1_USR"]}
    cat = catalog.Catalog(catalog.builtin_schemas(), entries)
    cpu = cat.get("server_metrics.metrics.CPU/CPU1_USR")
    assert [s.name for s in cpu.points] == ["METRIC"] and [s.name for s in cpu.rollups] == [
        "METRIC_HOURLY"
    ]
    assert cpu.tags == ["hostname"]
    battery = cat.get("battery.percentage")
    assert [s.name for s in battery.points][:2] == [
        "BATTERY",
        "BATTERY_SALTED",
    ] and battery.tags == ["user"]
    assert cat.get("weather_balloons.pressure").tags == ["location", "balloon_id"]
    assert cat.get("market_data.bid").tags == ["exchange", "symbol"]
    assert not cat.get("smart_meters.reading").points  # kept per row (short-wide) and hourly
    with pytest.raises(LookupError, match="No such name"):
        cat.get("server_metrics.nope")
    tenant_only = catalog.Catalog(catalog.builtin_schemas(), {}, tenant="acme")
    assert all(m.startswith("devices.") for m in tenant_only.metrics)


def test_the_readme_lists_the_builtin_metrics_btts_serve_list_prints():
    listed = serve_command.list_text(catalog.Catalog(catalog.builtin_schemas()))
    want = []
    for line in listed.splitlines():
        name, tags, tables = line.split("\t")
        want.append(
            f"| `{name}` | {tags.removeprefix('tags: ')} | {tables.removeprefix('tables: ')} |"
        )
    section = DASHBOARDS.read_text(encoding="utf-8")
    rows = [
        line
        for line in section.splitlines()
        if line.startswith("| `") and "." in line.split("`")[1]
    ]
    assert rows == want


def test_a_fill_makes_only_the_buckets_an_answer_can_show():
    # the read window is whole hours; a 1 ms fill over it would be 7.2 million buckets
    start, end = 1_426_536_000_000, 1_426_536_000_000 + 7_200_000
    pts = [(start + 3_600_050, D(1))]
    span = series.Window(start + 3_600_000 - 1, start + 3_600_100 + 1)
    out = series.downsample(
        pts, series.Downsample(1, "sum", "zero"), series.Window(start, end), span
    )
    assert len(out) == 106 and dict(out)[start + 3_600_050] == 1  # the span, one before, two after
    assert dict(out)[start + 3_600_049] == 0


def test_tags_and_filters_in_one_sub_query_the_later_wins():
    # TSSubQuery.setTags clears the filters and setFilters replaces them: Jackson calls them in
    # the body's order, so the key written last decides (a grouping tags map, or the filters)
    grouping = {"host": "*"}
    one = [{"type": "literal_or", "tagk": "host", "filter": "web01", "groupBy": False}]
    q = request.sub_query(0, {"metric": "m", "aggregator": "sum", "filters": one, "tags": grouping})
    assert [(f.type, f.filter, f.group_by) for f in q.filters] == [("iwildcard", "*", True)]
    q = request.sub_query(0, {"metric": "m", "aggregator": "sum", "tags": grouping, "filters": one})
    assert [(f.type, f.filter, f.group_by) for f in q.filters] == [("literal_or", "web01", False)]


def test_a_date_is_read_in_the_request_timezone():
    now = 1_800_000_000_000
    utc = request.parse_time("2023/12/31-19:00:30", now, "start")
    paris = request.parse_time("2023/12/31-19:00:30", now, "start", "Europe/Paris")
    assert utc - paris == 3_600_000
    body = {"start": "2023/12/31-19:00:30", "timezone": "Europe/Paris", "queries": [{}]}
    body["queries"] = [{"metric": "m", "aggregator": "sum"}]
    assert request.parse_body(body, now).start_ms == paris
    with pytest.raises(BadRequest, match="timezone"):
        request.parse_body({**body, "timezone": "Mars/Olympus"}, now)
    epoch = {**body, "start": 1_600_000_000, "timezone": "Mars/Olympus"}
    assert request.parse_body(epoch, now).start_ms == 1_600_000_000_000  # as OpenTSDB: unused
