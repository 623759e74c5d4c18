"""``btts serve`` budgets are checked before the work, and many tag values are one read.

On an empty instance a request that reached its reads gets a 400 naming the missing table, so
a 413 there proves the refusal came first. On landed data, a long ``literal_or`` (one
multi-range ``ReadRows``) answers exactly the points of the events."""

from __future__ import annotations

from decimal import Decimal

import pytest

from btts.tsdb import budget, multi_range, request
from tests.support import serving
from tests.support.serving import HOUR, T0, grafana_body, grafana_query
from transforms.scans.key_ranges import Scan

CPU = "CPU/CPU1_USR"
METRIC = f"server_metrics.metrics.{CPU}"
QUOTE = "market_data.bid"  # named by its schema: no data needed for it to be served


def filled(hosts: str = "*") -> dict:
    return grafana_query(
        METRIC,
        downsample="1m-avg-zero",
        filters=[{"type": "wildcard", "tagk": "hostname", "filter": hosts, "groupBy": True}],
    )


def test_key_ranges_count_literal_combinations():
    f = request.tag_filter
    assert (
        budget.key_ranges([f("a", "literal_or", "x|y|z", True), f("b", "literal_or", "p|q", 0)])
        == 6
    )
    assert budget.key_ranges([f("a", "literal_or", "x|y|z", True)]) == 3
    assert budget.key_ranges([f("a", "wildcard", "*", True)]) == 1
    assert budget.key_ranges([f("a", "literal_or", "x|x|y", True)]) == 2


def test_mergeable_scans_are_one_table_one_window_disjoint_ranges():
    a = Scan("T", ranges=((b"a", b"b"),), start_ms=1, end_ms=2)
    b = Scan("T", ranges=((b"c", b"d"),), start_ms=1, end_ms=2)
    assert multi_range.mergeable([a, b])
    assert not multi_range.mergeable([a, Scan("T", ranges=((b"a0", b"c"),), start_ms=1, end_ms=2)])
    assert not multi_range.mergeable([a, Scan("U", ranges=((b"c", b"d"),), start_ms=1, end_ms=2)])
    assert not multi_range.mergeable([a, Scan("T", ranges=((b"c", b"d"),), start_ms=1, end_ms=3)])
    assert not multi_range.mergeable([a, Scan("T", ranges=((b"0", b""),), start_ms=1, end_ms=2)])
    assert multi_range.mergeable([a, Scan("T", ranges=((b"c", b""),), start_ms=1, end_ms=2)])


@pytest.fixture(scope="module")
def empty(bigtable_emulator):
    srv = serving.Server(serving.new_target())
    yield srv
    srv.stop()


def quotes(symbols: str, **more) -> dict:
    return grafana_query(QUOTE, tags={"exchange": "NYSE", "symbol": symbols}, **more)


def test_filled_points_over_budget_are_refused_before_any_read(empty):
    # ten sub-queries of 99,000 filled one-minute buckets each: each alone fits --max_points
    start = T0 - 99_000 * 60_000
    # (each its own aggregator: OpenTSDB answers equal sub-queries once)
    aggs = ["avg", "sum", "min", "max", "count", "dev", "zimsum", "mimmin", "mimmax", "median"]
    qs = [quotes("*", downsample="1m-avg-zero", aggregator=a) for a in aggs]
    status, answer = empty.call("/api/query", grafana_body(qs, start, T0))
    assert status == 413, answer
    assert "series x buckets" in answer["error"]["message"]


def test_too_many_key_ranges_are_refused_before_any_read(empty):
    symbols = "|".join(f"S{i}" for i in range(999))
    qs = [quotes(symbols, aggregator=a) for a in ("avg", "sum", "max")]  # three distinct
    status, answer = empty.call("/api/query", grafana_body(qs, T0, T0 + HOUR))
    assert status == 413 and "key ranges" in answer["error"]["message"], answer


def test_within_budget_the_request_reaches_its_reads(empty):
    q = quotes("|".join(f"S{i}" for i in range(999)))
    status, answer = empty.call("/api/query", grafana_body([q], T0, T0 + HOUR))
    assert status == 400 and "does not exist" in answer["error"]["message"], answer


@pytest.fixture(scope="module")
def landed(bigtable_emulator, tmp_path_factory):
    data = serving.land(serving.new_target(), tmp_path_factory.mktemp("budget"))
    srv = serving.Server(data.target)
    yield data, srv
    srv.stop()


def test_a_long_literal_list_is_the_points_of_its_hosts(landed):
    data, srv = landed
    # OpenTSDB's window includes its end (the point at T0 + HOUR)
    want = serving.points(data.metrics, None, "cpu/cpu1_usr", T0, T0 + HOUR + 1)
    hosts = "|".join([*sorted(want), *(f"absent{i}" for i in range(900))])
    q = grafana_query(METRIC, aggregator="none", tags={"hostname": hosts})
    status, answer = srv.call("/api/query", grafana_body([q], T0, T0 + HOUR))
    # OpenTSDB resolves every literal value first (tsd.query.skip_unresolved_tagvs: false)
    assert status == 400 and answer["error"]["message"] == "No such name for 'tagv': 'absent0'"
    q = grafana_query(METRIC, aggregator="none", tags={"hostname": "|".join(sorted(want))})
    status, answer = srv.call("/api/query", grafana_body([q], T0, T0 + HOUR))
    assert status == 200, answer
    got = {s["tags"]["hostname"]: s["dps"] for s in answer}
    assert set(got) == set(want)
    for host, pts in want.items():
        assert {int(t): Decimal(str(v)) for t, v in got[host].items()} == dict(pts)


def test_a_planned_series_count_over_budget_is_refused(landed):
    _, srv = landed
    start = T0 - 40_000 * 60_000  # 40,000 buckets x 3 hosts enumerated from the keys
    status, answer = srv.call("/api/query", grafana_body([filled()], start, T0))
    assert status == 413 and "series x buckets" in answer["error"]["message"], answer
