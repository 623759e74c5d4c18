"""Hostile requests to ``btts serve``: every one gets a status and a reason in OpenTSDB's error
shape ``{"error": {"code", "message"}}`` — a 400 for bad input, 405 for writes, 413 for
oversize, 504 past the deadline — never a traceback, and the server keeps answering."""

from __future__ import annotations

import json

import pytest

from tests.support import serving
from tests.support.serving import T0, grafana_body, grafana_query

CPU = "market_data.bid"  # a metric the schema names (map entries come from data; none here)
HOST = {"exchange": "NYSE", "symbol": "IBM"}


def body(**q) -> dict:
    return grafana_body([grafana_query(CPU, **{"tags": HOST, **q})], T0, T0 + 3_600_000)


def bad_filter(kind: str, text: str) -> dict:
    f = {"type": kind, "tagk": "symbol", "filter": text, "groupBy": False}
    return grafana_body([grafana_query(CPU, filters=[f])], T0, T0 + 3_600_000)


# (what, method, path, JSON body or raw bytes, status, a word the reason holds)
CORPUS = [
    ("not JSON", "POST", "/api/query", b"{not json", 400, "JSON"),
    ("empty body", "POST", "/api/query", b"", 400, "JSON"),
    ("a list body", "POST", "/api/query", b"[]", 400, "object"),
    ("bad UTF-8", "POST", "/api/query", b'{"start": "\xff"}', 400, "JSON"),
    ("deep nesting", "POST", "/api/query", b"[" * 200_000 + b"]" * 200_000, 400, "JSON"),
    ("no start", "POST", "/api/query", {"queries": [grafana_query(CPU)]}, 400, "start"),
    ("start as text", "POST", "/api/query", {**body(), "start": "yesterday"}, 400, "start"),
    ("start as bool", "POST", "/api/query", {**body(), "start": True}, 400, "start"),
    ("start as list", "POST", "/api/query", {**body(), "start": [1, 2]}, 400, "start"),
    (
        "start before year 1",
        "POST",
        "/api/query",
        {**body(), "start": -99999999999999},
        400,
        "start",
    ),
    ("end before start", "POST", "/api/query", {**body(), "end": T0 - 1}, 400, "End"),
    ("no queries", "POST", "/api/query", {"start": T0}, 400, "queries"),
    ("queries not a list", "POST", "/api/query", {"start": T0, "queries": "x"}, 400, "queries"),
    ("a query not an object", "POST", "/api/query", {"start": T0, "queries": [1]}, 400, "object"),
    (
        "no metric",
        "POST",
        "/api/query",
        {"start": T0, "queries": [{"aggregator": "sum"}]},
        400,
        "metric",
    ),
    (
        "unknown metric",
        "POST",
        "/api/query",
        grafana_body([grafana_query("x.y")], T0, None),
        400,
        "x.y",
    ),
    ("unknown aggregator", "POST", "/api/query", body(aggregator="bogus"), 400, "aggregator"),
    ("aggregator not text", "POST", "/api/query", body(aggregator=["sum"]), 400, "aggregator"),
    ("bad interval unit", "POST", "/api/query", body(downsample="10x-avg"), 400, "interval"),
    ("no interval", "POST", "/api/query", body(downsample="-avg"), 400, "interval"),
    ("zero interval", "POST", "/api/query", body(downsample="0m-avg"), 400, "0"),
    ("huge interval", "POST", "/api/query", body(downsample="9999999999999m-avg"), 400, "interval"),
    ("bad downsampler", "POST", "/api/query", body(downsample="10m-foo"), 400, "downsampling"),
    ("bad fill", "POST", "/api/query", body(downsample="10m-avg-bogus"), 400, "fill"),
    ("too many dashes", "POST", "/api/query", body(downsample="1-2-3-4"), 400, "downsample"),
    (
        "bad counterMax",
        "POST",
        "/api/query",
        body(rate=True, rateOptions={"counterMax": "x"}),
        400,
        "counterMax",
    ),
    (
        "rateOptions a list",
        "POST",
        "/api/query",
        body(rate=True, rateOptions=[1]),
        400,
        "rateOptions",
    ),
    ("tags a list", "POST", "/api/query", body(tags=["a"]), 400, "tags"),
    ("tag value a number", "POST", "/api/query", body(tags={"hostname": 5}), 400, "text"),
    (
        "a delimiter in a tag",
        "POST",
        "/api/query",
        body(tags={"exchange": "NY#SE", "symbol": "IBM"}),
        400,
        "#",
    ),
    ("unknown tag", "POST", "/api/query", body(tags={"colour": "red"}), 400, "colour"),
    ("filters an object", "POST", "/api/query", body(filters={"a": 1}), 400, "filters"),
    (
        "filter without tagk",
        "POST",
        "/api/query",
        body(filters=[{"type": "wildcard", "filter": "*"}]),
        400,
        "tagk",
    ),
    ("unknown filter type", "POST", "/api/query", bad_filter("evil", "x"), 400, "filter type"),
    (
        "back-reference",
        "POST",
        "/api/query",
        bad_filter("regexp", r"(a)\1"),
        400,
        "Back-references",
    ),
    (
        "named back-reference",
        "POST",
        "/api/query",
        bad_filter("regexp", "(?P<x>a)(?P=x)"),
        400,
        "Back-references",
    ),
    ("long regexp", "POST", "/api/query", bad_filter("regexp", "a" * 500), 400, "longer"),
    ("invalid regexp", "POST", "/api/query", bad_filter("regexp", "[unclosed"), 400, "regexp"),
    (
        "many filter values",
        "POST",
        "/api/query",
        bad_filter("literal_or", "|".join(["a"] * 5000)),
        400,
        "values",
    ),
    (
        "many queries",
        "POST",
        "/api/query",
        grafana_body([grafana_query(CPU)] * 60, T0, None),
        413,
        "queries",
    ),
    ("oversize body", "POST", "/api/query", b"{" + b" " * (2 << 20) + b"}", 413, "larger"),
    # a metric-only query enumerates the key's fields (no refusal): here the table is missing
    (
        "metric only",
        "POST",
        "/api/query",
        grafana_body([grafana_query(CPU)], T0, None),
        400,
        "exist",
    ),
    ("missing table", "POST", "/api/query", body(), 400, "does not exist"),
    ("GET without m colon", "GET", "/api/query?start=1h-ago&m=foo", None, 400, "aggregator"),
    ("GET without start", "GET", f"/api/query?m=sum:{CPU}{{exchange=a}}", None, 400, "start"),
    ("GET bad relative", "GET", f"/api/query?start=1q-ago&m=sum:{CPU}", None, 400, "start"),
    ("suggest bad type", "GET", "/api/suggest?type=bogus&q=a", None, 400, "type"),
    ("suggest bad max", "GET", "/api/suggest?type=metrics&max=-1", None, 400, "max"),
    ("lookup without m", "GET", "/api/search/lookup", None, 400, "m"),
    ("lookup unknown metric", "GET", "/api/search/lookup?m=nope{a=*}", None, 404, "nope"),
    (
        "too many parameters",
        "GET",
        "/api/suggest?" + "&".join(f"a{i}=1" for i in range(200)),
        None,
        400,
        "parameters",
    ),
    ("unknown endpoint", "GET", "/api/nope", None, 404, "not found"),
    ("path traversal", "GET", "/../../etc/passwd", None, 404, "not found"),
    (
        "a write",
        "POST",
        "/api/put",
        {"metric": CPU, "timestamp": 1, "value": 1, "tags": HOST},
        405,
        "read-only",
    ),
    ("a PUT", "PUT", "/api/query", b"{}", 405, "read-only"),
    # QueryRpc: a DELETE is a 400 while tsd.http.query.allow_delete is false (its default)
    ("a DELETE", "DELETE", "/api/query?start=1h-ago&m=sum:x", None, 400, "Bad request"),
    ("a DELETE of the last", "DELETE", "/api/query/last?timeseries=x", None, 400, "Bad request"),
    ("a DELETE elsewhere", "DELETE", "/api/suggest?type=metrics", None, 405, "read-only"),
    ("an annotation write", "POST", "/api/annotation", {"startTime": 1}, 405, "read-only"),
    ("not_key (not registered)", "POST", "/api/query", bad_filter("not_key", ""), 400, "filter"),
    ("wildcard without *", "POST", "/api/query", bad_filter("wildcard", "IBM"), 400, "asterisk"),
    (
        "a date in an unknown zone",
        "POST",
        "/api/query",
        {**body(), "start": "2015/03/16-20:00:00", "timezone": "Mars/Olympus"},
        400,
        "timezone",
    ),
    (
        "a downsample in an unknown zone",
        "POST",
        "/api/query",
        {**body(downsample="1h-avg"), "timezone": "Mars/Olympus"},
        400,
        "timezone",
    ),
    (
        "bad rate options",
        "GET",
        f"/api/query?start=1h-ago&m=sum:rate{{counter,x}}:{CPU}",
        None,
        400,
        "counter",
    ),
    (
        "too many m= parts",
        "GET",
        f"/api/query?start=1h-ago&m=sum:a:b:c:d:{CPU}",
        None,
        400,
        "parts",
    ),
    ("tsuid= query", "GET", "/api/query?start=1h-ago&tsuid=sum:000001", None, 400, "tsuid"),
    ("last without queries", "GET", "/api/query/last", None, 400, "sub queries"),
    (
        "last bad back_scan",
        "GET",
        f"/api/query/last?timeseries={CPU}&back_scan=x",
        None,
        400,
        "back_scan",
    ),
    (
        "last negative back_scan",
        "GET",
        f"/api/query/last?timeseries={CPU}&back_scan=-1",
        None,
        400,
        "Backscan",
    ),
    ("last bad tsuid", "GET", "/api/query/last?tsuids=zz", None, 400, "unique ID"),
    ("last body a list", "POST", "/api/query/last", [1], 400, "object"),
    ("last unknown metric", "GET", "/api/query/last?timeseries=nope.x", None, 400, "No such name"),
    (
        "last wildcard tag",
        "GET",
        f"/api/query/last?timeseries={CPU}{{symbol=*}}",
        None,
        400,
        "exact",
    ),
    (
        "last missing table",
        "GET",
        f"/api/query/last?timeseries={CPU}{{exchange=NYSE}}",
        None,
        400,
        "exist",
    ),
]


@pytest.fixture(scope="module")
def server(bigtable_emulator):
    srv = serving.Server(
        serving.new_target()
    )  # an empty instance: every refusal comes before a read
    yield srv
    srv.stop()


@pytest.mark.parametrize("case", CORPUS, ids=[c[0] for c in CORPUS])
def test_hostile_request_is_refused_with_a_reason(server, case):
    _, method, path, payload, status, word = case
    raw = payload if isinstance(payload, bytes) else None
    got_status, answer = server.call(
        path, body=None if raw is not None else payload, raw=raw, method=method
    )
    assert got_status == status, answer
    assert isinstance(answer, dict) and set(answer) == {"error"}, answer
    assert answer["error"]["code"] == status
    message = answer["error"]["message"]
    assert word.lower() in message.lower(), message
    assert "Traceback" not in json.dumps(answer) and 'File "' not in message
    assert server.call("/api/version")[0] == 200  # still serving


def test_the_deadline_gives_a_504(bigtable_emulator):
    srv = serving.Server(serving.new_target(), "--deadline", "0.000001")
    try:
        status, answer = srv.call("/api/query", body())
        assert status == 504 and "deadline" in answer["error"]["message"]
    finally:
        srv.stop()


def test_no_request_made_the_server_log_a_traceback(server):
    server.call("/api/version")
    server.stop()
    assert "Traceback" not in server.proc.stderr.read()


def test_loopback_unless_bind_says_otherwise(bigtable_emulator):
    srv = serving.Server(serving.new_target())
    try:
        assert srv.url.startswith("http://127.0.0.1:")
    finally:
        srv.stop()
