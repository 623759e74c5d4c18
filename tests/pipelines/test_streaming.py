"""Streaming ingest on the real emulators: Pub/Sub in, Bigtable out, bounded in time.

The DirectRunner's Pub/Sub watermark is the wall clock, so events are stamped in recent past
hours: their windows are closed (the on-time pane is written at once) but within the allowed
lateness, except the one meant to be too late.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from decimal import Decimal

import apache_beam as beam
import pytest

from btts import config
from btts.query import engine
from btts.samples.data import iso_ms
from pipelines import market_data, server_metrics, smart_meters
from pipelines.common import ingest, job_config, parse_args
from pipelines.common.runner import prepare
from tests.support.jobs import put_retry_harness
from transforms.rollup import core
from transforms.schema import builtin_tables

HOUR = 3_600_000
PROJECT = "test-project"


def _wait_for(check: Callable[[], bool], what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


@pytest.fixture
def pubsub(pubsub_emulator):
    from google.cloud import pubsub_v1

    publisher = pubsub_v1.PublisherClient()
    subscriber = pubsub_v1.SubscriberClient()
    suffix = uuid.uuid4().hex[:8]
    topics = {}
    for name in ("events", "dead", "meters", "ticks"):
        topic = publisher.topic_path(PROJECT, f"{name}-{suffix}")
        sub = subscriber.subscription_path(PROJECT, f"{name}-sub-{suffix}")
        publisher.create_topic(name=topic)
        subscriber.create_subscription(name=sub, topic=topic)
        topics[name] = (topic, sub)
    yield publisher, subscriber, topics
    subscriber.close()


def _pull_all(subscriber, subscription: str) -> list[dict]:
    response = subscriber.pull(subscription=subscription, max_messages=100, timeout=5)
    if response.received_messages:
        subscriber.acknowledge(
            subscription=subscription, ack_ids=[m.ack_id for m in response.received_messages]
        )
    return [json.loads(m.message.data) for m in response.received_messages]


def _event(host: str, ms: int, **metrics: str) -> bytes:
    body = ", ".join(f'"{k}": {v}' for k, v in metrics.items())  # numbers as source text
    return f'{{"hostname": "{host}", "timestamp": "{iso_ms(ms)}", "metrics": {{{body}}}}}'.encode()


# Not JSON: a job reading it can only dead-letter it, never write a row.
WAKE = b"btts test: the job is being cancelled"


def _cancel_all(*results, wake: tuple[tuple[object, str], ...] = ()) -> None:
    """Cancel in parallel. Each cancel waits for its reader's pending Pub/Sub pull, which the
    emulator holds for its 30 s deadline when no message comes: ``wake`` names the (publisher,
    input topic) pairs to publish :data:`WAKE` on until the cancels return, so that the pull
    returns at once. Every assertion on Bigtable is made after its wait, and a WAKE read before
    the shutdown can only become a dead letter on the test's own topic."""
    threads = [threading.Thread(target=r.cancel) for r in results]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 120
    while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
        for publisher, topic in wake:
            publisher.publish(topic, WAKE).result()
        for thread in threads:
            thread.join(timeout=0.5)
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))


def _start(module, job, subscription: str, dead_topic: str, target: config.Target, *flags: str):
    """Start a streaming job as `run` would, but return its result so the test can cancel it."""
    options = parse_args(
        [
            f"--input_subscription={subscription}",
            f"--dead_letter_topic={dead_topic}",
            f"--bigtable_project={target.project}",
            f"--bigtable_instance={target.instance}",
            "--create_tables",
            *flags,
        ],
        "test",
        "",
        module.OPTION_CLASSES,
    )
    config = job_config(options, job)
    prepare(config)
    pipeline = beam.Pipeline(options=options)
    ingest(pipeline, config)
    return pipeline.run()


def test_metrics_stream_lands_rolls_up_and_routes_bad_and_too_late(
    bigtable_emulator, pubsub, target
):
    publisher, subscriber, topics = pubsub
    events_topic, events_sub = topics["events"]
    dead_topic, dead_sub = topics["dead"]
    result = _start(
        server_metrics,
        server_metrics.JOB,
        events_sub,
        dead_topic,
        target,
        "--hourly_rollup",
        "--allowed_lateness_minutes=180",
    )
    try:
        now = int(time.time() * 1000)
        hour = now - now % HOUR - 2 * HOUR  # closed, but within the 3 h allowed lateness
        first = [
            _event("web1", hour + 60_000, cpu="0.25", io="100"),
            _event("web1", hour + 120_000, cpu="0.50", io="200"),
            _event("web2", hour + 60_000, cpu="1.00"),
        ]
        for message in first:
            publisher.publish(events_topic, message).result()
        # The newer reading of web1 arrives before an older one: CURRENT_METRIC must keep it.
        publisher.publish(events_topic, _event("web1", hour + 300_000, cpu="0.75")).result()
        publisher.publish(events_topic, _event("web1", hour + 180_000, cpu="0.10")).result()
        publisher.publish(events_topic, b'{"hostname": "web#3", "oops": 1}').result()

        _wait_for(lambda: len(engine.read_rows(target, "METRIC")) == 5, "5 METRIC rows")
        _wait_for(
            lambda: len(engine.read_rows(target, "METRIC_HOURLY")) == 2, "the on-time rollup rows"
        )
        # A late point, within the allowed lateness, and one far behind it.
        publisher.publish(events_topic, _event("web1", hour + 240_000, cpu="2.00")).result()
        publisher.publish(events_topic, _event("web1", hour - 5 * HOUR, cpu="9.99")).result()

        def web1_count() -> int:
            key = rollup_core_key("web1", hour)
            rows = engine.read_rows(target, "METRIC_HOURLY", key, key + b"\x00")
            return int.from_bytes(rows[0].latest()[("exact_count", b"CPU")], "big") if rows else 0

        _wait_for(lambda: web1_count() == 5, "the late point added to its hour")
        dead: list[dict] = []
        _wait_for(
            lambda: dead.extend(_pull_all(subscriber, dead_sub)) or len(dead) >= 2,
            "the malformed message and the too-late point on the dead-letter topic",
        )
    finally:
        _cancel_all(result, wake=((publisher, events_topic),))

    (current,) = [
        r for r in engine.read_rows(target, "CURRENT_METRIC", latest_only=True) if r.key == b"web1"
    ]
    assert current.latest()[("METRIC", b"CPU")] == b"0.75"

    # Hourly cells equal sums computed from the published events, not from the key logic.
    cpu = [Decimal(v) for v in ("0.25", "0.50", "0.75", "0.10", "2.00")]
    key = rollup_core_key("web1", hour)
    (row,) = engine.read_rows(target, "METRIC_HOURLY", key, key + b"\x00")
    cells = row.latest()
    # Default --rollup_mode exact: the latest cell of exact_sum/exact_count holds the totals;
    # the on-time pane is stamped at the hour's start, each later update 1 ms after the last.
    assert int.from_bytes(cells[("exact_sum", b"CPU")], "big", signed=True) == int(sum(cpu) * 10**6)
    assert int.from_bytes(cells[("exact_count", b"CPU")], "big") == len(cpu)
    assert int.from_bytes(cells[("exact_sum", b"IO")], "big", signed=True) == 300 * 10**6
    # (older panes' cells are garbage-collected lazily: only the newest is sure to be there)
    assert hour * 1000 <= min(c.timestamp_us for c in row.cells)
    assert hour * 1000 < max(c.timestamp_us for c in row.cells) < (hour + HOUR) * 1000
    (web2,) = engine.read_rows(target, "METRIC_HOURLY", b"web2#", b"web2$")
    assert int.from_bytes(web2.latest()[("exact_sum", b"CPU")], "big") == 10**6

    reasons = sorted(d["reason"] for d in dead)
    assert any("later than the allowed lateness" in r for r in reasons), reasons
    assert any("missing field" in r or "unexpected field" in r for r in reasons), reasons
    assert len(dead) == 2


def rollup_core_key(host: str, start: int) -> bytes:
    METRIC_HOURLY = builtin_tables.get("METRIC_HOURLY")

    assert start == core.window_start(start)
    return METRIC_HOURLY.key.build({"hostname": host, "hour": start})


def test_meter_and_market_streams_land_with_the_batch_key_logic(bigtable_emulator, pubsub, target):
    """Both jobs at once (one wait for both): SENSOR day rows and their hourly rollup, QUOTE and
    TRADE rows, exactly as the batch jobs would write them."""
    publisher, subscriber, topics = pubsub
    meters_topic, meters_sub = topics["meters"]
    ticks_topic, ticks_sub = topics["ticks"]
    dead_topic, dead_sub = topics["dead"]
    meters = _start(
        smart_meters, smart_meters.JOB, meters_sub, dead_topic, target, "--hourly_rollup"
    )
    ticks = _start(market_data, market_data.JOB, ticks_sub, dead_topic, target)
    try:
        now = int(time.time() * 1000)
        hour = now - now % HOUR - HOUR
        readings = [("0.25", 0), ("1.50", 15), ("2.00", 30)]
        for value, minute in readings:
            message = (
                f'{{"meter_id": 987654, "timestamp": "{iso_ms(hour + minute * 60_000)}", '
                f'"reading": {value}}}'
            )
            publisher.publish(meters_topic, message.encode()).result()
        tick = (
            '{"exchange": "NASDAQ", "symbol": "ZXZZT", "bid": 600.55, "ask": 600.60, '
            '"bid_size": 500, "ask_size": 1500, "last_sale": 600.58, "last_size": 300, '
            '"quote_time": "2015-03-16T19:53:32.156Z", "trade_time": "2015-03-16T19:53:32.045Z", '
            '"volume": 89000}'
        )
        publisher.publish(ticks_topic, tick.encode()).result()
        publisher.publish(meters_topic, b'{"meter_id": -1}').result()

        day_key = smart_meters_key(987654, hour)

        def day_columns() -> int:
            rows = engine.read_rows(target, "SENSOR", day_key, day_key + b"\x00")
            return len(rows[0].latest()) if rows else 0

        _wait_for(lambda: day_columns() == 1 + len(readings), "the SENSOR day row's readings")

        def rolled_count() -> int:  # a late reading updates the totals in a later pane
            rows = engine.read_rows(target, "SENSOR_HOURLY")
            count = rows[0].latest().get(("exact_count", b"READING"), b"") if rows else b""
            return int.from_bytes(count, "big")

        _wait_for(lambda: rolled_count() == len(readings), "the meter rollup of every reading")
        _wait_for(
            lambda: (
                len(engine.read_rows(target, "QUOTE"))
                == len(engine.read_rows(target, "TRADE"))
                == 1
            ),
            "the QUOTE and TRADE rows",
        )
        dead: list[dict] = []
        _wait_for(
            lambda: dead.extend(_pull_all(subscriber, dead_sub)) or len(dead) >= 1,
            "the bad reading on the dead-letter topic",
        )
    finally:
        _cancel_all(meters, ticks, wake=((publisher, meters_topic), (publisher, ticks_topic)))

    (quote,) = engine.read_rows(target, "QUOTE")
    assert quote.key == b"NASDAQ#ZXZZT#1426535612156"
    assert quote.latest()[("MD", b"ASK")] == b"600.60"
    (trade,) = engine.read_rows(target, "TRADE")
    assert trade.key == b"NASDAQ#ZXZZT#1426535612045"
    (rolled,) = engine.read_rows(target, "SENSOR_HOURLY")
    total = sum(Decimal(v) for v, _ in readings)
    assert int.from_bytes(rolled.latest()[("exact_sum", b"READING")], "big") == int(total * 10**6)
    assert int.from_bytes(rolled.latest()[("exact_count", b"READING")], "big") == len(readings)
    assert [d["pipeline"] for d in dead] == ["smart_meters"]
    assert dead[0]["reason"] == "missing field(s): timestamp, reading"


def smart_meters_key(meter: int, ms: int) -> bytes:
    SENSOR = builtin_tables.get("SENSOR")

    return SENSOR.key.build({"meter": meter, "date": ms})


def test_messages_carrying_many_events_land_every_event_exactly_once(
    bigtable_emulator, pubsub, target, monkeypatch
):
    """Five messages of 100 newline-delimited events each (one of them malformed): 499 METRIC
    rows, each with one cell per metric (no event twice), and one dead letter; every bundle
    written twice (the retry harness: half, then whole), and the series index holds exactly
    each host's metrics with their first and last times."""
    publisher, subscriber, topics = pubsub
    events_topic, events_sub = topics["events"]
    dead_topic, dead_sub = topics["dead"]
    put_retry_harness(monkeypatch, "half")  # for the whole test: the writers start as it runs
    result = _start(server_metrics, server_metrics.JOB, events_sub, dead_topic, target)
    spans: dict = {}
    try:
        start = int(time.time() * 1000) - HOUR
        for m in range(5):
            lines = []
            for e in range(100):
                host, ms = f"host{e % 7}", start + (m * 100 + e) * 1000
                lines.append(_event(host, ms, cpu=f"{e / 100:.2f}", io=e))
                for name in ("CPU", "IO"):
                    lo, hi = spans.get((host, name), (ms, ms))
                    spans[(host, name)] = (min(lo, ms), max(hi, ms))
            if m == 2:
                lines[50] = b'{"hostname": "bad#host", "timestamp": 0, "metrics": {}}'
            publisher.publish(events_topic, b"\n".join(lines) + b"\n").result()
        _wait_for(lambda: len(engine.read_rows(target, "METRIC")) == 499, "499 METRIC rows")
        _wait_for(lambda: _index_series(target) == _from_rows(target), "the series index")
        dead: list[dict] = []
        _wait_for(
            lambda: dead.extend(_pull_all(subscriber, dead_sub)) or len(dead) >= 1,
            "the malformed event on the dead-letter topic",
        )
        time.sleep(2)  # anything delivered twice would have landed by now
        dead.extend(_pull_all(subscriber, dead_sub))
    finally:
        _cancel_all(result, wake=((publisher, events_topic),))

    rows = engine.read_rows(target, "METRIC")
    assert len(rows) == 499
    assert all(len(row.cells) == 2 for row in rows)  # CPU and IO, once each
    assert len({row.key for row in rows}) == 499
    (letter,) = dead
    assert "bad#host" in letter["raw"]
    assert _index_series(target) == _from_rows(target)
    assert set(_index_series(target)) == {(h, n) for h, n in spans}


def _index_series(target: config.Target) -> dict:
    """(host, metric) → (first, last) event ms, as the series index holds them."""
    from transforms.scans import series_index as layout

    out = {}
    for row in engine.read_rows(target, "SERVER_METRICS_SERIES", latest_only=True):
        parts = layout.decode(row.key)
        if parts[:2] == ["s", "METRIC"]:
            first, last = layout.seen(row.cells)
            out[(parts[4], parts[3])] = (first // 1000, last // 1000)
    return out


def _from_rows(target: config.Target) -> dict:
    """(host, metric) → (first, last) event ms, from the METRIC rows themselves."""
    out: dict = {}
    for row in engine.read_rows(target, "METRIC"):
        host, ms = row.key.decode().split("#")
        for cell in row.cells:
            lo, hi = out.get((host, cell.qualifier.decode()), (int(ms), int(ms)))
            out[(host, cell.qualifier.decode())] = (min(lo, int(ms)), max(hi, int(ms)))
    return out


def test_a_stream_tells_a_resent_message_from_a_rewritten_cell(
    bigtable_emulator, pubsub, target, caplog
):
    """Pub/Sub: each record is compared with the rows its worker built lately (docs/ingest.md,
    "Overwrites"). A resent message is a duplicate, a second value for one host's cpu at one
    time an overwrite (both records counted), another metric of one host and time neither.
    The job's log says so as it goes (the DirectRunner's counters lag while it streams), and
    the rows read back."""
    publisher, _subscriber, topics = pubsub
    events_topic, events_sub = topics["events"]
    dead_topic, _dead_sub = topics["dead"]
    caplog.set_level(logging.INFO, logger="transforms.ingest.build_rows")
    result = _start(server_metrics, server_metrics.JOB, events_sub, dead_topic, target)
    found = re.compile(
        r"overwrite check: (\d+) records wrote (\d+) cells another record wrote with another "
        r"value, (\d+) records repeated"
    )

    def totals() -> list[int]:
        sums = [0, 0, 0]
        for record in caplog.records:
            match = found.search(record.getMessage())
            sums = (
                [a + int(b) for a, b in zip(sums, match.groups(), strict=True)] if match else sums
            )
        return sums

    try:
        at = int(time.time() * 1000) - HOUR
        for message in (
            _event("s1", at, cpu="1"),
            _event("s2", at, cpu="1"),
            _event("s3", at, cpu="1"),
            _event("s2", at, cpu="1"),  # resent
            _event("s1", at, cpu="2"),  # s1's cpu at that time again, another value
            _event("s3", at, mem="7"),  # s3's other metric at that time
        ):
            publisher.publish(events_topic, message).result()
        _wait_for(lambda: totals() == [2, 2, 1], "the overwrite and the duplicate in the log")
        key = f"#{at:013d}".encode()
        _wait_for(
            lambda: any(
                r.key == b"s3" + key and len(r.latest()) == 2
                for r in engine.read_rows(target, "METRIC")
            ),
            "s3's two metrics",
        )
    finally:
        _cancel_all(result, wake=((publisher, events_topic),))

    assert "first: projects/test-project/subscriptions/" in caplog.text
    stored = {row.key: row.latest() for row in engine.read_rows(target, "METRIC")}
    assert stored[b"s1" + key][("METRIC", b"CPU")] in (b"1", b"2")
    assert stored[b"s3" + key] == {("METRIC", b"CPU"): b"1", ("METRIC", b"MEM"): b"7"}
    assert stored[b"s2" + key] == {("METRIC", b"CPU"): b"1"}
