"""Exactly once when the runner retries bundles (docs/ingest.md, "Retries and exactly-once").

Dataflow re-runs a failed bundle whole and keeps what the failed attempt wrote. The retry
harness (tests.support.jobs.retry_harness, put in at the writers' transport and data client) makes
every write request go out as a retry sends it: twice, or half and then all. Under it every table
must come out identical to a clean run's, and the hourly rollups (default --rollup_mode exact)
must hold the sums computed here from the input events. The add mode is the control: under the
harness it adds again.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections import defaultdict
from decimal import Decimal

import pytest

from btts import config
from btts.query import engine
from btts.samples import data
from tests.support.jobs import HARNESS_MODES, harness_attempts, run_job, snapshot, write_lines
from tests.support.jobs import retry_harness as harness_on
from transforms import schema as schema_lib
from transforms.rollup.core import HOUR_MS, schema_rollups, window_start

SCALE = 10**6


def parse_time(text: str) -> int:
    """ISO-8601 UTC text → epoch ms, independently of the code under test."""
    return int(dt.datetime.fromisoformat(text).timestamp() * 1000)


def _fresh(bigtable_emulator) -> config.Target:
    return config.Target("test-project", f"r{uuid.uuid4().hex[:12]}")


def metric_lines() -> tuple[list[str], list[str]]:
    """Valid events (3 hosts over 2 h 10 min: several hours), and bad lines."""
    valid = list(data.metric_events(hosts=3, seconds=7800, interval_s=60))
    return valid, list(data.BAD_METRIC_LINES)


def meter_lines() -> tuple[list[str], list[str]]:
    valid = [json.dumps(r) for r in data.meter_records(meters=3, days=1)]
    return valid, list(data.BAD_METER_LINES)


def metric_sums(lines: list[str]) -> dict[tuple[str, int], dict[bytes, tuple[int, int]]]:
    """(host, hour start) → metric → (sum × 10^6, count), from the valid events themselves."""
    out: dict = defaultdict(lambda: defaultdict(lambda: [Decimal(0), 0]))
    for line in lines:
        event = json.loads(line, parse_float=Decimal)
        host, ts, metrics = event["hostname"], event["timestamp"], event["metrics"]
        hour = window_start(parse_time(ts), HOUR_MS)
        for name, value in metrics.items():
            acc = out[(host, hour)][name.upper().encode()]
            acc[0] += Decimal(value)
            acc[1] += 1
    return {k: {m: (int(s * SCALE), n) for m, (s, n) in v.items()} for k, v in out.items()}


def meter_sums(lines: list[str]) -> dict[tuple[str, int], dict[bytes, tuple[int, int]]]:
    out: dict = defaultdict(lambda: [Decimal(0), 0])
    for line in lines:
        record = json.loads(line, parse_float=Decimal)
        meter, ts, reading = record["meter_id"], record["timestamp"], record["reading"]
        acc = out[(f"{meter:010d}", window_start(parse_time(ts), HOUR_MS))]
        acc[0] += Decimal(reading)
        acc[1] += 1
    return {k: {b"READING": (int(s * SCALE), n)} for k, (s, n) in out.items()}


CASES = {
    "server_metrics": ("METRIC_HOURLY", metric_lines, metric_sums),
    "smart_meters": ("SENSOR_HOURLY", meter_lines, meter_sums),
}


def hourly(target: config.Target, dataset: str, table: str, expected) -> dict:
    """The table's totals at the keys of ``expected``: metric → (sum, count) per hour, from the
    latest cells of the exact families (or of the AddToCell ones, for the add mode)."""
    spec = schema_rollups(schema_lib.builtin(dataset))
    (key_fn,) = [s.key_fn for s in spec.values() if s.table == table]
    rows = {r.key: r for r in engine.read_rows(target, table)}
    assert len(rows) == len(expected), "one row per entity and hour"
    out = {}
    for (entity, hour), metrics in expected.items():
        row = rows[key_fn(entity, hour)]
        latest = row.latest()
        got = {}
        for metric in metrics:
            pair = []
            for fam in (("exact_sum", "exact_count"), ("sum", "count")):
                if (fam[0], metric) in latest:
                    pair = [int.from_bytes(latest[(f, metric)], "big", signed=True) for f in fam]
                    break
            got[metric] = tuple(pair)
        out[(entity, hour)] = got
    return out


@pytest.mark.parametrize("how", HARNESS_MODES)
@pytest.mark.parametrize("dataset", sorted(CASES))
def test_retried_bundles_leave_every_table_as_a_clean_run(
    dataset, how, bigtable_emulator, monkeypatch, tmp_path
):
    table, lines_fn, sums_fn = CASES[dataset]
    valid, bad = lines_fn()
    source = write_lines(tmp_path / "in.jsonl", valid + bad)
    expected = sums_fn(valid)
    assert len(expected) > 2, "the input spans several entities and hours"

    clean = _fresh(bigtable_emulator)
    run_job(dataset, clean, source, tmp_path / "dead1", ["--hourly_rollup"])
    retried = _fresh(bigtable_emulator)
    with harness_on(how):
        run_job(dataset, retried, source, tmp_path / "dead2", ["--hourly_rollup"])

    first, second = snapshot(clean), snapshot(retried)
    assert first.get(table)
    assert second == first
    assert hourly(retried, dataset, table, expected) == expected


def test_add_mode_adds_again_under_the_harness(bigtable_emulator, monkeypatch, tmp_path):
    """The control: the harness does retry, and AddToCell rollups count twice."""
    valid, bad = meter_lines()
    source = write_lines(tmp_path / "in.jsonl", valid + bad)
    expected = meter_sums(valid)
    target = _fresh(bigtable_emulator)
    with harness_on("twice"):
        run_job(
            "smart_meters",
            target,
            source,
            tmp_path / "dead",
            ["--hourly_rollup", "--rollup_mode=add"],
        )
    doubled = {k: {m: (2 * s, 2 * n) for m, (s, n) in v.items()} for k, v in expected.items()}
    assert hourly(target, "smart_meters", "SENSOR_HOURLY", expected) == doubled


def test_harness_attempts():
    rows = list(range(5))
    assert harness_attempts(rows, "twice") == [rows, rows]
    assert harness_attempts(rows, "half") == [rows[:3], rows]
    assert harness_attempts([], "half") == [[], []]


def test_harness_mode_is_checked():
    with pytest.raises(ValueError, match="expected one of"):
        harness_attempts([1], "thrice")
    with pytest.raises(ValueError, match="expected one of"), harness_on("thrice"):
        pass  # at the start of the run, not on a worker


def test_the_writers_carry_nothing_for_tests():
    """The harness comes in at the writers' seams, from the tests: the product's write
    transforms take no parameter, and read no switch, that only tests would set."""
    import inspect

    from transforms.bigtable import write as bigtable_write
    from transforms.bigtable import write_aggregates as aggregate_write

    for module in (bigtable_write, aggregate_write):
        source = inspect.getsource(module)
        assert "harness" not in source and "tests only" not in source
        assert "os.environ" not in source and "getenv" not in source


def test_the_harness_reaches_the_setcell_writer(bigtable_emulator, monkeypatch, tmp_path):
    """Identical tables prove nothing if the rows were sent once: count what the sink sends."""
    from transforms.bigtable import write as bigtable_write

    sent = []
    opened = bigtable_write.open_sender

    def counting_sender(*args, **kwargs):  # the rows of each request, as it leaves
        send, closing = opened(*args, **kwargs)

        def counted(batch):
            sent.extend(batch.keys)
            return send(batch)

        return counted, closing

    monkeypatch.setattr(bigtable_write, "open_sender", counting_sender)
    valid, _ = meter_lines()
    source = write_lines(tmp_path / "in.jsonl", valid)
    run_job("smart_meters", _fresh(bigtable_emulator), source, tmp_path / "dead1")
    once = len(sent)
    assert once > 0
    sent.clear()
    with harness_on("twice"):
        run_job("smart_meters", _fresh(bigtable_emulator), source, tmp_path / "dead2")
    assert len(sent) == 2 * once


def _sales_sums(records) -> dict[bytes, tuple[int, int]]:
    out: dict = defaultdict(lambda: [0, 0])
    for r in records:
        acc = out[f"{r['employee']}#{r['timestamp'][:4]}{r['timestamp'][5:7]}".encode()]
        acc[0] += r["amount_cents"]
        acc[1] += 1
    return {k: tuple(v) for k, v in out.items()}


def _sales_table(target: config.Target) -> dict[bytes, tuple[int, int]]:
    out = {}
    for row in engine.read_rows(target, "SALES_MONTHLY"):
        latest = row.latest()
        out[row.key] = tuple(
            int.from_bytes(latest[("sum", q)], "big", signed=True) for q in (b"AMOUNT", b"COUNT")
        )
    return out


def test_sales_replace_months_makes_a_rerun_exact(bigtable_emulator, monkeypatch, tmp_path):
    """Sales add (AddToCell): a retried bundle doubles them. Re-running with --replace_months
    rebuilds the named months from the input alone; the other months are left alone, and a
    sale outside the named months is a dead letter, not an addition."""
    from tests.support.jobs import read_dead_letters

    records = list(data.sales_records(2))
    jan_feb = [r for r in records if r["timestamp"][5:7] in ("01", "02")]
    march = [r for r in records if r["timestamp"][5:7] == "03"]
    assert jan_feb and march
    target = _fresh(bigtable_emulator)
    everything = write_lines(tmp_path / "all.jsonl", [json.dumps(r) for r in records])
    with harness_on("twice"):
        run_job("sales", target, everything, tmp_path / "dead1")
    doubled = {k: (2 * a, 2 * n) for k, (a, n) in _sales_sums(records).items()}
    assert _sales_table(target) == doubled  # what a retried bundle does to AddToCell

    # January and February again, from an input that also holds one March sale.
    rerun = write_lines(
        tmp_path / "janfeb.jsonl", [json.dumps(r) for r in jan_feb] + [json.dumps(march[0])]
    )
    run_job("sales", target, rerun, tmp_path / "dead2", ["--replace_months=201501,201502"])
    expected = {**doubled, **_sales_sums(jan_feb)}
    assert _sales_table(target) == expected
    (letter,) = read_dead_letters(tmp_path / "dead2")
    assert "201503 is not in --replace_months" in letter["reason"]


def test_replace_months_is_validated(bigtable_emulator, tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [])
    with pytest.raises(SystemExit, match="expected months YYYYMM"):
        run_job(
            "sales", _fresh(bigtable_emulator), source, tmp_path / "d", ["--replace_months=2015-3"]
        )
