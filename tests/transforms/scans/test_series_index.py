"""The series index (transforms/scans/series_index.py): what a job's rows fold into, checked
against the events themselves; keys that sort as their components; bundles that fold to the
same index in any grouping (what makes retries and re-runs exact); and on the emulator, a job
run under the retry harness leaves exactly what a full scan of its tables finds, which
``btts index rebuild`` restores after the index is damaged."""

from __future__ import annotations

import datetime as dt
import json
import random
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from btts import config
from btts.query import index_rebuild
from btts.samples import data as samples
from btts_cli import demo
from btts_cli import main as cli
from tests.support import REPO
from tests.support.jobs import compiled, dump, run_job, write_lines
from tests.support.jobs import retry_harness as harness_on
from transforms import schema as schema_lib
from transforms.builder import builder as generic
from transforms.builder import wire
from transforms.scans import series_fold
from transforms.scans import series_index as layout
from transforms.text import events

METRIC_FIELDS = ("pressure", "temperature", "humidity", "altitude")


def _iso_ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def fold_rows(dataset: str, rows) -> dict:
    """The index rows (key → [first, last]) the given data rows fold into."""
    schema = schema_lib.builtin(dataset)
    series = {t.name: layout.TableSeries(schema, t) for t in layout.indexed_tables(schema)}
    acc: dict = defaultdict(dict)
    for table, key, cells in rows:
        if table in series:
            assert series_fold.fold(acc[table], series[table], key, cells)
    out: dict = {}
    for table, folded in acc.items():
        series_fold.index_rows(series[table], folded, out)
    return out


def expected(entries) -> dict:
    """Index rows from ``(table, (field, entry), tag values, event ms)`` taken from events."""
    spans: dict = {}
    for table, metric, values, ms in entries:
        for key in (
            layout.encode(("s", table, *metric, *values)),  # s | TABLE | FIELD | ENTRY | TAGS
            layout.metric_key(table, "", metric),
            *(layout.value_key("", v) for v in values),
        ):
            lo, hi = spans.get(key, (ms * 1000, ms * 1000))
            spans[key] = (min(lo, ms * 1000), max(hi, ms * 1000))
    sampled = [k for k in spans if layout.sampled(k) and not k.startswith(b"m")]
    return {**spans, **{layout.DIRECTORY + k: spans[k] for k in sampled}}


def _built(dataset: str, records) -> list:
    """The rows the dataset's job builds of ``records`` (decoded as the job decodes a line)."""
    build = compiled(dataset).rows
    return [row for r in records for row in build(events.parse_json_object(json.dumps(r)))]


def test_every_column_pattern_folds_into_the_series_its_events_hold():
    """The four balloon layouts (columns, a protobuf blob, a cell per event, a row per metric
    whose values are qualifiers) list the same series, first and last times from the events."""
    records = list(samples.balloon_records(2, 90))
    got = {
        k: tuple(v)
        for k, v in fold_rows("weather_balloons", _built("weather_balloons", records)).items()
    }
    tables = [t.name for t in layout.indexed_tables(schema_lib.builtin("weather_balloons"))]
    assert len(tables) == 4
    want = expected(
        (t, (f, ""), (r["location"], str(r["balloon_id"])), _iso_ms(r["timestamp"]))
        for r in records
        for t in tables
        for f in METRIC_FIELDS
    )
    assert got == want


def test_map_entries_and_tenants_are_series_of_their_own():
    records = list(samples.metric_records(hosts=3, seconds=600, interval_s=60))
    got = fold_rows("server_metrics", _built("server_metrics", records))
    want = expected(
        ("METRIC", ("metrics", name.upper()), (r["hostname"],), _iso_ms(r["timestamp"]))
        for r in records
        for name in r["metrics"]
    )
    assert {k: tuple(v) for k, v in got.items()} == want
    devices = list(samples.device_records(2, 1))
    folded = fold_rows("devices", _built("devices", devices))
    tenants = {r["tenant"] for r in devices}
    scoped = {layout.decode(k)[1] for k in folded if layout.decode(k)[0] == "v"}
    assert scoped == {"", *tenants}  # every value once globally, once in its own tenant
    for tenant in tenants:
        own = {layout.decode(k)[2] for k in folded if layout.decode(k)[:2] == ["v", tenant]}
        others = {r["device"] for r in devices if r["tenant"] != tenant}
        assert tenant in own and not own & others


BUILT = {  # small samples of every built-in dataset whose job writes indexed tables
    "server_metrics": lambda: samples.metric_records(hosts=3, seconds=600, interval_s=60),
    "market_data": lambda: samples.tick_records(2, 3600),
    "weather_balloons": lambda: samples.balloon_records(2, 30),
    "battery": lambda: samples.battery_records(3, 120, 5),
    "game_results": lambda: samples.game_records(4),
    "garden": lambda: samples.garden_records(),
    "devices": lambda: samples.device_records(2, 1),
}


@pytest.mark.parametrize("dataset", sorted(BUILT))
def test_a_jobs_batches_fold_as_each_row_does(dataset):
    """The jobs' fast path (fold_built: a head, qualifiers and one stamp per row) lists the
    same index rows as folding each row apart (what a rebuild does), whatever the batches,
    their mix of tables and their order; a row without a cell lists nothing."""
    rows = _built(dataset, BUILT[dataset]())
    rows.append((rows[0][0], rows[0][1].replace(b"1", b"2"), ()))
    rng = random.Random(dataset)
    rng.shuffle(rows)
    schema = schema_lib.builtin(dataset)
    series = {t.name: layout.TableSeries(schema, t) for t in layout.indexed_tables(schema)}
    accs: dict = {}
    at = 0
    while at < len(rows):
        step = rng.randint(1, 40)
        assert series_fold.fold_built(accs, series, rows[at : at + step]) == 0
        at += step
    got: dict = {}
    for table, acc in accs.items():
        assert series_fold.spans(series[table], acc)[1] == 0
        series_fold.index_rows(series[table], acc, got)
    want = fold_rows(dataset, rows)
    assert {k: tuple(v) for k, v in got.items()} == {k: tuple(v) for k, v in want.items()}
    assert any(layout.decode(k)[0] == "s" for k in got)


def test_a_json_blob_lists_the_optional_fields_each_event_has():
    """A JSON blob's optional numeric field is a series of the events that hold it, found by
    its ``"name":`` in the builder's text; a text field holding that text does not count."""
    schema = schema_lib.load(REPO / "docs/schemas/ts-blob-app-events.yaml")
    build = generic.Builder(schema).rows
    records = [
        {
            "app": "shop",
            "user_id": 7,
            "ts": "2024-01-01T00:00:00Z",
            "action": "a",
            "duration_ms": 3,
        },
        {"app": "shop", "user_id": 7, "ts": "2024-01-01T00:01:00Z", "action": "duration_ms"},
        {"app": "shop", "user_id": 8, "ts": "2024-01-01T00:02:00Z", "action": '"duration_ms":1'},
        {"app": "web", "user_id": 9, "ts": "2024-01-01T00:03:00Z", "action": "c", "duration_ms": 0},
    ]
    rows = [row for r in records for row in build(events.parse_json_object(json.dumps(r)))]
    series = {t.name: layout.TableSeries(schema, t) for t in layout.indexed_tables(schema)}
    accs: dict = {}
    assert series_fold.fold_built(accs, series, rows) == 0
    got: dict = {}
    series_fold.index_rows(series["APP_EVENT"], accs["APP_EVENT"], got)
    want = expected(
        ("APP_EVENT", (name, ""), (r["app"], str(r["user_id"])), _iso_ms(r["ts"]))
        for r in records
        for name in ("user_id", "duration_ms")
        if name in r
    )
    assert {k: tuple(v) for k, v in got.items()} == want


def test_a_key_of_its_time_alone_is_one_series_without_tags():
    """A key holding only the time: its head is empty, not a key of the wrong shape."""
    text = (REPO / "docs/schemas/ts-cols-stock-ticks.yaml").read_text()
    text = text.replace("      - text: symbol\n", "")
    text = text[: text.index("queries:")] + text[text.index("advisor:") :]
    schema = schema_lib.loads(text.replace("  query_fields: [symbol]", ""))
    build = generic.Builder(schema).rows
    ticks = [
        {"symbol": "A", "ts": f"2024-01-01T00:0{i}:00Z", "price": 1, "size": 2} for i in (3, 1)
    ]
    rows = [row for r in ticks for row in build(events.parse_json_object(json.dumps(r)))]
    series = {"TICK": layout.TableSeries(schema, schema.table("TICK"))}
    accs: dict = {}
    series_fold.fold_built(accs, series, rows)
    span = [_iso_ms(ticks[1]["ts"]) * 1000, _iso_ms(ticks[0]["ts"]) * 1000]
    want = {((), ("price", "")): span, ((), ("size", "")): span}
    assert series_fold.spans(series["TICK"], accs["TICK"]) == (want, 0)


TEXT = st.text(alphabet=st.sampled_from("ab\x00\x01\xff~é"), max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=4), st.lists(TEXT, min_size=1, max_size=4))
def test_index_keys_sort_as_their_components(a, b):
    """A key of leading components is the prefix of every longer one and keys sort as the
    lists of their components: a range of the index is a set of series."""
    assert layout.decode(layout.encode(a)) == a
    assert (layout.encode(a) < layout.encode(b)) == (a < b)
    assert layout.encode(a + b).startswith(layout.encode(a))


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXT, max_size=3), st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=3))
def test_a_tag_sets_series_keys_are_its_metrics_heads_and_its_encoded_tail(values, metrics):
    """Series keys made of parts encoded once (each metric's head, the tag set's tail) are the
    keys of every component encoded at once, separators and escapes included, each with the
    directory's row when sampled; asked again (the cache), the same."""
    schema = schema_lib.builtin("server_metrics")
    series = layout.TableSeries(schema, schema.table("METRIC"))
    want = []
    for metric in metrics:
        key = layout.encode(("s", "METRIC", *metric, *values))
        want.append((key, layout.DIRECTORY + key) if layout.sampled(key) else (key,))
    for _ in range(2):
        assert series.series_keys(tuple(values), tuple(metrics)) == sum(want, ())
        assert series.series_keys(tuple(values), tuple(metrics[:1])) == want[0]


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.binary(min_size=1, max_size=200),
        st.tuples(st.integers(0, 2**53), st.integers(0, 2**53)).map(sorted),
        max_size=5,
    )
)
def test_index_rows_carry_the_entries_the_writer_would_frame(spans):
    """The index's rows come with their request entries made (the writer sends them as they
    are): each the general encoder's framing of that row, whose cells are :func:`cells`."""
    batch = layout.mutations("IDX", spans)
    assert [key for _, key, _ in batch] == sorted(spans)
    for (table, key, row_cells), entry in zip(batch, batch.entries, strict=True):
        assert table == "IDX" and row_cells == layout.cells(*spans[key])
        assert entry == wire.framed(wire.entry((table, key, row_cells)))


_STAMP = st.integers(-(2**62), 2**62) | st.sampled_from(
    [0, 1, 127, 128, 2**14, layout.REVERSE - 1, layout.REVERSE, layout.REVERSE + 1]
)
_SPAN = st.tuples(_STAMP, _STAMP)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.binary(max_size=130) | st.integers(0, 20_000).map(lambda n: b"\x00\x01\xff" * n),
        st.sampled_from([(5, 9), (0, 0)]) | _SPAN,  # rows sharing a span share its cells
        max_size=8,
    )
)
def test_index_entries_made_in_one_pass_are_the_general_encoders_bytes(spans):
    """Hostile keys (empty, separators, past one-byte and two-byte lengths) and stamps (zero,
    negative, past the reversal, varints of one to ten bytes): the entries made a bundle at a
    time are the general encoder's bytes and marks_entry's, the rows the same cells."""
    batch = layout.mutations("IDX", spans)
    assert [key for _, key, _ in batch] == sorted(spans)
    for (table, key, row_cells), entry in zip(batch, batch.entries, strict=True):
        first, last = spans[key]
        assert table == "IDX" and row_cells == layout.cells(first, last)
        assert entry == wire.framed(wire.entry((table, key, row_cells)))
        marks = ((layout.FIRST, layout.REVERSE - first), (layout.LAST, last))
        assert entry == wire.marks_entry(key, "s", marks)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.randoms(use_true_random=False))
def test_any_bundling_and_any_retry_leave_the_same_index(bundles, rng):
    """Bundles fold apart and are written in any order, some twice: Bigtable keeps the newest
    stamp of each column, so the index is the one fold of every row."""
    rows = _built("server_metrics", samples.metric_records(hosts=4, seconds=900, interval_s=60))
    whole = fold_rows("server_metrics", rows)
    rng.shuffle(rows)
    cells: dict = {}
    writes = []
    for n in range(bundles):
        part = fold_rows("server_metrics", rows[n::bundles])
        writes += layout.mutations("IDX", part) * rng.randint(1, 2)
    rng.shuffle(writes)
    for _, key, row_cells in writes:
        for cell in row_cells:
            column = (key, cell.qualifier)
            cells[column] = max(cells.get(column, -1), cell.timestamp_us)  # newest stamp wins
    kept = {
        k: layout.seen([("s", q, b"", cells[(k, q)]) for q in (layout.FIRST, layout.LAST)])
        for k in whole
    }
    assert kept == {k: tuple(v) for k, v in whole.items()}


# -- on the emulator ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def landed(bigtable_emulator, tmp_path_factory):
    """Server metrics (with the hourly rollup) and tenant devices, landed by the real jobs under
    the retry harness (every bundle written half, then whole)."""
    work = tmp_path_factory.mktemp("index")
    target = config.Target("test-project", f"x{random.getrandbits(40):010x}")
    metrics = list(samples.metric_records(hosts=3, seconds=7800, interval_s=300))
    devices = list(samples.device_records(2, 1))
    with harness_on("half"):
        source = write_lines(work / "m.jsonl", [json.dumps(r) for r in metrics])
        run_job("server_metrics", target, source, work / "dead-m", ["--hourly_rollup"])
        path = write_lines(work / "d.jsonl", [json.dumps(r) for r in devices])
        argv = [f"--input={path}", f"--dead_letter={work / 'dead-d'}", "--create_tables"]
        argv += [f"--bigtable_project={target.project}", f"--bigtable_instance={target.instance}"]
        demo.run_job_spec(demo.DEVICE_JOB, argv)
    return target, metrics, devices


def scanned(target, dataset: str) -> dict:
    """The index rows a full scan of the dataset's tables finds (what a rebuild writes)."""
    schema = schema_lib.builtin(dataset)
    rows: dict = {}
    for table in layout.indexed_tables(schema):
        acc, _, skipped = index_rebuild.scan_series(target, schema, table)
        assert skipped == 0
        series_fold.index_rows(layout.TableSeries(schema, table), acc, rows)
    return {k: tuple(v) for k, v in rows.items()}


def stored(target, index: str) -> dict:
    cells: dict = defaultdict(list)
    for key, family, qualifier, value, stamp in dump(target, index, latest_only=True):
        cells[key].append((family, qualifier, value, stamp))
    return {k: layout.seen(c) for k, c in cells.items()}


@pytest.mark.parametrize(
    ("dataset", "index"),
    [("server_metrics", "SERVER_METRICS_SERIES"), ("devices", "DEVICES_SERIES")],
)
def test_a_retried_batch_run_leaves_the_index_a_full_scan_finds(landed, dataset, index):
    target, metrics, _ = landed
    assert stored(target, index) == scanned(target, dataset)
    if dataset == "server_metrics":  # and the events say the same of the points table
        want = expected(
            ("METRIC", ("metrics", name.upper()), (r["hostname"],), _iso_ms(r["timestamp"]))
            for r in metrics
            for name in r["metrics"]
        )
        got = stored(target, index)
        assert {k: got[k] for k in want if layout.decode(k)[0] == "s"} == {
            k: v for k, v in want.items() if layout.decode(k)[0] == "s"
        }
        hourly = {layout.decode(k)[1] for k in got if layout.decode(k)[0] == "s"}
        assert hourly == {"METRIC", "METRIC_HOURLY"}


def test_rebuild_makes_a_damaged_index_exact_again(landed, capsys):
    from google.cloud.bigtable.data import (
        BigtableDataClient,
        DeleteAllFromRow,
        RowMutationEntry,
        SetCell,
    )

    target = landed[0]
    before = stored(target, "SERVER_METRICS_SERIES")
    lost = sorted(before)[::3]
    stale = layout.encode(("s", "METRIC", "metrics", "GONE", "server9999.example.com"))
    with BigtableDataClient(project=target.project) as client:
        table = client.get_table(target.instance, "SERVER_METRICS_SERIES")
        entries = [RowMutationEntry(k, [DeleteAllFromRow()]) for k in lost]
        entries.append(RowMutationEntry(stale, [SetCell("s", b"last", b"", 5000)]))
        first = sorted(before)[
            1
        ]  # a first time earlier than the data says: only a rebuild fixes it
        entries.append(
            RowMutationEntry(first, [SetCell("s", b"first", b"", layout.REVERSE - 1000)])
        )
        table.bulk_mutate_rows(entries)
    assert stored(target, "SERVER_METRICS_SERIES") != before
    argv = ["index", "rebuild", "--project", target.project, "--instance", target.instance]
    schema_file = Path(schema_lib.DECLARATIONS) / "server_metrics.yaml"
    assert cli.main([*argv, "--schema", str(schema_file)]) == 0
    assert "stale ones deleted" in capsys.readouterr().out
    assert stored(target, "SERVER_METRICS_SERIES") == before


def test_offboarding_a_tenant_drops_its_series_from_the_index(landed):
    """Last: it changes the landed devices. The tenant's own series, metrics and values go;
    another tenant's (``acme2`` after ``acme``: a prefix of its name) stay as they were."""
    from btts.query import engine

    target = landed[0]
    before = stored(target, "DEVICES_SERIES")

    def mentions(key: bytes, tenant: str) -> bool:
        kind, *parts = layout.decode(key)
        if kind == "d":  # a directory row: the key after it
            kind, *parts = parts
        place = {"s": 3, "m": 1, "v": 0}[kind]
        return parts[place] == tenant

    assert any(mentions(k, "acme") for k in before) and any(mentions(k, "acme2") for k in before)
    engine.offboard_tenant(target, "acme")
    after = stored(target, "DEVICES_SERIES")
    assert not [k for k in after if mentions(k, "acme")]
    assert {k: v for k, v in after.items() if mentions(k, "acme2")} == {
        k: v for k, v in before.items() if mentions(k, "acme2")
    }
