"""The series index folded in the build step (transforms/ingest/index_fold.py, the generated
builder's fold: transforms/builder/fold_source.py) lists exactly what the index step of its
own lists (transforms/rollup/series_index.py: series_fold.fold_built over the built rows), for
the built-in schemas and a user's with optional fields, a map, a padded prefix and a time not
last; a record that fails after some of its fields folds nothing, and one built apart for the
limits check folds once it passed."""

from __future__ import annotations

import json
import random

import pytest

from btts.samples import data as samples
from transforms import schema as schema_lib
from transforms.builder.builder import Builder
from transforms.ingest import block_rows
from transforms.ingest.index_fold import BundleIndex, IndexPlan
from transforms.limits import MAX_QUALIFIER_BYTES
from transforms.scans import series_fold
from transforms.scans import series_index as layout
from transforms.text import events
from transforms.text.timefmt import iso as _iso

USER_SCHEMA = """
dataset: probes
doc: probes with optional readings
event:
  time: ts
  fields:
    host: {type: text, max_length: 64}
    site: {type: text, max_length: 16}
    ts: time
    temp: number
    hum: {type: number, optional: true}
    volts: {type: integer, optional: true}
    extra: {type: map, optional: true}
    note: {type: text, optional: true, max_length: 30000}
    ended: {type: time, optional: true, after: ts}
tables:
  - name: BY_HOST
    pattern: TS-COLS
    families:
      - {name: r, max_versions: 1}
      - {name: x, max_versions: 1}
    key:
      - text: host
      - text: site
      - epoch_ms: ts
    columns: &columns
      - {family: r, qualifier: temp, value: temp}
      - {family: r, qualifier: hum, value: hum}
      - {family: x, each: extra}
      - {family: r, qualifier: volts, value: volts}
      - {family: r, qualifier: note, value: note}
  - name: BY_TIME
    pattern: TS-COLS
    families:
      - {name: r, max_versions: 1}
      - {name: x, max_versions: 1}
    key:
      - epoch_ms: ts
      - text: host
    columns: *columns
  - name: PADDED
    pattern: TS-COLS
    families:
      - {name: r, max_versions: 1}
    key:
      - const: P
      - {space_pad: site, width: 8}
      - epoch_ms: ts
    columns:
      - {family: r, qualifier: hum, value: hum}
      - {family: r, qualifier: volts, value: volts}
  - name: SITE
    pattern: TS-COLS
    families:
      - {name: r, max_versions: 1}
    key:
      - text: site
      - epoch_ms: ts
    columns:
      - {family: r, qualifier: temp, value: temp}
index: {table: PROBES_SERIES}
"""


def _probe_records(rng: random.Random) -> list[dict]:
    out = []
    for n in range(300):
        ms = 1_500_000_000_000 + rng.randrange(0, 10**8)
        record = {"host": f"h{rng.randrange(5)}", "site": rng.choice("ab"), "ts": _iso(ms)}
        record["temp"] = round(rng.uniform(-5, 30), 2)
        if rng.random() < 0.5:
            record["hum"] = round(rng.uniform(0, 1), 3)
        if rng.random() < 0.3:
            record["volts"] = rng.randrange(300)
        if rng.random() < 0.4:
            names = rng.sample(["a", "b", "c", "d"], rng.randrange(1, 4))
            record["extra"] = {k: rng.randrange(10) for k in names}
        if rng.random() < 0.1:
            record["note"] = "n" * rng.choice([3, MAX_QUALIFIER_BYTES + 10])  # some checked apart
        if n % 25 == 0:
            record["ended"] = _iso(ms + 1)
        out.append(record)
    return out


def _market_records(rng: random.Random) -> list[dict]:
    out = []
    for _ in range(200):
        ms = 1_500_000_000_000 + rng.randrange(0, 10**7)
        out.append(
            {
                "exchange": rng.choice(["NASDAQ", "NYSE"]),
                "symbol": rng.choice(["GOOG", "ZXZZT", "AB"]),
                "bid": 1.5,
                "ask": 1.75,
                "bid_size": rng.randrange(100),
                "ask_size": 3,
                "last_sale": 1.6,
                "last_size": 7,
                "quote_time": _iso(ms),
                "trade_time": _iso(ms - rng.randrange(1000)),
                "volume": 10,
            }
        )
    return out


def _bad_records(schema_name: str) -> list[dict]:
    """Records that fail after some of their fields were read, each with a new head and a
    time far outside the good ones' (any fold of them would show)."""
    late = _iso(1_900_000_000_000)
    if schema_name == "server_metrics":
        return [
            {"hostname": "bad-host", "timestamp": late, "metrics": {"cpu": "x"}},
            {"hostname": "bad-host2", "timestamp": late, "metrics": {"cpu": 1, "CPU": 2}},
        ]
    if schema_name == "market_data":
        good = _market_records(random.Random(0))[0]
        return [{**good, "symbol": "BADS", "quote_time": late, "volume": -1}]
    return [
        {"host": "badh", "site": "c", "ts": late, "temp": 1, "ended": _iso(1_000)},  # order
        {"host": "badh", "site": "c", "ts": late, "temp": 1, "extra": {"a": "x"}},
        {"host": "x" * 5000, "site": "c", "ts": late, "temp": 1},  # too long for a key
    ]


CASES = {
    "server_metrics": lambda rng: list(samples.metric_records(hosts=4, seconds=3600)),
    "market_data": _market_records,
    "probes": _probe_records,
}


def _schema(name: str) -> schema_lib.Schema:
    if name == "probes":
        return schema_lib.loads(USER_SCHEMA, "probes.yaml")
    return schema_lib.builtin(name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_builders_fold_lists_what_the_index_step_lists(name):
    schema = _schema(name)
    builder = Builder(schema)
    indexed = [t.name for t in layout.indexed_tables(schema) if t.name in builder.tables]
    rng = random.Random(name)
    records = CASES[name](rng) + _bad_records(name)
    rng.shuffle(records)
    lines = [json.dumps(r) for r in records]
    index = BundleIndex(IndexPlan.of(schema, indexed), builder, builder.framer())
    assert {f.table for f in builder.folding_framer(indexed)[1]} == set(indexed)  # all folded
    series = {t: layout.TableSeries(schema, schema.table(t)) for t in indexed}
    accs: dict = {}
    bad = 0
    for at in range(0, len(lines), 7):
        out = block_rows.build_block(
            "f", "jsonl", lines[at : at + 7], events.parse_json_object, builder.rows,
            index.frame, checked=index.checked,
        )  # fmt: skip
        bad += len(out.bad)
        assert index.add(out.batch) == 0
        assert series_fold.fold_built(accs, series, out.batch) == 0  # the index step's fold
    assert bad == len(_bad_records(name))
    want: dict = {}
    for table, acc in accs.items():
        series_fold.index_rows(series[table], acc, want)
    got = index.drain()
    assert got is not None and want
    assert list(got) == list(layout.mutations(schema.index.table, want))
    assert got.entries == layout.mutations(schema.index.table, want).entries
    assert index.drain() is None  # drained: the next bundle starts empty
    keys = {layout.decode(row[1])[0] for row in got}
    assert keys >= {"s", "m", "v"}
    assert not any("bad" in part for row in got for part in layout.decode(row[1]))


def test_a_builder_that_cannot_fold_leaves_it_to_the_blocks_rows():
    """A framed builder wrapped in the job's own checks (no owner): every table is folded
    from the block's rows, to the same index."""
    schema = schema_lib.builtin("server_metrics")
    builder = Builder(schema)
    lines = [json.dumps(r) for r in samples.metric_records(hosts=3, seconds=1800)]
    plan = IndexPlan.of(schema, ["METRIC"])
    folding = BundleIndex(plan, builder, builder.framer())
    apart = BundleIndex(plan, None, builder.frame_into)
    assert apart.checked is None and apart.frame == builder.frame_into
    for index in (folding, apart):
        out = block_rows.build_block(
            "f", "jsonl", lines, events.parse_json_object, builder.rows, index.frame
        )
        index.add(out.batch)
    assert list(folding.drain()) == list(apart.drain())


def test_name_lists_the_map_parser_does_not_keep_fold_as_the_index_step_does():
    """A map of more names than the parser caches gives each record a new (equal) tuple of
    qualifiers, which the fold's line, testing its head's last one by identity, sends the
    long way; hosts switching between two name lists too: the same index rows either way."""
    schema = schema_lib.builtin("server_metrics")
    builder = Builder(schema)
    wide = tuple(f"m{n:02d}" for n in range(70))  # past the parser's cache of name lists
    records = [
        *samples.metric_records(hosts=3, seconds=900, interval_s=60, metrics=wide),
        *samples.metric_records(hosts=2, seconds=900, interval_s=90, metrics=wide[:3]),
    ]
    random.Random(3).shuffle(records)
    lines = [json.dumps(r) for r in records]
    index = BundleIndex(IndexPlan.of(schema, ["METRIC"]), builder, builder.framer())
    series = {"METRIC": layout.TableSeries(schema, schema.table("METRIC"))}
    accs: dict = {}
    for at in range(0, len(lines), 10):
        out = block_rows.build_block(
            "f", "jsonl", lines[at : at + 10], events.parse_json_object, builder.rows,
            index.frame, checked=index.checked,
        )  # fmt: skip
        assert not out.bad and index.add(out.batch) == 0
        series_fold.fold_built(accs, series, out.batch)  # the index step's fold
    want = series_fold.index_rows(series["METRIC"], accs["METRIC"])
    got = index.drain()
    assert list(got) == list(layout.mutations(schema.index.table, want))
    assert got.entries == layout.mutations(schema.index.table, want).entries
    assert len({layout.decode(row[1])[3] for row in got if row[1].startswith(b"s")}) == 70
