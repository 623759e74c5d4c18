"""``/api/search/lookup`` on a schema without ``index:``: the keys give the series, but only
those whose rows hold the metric are listed (as OpenTSDB lists a metric's series), read from the
keys and the rows' qualifiers; more than the lookup may check is a 413 naming
``btts index rebuild``, never a list of series that may not hold the metric."""

from __future__ import annotations

import json
import uuid
from urllib.parse import quote

import pytest

from benchmarks import flights
from btts import config
from btts.tsdb import answer, catalog, holding, lookup, reads, routes, service
from btts.tsdb.errors import TooLarge
from pipelines import load
from tests.support import REPO, serving
from transforms import schema as schema_lib
from transforms.bigtable.filters import KEYS_ONLY
from transforms.errors import Timeout

METRIC = "flights.arr_delay"
MAPPED = "server_metrics.metrics"
BLOBS = REPO / "docs" / "schemas" / "ts-blob-app-events.yaml"  # one JSON blob per event
# user 2 never sent the optional duration_ms; user 3 only once
APP_EVENTS = [
    {"app": "web", "user_id": user, "ts": 1426536000000 + i * 60_000, "action": "click"}
    | ({"duration_ms": 7 * i} if user == 1 or (user == 3 and i == 1) else {})
    for user in (1, 2, 3)
    for i in range(3)
]
RESULT_KEYS = {"type", "metric", "tags", "limit", "time", "results", "startIndex", "totalResults"}


def _land(target: config.Target, schema, records: list[dict], work) -> None:
    path = work / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    argv = [f"--input={path}", f"--dead_letter={work / 'dead'}", "--create_tables"]
    argv += [f"--schema={schema}", f"--bigtable_project={target.project}"]
    load("generic").run([*argv, f"--bigtable_instance={target.instance}"])


@pytest.fixture(scope="module")
def landed(bigtable_emulator, tmp_path_factory):
    """Flights (some cancelled: no ``arr_delay``) and server metrics (host ``b`` never sent
    ``MEM``), each landed by its schema without ``index:``."""
    work = tmp_path_factory.mktemp("bare")
    target = config.Target("test-project", f"l{uuid.uuid4().hex[:12]}")
    rows = list(flights.synthetic(600))
    bare = work / "flights.yaml"
    bare.write_text(flights.schema_text().replace("index: {table: FLIGHTS_SERIES}\n", ""))
    (work / "f").mkdir()
    _land(target, bare, rows, work / "f")
    metrics_text = (schema_lib.DECLARATIONS / "server_metrics.yaml").read_text("utf-8")
    assert "index: {table: SERVER_METRICS_SERIES}\n" in metrics_text
    bare_metrics = work / "server_metrics.yaml"
    bare_metrics.write_text(metrics_text.replace("index: {table: SERVER_METRICS_SERIES}\n", ""))
    events = [
        {"hostname": host, "timestamp": f"2015-03-16T20:0{m}:00Z", "metrics": values}
        for m in range(3)
        for host, values in (("a", {"CPU": m, "MEM": 2 * m}), ("b", {"CPU": m + 1}))
    ]
    (work / "m").mkdir()
    _land(target, bare_metrics, events, work / "m")
    (work / "e").mkdir()
    _land(target, BLOBS, APP_EVENTS, work / "e")
    return target, rows, bare, bare_metrics


@pytest.fixture(scope="module")
def server(landed):
    target, _, bare, bare_metrics = landed
    schemas = ("--schema", str(bare), "--schema", str(bare_metrics), "--schema", str(BLOBS))
    srv = serving.Server(target, *schemas)
    yield srv
    srv.stop()


def _pairs(found: dict) -> set[tuple[str, str]]:
    return {(s["tags"]["carrier"], s["tags"]["flight"]) for s in found["results"]}


def test_only_the_series_holding_the_metric_are_listed(landed, server):
    rows = landed[1]
    have = {(r["carrier"], r["flight"]) for r in rows if "arr_delay" in r}
    every = {(r["carrier"], r["flight"]) for r in rows}
    assert have and have != every, "some flights lack arr_delay"
    status, found = server.call(f"/api/search/lookup?m={quote(METRIC)}&limit=0")
    assert status == 200, found
    assert set(found) == RESULT_KEYS and found["type"] == "LOOKUP"
    assert _pairs(found) == have and found["totalResults"] == len(have)
    # a metric every flight has lists them all: the check keeps, it does not only drop
    status, found = server.call(f"/api/search/lookup?m={quote('flights.distance')}&limit=0")
    assert status == 200 and _pairs(found) == every
    # a limit is filled with holding series only, in key order
    status, found = server.call(f"/api/search/lookup?m={quote(METRIC)}{{carrier=*}}&limit=5")
    assert status == 200 and found["totalResults"] == 5 and _pairs(found) <= have
    carrier = sorted({c for c, _ in every - have})[0]
    body = {"metric": METRIC, "tags": [{"key": "carrier", "value": carrier}], "limit": 0}
    status, posted = server.call("/api/search/lookup", body)
    assert status == 200 and _pairs(posted) == {p for p in have if p[0] == carrier}


def test_a_map_entry_is_listed_for_the_hosts_that_sent_it(server):
    status, found = server.call(f"/api/search/lookup?m={quote(MAPPED + '.MEM')}&limit=0")
    assert status == 200, found
    assert [s["tags"] for s in found["results"]] == [{"hostname": "a"}]
    status, found = server.call(f"/api/search/lookup?m={quote(MAPPED + '.CPU')}&limit=0")
    assert sorted(s["tags"]["hostname"] for s in found["results"]) == ["a", "b"]
    # no metric named: every served metric's series, each only where it is held
    status, found = server.call(f"/api/search/lookup?m={quote('{hostname=b}')}&limit=0")
    assert status == 200, found
    assert {(s["metric"], s["tags"]["hostname"]) for s in found["results"]} == {
        (MAPPED + ".CPU", "b")
    }


def test_an_optional_field_of_a_json_blob_is_found_in_the_value_on_the_server(server):
    status, found = server.call(f"/api/search/lookup?m={quote('app_events.duration_ms')}&limit=0")
    assert status == 200, found
    assert sorted(s["tags"]["user_id"] for s in found["results"]) == ["1", "3"]
    status, found = server.call(f"/api/search/lookup?m={quote('app_events.user_id')}&limit=0")
    assert sorted(s["tags"]["user_id"] for s in found["results"]) == ["1", "2", "3"]


def test_more_series_than_a_lookup_may_check_is_a_413_naming_the_rebuild(landed, monkeypatch):
    target, _, bare, _ = landed
    cat = catalog.Catalog([schema_lib.load(bare)])
    svc = service.Service(cat, target, answer.Limits())
    monkeypatch.setattr(holding, "MAX_CHECKED", 40)
    with pytest.raises(TooLarge) as err:
        svc.lookup(lookup.parse_m(METRIC, 0))
    assert routes.status(err.value) == 413
    assert "btts index rebuild" in str(err.value) and "index:" in str(err.value)
    found = svc.lookup(lookup.parse_m(METRIC, 3))  # a few holding series are found in time
    assert found["totalResults"] == 3


def test_more_key_values_than_may_be_enumerated_is_a_413_naming_the_rebuild(landed, monkeypatch):
    """The keys of a schema without an index hold more series than may be listed: the reads'
    refusal, its own line kept as the cause, says what to do (declare an index)."""
    target, _, bare, _ = landed
    svc = service.Service(catalog.Catalog([schema_lib.load(bare)]), target, answer.Limits())
    monkeypatch.setattr(reads, "MAX_DISTINCT", 1)
    with pytest.raises(TooLarge) as err:
        svc.lookup(lookup.parse_m(METRIC, 0))
    assert routes.status(err.value) == 413
    assert str(err.value) == f"{err.value.cause}; {holding.INDEX_HINT}"
    assert str(err.value.cause).startswith("More than 1 values of ")


def test_running_out_of_time_while_checking_is_a_504_naming_the_rebuild(landed):
    target, _, bare, _ = landed
    svc = service.Service(catalog.Catalog([schema_lib.load(bare)]), target, answer.Limits())
    assert svc.lookup(lookup.parse_m(METRIC, 2))["totalResults"] == 2  # the keys listed once
    svc.limits = answer.Limits(deadline_s=1e-6)  # the checks have no time left
    with pytest.raises(Timeout) as err:
        svc.lookup(lookup.parse_m(METRIC, 7))
    assert routes.status(err.value) == 504 and "btts index rebuild" in str(err.value)
    assert "holding flights.arr_delay" in str(err.value)


def test_a_rows_per_key_proves_the_metric_by_its_prefix():
    schema = schema_lib.builtin("weather_balloons")
    cat = catalog.Catalog([schema])
    metric = cat.get("weather_balloons.pressure")
    source = next(s for s in metric.points if s.table.name == "BALLOON_TB_COL")
    assert holding.proof(source) is KEYS_ONLY


def test_a_rows_per_table_lists_each_metrics_own_series(monkeypatch):
    """The rows' field is in the key's prefix: the series listed for one metric of a
    ``rows_per`` table are not another's (a cache shared across them would check the first
    metric's rows for the second)."""
    cat = catalog.Catalog([schema_lib.builtin("weather_balloons")])
    sources = [
        next(s for s in cat.get(name).points if s.table.name == "BALLOON_TB_COL")
        for name in ("weather_balloons.pressure", "weather_balloons.humidity")
    ]
    per = sources[0].table.rows_per.name

    def plan(reader, source, filters, window):
        return reads.Plan(source, combos=({per: source.field},))

    monkeypatch.setattr(reads, "plan", plan)
    svc = service.Service(cat, config.Target("p", "i"), answer.Limits())
    listed = [svc._key_series(None, s, ())[0][per] for s in sources]
    assert listed == [s.field for s in sources]
