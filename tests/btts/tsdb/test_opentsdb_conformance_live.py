"""The conformance suite's stored sets landed in the emulator by the generic job and asked
through ``btts serve``'s HTTP path (key ranges over the read window, decoding, rendering):
a few requests each, compared with the re-written OpenTSDB iterators
(:mod:`tests.support.opentsdb_reference`). The full matrix runs without the emulator in
``tests/btts/tsdb/test_opentsdb_conformance.py``."""

from __future__ import annotations

import json

import pytest

from btts.samples import data as samples
from btts_cli import main as cli
from tests.support import serving
from tests.support.jobs import read_dead_letters, run_job
from tests.support.opentsdb_conformance import (
    SETS,
    WINDOWS,
    point_value,
    reference_answer,
    request_body,
    same_series,
)

SCHEMA = """\
dataset: conformance
event:
  time: t
  fields:
    t: time
    host: {type: text, whitespace: none}
    v: number
tables:
  - name: POINTS
    pattern: TS-COLS
    families: [{name: f, max_versions: 1}]
    key: [{text: host}, {epoch_ms: t}]
    columns: [{family: f, qualifier: v, value: v}]
"""
REQUESTS = [  # (stored set, window, aggregator, downsample, rate options)
    ("gauges", "aligned", "sum", None, None),
    ("gauges", "misaligned", "avg", "1m-avg", None),
    ("gauges", "misaligned", "count", "1m-avg-null", None),
    ("gauges", "short", "zimsum", "2m-min-zero", None),
    ("counters", "aligned", "sum", None, {"counter": True, "dropResets": True}),
    ("counters", "misaligned", "sum", "1m-avg", {"counter": True, "counterMax": 1000}),
    ("integers", "misaligned", "max", "5m-max", None),
    ("integers", "aligned", "sum", "0all-sum", None),
]


@pytest.fixture(scope="module")
def server(bigtable_emulator, tmp_path_factory):
    work = tmp_path_factory.mktemp("live")
    target = serving.new_target()
    schema = work / "conformance.yaml"
    schema.write_text(SCHEMA, encoding="utf-8")
    lines = [  # the value as its exact decimal text (a JSON number)
        json.dumps({"t": samples.iso_ms(t), "host": f"{name}-{host}"})[:-1] + f', "v": {v}}}'
        for name, stored in SETS.items()
        for host, pts in stored.items()
        for t, v in pts
    ]
    source = work / "points.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    where = ["--project", target.project, "--instance", target.instance]
    assert cli.main(["tables", "create", "--schema", str(schema), *where]) == 0
    run_job("generic", target, source, work / "dead", [f"--schema={schema}"])
    assert read_dead_letters(work / "dead") == []
    srv = serving.Server(target, "--schema", str(schema))
    yield srv
    srv.stop()


@pytest.mark.parametrize("data,window,agg,ds,rate", REQUESTS)
def test_btts_serve_answers_as_opentsdb_over_the_emulator(server, data, window, agg, ds, rate):
    start, end = WINDOWS[window]
    body = request_body(start, end, agg, ds, rate)
    (q,) = body["queries"]
    q["metric"] = "conformance.v"
    q["filters"][0]["filter"] = f"{data}-*"
    status, text = server.call("/api/query", body)
    assert status == 200, text
    want = reference_answer(SETS[data], body)
    assert len(text) == len(want)
    for got, (_keys, dps) in zip(text, want, strict=True):
        pts = [(int(t), point_value(v)) for t, v in got["dps"].items()]
        assert same_series(pts, dps), (pts[:6], dps[:6])
