"""Vectors from OpenTSDB 2.4.1's own Java tests, run against btts (never through
:mod:`tests.support.opentsdb_reference`, this project's rewrite of OpenTSDB).

Each file of ``tests/data/opentsdb_vectors/`` transcribes one Java test file (``source``): each
vector names its test ``method`` and holds, as data, the input the test builds (a filter and a
tag value, a time string, stored points and a request…) and the answer the test asserts. A
vector runs through the product's pure functions (``request``, ``mquery``, ``series``,
``answer``), or, for ``kind: http``, through ``btts serve`` over one landing shared by the
module (:mod:`tests.btts.tsdb.test_opentsdb_vectors_http`). A vector btts answers differently on
purpose carries ``difference`` (a key of :data:`DIFFERENCES`, each listed in docs/dashboards.md)
and ``btts``: what btts answers instead, asserted as strictly as OpenTSDB's answer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from decimal import Decimal
from urllib.parse import parse_qs

import pytest

from btts.tsdb import answer, mquery, planning, request, series
from btts.tsdb.errors import BadRequest
from tests.support.opentsdb_vectors import DATA, DIFFERENCES, load

NOW = 1357300800000  # the clock TestDateTime mocks: 2013-01-04T12:00:00Z


def _ids(cases: list) -> list[str]:
    return [c[0] for c in cases]


# -- filters ------------------------------------------------------------------------------------


def _filter(v: dict, d: dict) -> request.TagFilter:
    return request.tag_filter(v.get("tagk", d.get("tagk")), v["type"], v["filter"], False)


def run_filter(v: dict, d: dict) -> None:
    if v.get("error"):
        with pytest.raises(BadRequest):
            _filter(v, d)
        return
    tags = v.get("tags", d.get("tags", {}))
    assert _filter(v, d).matches(tags) is v["match"]


def run_filter_equal(v: dict, d: dict) -> None:
    a, b = (request.tag_filter("host", t, f, False) for t, f in (v["a"], v["b"]))
    assert a.same(b) is v["equal"]


def _as_list(filters) -> list[list]:
    return [[f.tagk, f.type, f.filter, f.group_by] for f in filters]


def run_tag_value(v: dict, d: dict) -> None:
    if v.get("error"):
        with pytest.raises(BadRequest):
            request.filter_of_tag(v["tagk"], v["value"])
        return
    got = request.filter_of_tag(v["tagk"], v["value"])
    assert (got.type, got.filter, got.group_by) == (v["type"], v.get("filter", v["value"]), True)


def run_tags(v: dict, d: dict) -> None:
    filters = [request.TagFilter(*f) for f in v.get("existing", [])]
    for f in request.from_tags(v["tags"]):
        filters = request.merge_filters(filters, f)
    assert sorted(_as_list(filters)) == sorted(v["expect"])


# -- times, durations, zones, calendar buckets ---------------------------------------------------


def differs(v: dict, run: Callable[[], object]) -> bool:
    """For a vector btts answers on purpose otherwise: assert btts' own answer (``btts``) and
    that it is not OpenTSDB's; True when the vector was such a one."""
    if "difference" not in v:
        return False
    got = run()
    numbers = all(isinstance(x, (int, float)) for x in (got, v["btts"]))
    assert same(got, v["btts"]) if numbers else got == v["btts"], got
    assert v.get("error") or got != v.get("expect"), "not a difference: drop the mark"
    return True


def _expected(v: dict, run: Callable[[], object]) -> None:
    if differs(v, run):
        return
    if v.get("error"):
        with pytest.raises(BadRequest):
            run()
        return
    got = run()
    assert got == (NOW - v["ago"] if "ago" in v else v["expect"]), got


def run_time(v: dict, d: dict) -> None:
    _expected(v, lambda: request.parse_time(v["text"], NOW, "start", v.get("tz")))


def run_duration(v: dict, d: dict) -> None:
    _expected(v, lambda: request.parse_interval(v["text"]))


def run_zone(v: dict, d: dict) -> None:
    if v["known"]:
        request.zone(v["name"])
    else:
        with pytest.raises(BadRequest):
            request.zone(v["name"])


def run_calendar(v: dict, d: dict) -> None:
    ds = request.parse_downsample(f"{v['count']}{v['unit']}c-sum", v["tz"])
    assert ds.calendar.floor(v["ts"]) == v["expect"]


# -- requests: JSON bodies, m= expressions, downsample specs -------------------------------------


def summary(q: request.SubQuery) -> dict:
    """A sub-query as OpenTSDB's tests look at a ``TSSubQuery``: ``getTags`` (each group-by
    filter as ``type(filter)``), the filters' types in order, the downsampler, the rate."""
    ds = q.downsample
    return {
        "metric": q.metric,
        "aggregator": q.aggregator,
        "tags": {f.tagk: f"{f.type}({f.filter})" for f in q.filters if f.group_by},
        "n_filters": len(q.filters),
        "filter_types": [f.type for f in q.filters],
        "downsample": q.raw.get("downsample"),
        "ds_aggregator": ds.aggregator if ds else None,
        "interval_ms": ds.interval_ms if ds else 0,
        "calendar": str(ds.calendar.tz) if ds and ds.calendar else None,
        "rate": q.rate is not None,
        "explicit_tags": q.explicit_tags,
    }


def _subset(got: dict, want: dict) -> None:
    assert {k: got[k] for k in want} == want, got


def _refused(v: dict, run: Callable[[], object]) -> None:
    with pytest.raises(BadRequest) as err:
        run()
    assert v.get("message", "") in str(err.value)


def _outcome(run: Callable[[], object]) -> object:
    try:
        return run()
    except BadRequest:
        return "error"


def run_subquery(v: dict, d: dict) -> None:
    if differs(v, lambda: _outcome(lambda: request.sub_query(0, v["raw"]))):
        return
    if v.get("error"):
        _refused(v, lambda: request.sub_query(0, v["raw"]))
        return
    _subset(summary(request.sub_query(0, v["raw"])), v["expect"])


def run_tsquery(v: dict, d: dict) -> None:
    if differs(v, lambda: _outcome(lambda: request.parse_body(v["body"], NOW))):
        return
    if v.get("error"):
        _refused(v, lambda: request.parse_body(v["body"], NOW))
        return
    tq = request.parse_body(v["body"], NOW)
    got = {"start_ms": tq.start_ms, "end_ms": tq.end_ms, "n_queries": len(tq.queries)}
    got.update({k: x for k, x in summary(tq.queries[0]).items() if k not in got})
    _subset(got, v["expect"])


def run_metric_filters(v: dict, d: dict) -> None:
    if differs(v, lambda: _outcome(lambda: mquery.parse_metric(v["text"]))):
        return
    if v.get("error"):
        _refused(v, lambda: mquery.parse_metric(v["text"]))
        return
    metric, filters = mquery.parse_metric(v["text"])
    assert [metric, [[f.tagk, f.type, f.group_by] for f in filters]] == [v["metric"], v["filters"]]


def _params(query: str) -> dict[str, list[str]]:
    return parse_qs(query, keep_blank_values=True)


def run_get(v: dict, d: dict) -> None:
    if differs(v, lambda: _outcome(lambda: mquery.parse_get(_params(v["query"]), NOW))):
        return
    if v.get("error"):
        _refused(v, lambda: mquery.parse_get(_params(v["query"]), NOW))
        return
    tq = mquery.parse_get(_params(v["query"]), NOW)
    assert len(tq.queries) == len(v["expect"])
    for q, want in zip(tq.queries, v["expect"], strict=True):
        _subset(summary(q), want)


def run_downsample_spec(v: dict, d: dict) -> None:
    if differs(v, lambda: _outcome(lambda: request.parse_downsample(v["text"]))):
        return
    if v.get("error"):
        _refused(v, lambda: request.parse_downsample(v["text"]))
        return
    ds = request.parse_downsample(v["text"])
    assert [ds.interval_ms, ds.aggregator, ds.fill] == v["expect"]


# -- series arithmetic ---------------------------------------------------------------------------


def typed(value: object, kind: str = "long") -> object:
    """A value as OpenTSDB's test types it: a long is an integer, a double a float."""
    if value == "NaN":
        return math.nan
    return Decimal(int(value)) if kind == "long" else float(value)


def points(raw: list) -> list:
    return [(ts, typed(v, kind)) for ts, v, kind in raw]


def same_points(got: list, want: list, tolerance: float = 1e-9) -> None:
    assert [t for t, _ in got] == [t for t, _ in want], got
    for (_, g), (_, w) in zip(got, want, strict=True):
        assert same(g, w, tolerance), (got, want)


def run_aggregator(v: dict, d: dict) -> None:
    raw = v["values"]
    raw = range(*raw["range"]) if isinstance(raw, dict) else raw
    values = [typed(x, "long" if v["longs"] else "double") for x in raw]
    got = series.combine(v["aggregator"], values, v["longs"])
    if differs(v, lambda: float(got)):
        return
    assert same(got, v["expect"], 0) or abs(float(got) - float(v["expect"])) <= v["tolerance"]


def run_rate(v: dict, d: dict) -> None:
    pts = [p for p in points(v["points"]) if p[0] >= v.get("seek", p[0])]
    got = series.rate_span(pts, series.Rate(v["counter"], v["counter_max"], v["reset"], v["drop"]))
    got = got[1:] if v.get("skip_first") else got
    same_points(got[: len(v["expect"])] if v.get("prefix") else got, v["expect"], 1e-7)


def run_downsample(v: dict, d: dict) -> None:
    ds = request.parse_downsample(v["spec"], v.get("tz", "UTC"), v.get("use_calendar", False))
    pts = points(v["points"])
    got = series.downsample(pts, ds, series.Window(v["start"], v["end"]))
    same_points(got, v["expect"], 1e-7)


# -- whole queries over stored series -------------------------------------------------------------


def stored(spec: dict) -> list:
    """One stored series of a ``stores`` entry as ``(ts, value)`` points."""
    if "points" in spec:
        return points(spec["points"])
    out = []
    for k in range(spec["count"]):
        if spec.get("skip_every") and k % spec["skip_every"] == 0:
            continue
        value = spec["values"]["from"] + k * spec["values"]["step"]
        kind = spec["type"]
        if kind == "mixed":  # BaseTsdbTest's mixed series: even whole values as longs
            kind = "long" if value % 2 == 0 else "double"
        out.append((spec["start"] + k * spec["step"], typed(value, kind)))
    return out


def generated(r: dict) -> list:
    """An expected answer's points: listed (``dps``) or ``count`` from ``ts`` [first, step]
    with values ``from``/``step`` or ``head``, a repeated ``cycle``, ``tail``."""
    if "dps" in r:
        return [tuple(p) for p in r["dps"]]
    first, step = r["ts"]
    values = r["values"]
    if "list" in values:
        seq = values["list"]
    elif "cycle" in values:
        head, tail, cycle = values["head"], values["tail"], values["cycle"]
        middle = r["count"] - len(head) - len(tail)
        seq = head + [cycle[k % len(cycle)] for k in range(middle)] + tail
    else:
        seq = [values["from"] + k * values["step"] for k in range(r["count"])]
    return [(first + k * step, v) for k, v in enumerate(seq)]


def btts_query(stores: dict, store: str, body: dict, ms: bool = True) -> list:
    """btts' answer: the series of the store the sub-query's filters pass, their points in the
    window btts reads (:func:`series.scan_window`), then ``answer.compute`` and ``render``
    (with the stats ``showStats``/``showSummary`` ask for)."""
    tq = request.parse_body(body, NOW)
    stats = answer.Stats()
    out = []
    for q in tq.queries:
        iv = q.downsample.interval_ms if q.downsample else 0
        first, last = series.scan_window(tq.start_ms, tq.end_ms, iv)
        data = {}
        for spec in stores[store]:
            if spec["metric"] == q.metric and all(f.matches(spec["tags"]) for f in q.filters):
                key = tuple(sorted(spec["tags"].items()))
                data[key] = [(t, v) for t, v in stored(spec) if first <= t < last]
        results = answer.compute(planning.asked(q, tq), data)
        stats.add(q, sum(len(p) for p in data.values()), 0.0, results)
        out += results
    return json.loads(answer.render(out, ms or tq.ms_resolution, ts_query=tq, stats=stats))


def _compare(got: list, want: list, start: int, end: int) -> None:
    assert len(got) == len(want), got
    for g, w in zip(got, want, strict=True):
        assert (g["tags"], g["aggregateTags"]) == (w["tags"], w["aggregateTags"]), g
        dps = [(int(t), v) for t, v in g["dps"].items()]
        expect = [(t, v) for t, v in generated(w) if start <= t <= end]  # the serializer's clip
        tolerance = w.get("tolerance")
        assert [t for t, _ in dps] == [t for t, _ in expect], (dps[:4], expect[:4])
        for (_, x), (_, y) in zip(dps, expect, strict=True):
            ok = abs(float(x) - y) <= tolerance if tolerance is not None else same(x, y)
            assert ok, (x, y)


def run_query(v: dict, d: dict) -> None:
    got = btts_query(d["stores"], v["store"], v["body"])
    tq = request.parse_body(v["body"], NOW)
    _compare(got, v.get("btts", v["expect"]), tq.start_ms, tq.end_ms)
    if "difference" in v:
        with pytest.raises(AssertionError):
            _compare(got, v["expect"], tq.start_ms, tq.end_ms)


def run_serialize(v: dict, d: dict) -> None:
    got = btts_query(d["stores"], v["store"], v["body"], ms=False)
    if v.get("empty"):
        assert got == []
        return
    summary = got[-1] if got and "statsSummary" in got[-1] else None
    first = got[0]
    assert {k: first["dps"].get(k) for k in v["dps"]} == v["dps"]
    assert all(k in first for k in v.get("has", [])) and not set(first) & set(v.get("lacks", []))
    if "last_ts" in v:
        assert list(first["dps"])[-1] == v["last_ts"]
    if "emitted" in v:
        assert first["stats"]["emittedDPs"] == v["emitted"]
    if "summary" in v:
        assert (summary is not None) is v["summary"]
    if summary is not None:
        assert set(v.get("summary_has", [])) <= set(summary["statsSummary"])
        emitted = summary["statsSummary"]["queryIdx_00"]["emittedDPs"]
        assert emitted == v.get("summary_emitted", emitted)


def run_scan_window(v: dict, d: dict) -> None:
    got = series.scan_window(v["start_s"] * 1000, v["end_s"] * 1000, v["interval_ms"])
    assert [t // 1000 for t in got] == v["expect_s"]


RUNNERS: dict[str, Callable[[dict, dict], None]] = {
    "scan_window": run_scan_window,
    "serialize": run_serialize,
    "query": run_query,
    "aggregator": run_aggregator,
    "rate": run_rate,
    "downsample": run_downsample,
    "subquery": run_subquery,
    "tsquery": run_tsquery,
    "metric_filters": run_metric_filters,
    "get": run_get,
    "downsample_spec": run_downsample_spec,
    "time": run_time,
    "duration": run_duration,
    "zone": run_zone,
    "calendar": run_calendar,
    "filter": run_filter,
    "filter_equal": run_filter_equal,
    "tag_value": run_tag_value,
    "tags": run_tags,
}
PURE = [c for c in load() if c[1]["kind"] in RUNNERS]


@pytest.mark.parametrize("case", PURE, ids=_ids(PURE))
def test_opentsdb_vector(case):
    _, v, d = case
    if "difference" in v:
        assert v["difference"] in DIFFERENCES
    RUNNERS[v["kind"]](v, d)


def test_every_vector_names_its_source_and_runs_somewhere():
    http_kinds = {"http", "last"}
    for path in DATA.glob("*.json"):
        doc = json.loads(path.read_text(encoding="utf-8"))
        java = path.stem.split(".")[0]  # TestQueryRpc.http.json: TestQueryRpc's HTTP cases
        assert doc["source"].startswith("test/") and doc["source"].endswith(f"/{java}.java")
        for v in doc["vectors"]:
            assert v["method"] and (v["kind"] in RUNNERS or v["kind"] in http_kinds), v
            assert v.get("difference") in (None, *DIFFERENCES), v


def same(got, want, tolerance: float = 1e-9) -> bool:
    """Numbers equal to ``tolerance`` (relative past 1), NaN equal to NaN."""
    if want == "NaN":
        return isinstance(got, float) and math.isnan(got)
    if isinstance(want, str) or want is None:
        return got == want
    if math.isnan(float(want)):
        return math.isnan(float(got))
    return abs(float(got) - float(want)) <= tolerance * max(1.0, abs(float(want)))
