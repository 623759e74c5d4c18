"""``btts serve`` on the emulator over data landed by the real pipelines: the requests are the
ones Grafana's OpenTSDB data source sends (shapes from its datasource.ts), and every ``dps``
value is checked against values computed here from the generated events, never from keys."""

from __future__ import annotations

import itertools
import json
import math
import urllib.error
import urllib.request
from decimal import Decimal
from urllib.parse import quote

import pytest

from btts.samples import data as samples
from tests.support import serving
from tests.support.serving import GAP, HOUR, T0, _ms, grafana_body, grafana_query

CPU = "CPU/CPU1_USR"
IO = "IO/BLK_READ"
EVENT_CPU, EVENT_IO = "cpu/cpu1_usr", "io/blk_read"
H0, H1, H2 = (samples.host_name(i) for i in range(3))


@pytest.fixture(scope="module")
def landed(bigtable_emulator, tmp_path_factory):
    return serving.land(serving.new_target(), tmp_path_factory.mktemp("serve"))


@pytest.fixture(scope="module")
def server(landed):
    srv = serving.Server(landed.target)
    yield srv
    srv.stop()


def dps(answer: list, **tags) -> dict[int, object]:
    """The dps of the one series with these tags, timestamps as ints."""
    (series,) = [s for s in answer if all(s["tags"].get(k) == v for k, v in tags.items())]
    return {int(t): v for t, v in series["dps"].items()}


def query(server, q: dict, start: int, end: int, **body):
    status, answer = server.call("/api/query", {**grafana_body([q], start, end), **body})
    assert status == 200, answer
    return answer


def close(a, b) -> bool:
    a = float("nan") if a == "NaN" else a  # OpenTSDB writes NaN as a JSON string
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if a is None or b is None:
        return a is b
    return abs(Decimal(str(a)) - Decimal(str(b))) <= Decimal("1e-9") * max(1, abs(Decimal(str(b))))


def expected_buckets(points, interval, agg, fill, start, end):
    """OpenTSDB's buckets for a query over [start, end]: every bucket starting inside it (the
    end included), each over all its points (read past the end)."""
    groups: dict[int, list] = {}
    for t, v in points:
        if start <= t - t % interval <= end:
            groups.setdefault(t - t % interval, []).append(v)
    funcs = {
        "avg": lambda vs: sum(vs) / len(vs),
        "sum": sum,
        "min": min,
        "max": max,
        "count": len,
    }
    out = {b: funcs[agg](vs) for b, vs in groups.items()}
    if fill != "none":
        value = {"nan": float("nan"), "null": None, "zero": 0}[fill]
        for b in range(start + (-start) % interval, end + 1, interval):
            out.setdefault(b, value)
    return out


# -- the Grafana editor's calls -------------------------------------------------------------------


def test_suggest_lookup_aggregators_filters_version(server):
    status, metrics = server.call("/api/suggest?type=metrics&q=server_metrics&max=1000")
    assert status == 200 and f"server_metrics.metrics.{CPU}" in metrics
    assert all(m.startswith("server_metrics") for m in metrics)
    assert "battery.percentage" in server.call("/api/suggest?type=metrics&q=&max=1000")[1]
    assert "hostname" in server.call("/api/suggest?type=tagk&q=host&max=1000")[1]
    assert server.call("/api/suggest?type=tagv&q=server000&max=1000")[1] == [H0, H1, H2]
    # _performMetricKeyLookup, then _performMetricKeyValueLookup (m=metric{key=*})
    status, found = server.call(f"/api/search/lookup?m=server_metrics.metrics.{CPU}&limit=1000")
    assert status == 200 and {r["tags"]["hostname"] for r in found["results"]} == {H0, H1, H2}
    status, found = server.call(
        f"/api/search/lookup?m=server_metrics.metrics.{CPU}{{hostname=*}}&limit=1000"
    )
    assert [r["tags"] for r in found["results"]] == [{"hostname": h} for h in (H0, H1, H2)]
    status, aggs = server.call("/api/aggregators")
    assert {
        "sum",
        "avg",
        "min",
        "max",
        "count",
        "dev",
        "p50",
        "p999",
        "first",
        "last",
        "none",
    } <= set(aggs)
    status, filters = server.call("/api/config/filters")
    assert {
        "literal_or",
        "iliteral_or",
        "not_literal_or",
        "not_iliteral_or",
        "wildcard",
        "iwildcard",
        "regexp",
    } == set(filters)
    assert server.call("/api/version")[1]["version"].startswith("2.")


def test_grafana_2_3_maps_answers_to_queries_by_show_query_index(server):
    # tsdbVersion 3: showQuery is sent and mapMetricsToTargets reads metricData.query.index
    one = grafana_query(f"server_metrics.metrics.{CPU}", "avg", "30m-avg", tags={"hostname": H0})
    two = grafana_query("battery.percentage", "max", "30m-max", tags={"user": "*"})
    body = {**grafana_body([one, two], T0, T0 + HOUR), "showQuery": True}
    status, answer = server.call("/api/query", body)
    assert status == 200 and answer[0]["query"]["index"] == 0
    assert answer[0]["metric"] == f"server_metrics.metrics.{CPU}"
    start = samples.BATTERY_START_MS
    body = {**grafana_body([two, one], start, start + HOUR), "showQuery": True}
    answer = server.call("/api/query", body)[1]
    assert {s["query"]["index"] for s in answer} == {0} and answer[0][
        "metric"
    ] == "battery.percentage"


def test_get_query_with_an_m_expression_is_the_post_answer(server):
    from urllib.parse import quote

    m = quote(f"sum:10m-max-zero:server_metrics.metrics.{CPU}{{hostname={H1}}}")
    status, got = server.call(f"/api/query?start={T0}&end={T0 + HOUR}&m={m}&ms=true")
    q = grafana_query(f"server_metrics.metrics.{CPU}", "sum", "10m-max-zero", tags={"hostname": H1})
    assert status == 200 and got == query(server, q, T0, T0 + HOUR)


# -- downsampling and fill over a gap -------------------------------------------------------------


@pytest.mark.parametrize("fill", ["none", "nan", "null", "zero"])
@pytest.mark.parametrize("agg", ["avg", "sum", "min", "max", "count"])
def test_downsample_each_aggregator_and_fill_over_a_gap(server, landed, agg, fill):
    start, end = T0, T0 + HOUR
    metric = f"server_metrics.metrics.{CPU}"
    ds = f"10m-{agg}" + ("" if fill == "none" else f"-{fill}")  # as convertTargetToQuery
    answer = query(
        server, grafana_query(metric, "sum", ds, tags={"hostname": serving.GAP_HOST}), start, end
    )
    got = dps(answer)
    pts = serving.points(landed.metrics, serving.GAP_HOST, EVENT_CPU, start, end + HOUR)[
        serving.GAP_HOST
    ]
    want = expected_buckets(pts, 600_000, agg, fill, start, end)
    assert sorted(got) == sorted(want)
    assert all(close(got[t], want[t]) for t in want), (got, want)
    gap_buckets = [b for b in want if GAP[0] <= b < GAP[1]]
    assert (len(gap_buckets) == 2) == (fill != "none")


def test_seconds_resolution_when_grafana_does_not_ask_for_ms(server, landed):
    q = grafana_query(f"server_metrics.metrics.{CPU}", "sum", "10m-max", tags={"hostname": H0})
    _status, answer = server.call(
        "/api/query", grafana_body([q], T0, T0 + HOUR, ms_resolution=False)
    )
    pts = serving.points(landed.metrics, H0, EVENT_CPU, T0, T0 + 2 * HOUR)[H0]
    want = expected_buckets(pts, 600_000, "max", "none", T0, T0 + HOUR)
    assert {int(t) * 1000: v for t, v in answer[0]["dps"].items()} == {
        t: float(v) for t, v in want.items()
    }


# -- grouping and aggregating across entities -----------------------------------------------------


def test_group_by_host_gives_one_series_per_host(server, landed):
    q = grafana_query(
        f"server_metrics.metrics.{CPU}",
        "sum",
        "20m-avg",
        filters=[{"type": "wildcard", "tagk": "hostname", "filter": "*", "groupBy": True}],
    )
    answer = query(server, q, T0, T0 + HOUR)
    assert sorted(s["tags"]["hostname"] for s in answer) == [H0, H1, H2]
    for host, pts in serving.points(landed.metrics, None, EVENT_CPU, T0, T0 + 2 * HOUR).items():
        want = expected_buckets(pts, 1_200_000, "avg", "none", T0, T0 + HOUR)
        got = dps(answer, hostname=host)
        assert sorted(got) == sorted(want) and all(close(got[t], want[t]) for t in want)


def test_aggregate_across_hosts_interpolates_the_gap(server, landed):
    start, end = T0, T0 + HOUR
    q = grafana_query(
        f"server_metrics.metrics.{CPU}",
        "sum",
        filters=[
            {"type": "regexp", "tagk": "hostname", "filter": "^server000[0-2]", "groupBy": False}
        ],
    )
    (series,) = query(server, q, start, end)
    assert series["tags"] == {} and series["aggregateTags"] == ["hostname"]
    per_host = serving.points(landed.metrics, None, EVENT_CPU, start, end + HOUR)
    times = sorted({t for pts in per_host.values() for t, _ in pts if t <= end})  # end included
    want = {}
    for t in times:
        total = Decimal(0)
        for pts in per_host.values():
            values = dict(pts)
            if t in values:
                total += values[t]
            else:  # inside this host's span: linear interpolation between its neighbours
                before = max(p for p in values if p < t)
                after = min(p for p in values if p > t)
                total += values[before] + (values[after] - values[before]) * (t - before) / (
                    after - before
                )
        want[t] = total
    got = {int(t): v for t, v in series["dps"].items()}
    assert sorted(got) == times and all(close(got[t], want[t]) for t in times)
    assert any(GAP[0] <= t < GAP[1] for t in times)  # the gap was interpolated, not dropped


def test_avg_across_two_named_hosts_with_a_pipe(server, landed):
    q = grafana_query(
        f"server_metrics.metrics.{CPU}", "avg", "30m-sum", tags={"hostname": f"{H0}|{H2}"}
    )
    answer = query(server, q, T0, T0 + HOUR)
    assert sorted(s["tags"]["hostname"] for s in answer) == [H0, H2]  # tags group (OpenTSDB 1.x)
    q = grafana_query(
        f"server_metrics.metrics.{CPU}",
        "avg",
        "30m-sum",
        filters=[
            {"type": "literal_or", "tagk": "hostname", "filter": f"{H0}|{H2}", "groupBy": False}
        ],
    )
    (series,) = query(server, q, T0, T0 + HOUR)
    sums = {
        h: expected_buckets(p, 1_800_000, "sum", "none", T0, T0 + HOUR)
        for h, p in serving.points(landed.metrics, None, EVENT_CPU, T0, T0 + HOUR).items()
        if h in (H0, H2)
    }
    got = {int(t): v for t, v in series["dps"].items()}
    assert all(close(got[b], (sums[H0][b] + sums[H2][b]) / 2) for b in sums[H0])


# -- rates ----------------------------------------------------------------------------------------


def expected_rate(points, counter, drop_resets, counter_max=2**63 - 1):
    out = {}
    for (t0, v0), (t1, v1) in itertools.pairwise(points):
        dt_s = (t1 - t0) / 1000
        if counter and v1 < v0:
            if drop_resets:
                continue
            out[t1] = (counter_max - float(v0) + float(v1)) / dt_s
        else:
            out[t1] = (float(v1) - float(v0)) / dt_s
    return out


@pytest.mark.parametrize(
    "options,counter,drop",
    [
        ({"counter": False}, False, False),
        (
            {"counter": True, "dropResets": True},
            True,
            True,
        ),  # Grafana: no counterMax, no reset value
        ({"counter": True, "counterMax": 1_000_000_000}, True, False),
    ],
)
def test_rate_with_and_without_counter_resets(server, landed, options, counter, drop):
    q = grafana_query(
        f"server_metrics.metrics.{IO}", "sum", tags={"hostname": H0}, rate=True, rateOptions=options
    )
    got = dps(query(server, q, T0, T0 + HOUR))
    # OpenTSDB reads from the hour T0 starts: the first rate is the one into T0 + 1 min
    pts = serving.points(landed.metrics, H0, EVENT_IO, T0, T0 + HOUR + 1)[H0]
    resets = [b for a, b in itertools.pairwise(pts) if b[1] < a[1]]
    assert resets, "the sample must hold counter resets"
    want = expected_rate(pts, counter, drop, options.get("counterMax", 2**63 - 1))
    assert sorted(got) == sorted(want) and all(close(got[t], want[t]) for t in want)


# -- other key shapes -----------------------------------------------------------------------------


def test_salted_table_answers_a_query_without_tags(server, landed):
    start = samples.BATTERY_START_MS
    end = start + 2 * HOUR
    answer = query(server, grafana_query("battery.percentage", "sum"), start, end, showQuery=True)
    (series,) = answer
    assert any("BATTERY_SALTED" in r for r in series["query"]["btts"]["reads"])
    want = {
        _ms(r["timestamp"]): r["percentage"]
        for r in landed.battery
        if start <= _ms(r["timestamp"]) <= end
    }
    assert {int(t): v for t, v in series["dps"].items()} == want


def test_promoted_table_serves_a_user_group_by(server, landed):
    start = samples.BATTERY_START_MS
    end = start + 2 * HOUR
    q = grafana_query("battery.percentage", "sum", "30m-min", tags={"user": "*"})
    answer = query(server, q, start, end, showQuery=True)
    users = {r["user"] for r in landed.battery}
    assert {s["tags"]["user"] for s in answer} == users
    assert any(r.startswith("BATTERY:") for r in answer[0]["query"]["btts"]["reads"])
    for user in users:
        pts = [(_ms(r["timestamp"]), r["percentage"]) for r in landed.battery if r["user"] == user]
        assert dps(answer, user=user) == expected_buckets(pts, 1_800_000, "min", "none", start, end)


def test_reversed_timestamp_table_reads_the_same_points(server, landed):
    q = grafana_query(f"queries.metrics.{CPU}", "sum", tags={"hostname": H2})
    answer = query(server, q, T0 + 600_000, T0 + 1_800_000, showQuery=True)
    assert any("METRIC_RECENT" in r for r in answer[0]["query"]["btts"]["reads"])
    pts = serving.points(landed.metrics, H2, EVENT_CPU, T0 + 600_000, T0 + 1_800_001)[H2]
    got = dps(answer)
    assert sorted(got) == [t for t, _ in pts] and all(close(got[t], v) for t, v in pts)


def test_exact_decimals_stay_exact_in_the_text(server, landed):
    q = grafana_query(f"server_metrics.metrics.{CPU}", "sum", tags={"hostname": H0})
    _, text = server.call("/api/query", raw=None, body=grafana_body([q], T0, T0 + 300_000))
    pts = serving.points(landed.metrics, H0, EVENT_CPU, T0, T0 + 300_001)[H0]
    assert dps(text) == {t: float(v) for t, v in pts}


# -- rollups --------------------------------------------------------------------------------------


@pytest.mark.parametrize("agg", ["avg", "sum", "count"])
def test_rollup_answer_equals_the_point_answer(server, landed, agg):
    start, end = T0 - 30 * 60_000, T0 + 2 * HOUR  # a partial hour first, then two whole hours
    metric = f"server_metrics.metrics.{CPU}"
    q = grafana_query(metric, "sum", f"1h-{agg}", tags={"hostname": serving.GAP_HOST})
    answer = query(server, q, start, end, showQuery=True)
    reads = answer[0]["query"]["btts"]["reads"]
    assert any("rollup METRIC_HOURLY" in r for r in reads)
    pts = serving.points(landed.metrics, serving.GAP_HOST, EVENT_CPU, start, end + HOUR)[
        serving.GAP_HOST
    ]
    want = expected_buckets(pts, HOUR, agg, "none", start, end)
    got = dps(answer)
    assert sorted(got) == sorted(want) and all(close(got[t], want[t]) for t in want)
    # the point answer: the raw points the server reads from METRIC over the whole hours the
    # rollup answered for, bucketed here
    raw = query(
        server,
        grafana_query(metric, "sum", tags={"hostname": serving.GAP_HOST}),
        T0 - HOUR,
        T0 + 3 * HOUR - 1,
        showQuery=True,
    )
    assert not any("METRIC_HOURLY" in r for r in raw[0]["query"]["btts"]["reads"])
    point_answer = expected_buckets(sorted(dps(raw).items()), HOUR, agg, "none", start, end)
    assert sorted(point_answer) == sorted(got) and all(close(got[t], point_answer[t]) for t in got)


# -- refusals -------------------------------------------------------------------------------------


def test_a_metric_only_query_aggregates_every_series_from_key_ranges(server, landed):
    # a new Grafana panel (and every annotation query) names only the metric: OpenTSDB
    # aggregates every series; btts lists them from the series index, then reads ranges
    q = grafana_query(f"server_metrics.metrics.{CPU}", "sum", "0all-count")
    (series,) = query(server, q, T0, T0 + HOUR, showQuery=True)
    assert series["aggregateTags"] == ["hostname"] and series["tags"] == {}
    reads = series["query"]["btts"]["reads"]
    assert any("3 series from the index SERVER_METRICS_SERIES" in r for r in reads)
    counts = serving.points(landed.metrics, None, EVENT_CPU, T0, T0 + HOUR)
    assert series["dps"] == {str(T0): sum(len(p) for p in counts.values())}
    annotation = {"aggregator": "sum", "metric": f"server_metrics.metrics.{CPU}"}
    status, answer = server.call("/api/query", grafana_body([annotation], T0, T0 + HOUR))
    assert status == 200 and answer[0]["aggregateTags"] == ["hostname"]


def test_max_points_refuses_a_downsample_that_makes_too_many_points(landed):
    q = grafana_query(f"server_metrics.metrics.{CPU}", "sum", "0all-count")
    small = serving.Server(landed.target, "--max_points", "5")
    try:
        status, body = small.call("/api/query", grafana_body([q], T0, T0 + HOUR))
        assert status == 200, body  # 0all: one point, within --max_points
        status, body = small.call(
            "/api/query", grafana_body([{**q, "downsample": "1m-count-zero"}], T0, T0 + HOUR)
        )
        assert status == 413 and "max_points" in body["error"]["message"]
    finally:
        small.stop()


def test_a_tenant_server_never_reaches_another_tenants_rows(landed):
    srv = serving.Server(landed.target, "--tenant", "acme")
    try:
        metrics = srv.call("/api/suggest?type=metrics&q=&max=1000")[1]
        assert metrics and all(m.startswith("devices.") for m in metrics)
        tagv = srv.call("/api/suggest?type=tagv&q=&max=1000")[1]
        assert "acme" in tagv and "acme2" not in tagv and "altostrat" not in tagv
        start, end = samples.DEVICE_START_MS, samples.DEVICE_START_MS + 24 * HOUR
        for tenant in ("acme2", "altostrat", "acme|acme2", "*"):
            q = grafana_query(
                "devices.readings.BATTERY",
                "sum",
                tags={"tenant": tenant, "kind": "*", "device": "*"},
            )
            status, answer = srv.call("/api/query", grafana_body([q], start, end))
            assert status == 200
            assert all(s["tags"].get("tenant") == "acme" for s in answer)
        q = grafana_query("devices.readings.BATTERY", "sum", tags={"kind": "*", "device": "*"})
        answer = srv.call("/api/query", grafana_body([q], start, end))[1]
        own = [r for r in landed.devices if r["tenant"] == "acme"]
        assert {s["tags"]["device"] for s in answer} == {r["device"] for r in own}
        for s in answer:
            want = {
                _ms(r["timestamp"]): r["readings"]["battery"]
                for r in own
                if r["device"] == s["tags"]["device"]
            }
            assert {int(t): v for t, v in s["dps"].items()} == want
    finally:
        srv.stop()


# -- every request Grafana sends, parsed the way its code parses it -------------------------------


def strict_json(text: str):
    """Parse as a strict JSON parser does: a bare NaN or Infinity is an error."""

    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def raw_call(server, path: str, body=None) -> tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(server.url + path, data=data)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_browser_template_variables_as_datasource_ts_reads_them(server):
    metric = f"server_metrics.metrics.{CPU}"
    # testDatasource(): _performSuggestQuery('cpu', 'metrics') must succeed, even with no match
    status, text = raw_call(server, "/api/suggest?type=metrics&q=cpu&max=1000")
    assert status == 200 and strict_json(text) == []
    # metrics(server_metrics) → [{text}]
    names = strict_json(raw_call(server, "/api/suggest?type=metrics&q=server_metrics&max=1000")[1])
    assert metric in names
    # tag_names(metric): _performMetricKeyLookup collects the tag keys of result.data.results
    found = strict_json(raw_call(server, f"/api/search/lookup?m={quote(metric)}&limit=1000")[1])
    assert {k for r in found["results"] for k in r["tags"]} == {"hostname"}
    # tag_values(metric, hostname): m=metric{hostname=*}, limit 3000, values of that key
    m = quote(f"{metric}{{hostname=*}}")
    found = strict_json(raw_call(server, f"/api/search/lookup?m={m}&limit=3000")[1])
    assert sorted({r["tags"]["hostname"] for r in found["results"]}) == [H0, H1, H2]
    # suggest_tagk(host), suggest_tagv(server)
    assert strict_json(raw_call(server, "/api/suggest?type=tagk&q=host&max=1000")[1]) == [
        "hostname"
    ]
    assert H1 in strict_json(raw_call(server, "/api/suggest?type=tagv&q=server&max=1000")[1])


def test_backend_lookup_without_a_limit_gives_every_value(server):
    # Grafana's Go backend sends limit=0 when lookupLimit is unset: OpenTSDB reads ≤ 0 as none
    m = quote(f"server_metrics.metrics.{CPU}{{hostname=*}}")
    for limit in ("0", "-1"):
        found = strict_json(raw_call(server, f"/api/search/lookup?m={m}&limit={limit}")[1])
        assert sorted(r["tags"]["hostname"] for r in found["results"]) == [H0, H1, H2]


def test_backend_posts_arrays_true_and_decodes_numbers_only(server, landed):
    # the Go backend (version 2.4): POST /api/query?arrays=true, dps as [[ts, value], …] of
    # float64: a missing value must be null (a Go float64 cannot hold the string "NaN")
    q = {
        "metric": f"server_metrics.metrics.{CPU}",
        "aggregator": "sum",
        "downsample": "10m-avg-nan",
        "tags": {"hostname": serving.GAP_HOST},
    }
    body = {"start": T0, "end": T0 + HOUR, "queries": [q]}
    status, text = raw_call(server, "/api/query?arrays=true", body)
    (series,) = strict_json(text)
    assert status == 200 and isinstance(series["dps"], list)
    assert all(
        isinstance(p[0], int) and (p[1] is None or isinstance(p[1], float)) for p in series["dps"]
    )
    gap = [p for p in series["dps"] if GAP[0] <= p[0] * 1000 < GAP[1]]
    assert gap and all(p[1] is None for p in gap)  # seconds: msResolution not sent
    # the browser path asks for the same thing as a map: NaN is the JSON string "NaN"
    status, text = raw_call(server, "/api/query", {**body, "msResolution": True})
    (series,) = strict_json(text)
    assert [series["dps"][str(t)] for t in range(GAP[0], GAP[1], 600_000)] == ["NaN", "NaN"]
    status, text = raw_call(
        server, "/api/query", {**body, "queries": [{**q, "downsample": "10m-avg-null"}]}
    )
    assert all(
        v is None
        for t, v in strict_json(text)[0]["dps"].items()
        if GAP[0] <= int(t) * 1000 < GAP[1]
    )


def test_false_strings_are_false_and_times_take_fractions_and_ms(server, landed):
    q = grafana_query(f"server_metrics.metrics.{CPU}", "sum", tags={"hostname": H0})
    plain = query(server, q, T0, T0 + 300_000)
    for flags in ({"rate": "false"}, {"rate": False, "rateOptions": {"counter": "false"}}):
        assert query(server, {**q, **flags}, T0, T0 + 300_000) == plain
    status, seconds = server.call(
        "/api/query", {**grafana_body([q], T0, T0 + 300_000), "msResolution": "false"}
    )
    assert sorted(seconds[0]["dps"]) == sorted(str(int(t) // 1000) for t in plain[0]["dps"])
    for start, end in (
        (f"{T0 // 1000}.000", f"{T0 // 1000 + 300}.000"),
        (f"{T0}ms", f"{T0 + 300_000}ms"),
    ):
        status, answer = server.call("/api/query", grafana_body([q], start, end))
        assert status == 200 and answer == plain


def test_filter_syntax_in_tags_and_explicit_tags(server, landed):
    metric = f"server_metrics.metrics.{CPU}"
    q = grafana_query(metric, "sum", "30m-avg", tags={"hostname": "regexp(^server000[01][.])"})
    answer = query(server, q, T0, T0 + HOUR)
    assert sorted(s["tags"]["hostname"] for s in answer) == [H0, H1]  # tags group by
    q = grafana_query(metric, "sum", "30m-avg", tags={"hostname": f"literal_or({H2})"})
    assert [s["tags"]["hostname"] for s in query(server, q, T0, T0 + HOUR)] == [H2]
    explicit = {**q, "explicitTags": True}
    assert query(server, explicit, T0, T0 + HOUR) == query(server, q, T0, T0 + HOUR)
    # a wildcard written as a tag value ignores case (TagVFilter.getFilter makes it an
    # iwildcard); wildcard(...) is case-sensitive
    q = grafana_query(metric, "sum", tags={"hostname": "SERVER*"})
    assert sorted(s["tags"]["hostname"] for s in query(server, q, T0, T0 + HOUR)) == [H0, H1, H2]
    q = grafana_query(metric, "sum", tags={"hostname": "wildcard(SERVER*)"})
    assert query(server, q, T0, T0 + HOUR) == []


def test_a_start_before_1970_as_grafana_sends_it(server):
    # Grafana sends epoch milliseconds: negative before 1970 (here 1958-01-01)
    q = grafana_query(f"server_metrics.metrics.{CPU}", "sum", "1y-avg", tags={"hostname": H0})
    status, answer = server.call("/api/query", grafana_body([q], -378691200000, T0 + HOUR))
    assert status == 200 and [int(t) for t in answer[0]["dps"]]  # the data of 2015, one bucket
    status, answer = server.call("/api/query", grafana_body([q], "1700/01/01", None))
    assert status == 200 and answer


def test_pyopentsdb_query_and_suggest(server, landed):
    import datetime as dt

    tsdb_module = pytest.importorskip("pyopentsdb.tsdb")
    tsdb = tsdb_module.tsdb_connection(server.url)
    metric = f"server_metrics.metrics.{CPU}"
    assert metric in tsdb.suggest(type="metrics", q="server_metrics", max=1000)
    assert metric in tsdb.metrics(q="server_metrics")
    start = dt.datetime.fromtimestamp(T0 / 1000, dt.timezone.utc)
    end = dt.datetime.fromtimestamp((T0 + 600_000) / 1000, dt.timezone.utc)
    answer = tsdb.query(
        start=start,
        end=end,
        metrics=[{"metric": metric, "aggregator": "sum", "tags": {"hostname": H0}}],
    )
    pts = serving.points(landed.metrics, H0, EVENT_CPU, T0, T0 + 600_001)[H0]
    assert {int(t) * 1000: v for t, v in answer[0]["dps"].items()} == {t: float(v) for t, v in pts}


def test_calendar_downsampling_in_a_time_zone(server, landed):
    # Grafana/pyopentsdb send timezone and useCalendar; Kabul is UTC+4:30, so its calendar
    # hours start at :30 UTC
    q = grafana_query(f"server_metrics.metrics.{CPU}", "sum", "1h-sum", tags={"hostname": H0})
    body = {**grafana_body([q], T0, T0 + 2 * HOUR), "timezone": "Asia/Kabul", "useCalendar": True}
    status, answer = server.call("/api/query", body)
    assert status == 200, answer
    pts = serving.points(landed.metrics, H0, EVENT_CPU, T0 - HOUR, T0 + 3 * HOUR)[H0]
    half = HOUR // 2
    want = {b: sum(v for t, v in pts if b <= t < b + HOUR) for b in (T0 + half, T0 + 3 * half)}
    got = dps(answer)
    assert sorted(got) == sorted(want) and all(close(got[t], want[t]) for t in want)
    q = {**q, "downsample": "1hc-sum"}
    status, same = server.call("/api/query", {**body, "useCalendar": False, "queries": [q]})
    assert same == answer
