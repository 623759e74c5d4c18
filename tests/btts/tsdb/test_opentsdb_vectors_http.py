"""The HTTP vectors of ``tests/data/opentsdb_vectors`` (``kind: http`` and ``kind: last``):
OpenTSDB 2.4.1's ``TestQueryRpc``, ``TestSuggestRpc``, ``TestSearchRpc`` and
``TestQueryRpcLastDataPoint`` asked of ``btts serve`` over one landing shared by the module
(BaseTsdbTest's long series as ``sys.cpu.user``/``sys.cpu.system``, the last-point tests'
points as ``lastdp.*``), never through :mod:`tests.support.opentsdb_reference`. ``/api/query/last``
is asked in process, with the clock the Java tests mock."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, quote

import pytest

from btts.samples import data as samples
from btts.tsdb import answer, catalog, last, service, tsuids
from btts.tsdb.errors import BadRequest
from btts_cli import main as cli
from tests.support import serving
from tests.support.jobs import read_dead_letters, run_job
from tests.support.opentsdb_vectors import DIFFERENCES, load
from transforms import schema as schema_lib

SYS = """\
dataset: sys
event:
  time: t
  fields:
    t: time
    host: {type: text, whitespace: none}
    cpu: {type: map, qualifier: as_is}
tables:
  - name: SYS_CPU
    pattern: TS-COLS
    families: [{name: c, max_versions: 1}]
    key: [{text: host}, {epoch_ms: t}]
    columns: [{family: c, each: cpu}]
"""
LASTDP = """\
dataset: lastdp
event:
  time: t
  fields:
    t: time
    host: {type: text, whitespace: none}
    user: {type: number, optional: true}
    one: {type: number, optional: true}
    none: {type: number, optional: true}
tables:
  - name: LASTDP
    pattern: TS-COLS
    families: [{name: f, max_versions: 1}]
    key: [{text: host}, {epoch_ms: t}]
    columns:
      - {family: f, qualifier: user, value: user}
      - {family: f, qualifier: one, value: one}
      - {family: f, qualifier: none, value: none}
index: {table: LASTDP_SERIES}
"""
HTTP = load("http")
LAST = load("last")


def _sys_events() -> list[dict]:
    """storeLongTimeSeriesSeconds(true, false): web01 1…300 and web02 300…1 every 30 s from
    1356998430, both metrics."""
    out = []
    for k in range(300):
        t = samples.iso_ms(1356998430000 + 30_000 * k)
        for host, v in (("web01", k + 1), ("web02", 300 - k)):
            out.append({"t": t, "host": host, "cpu": {"user": v, "system": v}})
    return out


def _last_events() -> list[dict]:
    out = []
    for ts in (1356998400000, 1388534400000):
        out.append({"t": samples.iso_ms(ts), "host": "web01", "user": 42})
        out.append({"t": samples.iso_ms(ts), "host": "web02", "user": 24, "one": 24})
    return out


def _land(target, work, name: str, text: str, events: list[dict]):
    schema = work / f"{name}.yaml"
    schema.write_text(text, encoding="utf-8")
    source = work / f"{name}.jsonl"
    source.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    where = ["--project", target.project, "--instance", target.instance]
    assert cli.main(["tables", "create", "--schema", str(schema), *where]) == 0
    run_job("generic", target, source, work / f"dead-{name}", [f"--schema={schema}"])
    assert read_dead_letters(work / f"dead-{name}") == []
    return schema


@pytest.fixture(scope="module")
def landed(bigtable_emulator, tmp_path_factory):
    work = tmp_path_factory.mktemp("vectors")
    target = serving.new_target()
    schemas = [
        _land(target, work, "sys", SYS, _sys_events()),
        _land(target, work, "lastdp", LASTDP, _last_events()),
    ]
    srv = serving.Server(target, *[arg for s in schemas for arg in ("--schema", str(s))])
    loaded = [schema_lib.load(s) for s in schemas]
    svc = service.Service(catalog.Catalog(loaded), target, answer.Limits())
    svc.refresh_catalog(0)  # the map entries, as btts serve finds them at start
    yield srv, svc
    srv.stop()


def _marks(cases: list) -> list:
    """A vector that waits for issue 50's other half (``needs``) is expected to fail until
    then (strictly: once it passes, the mark must go)."""
    out = []
    for case in cases:
        needs = case[1].get("needs")
        marks = [pytest.mark.xfail(strict=True, reason=f"needs the {needs} work")] if needs else []
        out.append(pytest.param(case, id=case[0], marks=marks))
    return out


def _message(body: object) -> str:
    error = body.get("error", {}) if isinstance(body, dict) else {}
    return f"{error.get('message', '')} {error.get('details', '')}"


@pytest.mark.parametrize("case", _marks(HTTP))
def test_opentsdb_http_vector(landed, case):
    _, v, _ = case
    srv, _svc = landed
    req = v["request"]
    body = req.get("body")
    raw = body.encode() if isinstance(body, str) else None
    status, got = srv.call(
        req["path"], body=None if raw is not None else body, raw=raw, method=req["method"]
    )
    if "difference" in v:
        assert v["difference"] in DIFFERENCES
        assert status == v["btts"] != v["status"], (status, got)
        return
    assert status == v["status"], (status, got)
    assert v.get("error", "") in _message(got)
    if "json" in v:
        assert got == v["json"]
    if "results" in v:
        assert len(got) == v["results"]
        assert all(r["metric"] == v.get("metric", r["metric"]) for r in got)
    for key, value in v.get("contains", {}).items():
        assert any(r.get("tags", {}).get(key) == value for r in got.get("results", [])), got


def _point(want: dict) -> dict:
    series = want["series"]
    out = {"timestamp": want["timestamp"], "value": want["value"]}
    out["tsuid"] = tsuids.encode(series["metric"], series["tags"])
    if want["resolved"]:
        out.update(metric=series["metric"], tags=series["tags"])
    return out


def _ask(svc, v: dict) -> list[dict]:
    def tsuid(s: dict) -> str:
        return tsuids.encode(s["metric"], s["tags"])

    if "body" in v:
        body = json.loads(json.dumps(v["body"]))
        for q in body.get("queries", []):
            if "tsuids" in q:
                q["tsuids"] = [tsuid(s) for s in q["tsuids"]]
        return last.answer_last(svc, last.parse_last_body(body), v["now"])
    query = v["query"]
    for s in v.get("tsuid_queries", []):
        query += f"&tsuids={tsuid(s)}"
    params = parse_qs(quote(query, safe="=&{},"), keep_blank_values=True)
    return last.answer_last(svc, last.parse_last_get(params), v["now"])


@pytest.mark.parametrize("case", _marks(LAST))
def test_opentsdb_last_vector(landed, case):
    _, v, _ = case
    _srv, svc = landed
    if "error" in v:
        with pytest.raises(BadRequest) as err:
            _ask(svc, v)
        assert v["error"] in str(err.value)
        return
    got = _ask(svc, v)
    want = [_point(p) for p in v["expect"]]
    key = lambda p: json.dumps(p, sort_keys=True)  # noqa: E731
    assert sorted(got, key=key) == sorted(want, key=key)
