"""The query layer: ranges planned from the declarations (pure), every query function against
the emulator with answers computed from the generated events alone (never by building keys),
the ``btts query`` command, and ``cbt read`` agreeing with it."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import uuid
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from btts import config
from btts.query import engine, render
from btts.samples import checks
from btts.samples import data as samples
from btts_cli import demo, query_command
from btts_cli import main as cli
from pipelines import nightly
from pipelines.nightly import dates
from tests.support import REPO
from tests.support.jobs import compiled, run_job, write_lines
from transforms.bigtable import filters
from transforms.bigtable.filter_proto import filter_pb
from transforms.errors import InvalidEvent
from transforms.scans import key_ranges, salted_reads
from transforms.schema import builtin_tables
from transforms.table_model import TIME_FORMATS, Family, KeyRecipe, Segment, TableDecl
from transforms.text import keys, timefmt
from transforms.text.events import parse_json_object

BATTERY = builtin_tables.get("BATTERY")
BATTERY_SALTED = builtin_tables.get("BATTERY_SALTED")
CURRENT_METRIC = builtin_tables.get("CURRENT_METRIC")
DEVICE = builtin_tables.get("DEVICE")
GAME_BY_DATE = builtin_tables.get("GAME_BY_DATE")
GAME_BY_PLAYER = builtin_tables.get("GAME_BY_PLAYER")
METRIC = builtin_tables.get("METRIC")
METRIC_RECENT = builtin_tables.get("METRIC_RECENT")
QUOTE = builtin_tables.get("QUOTE")
SENSOR = builtin_tables.get("SENSOR")

T0 = 1426535612045  # 2015-03-16T19:53:32.045Z


def ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def dec(value: object) -> Decimal:
    return Decimal(str(value))


no_key = checks.without_key


# -- pure: keys, prefixes and ranges from the declarations -------------------------------------


def test_a_host_time_range_is_the_documented_metric_range():
    assert key_ranges.time_range(METRIC, {"hostname": "server1.bbb.com"}, T0, T0 + 60_000) == (
        b"server1.bbb.com#1426535612045",
        b"server1.bbb.com#1426535672045",
    )


def test_fixed_width_segments_are_padded_in_ranges_too():
    start, end = key_ranges.time_range(QUOTE, {"exchange": "NYSE", "symbol": "IBM"}, T0, T0 + 1)
    assert (start, end) == (b"NYSE  #IBM  #1426535612045", b"NYSE  #IBM  #1426535612046")


def test_a_month_of_day_labels_ends_at_the_next_months_first_day():
    march = timefmt.month_bounds(2015, 3)
    assert key_ranges.time_range(GAME_BY_PLAYER, {"game": "LoL", "player": "Corrie"}, *march) == (
        b"LoL#Corrie#20150301",
        b"LoL#Corrie#20150401",
    )
    assert key_ranges.time_range(GAME_BY_DATE, {"game": "LoL"}, *march) == (
        b"LoL#20150301",
        b"LoL#20150401",
    )


def test_an_end_inside_a_bucket_keeps_that_bucket():
    # 2015-03-15T12:00Z is inside the day 20150315: its row must be read
    start, end = key_ranges.time_range(GAME_BY_DATE, {"game": "LoL"}, ms("2015-03-01T00:00:00Z"),
                                    ms("2015-03-15T12:00:00Z"))  # fmt: skip
    assert start <= b"LoL#20150315#Zoe" < end
    assert not start <= b"LoL#20150316#Ana" < end


def test_reversed_timestamps_swap_the_bounds_and_the_newest_sorts_first():
    span = key_ranges.time_range(METRIC_RECENT, {"hostname": "h"}, T0, T0 + 10)
    newer, older = (METRIC_RECENT.key.build({"hostname": "h", "ts": t}) for t in (T0 + 9, T0))
    assert newer < older
    assert span[0] == newer and span[0] <= older < span[1]
    assert span[1] == METRIC_RECENT.key.build({"hostname": "h", "ts": T0 - 1})


def test_prefixes_end_with_the_delimiter():
    assert key_ranges.key_prefix(DEVICE, {"tenant": "acme"}) == keys.tenant_prefix("acme")
    assert key_ranges.prefix_scan(DEVICE, {"tenant": "acme"}).ranges == ((b"acme#", b"acme$"),)
    assert key_ranges.key_prefix(BATTERY, {"user": "Corrie"}) == b"BATTERY#Corrie#"
    assert key_ranges.prefix_scan(CURRENT_METRIC, {}).ranges == (key_ranges.WHOLE_TABLE,)


def test_a_field_that_cannot_narrow_a_range_is_refused():
    with pytest.raises(ValueError, match="cannot narrow the read without PLAYER"):
        key_ranges.key_prefix(GAME_BY_PLAYER, {"game": "LoL", "date": T0})
    with pytest.raises(ValueError, match="colour not in the key"):
        key_ranges.key_prefix(GAME_BY_PLAYER, {"colour": "red"})
    with pytest.raises(ValueError, match="not a time"):
        key_ranges.time_range(GAME_BY_PLAYER, {"game": "LoL"}, T0, T0 + 1)
    with pytest.raises(ValueError, match="ends"):
        key_ranges.time_range(METRIC, {"hostname": "h"}, T0, T0)
    with pytest.raises(InvalidEvent, match="delimiter"):
        key_ranges.key_prefix(DEVICE, {"tenant": "ac#me"})


def test_single_rows_are_the_writers_keys():
    scan = key_ranges.row_scan(SENSOR, [{"meter": 987654, "date": ms("2017-07-26T10:00:00Z")}])
    assert scan.row_keys == (b"0000987654#20170726",)
    assert scan.cbt_args() == ["read", "SENSOR", "prefix=0000987654#20170726"]


def _values_for(decl) -> dict:
    sample = {
        "text": "abc",
        "tenant": "acme",
        "epoch_ms": T0,
        "reverse_ts": T0,
        "zero_pad": 42,
        "space_pad": "AB",
        "time": T0,
        "reverse_id": "12345",
        "reverse_domain": "maps.google.com",
    }
    return {s.field: sample[s.kind] for s in decl.key.segments if s.field}


@pytest.mark.parametrize("name", sorted(builtin_tables.all_tables()))
def test_split_key_inverts_every_declared_key(name):
    decl = builtin_tables.get(name)
    values = _values_for(decl)
    parts = key_ranges.split_key(decl, decl.key.build(values))
    for seg in decl.key.segments:
        if seg.kind == "time":  # calendar labels stay text
            assert parts[seg.field] == TIME_FORMATS[seg.arg](T0)
        elif seg.field:
            assert parts[seg.field] == values[seg.field], seg


@settings(max_examples=200, deadline=None)
@given(
    t=st.integers(0, 10**12),
    start=st.integers(0, 10**12),
    width=st.integers(1, 10**10),
)
def test_a_key_is_in_the_range_exactly_when_its_time_is(t, start, width):
    end = start + width
    for decl in (METRIC, METRIC_RECENT):
        low, high = key_ranges.time_range(decl, {"hostname": "h"}, start, end)
        key = decl.key.build({"hostname": "h", "ts": t})
        assert (low <= key < high) == (start <= t < end), decl.name


@settings(max_examples=200, deadline=None)
@given(t=st.integers(0, 4 * 10**12), start=st.integers(0, 4 * 10**12), width=st.integers(1, 10**11))
def test_a_bucket_row_is_read_when_its_bucket_meets_the_range(t, start, width):
    end = start + width
    low, high = key_ranges.time_range(GAME_BY_PLAYER, {"game": "g", "player": "p"}, start, end)
    key = GAME_BY_PLAYER.key.build({"game": "g", "player": "p", "date": t})
    day = t - t % 86_400_000
    meets = day < end and start < day + 86_400_000
    assert (low <= key < high) == meets


def test_salted_ranges_come_one_per_bucket():
    window = ms("2015-03-01T12:00:00Z"), ms("2015-03-01T13:00:00Z")
    plan = engine.builtin_query("battery", "battery_levels", {}, *window)
    assert [s.ranges for s in plan.scans] == [
        ((f"BATTERY#{b}#20150301120000000".encode(), f"BATTERY#{b}#20150301130000000".encode()),)
        for b in ("0", "1", "2")
    ]
    assert {s.table for s in plan.scans} == {BATTERY_SALTED.name}


def _salted(kind: str) -> TableDecl:
    """``X#<salt>#<time>#<id>``: the draft's salted key (a salt, epoch ms, a record id)."""
    segments = (
        Segment("const", arg="X"), Segment("salt", width=5, of=("t",)), Segment(kind, field="t"),
        Segment("zero_pad", field="id", width=4),
    )  # fmt: skip
    return TableDecl("X", (Family("m", max_versions=1),), KeyRecipe(segments), "TS-COLS")


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(["epoch_ms", "reverse_ts"]),
    t=st.integers(0, 2_000_000),
    start=st.integers(-1000, 2_000_000),
    width=st.integers(0, 300_000),
)
def test_a_salted_epoch_key_is_in_its_bucket_range_exactly_when_its_time_is(kind, t, start, width):
    decl = _salted(kind)
    key = decl.key.build({"t": t, "id": 7})
    ranges = key_ranges.salted_time_ranges(decl, key_ranges.Window(start, start + width))
    inside = [low <= key < high for low, high in ranges]
    assert sum(inside) == (start <= t < start + width)
    rows = [SimpleNamespace(key=decl.key.build({"t": m, "id": 1})) for m in (5, 900, 40)]
    prefixes = key_ranges.salt_prefixes(decl)[0]
    buckets = [[r for r in rows if r.key.startswith(p.encode())] for p in prefixes]
    merged = salted_reads.merge_in_time_order(
        decl, [sorted(b, key=lambda r: r.key) for b in buckets]
    )
    order = [5, 40, 900] if kind == "epoch_ms" else [900, 40, 5]
    assert [r.key for r in merged] == [decl.key.build({"t": m, "id": 1}) for m in order]


def test_the_latest_first_table_is_declared_and_built():
    assert builtin_tables.get("METRIC_RECENT") is METRIC_RECENT
    record = parse_json_object(
        '{"hostname": "server1.bbb.com", "timestamp": "2015-03-16T19:53:32.045Z", '
        '"metrics": {"cpu/cpu1_usr": 0.02}}'
    )
    (row,) = compiled("queries")(record)
    assert row.key == b"server1.bbb.com#9223370610319163762"
    assert [(c.family, c.qualifier, c.value, c.timestamp_us) for c in row.cells] == [
        ("METRIC", b"CPU/CPU1_USR", b"0.02", T0 * 1000)
    ]


def test_scans_become_client_queries():
    assert filters.read_query(key_ranges.Scan("T")) is None  # selects nothing: no read at all
    whole = filters.read_query(
        key_ranges.Scan("T", ranges=(key_ranges.WHOLE_TABLE,), latest_only=True)
    )
    assert whole.row_ranges == [] and whole.row_keys == [] and whole.filter is not None
    timed = filters.read_query(
        key_ranges.time_scan(METRIC, {"hostname": "h"}, key_ranges.Window(T0, T0 + 1000))
    )
    (span,) = timed.row_ranges
    assert (span.start_key, span.end_key) == (b"h#1426535612045", b"h#1426535613045")
    assert (span.start_is_inclusive, span.end_is_inclusive) == (True, False)
    sent = filter_pb(timed.filter)  # what ReadRows carries, as the data client sends it
    assert sent.WhichOneof("filter") == "timestamp_range_filter"
    span = sent.timestamp_range_filter
    assert (span.start_timestamp_micros, span.end_timestamp_micros) == (
        T0 * 1000,
        (T0 + 1000) * 1000,
    )


def test_calendar_helpers():
    assert timefmt.month_bounds(2015, 12) == (
        ms("2015-12-01T00:00:00Z"),
        ms("2016-01-01T00:00:00Z"),
    )
    assert timefmt.day_bounds(dt.date(2017, 7, 26)) == (1501027200000, 1501113600000)
    assert timefmt.parse_day("20170726") == timefmt.parse_day("2017-07-26") == dt.date(2017, 7, 26)
    assert timefmt.parse_month("2015-03") == timefmt.parse_month("201503") == (2015, 3)
    with pytest.raises(ValueError):
        timefmt.parse_month("2015-13")


def test_records_render_as_a_table_and_as_exact_json():
    rows = [{"exchange": "NASDAQ", "symbol": "ZXZZT", "ts_ms": T0, "bid": Decimal("600.55"),
             "ask": Decimal("600.60"), "bid_size": 500, "ask_size": 1500, "key": "k"}]  # fmt: skip
    table = render.to_table(rows)
    assert "2015-03-16T19:53:32.045Z" in table and "600.60" in table and "k" not in table.split()
    assert "key" in render.to_table(rows, show_keys=True)
    (obj,) = json.loads(render.to_json(rows))
    assert obj["ask"] == "600.60" and obj["ts_ms"] == T0 and obj["time"].endswith(".045Z")


# -- on the emulator: every query against answers from the generated events ---------------------


@pytest.fixture(scope="module")
def loaded(bigtable_emulator, tmp_path_factory):
    """One instance holding a small sample of every dataset, written by the real jobs."""
    target = config.Target("test-project", f"q{uuid.uuid4().hex[:12]}")
    work = tmp_path_factory.mktemp("queries")
    runs = iter(range(100))

    def ingest(job, records, extra=()):
        n = next(runs)
        path = write_lines(work / f"in{n}.jsonl", [json.dumps(r) for r in records])
        if isinstance(job, str):
            result = run_job(job, target, path, work / f"dead{n}", extra)
        else:
            argv = [f"--input={path}", f"--dead_letter={work / f'dead{n}'}", "--create_tables"]
            argv += [f"--bigtable_instance={target.instance}"]
            result = demo.run_job_spec(job, argv)
        assert result.counters.get("dead_letters", 0) == 0

    data = SimpleNamespace(target=target)
    data.metrics = list(samples.metric_records(hosts=4, seconds=120))
    ingest("server_metrics", data.metrics)
    ingest(demo.RECENT_JOB, data.metrics)
    data.meters = list(samples.meter_records(5, 2))
    ingest("smart_meters", data.meters)
    nightly.run(["--dates=20170725..20170726", f"--bigtable_instance={target.instance}"])
    data.ticks = list(samples.tick_records(2, every_s=900))
    ingest("market_data", data.ticks)
    data.balloons = list(samples.balloon_records(2, 90))
    for pattern in ("TB-COL", "TB-CELL", "TS-BLOB", "TS-COLS"):
        ingest("weather_balloons", data.balloons, [f"--balloon_pattern={pattern}"])
    data.battery = list(samples.battery_records(4, 240, 15))
    for layout in ("promoted", "salted"):
        ingest("battery", data.battery, [f"--battery_layout={layout}"])
    data.games = list(samples.game_records(4))
    ingest("game_results", data.games)
    data.garden = list(samples.garden_records())
    ingest("garden", data.garden, ["--garden_layout=both"])
    data.sales = list(samples.sales_records(3))
    ingest("sales", data.sales)
    data.devices = list(samples.device_records(2, 2))
    ingest(demo.DEVICE_JOB, data.devices)
    return data


def test_host_metrics_between_two_times(loaded):
    host = samples.host_name(2)
    start, end = samples.METRICS_START_MS + 20_000, samples.METRICS_START_MS + 45_000
    expected = [
        checks.metric_record(r)
        for r in loaded.metrics
        if r["hostname"] == host and start <= ms(r["timestamp"]) < end
    ]
    got = engine.ask(
        loaded.target, "server_metrics", "host_metrics", {"hostname": host}, start, end
    )
    assert len(expected) == 5  # 20 s … 40 s: start included, end excluded
    assert no_key(got) == expected
    assert got[0]["key"] == f"{host}#{start}"


def test_latest_metrics_of_the_fleet_and_of_chosen_hosts(loaded):
    fleet = list(checks.latest_metric_records(loaded.metrics).values())
    assert no_key(engine.ask(loaded.target, "server_metrics", "fleet_metrics")) == fleet
    chosen = [samples.host_name(3), samples.host_name(1)]
    got = engine.ask(loaded.target, "server_metrics", "latest_metrics", {"hostname": chosen})
    assert no_key(got) == [fleet[1], fleet[3]]


def test_latest_n_readings_newest_first(loaded):
    host = samples.host_name(0)
    mine = sorted((checks.metric_record(r) for r in loaded.metrics if r["hostname"] == host),
                  key=lambda r: -r["ts_ms"])  # fmt: skip

    def recent(count, before=None):
        window = (0, before) if before is not None else (None, None)
        return no_key(engine.ask(loaded.target, "queries", "recent_metrics", {"hostname": host},
                            *window, limit=count))  # fmt: skip

    assert recent(3) == mine[:3]
    assert recent(4, before=mine[5]["ts_ms"]) == mine[6:10]


def _meter_day(target, meter, day):
    window = timefmt.day_bounds(timefmt.parse_day(day))
    return no_key(engine.ask(target, "smart_meters", "meter_day", {"meter": meter}, *window))


def test_one_meter_for_one_day(loaded):
    days = checks.meter_day_records(loaded.meters)
    (got,) = _meter_day(loaded.target, 987654, "2017-07-26")
    assert len(got["reading"]) == 96
    assert got == days[(987654, "20170726")]
    assert _meter_day(loaded.target, 987654, "2017-07-27") == []


def test_all_meters_for_one_day_from_the_nightly_table(loaded):
    days = checks.meter_day_records(loaded.meters)
    for day in ("20170725", "20170726"):
        expected = [record for (_, d), record in days.items() if d == day]
        copy = dates.daily_table("SENSOR", day)
        got = engine.ask(loaded.target, "smart_meters", "meters_of_day_copy", table=copy)
        assert no_key(got) == expected
    (scan,) = query_command.plan(["meters-of-day", "--date", "2017-07-26"]).scans
    assert scan.table == "SENSOR_20170726" and scan.ranges == (key_ranges.WHOLE_TABLE,)


def test_quotes_and_trades_of_one_symbol_between_two_times(loaded):
    ex, sym, _ = samples.SYMBOLS[1]
    start, end = samples.TICKS_START_MS + 3 * 3_600_000, samples.TICKS_START_MS + 7 * 3_600_000
    mine = [r for r in loaded.ticks if (r["exchange"], r["symbol"]) == (ex, sym)]
    values = {"exchange": ex, "symbol": sym}
    for name, record in (
        ("quotes", checks.quote_record),
        ("trades", checks.trade_record),
    ):
        expected = sorted((record(r) for r in mine), key=lambda x: x["ts_ms"])
        expected = [x for x in expected if start <= x["ts_ms"] < end]
        assert len(expected) == 16
        assert (
            no_key(engine.ask(loaded.target, "market_data", name, values, start, end)) == expected
        )


def test_a_players_month_and_all_games_of_a_month(loaded):
    results = sorted(loaded.games, key=lambda r: (r["date"], r["player"]))
    april = timefmt.month_bounds(2015, 4)
    april_dota = [checks.game_record(g) for g in results
                  if g["game"] == "Dota" and g["date"].startswith("2015-04")]  # fmt: skip
    got = engine.ask(loaded.target, "game_results", "games_of_month", {"game": "Dota"}, *april)
    assert no_key(got) == april_dota
    corrie = [g for g in results if g["game"] == "LoL" and g["player"] == "Corrie"]
    march = [checks.game_record(g) for g in corrie if g["date"].startswith("2015-03")]
    values = {"game": "LoL", "player": "Corrie"}
    got = engine.ask(loaded.target, "game_results", "player_games", values,
                *timefmt.month_bounds(2015, 3))  # fmt: skip
    assert no_key(got) == march
    assert 0 < len(march) < len(corrie)


@pytest.mark.parametrize("pattern", ["TB-COL", "TB-CELL", "TS-BLOB", "TS-COLS"])
def test_balloon_measurements_are_the_same_in_every_layout(loaded, pattern):
    # a window starting mid-minute: the 00:20 event is out, whatever the bucket size
    start = samples.BALLOONS_START_MS + 20 * 60_000 + 30_000
    end = samples.BALLOONS_START_MS + 75 * 60_000
    expected = [
        checks.balloon_record(r)
        for r in loaded.balloons
        if r["balloon_id"] == 3699 and start <= ms(r["timestamp"]) < end
    ]
    assert len(expected) == 54
    name = query_command.BALLOON_QUERIES[pattern]
    values = {"location": "us-west2", "balloon_id": "3699"}
    got = engine.ask(loaded.target, "weather_balloons", name, values, start, end)
    assert no_key(got) == expected


HOST_1 = {"hostname": samples.host_name(1)}
METRICS_WINDOW = (samples.METRICS_START_MS + 20_000, samples.METRICS_START_MS + 45_000)
BATTERY_WINDOW = (ms("2015-03-01T01:00:00Z"), ms("2015-03-01T03:00:00Z"))


@pytest.mark.parametrize(
    "question",
    [
        ("server_metrics", "host_metrics", HOST_1, *METRICS_WINDOW),
        ("server_metrics", "fleet_metrics"),
        ("server_metrics", "latest_metrics", HOST_1),
        ("battery", "battery_levels", {}, *BATTERY_WINDOW),
    ],
)
def test_a_query_reads_the_rows_the_data_client_reads(loaded, question):
    """The engine reads with rows_stream: every scan gives what ``read_rows`` gives."""
    from google.cloud.bigtable.data import BigtableDataClient

    from transforms.mutations import ReadRow

    scans = engine.builtin_query(*question).scans
    target = loaded.target
    with BigtableDataClient(project=target.project) as client:
        for scan in scans:
            table = client.get_table(target.instance, scan.table)
            expected = [ReadRow.of(r) for r in table.read_rows(filters.read_query(scan))]
            assert expected and engine.execute(target, scan) == expected


def test_salted_reads_merge_every_bucket_in_time_order(loaded):
    start, end = ms("2015-03-01T01:00:00Z"), ms("2015-03-01T03:00:00Z")
    levels = sorted(
        (checks.battery_record(r) for r in loaded.battery if start <= ms(r["timestamp"]) < end),
        key=lambda b: b["ts_ms"],
    )
    got = engine.ask(loaded.target, "battery", "battery_levels", {}, start, end)
    assert no_key(got) == levels
    assert len({r["key"].split("#")[1] for r in got}) == 3  # rows came from every bucket
    user = levels[0]["user"]
    mine = engine.ask(
        loaded.target, "battery", "battery_levels_of_user", {"user": user}, start, end
    )
    assert no_key(mine) == [b for b in levels if b["user"] == user]


def _tenant(records, tenant):
    return checks.tenant_records(records, tenant)


def _tenant_rows(target, tenant):
    return engine.ask(target, "devices", "tenant_rows", {"tenant": tenant})


def test_a_tenants_rows(loaded):
    expected = _tenant(loaded.devices, "acme")
    assert sum(len(r["readings"]) for r in expected) == 2 * 2 * 24 * 2
    assert no_key(_tenant_rows(loaded.target, "acme")) == expected


def test_garden_days_and_month(loaded):
    veggie = [r for r in loaded.garden if r["garden"] == "VEGGIEGARDEN"]
    march = timefmt.month_bounds(2015, 3)
    month = engine.ask(loaded.target, "garden", "garden_month", {"garden": "VEGGIEGARDEN"}, *march)
    assert no_key(month) == [checks.garden_month_record(veggie, "VEGGIEGARDEN", 2015, 3)]
    start, end = ms("2015-04-10T00:00:00Z"), ms("2015-04-13T00:00:00Z")
    days = engine.ask(
        loaded.target, "garden", "garden_days", {"garden": "VEGGIEGARDEN"}, start, end
    )
    assert no_key(days) == [
        {"garden": "VEGGIEGARDEN", "ts_ms": ms(f"{r['date']}T00:00:00Z"), "temp": dec(r["temp"])}
        for r in veggie
        if "2015-04-10" <= r["date"] < "2015-04-13"
    ]


def test_monthly_sales_sum_every_sale(loaded):
    expected = [m for m in checks.monthly_sales_records(loaded.sales, "Ana")
                if m["ts"] in ("201502", "201503")]  # fmt: skip
    window = timefmt.month_bounds(2015, 2)[0], timefmt.month_bounds(2015, 3)[1]
    got = engine.ask(loaded.target, "sales", "monthly_sales", {"employee": "Ana"}, *window)
    assert len(expected) == 2 and no_key(got) == expected


def test_dropping_a_tenant_removes_its_rows_only(target, tmp_path):
    records = list(samples.device_records(2, 1))
    path = write_lines(tmp_path / "d.jsonl", [json.dumps(r) for r in records])
    demo.run_job_spec(
        demo.DEVICE_JOB,
        [f"--input={path}", f"--dead_letter={tmp_path / 'dead'}", "--create_tables",
         f"--bigtable_instance={target.instance}"],
    )  # fmt: skip
    assert engine.offboard_tenant(target, "acme") == 2  # two devices, one day: two rows
    assert _tenant_rows(target, "acme") == []
    assert no_key(_tenant_rows(target, "acme2")) == _tenant(records, "acme2")
    assert no_key(_tenant_rows(target, "altostrat")) == _tenant(records, "altostrat")


# -- the command line ---------------------------------------------------------------------------


def test_btts_query_prints_what_it_read_and_the_answer(loaded, capsys):
    host = samples.host_name(1)
    start = samples.METRICS_START_MS
    argv = ["query", "metrics", "--host", host, "--start", samples.iso_ms(start),
            "--end", str(start + 15_000), "--instance", loaded.target.instance]  # fmt: skip
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert f"read METRIC: [{host}#{start}, {host}#{start + 15_000})" in out
    assert "3 record(s)" in out
    assert cli.main([*argv, "--format", "json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [r["ts_ms"] for r in records] == [start, start + 5000, start + 10_000]


def test_btts_query_meter_prints_every_reading_of_the_day(loaded, capsys):
    argv = ["query", "meter", "--meter", "987654", "--date", "2017-07-25",
            "--instance", loaded.target.instance]  # fmt: skip
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    day = checks.meter_day_records(loaded.meters)[(987654, "20170725")]["reading"]
    assert f"2345={day['2345']}" in out and f"0000={day['0000']}" in out


def test_btts_tenant_drop_says_what_it_would_drop_then_drops(target, tmp_path, capsys):
    records = list(samples.device_records(1, 1))
    path = write_lines(tmp_path / "d.jsonl", [json.dumps(r) for r in records])
    demo.run_job_spec(
        demo.DEVICE_JOB,
        [f"--input={path}", f"--dead_letter={tmp_path / 'dead'}", "--create_tables",
         f"--bigtable_instance={target.instance}"],
    )  # fmt: skip
    capsys.readouterr()
    argv = ["tenant", "drop", "--tenant", "acme", "--instance", target.instance]
    assert cli.main(argv) == 0
    assert "Would drop 1 row(s) of tenant acme" in capsys.readouterr().out
    assert sum(len(r["readings"]) for r in _tenant_rows(target, "acme")) == 48
    assert cli.main([*argv, "--yes"]) == 0
    assert "Dropped tenant acme: 1 row(s)" in capsys.readouterr().out
    assert _tenant_rows(target, "acme") == [] and _tenant_rows(target, "acme2")
    assert cli.main(["tenant", "drop", "--tenant", "ac#me", "--instance", target.instance]) == 2
    assert "contains the key delimiter" in capsys.readouterr().err


def test_a_missing_table_is_a_clear_error(target, capsys):
    argv = ["query", "meters-of-day", "--date", "2017-07-26", "--instance", target.instance]
    assert cli.main(argv) == 2
    assert "table SENSOR_20170726 does not exist" in capsys.readouterr().err


def test_an_empty_recent_query_says_which_job_fills_its_table(target, capsys):
    instance = ["--instance", target.instance]
    assert cli.main(["tables", "create", "--table", "METRIC_RECENT", *instance]) == 0
    capsys.readouterr()
    assert cli.main(["query", "recent", "--host", "h1", *instance]) == 0
    out = capsys.readouterr().out
    assert "(no rows)" in out
    assert "METRIC_RECENT is empty: `btts ingest server_metrics` does not write it" in out
    assert cli.main(["query", "recent", "--host", "h1", "--format", "json", *instance]) == 0
    hint = capsys.readouterr().err
    assert "btts ingest --schema transforms/declarations/queries.yaml" in hint
    assert (REPO / "transforms/declarations/queries.yaml").is_file()


def test_btts_query_refuses_a_bad_time():
    with pytest.raises(SystemExit) as stop:
        cli.main(["query", "metrics", "--host", "h", "--start", "soon", "--end", "1"])
    assert stop.value.code == 2


def _parse_cbt(text: str) -> dict[str, dict[str, tuple[str, str]]]:
    """``cbt read`` output → {row key: {family:qualifier: (timestamp text, value)}}."""
    rows: dict[str, dict[str, tuple[str, str]]] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i] == "-" * 40:
            key = lines[i + 1]
            rows[key] = {}
            i += 2
            while i < len(lines) and lines[i].startswith("  "):
                column, _, stamp = lines[i].strip().partition(" @ ")
                value = json.loads(lines[i + 1].strip())
                rows[key][column.strip()] = (stamp.strip(), value)
                i += 2
        else:
            i += 1
    return rows


@pytest.mark.skipif(shutil.which("cbt") is None, reason="Google's cbt CLI is not installed")
def test_btts_query_matches_cbt_read_of_the_same_range(loaded, capsys):
    host = samples.host_name(3)
    start, end = samples.METRICS_START_MS + 30_000, samples.METRICS_START_MS + 70_000
    argv = ["query", "metrics", "--host", host, "--start", str(start), "--end", str(end),
            "--format", "json", "--instance", loaded.target.instance]  # fmt: skip
    assert cli.main(argv) == 0
    ours = json.loads(capsys.readouterr().out)
    shown = subprocess.run(
        ["cbt", "-project", loaded.target.project, "-instance", loaded.target.instance, "read",
         "METRIC", f"start={host}#{start}", f"end={host}#{end}"],
        capture_output=True, text=True, timeout=60, check=True, env=dict(os.environ),
    ).stdout  # fmt: skip
    theirs = _parse_cbt(shown)
    assert len(ours) == len(theirs) == 8
    assert [r["key"] for r in ours] == list(theirs)
    for record in ours:
        cells = theirs[record["key"]]
        assert {c.split(":", 1)[1]: v for c, (_, v) in cells.items()} == record["metrics"]
        stamp = dt.datetime.fromtimestamp(record["ts_ms"] / 1000, dt.timezone.utc)
        assert {s for s, _ in cells.values()} == {f"{stamp:%Y/%m/%d-%H:%M:%S.%f}"}


def test_btts_ingest_shows_progress_and_a_summary_by_default(bigtable_emulator, tmp_path):
    path = write_lines(tmp_path / "m.jsonl", list(samples.metric_events(hosts=11, seconds=500)))
    code = (
        "import sys, transforms.ingest.build_rows as i; i.PROGRESS_SECONDS = 0; "
        "from btts_cli import main as cli; sys.exit(cli.main(sys.argv[1:]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "ingest", "server_metrics", "--input", str(path),
         "--dead_letter", str(tmp_path / "dead"), "--create_tables",
         "--instance", f"p{uuid.uuid4().hex[:10]}"],
        capture_output=True, text=True, timeout=180, env=dict(os.environ),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "server_metrics: 1024 lines processed by this worker" in done.stderr
    assert "valid events           1,100" in done.stdout


def test_commands_find_the_emulator_btts_started(tmp_path, monkeypatch):
    monkeypatch.delenv("BIGTABLE_EMULATOR_HOST", raising=False)
    state = tmp_path / "emulator.json"
    state.write_text(json.dumps({"pid": os.getpid(), "endpoint": "127.0.0.1:9"}))
    args = argparse.Namespace(project=None, instance=None, args=None)
    assert cli.use_started_emulator(args, state) == "127.0.0.1:9"
    assert os.environ["BIGTABLE_EMULATOR_HOST"] == "127.0.0.1:9"
    monkeypatch.delenv("BIGTABLE_EMULATOR_HOST")
    explicit = argparse.Namespace(project="p", instance="i", args=None)
    assert cli.use_started_emulator(explicit, state) is None
    passthrough = argparse.Namespace(args=["--bigtable_instance=i"])
    assert cli.use_started_emulator(passthrough, state) is None
    state.write_text(json.dumps({"pid": 2**22 + 12345, "endpoint": "127.0.0.1:9"}))
    assert cli.use_started_emulator(args, state) is None
    assert cli.use_started_emulator(args, Path(tmp_path / "missing.json")) is None
    assert "BIGTABLE_EMULATOR_HOST" not in os.environ


# -- queries declared in schema files ----------------------------------------------------------

_TICKS = REPO / "docs" / "schemas" / "ts-cols-stock-ticks.yaml"
_IOT = REPO / "docs" / "schemas" / "tb-cell-iot-temperatures.yaml"


def _declared_cli(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    return code, capsys.readouterr().out


def _land_by_cli(capsys, schema: Path, source: Path, where: list[str]) -> None:
    """``btts tables create`` then ``btts ingest`` of ``source``: both must succeed."""
    assert _declared_cli(capsys, "tables", "create", "--schema", str(schema), *where)[0] == 0
    dead = source.parent / "dead"
    code, _ = _declared_cli(
        capsys, "ingest", "--schema", str(schema), f"--input={source}", f"--dead_letter={dead}",
        *where,
    )  # fmt: skip
    assert code == 0


def test_builtin_schemas_declare_their_documented_queries():
    from transforms import schema as schema_lib

    names = {
        q_.name
        for n in ("server_metrics", "queries", "smart_meters", "market_data", "game_results",
                  "weather_balloons", "battery", "devices", "garden", "sales")
        for q_ in schema_lib.builtin(n).queries
    }  # fmt: skip
    assert {"host_metrics", "latest_metrics", "recent_metrics", "quotes", "trades",
            "player_games", "games_of_month", "battery_levels", "tenant_rows",
            "monthly_sales", "balloon_tb_col"} <= names  # fmt: skip


@pytest.mark.parametrize(
    "entry, line, words",
    [
        ("  - {name: q1, table: NOPE}", 28, "table 'NOPE' is not declared"),
        ("  - {name: q1, table: TICK, select: [size]}", 28, "leading key fields"),
        ("  - {name: q1, table: TICK, limit: 0}", 28, "whole number"),
        ("  - {name: q1, table: TICK, colour: red}", 28, "unknown key 'colour'"),
        ("  - {name: Q-1, table: TICK}", 28, "lower-case"),
    ],
)
def test_bad_query_declarations_name_their_line(entry, line, words):
    from transforms import schema as schema_lib

    text = _TICKS.read_text().split("queries:\n")[0]
    text += "queries:\n" + entry + "\n"
    assert text.splitlines()[line - 1] == entry
    with pytest.raises(schema_lib.SchemaError) as err:
        schema_lib.loads(text, "ticks.yaml")
    assert any(n == line and words in m for n, m in err.value.problems), err.value.problems


def test_declared_query_plans_the_recipe_ranges():
    from transforms import schema as schema_lib

    schema = schema_lib.builtin("weather_balloons")
    scans = engine.plan_declared(
        schema, engine.declared(schema, "balloon_tb_col"), {"location": "us", "balloon_id": "7"},
        0, 7 * 86_400_000,
    )  # fmt: skip
    assert len(scans) == 4  # one range per metric
    assert scans[0].ranges[0][0].startswith(b"us#7#pressure#")
    battery = schema_lib.builtin("battery")
    salted = engine.plan_declared(battery, engine.declared(battery, "battery_levels"), {}, 0, 1000)
    assert len(salted) == 3 and all(s.start_ms == 0 and s.end_ms == 1000 for s in salted)
    with pytest.raises(ValueError, match="declares no query 'nope'"):
        engine.declared(battery, "nope")


def test_declared_query_of_a_user_schema_through_the_cli(target, tmp_path, capsys):
    lines = [
        '{"symbol": "GOOG", "ts": "2024-05-01T10:00:00Z", "price": 170.10, "size": 5}',
        '{"symbol": "GOOG", "ts": "2024-05-01T10:00:01.500Z", "price": 170.25, "size": 7}',
        '{"symbol": "GOOG", "ts": "2024-05-01T11:00:00Z", "price": 171.00, "size": 1}',
        '{"symbol": "GOOGL", "ts": "2024-05-01T10:00:02Z", "price": 1.50, "size": 2}',
    ]
    source = write_lines(tmp_path / "ticks.jsonl", lines)
    where = ["--project", target.project, "--instance", target.instance]
    _land_by_cli(capsys, _TICKS, source, where)
    code, out = _declared_cli(
        capsys, "query", "--schema", str(_TICKS), "ticks", "--symbol", "GOOG",
        "--start", "2024-05-01T10:00:00Z", "--end", "2024-05-01T11:00:00Z", "--format", "json",
        *where,
    )  # fmt: skip
    assert code == 0
    records = json.loads(out)
    assert [(r["symbol"], r["ts_ms"], r["price"], r["size"]) for r in records] == [
        ("GOOG", 1714557600000, "170.10", 5),
        ("GOOG", 1714557601500, "170.25", 7),
    ]
    code, out = _declared_cli(capsys, "query", "--schema", str(_TICKS), "nope", *where)
    assert code == 2


def test_declared_query_filters_cells_of_a_coarse_bucket(target, tmp_path, capsys):
    lines = [
        '{"device": "dev-1", "ts": "2024-05-01T10:15:00Z", "temperature_c": 21.50, "humidity": 40}',
        '{"device": "dev-1", "ts": "2024-05-01T10:45:00.250Z", "temperature_c": 22.0}',
        '{"device": "dev-2", "ts": "2024-05-01T10:45:00Z", "temperature_c": 9.5}',
    ]
    source = write_lines(tmp_path / "iot.jsonl", lines)
    iot = tmp_path / "iot.yaml"  # the example with one query declared (hour buckets, TB-CELL)
    iot.write_text(
        _IOT.read_text().replace(
            "\nadvisor:",
            "\nqueries:\n  - {name: device_readings, table: DEVICE_TEMP, select: [device]}"
            "\nadvisor:",
        )
    )
    where = ["--project", target.project, "--instance", target.instance]
    _land_by_cli(capsys, iot, source, where)
    code, out = _declared_cli(
        capsys, "query", "--schema", str(iot), "device_readings", "--device", "dev-1",
        "--start", "2024-05-01T10:30:00Z", "--end", "2024-05-01T11:00:00Z", "--format", "json",
        *where,
    )  # fmt: skip
    assert code == 0
    (record,) = json.loads(out)  # the hour row holds 10:15 too; the server drops that cell
    assert record["ts_ms"] == 1714560300250 and record["temperature_c"] == "22.0"


def test_declared_tb_col_query_reads_one_range_per_field(target, tmp_path, capsys):
    doors = REPO / "docs" / "schemas" / "tb-col-door-sensors.yaml"
    lines = [
        '{"sensor": "d1", "ts": "2024-05-01T10:00:00Z", "open": true, "alarm": false}',
        '{"sensor": "d1", "ts": "2024-05-01T10:05:00Z", "open": false, "alarm": false}',
        '{"sensor": "d1", "ts": "2024-05-02T10:05:00Z", "open": true, "alarm": true}',
        '{"sensor": "d2", "ts": "2024-05-01T10:01:00Z", "open": true, "alarm": true}',
    ]
    source = write_lines(tmp_path / "doors.jsonl", lines)
    where = ["--project", target.project, "--instance", target.instance]
    _land_by_cli(capsys, doors, source, where)
    code, out = _declared_cli(
        capsys, "query", "--schema", str(doors), "sensor_states", "--sensor", "d1",
        "--start", "2024-05-01T00:00:00Z", "--end", "2024-05-02T00:00:00Z", "--format", "json",
        *where,
    )  # fmt: skip
    assert code == 0
    got = [(r["ts_ms"], r["open"], r["alarm"]) for r in json.loads(out)]
    assert got == [  # one record per event, put back together from the signals' rows
        (1714557600000, True, False),
        (1714557900000, False, False),
    ]
