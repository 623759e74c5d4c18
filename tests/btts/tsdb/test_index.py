"""``btts serve`` answering from the series index: suggest, lookup and ``*`` never read data to
find series; data the index does not list is an error naming ``btts index rebuild`` (never an
empty answer), and the rebuild makes it answer; OpenTSDB's answers for unknown tag values and
for lookup's limit; a timeout is a 504 in OpenTSDB's shape, remembered a while."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from urllib.parse import quote

import pytest
from google.api_core import exceptions as gexc

from benchmarks import flights
from btts import config
from btts.tsdb import answer, catalog, reads, routes, service, tsuids
from btts_cli import main as cli
from pipelines import load
from tests.support import serving
from transforms.errors import Timeout, Unavailable

HOUR = flights.HOUR
METRIC = "flights.arr_delay"


@pytest.fixture(scope="module")
def landed(bigtable_emulator, tmp_path_factory):
    """A few hundred flights landed by a schema without ``index:``; the served schema then
    declares one (not built yet)."""
    work = tmp_path_factory.mktemp("flights")
    target = config.Target("test-project", f"f{uuid.uuid4().hex[:12]}")
    rows = list(flights.synthetic(600))
    bare = work / "bare.yaml"
    bare.write_text(flights.schema_text().replace("index: {table: FLIGHTS_SERIES}\n", ""))
    path = work / "flights.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    argv = [f"--input={path}", f"--dead_letter={work / 'dead'}", "--create_tables"]
    argv += [f"--schema={bare}", f"--bigtable_project={target.project}"]
    load("generic").run([*argv, f"--bigtable_instance={target.instance}"])
    indexed = work / "flights.yaml"
    indexed.write_text(flights.schema_text())
    return target, rows, indexed


@pytest.fixture(scope="module")
def server(landed):
    target, _, schema = landed
    srv = serving.Server(target, "--schema", str(schema))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def rebuilt(landed, server):
    """The index built (again, if the first test already did): the tests after the first must
    not depend on running in one worker after it."""
    target, _, schema = landed
    argv = ["index", "rebuild", "--schema", str(schema), "--project", target.project]
    assert cli.main([*argv, "--instance", target.instance]) == 0
    serving.wait_until(lambda: _ok(server.call("/api/suggest?type=tagv&q=&max=10")), 20)
    return server


def star(metric: str = METRIC) -> dict:
    q = {"metric": metric, "aggregator": "none", "tags": {"carrier": "*", "flight": "*"}}
    return serving.grafana_body([q], flights.START, flights.START + 366 * 24 * HOUR)


def test_unlisted_data_is_an_error_naming_the_rebuild_until_it_runs(landed, server):
    target, _, schema = landed
    for path in (
        "/api/suggest?type=tagv&q=&max=10",
        f"/api/search/lookup?m={quote(METRIC)}",
    ):
        status, body = server.call(path)
        assert status == 503 and "btts index rebuild --schema" in body["error"]["message"], body
    status, body = server.call("/api/query", star())
    assert status == 503 and "FLIGHTS_SERIES" in body["error"]["message"]
    argv = ["index", "rebuild", "--schema", str(schema), "--project", target.project]
    assert cli.main([*argv, "--instance", target.instance]) == 0
    status, _ = serving.wait_until(lambda: _ok(server.call("/api/suggest?type=tagv&q=&max=10")), 20)
    assert status == 200


def _ok(reply):
    assert reply[0] == 200, reply
    return reply


def test_the_index_answers_suggest_lookup_and_star(landed, rebuilt):
    server = rebuilt
    rows = landed[1]
    carriers = sorted({r["carrier"] for r in rows})
    status, got = server.call("/api/suggest?type=tagv&q=A&max=3")
    values = sorted({r["carrier"] for r in rows} | {r["flight"] for r in rows})
    assert got == [v for v in values if v.startswith("A")][:3]
    # lookup: only series that hold the metric; totalResults is what it returns (OpenTSDB)
    have = {(r["carrier"], r["flight"]) for r in rows if "arr_delay" in r}
    assert have != {(r["carrier"], r["flight"]) for r in rows}, "some flights lack arr_delay"
    status, found = server.call(f"/api/search/lookup?m={quote(METRIC)}&limit=0")
    assert {(s["tags"]["carrier"], s["tags"]["flight"]) for s in found["results"]} == have
    assert found["totalResults"] == len(have)
    status, found = server.call(f"/api/search/lookup?m={quote(METRIC)}{{carrier=*}}&limit=5")
    assert len(found["results"]) == 5 and found["totalResults"] == 5
    one = f"{METRIC}{{carrier={carriers[0]}}}"
    status, found = server.call(f"/api/search/lookup?m={quote(one)}&limit=0")
    assert {s["tags"]["carrier"] for s in found["results"]} == {carriers[0]}
    # every value of a * over both tags, as landed
    status, answer_ = server.call("/api/query", star())
    assert status == 200
    want: dict = {}
    for r in rows:
        if "arr_delay" in r:
            ms = flights.read_scale_ms(r["time_hour"])
            want.setdefault((r["carrier"], r["flight"]), {})[ms] = Decimal(r["arr_delay"])
    got = {
        (s["tags"]["carrier"], s["tags"]["flight"]): {
            int(t): Decimal(str(v)) for t, v in s["dps"].items()
        }
        for s in answer_
    }
    assert got == want


def test_an_unknown_tag_value_is_opentsdbs_no_such_name(rebuilt):
    server = rebuilt
    q = {"metric": METRIC, "aggregator": "sum", "tags": {"carrier": "ZZ"}}
    status, body = server.call("/api/query", serving.grafana_body([q], flights.START, None))
    assert status == 400
    assert body["error"]["message"] == "No such name for 'tagv': 'ZZ'"
    assert body["error"]["details"] == "No such name for 'tagv': 'ZZ'"
    status, body = server.call(f"/api/search/lookup?m={quote(METRIC + '{carrier=ZZ}')}")
    assert status == 404 and body["error"]["message"] == "Unable to resolve one or more UIDs"
    assert body["error"]["details"] == "No such name for 'tagv': 'ZZ'"
    # a wildcard is not resolved (OpenTSDB resolves literal_or only): an empty answer
    q = {"metric": METRIC, "aggregator": "sum", "tags": {"carrier": "ZZ*"}}
    status, body = server.call("/api/query", serving.grafana_body([q], flights.START, None))
    assert (status, body) == (200, [])


def test_a_lookup_by_a_tag_key_or_value_alone_lists_every_metrics_series(landed, rebuilt):
    """``m={carrier=}`` (GET) and ``{"tags": [{"key": "carrier", "value": null}]}`` (POST) list
    the series of every metric holding the key, ``m={=AA}`` those with that value under any
    key; each result names its series by btts' TSUID. A key nobody has is OpenTSDB's 404."""
    server = rebuilt
    rows = landed[1]
    want = {
        (f"flights.{m}", r["carrier"], r["flight"]) for r in rows for m in flights.METRICS if m in r
    }
    status, found = server.call("/api/search/lookup?m={carrier=}&limit=0")
    assert status == 200 and "metric" not in found
    got = [(s["metric"], s["tags"]["carrier"], s["tags"]["flight"]) for s in found["results"]]
    assert sorted(got) == sorted(want) and found["totalResults"] == len(want)
    assert all(s["tsuid"] == tsuids.encode(s["metric"], s["tags"]) for s in found["results"])
    body = {"metric": METRIC, "tags": [{"key": "carrier", "value": None}], "limit": 0}
    status, posted = server.call("/api/search/lookup", body)
    status_get, gotten = server.call(f"/api/search/lookup?m={quote(METRIC)}{{carrier=}}&limit=0")
    assert status == status_get == 200 and posted["results"] == gotten["results"]
    assert {s["metric"] for s in posted["results"]} == {METRIC}
    carrier = sorted({r["carrier"] for r in rows})[0]
    status, found = server.call(f"/api/search/lookup?m={{={carrier}}}&limit=0")
    assert {s["tags"]["carrier"] for s in found["results"]} == {carrier}
    assert len(found["results"]) == len({w for w in want if w[1] == carrier})
    status, body = server.call("/api/search/lookup?m={nope=}")
    assert status == 404 and body["error"]["details"] == "No such name for 'tagk': 'nope'"
    status, body = server.call("/api/search/lookup?m={}")
    assert status == 400


# -- timeouts, without a server ----------------------------------------------------------------


class _Cancelling:
    def read(self, name, query, timeout):
        raise gexc.Cancelled("the server cancelled the call")


def test_a_cancelled_or_failed_read_is_a_504_or_503_never_a_500(monkeypatch):
    reader = reads.Reader(config.Target("p", "i"))
    monkeypatch.setattr(reader, "rows", _Cancelling())
    with pytest.raises(Timeout) as err:
        reader.read("T", None)
    assert routes.status(err.value) == 504

    class _Failing:
        def read(self, name, query, timeout):
            raise gexc.InternalServerError("boom")

    monkeypatch.setattr(reader, "rows", _Failing())
    with pytest.raises(Unavailable) as err:
        reader.read("T", None)
    assert routes.status(err.value) == 503


def test_a_request_that_timed_out_is_answered_at_once_for_a_while(monkeypatch):
    cat = catalog.Catalog(catalog.builtin_schemas())
    svc = service.Service(cat, config.Target("p", "i"), answer.Limits())
    calls = []

    def slow(*args):
        calls.append(1)
        raise Timeout(reads.LATE)

    monkeypatch.setattr(svc, "_tag_values", slow)
    for _ in range(3):
        with pytest.raises(Timeout) as err:
            svc.suggest("tagv", "web", 25)
        assert routes.status(err.value) == 504 and "deadline" in str(err.value)
    assert len(calls) == 1  # remembered: not tried again by every request
