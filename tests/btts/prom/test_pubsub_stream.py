"""The production path of remote write end to end: ``btts serve --remote_write_topic``
publishes the samples to Pub/Sub, the streaming ingest job of the ``prometheus`` schema (the
generic job, ``--schema`` and ``--input_subscription``) lands them, and remote read returns
them bit for bit; the same request sent again (Prometheus retrying a write it was not told
landed) rewrites the same cells, since every cell is stamped with its sample's time."""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid

import apache_beam as beam
import pytest

from btts.query import engine
from pipelines import generic
from pipelines.common import parse_args
from tests.support.prom import SERIES, T0, create_tables, expected
from tests.support.prom import read as remote_read
from tests.support.prom import write as remote_write
from tests.support.serving import Server
from transforms.schema import DECLARATIONS

WAKE = b"btts test: the job is being cancelled"  # not JSON: a dead letter, never a row
QUERIES = [(0, 5000, [(2, "__name__", ".+")]), (T0, T0 + 400 * 15_000, [(2, "__name__", ".+")])]
REPEATS = re.compile(r"overwrite check: (\d+) records wrote \d+ cells .*?, (\d+) records repeated")


def _wait_for(check, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


@pytest.fixture
def topics(target, pubsub_emulator):
    """(publisher, subscriber, {name: (topic, subscription)}) for the samples and dead letters."""
    from google.cloud import pubsub_v1

    publisher, subscriber = pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
    made = {}
    for name in ("prom", "dead"):
        suffix = uuid.uuid4().hex[:8]
        topic = publisher.topic_path(target.project, f"{name}-{suffix}")
        sub = subscriber.subscription_path(target.project, f"{name}-sub-{suffix}")
        publisher.create_topic(name=topic)
        subscriber.create_subscription(name=sub, topic=topic)
        made[name] = (topic, sub)
    yield publisher, subscriber, made
    subscriber.close()


def _start_stream(target, subscription: str, dead_topic: str):
    """The streaming job as ``btts ingest --schema prometheus.yaml --input_subscription …``
    builds it, run until cancelled."""
    options = parse_args(
        [
            f"--schema={DECLARATIONS / 'prometheus.yaml'}",
            f"--input_subscription={subscription}",
            f"--dead_letter_topic={dead_topic}",
            f"--bigtable_project={target.project}",
            f"--bigtable_instance={target.instance}",
        ],
        "test",
        "",
        generic.OPTION_CLASSES,
    )
    pipeline = beam.Pipeline(options=options)
    generic.build(pipeline, options)
    return pipeline.run()


def _cancel(result, publisher, topic: str) -> None:
    """Cancel the job; its pending pull is woken by :data:`WAKE` messages (the emulator would
    otherwise hold it for its 30 s deadline)."""
    thread = threading.Thread(target=result.cancel)
    thread.start()
    deadline = time.monotonic() + 60
    while thread.is_alive() and time.monotonic() < deadline:
        publisher.publish(topic, WAKE).result()
        thread.join(timeout=0.5)


class Landed:
    """The PROM_SAMPLES row keys the streaming job's writer had acknowledged, at its sender's
    seam (as ``tests.support.jobs.put_retry_harness`` wraps it): when the resent request's rows
    are acknowledged, its cells have been written again."""

    def __init__(self, patch: pytest.MonkeyPatch) -> None:
        from transforms.bigtable import write

        self.keys: list[bytes] = []
        self._lock = threading.Lock()
        opened = write.open_sender

        def open_sender(project, instance, table, *rest):
            send, closing = opened(project, instance, table, *rest)

            def counted(batch):
                attempt = send(batch)
                failed = {e.index for e in attempt.errors}
                with self._lock:
                    if table == "PROM_SAMPLES":
                        self.keys += [k for i, k in enumerate(batch.keys) if i not in failed]
                return attempt

            return counted, closing

        patch.setattr(write, "open_sender", open_sender)

    def take(self) -> set[bytes]:
        with self._lock:
            keys, self.keys = set(self.keys), []
        return keys


def _cells(target) -> set[tuple]:
    """Every sample cell as stored: (row key, column, timestamp, value), all versions."""
    return {
        (row.key, c.qualifier, c.timestamp_us, c.value)
        for row in engine.read_rows(target, "PROM_SAMPLES")
        for c in row.cells
    }


def _stream_totals(caplog) -> tuple[int, int]:
    """(records that overwrote a cell with another value, records that repeated another
    exactly), as the streaming job's overwrite check logs them while it runs."""
    conflicts = repeats = 0
    for record in caplog.records:
        match = REPEATS.search(record.getMessage())
        if match:
            conflicts, repeats = conflicts + int(match[1]), repeats + int(match[2])
    return conflicts, repeats


def test_remote_writes_land_through_the_streaming_job_and_a_resend_rewrites_the_same_cells(
    target, topics, caplog, monkeypatch
):
    publisher, subscriber, made = topics
    (topic, subscription), (dead_topic, dead_sub) = made["prom"], made["dead"]
    caplog.set_level(logging.INFO, logger="transforms.ingest.build_rows")
    create_tables(target)
    samples = sum(map(len, SERIES.values()))
    want = expected(SERIES)
    early = want.pop(next(k for k in want if k[0][1] == "early"))
    landed_keys = Landed(monkeypatch)
    result = _start_stream(target, subscription, dead_topic)
    serve = ("--schema", "prometheus", "--remote_write_topic", topic)
    server = Server(target, *serve)
    try:
        status, _, body = remote_write(server, SERIES)
        assert status == 204, body
        server.proc.kill()  # no graceful stop: what was answered 204 is Pub/Sub's already
        server.proc.wait()
        server = Server(target, *serve)
        _wait_for(lambda: remote_read(server, QUERIES)[1] == want, "the samples read back")
        got = remote_read(server, QUERIES)
        assert list(got[0].values()) == [early]
        landed = _cells(target)
        assert len(landed) == samples
        assert _stream_totals(caplog) == (0, 0)
        first: set[bytes] = set()
        rows = {key for key, *_ in landed}
        _wait_for(lambda: first.update(landed_keys.take()) or first >= rows, "rows acknowledged")
        assert first == rows

        status, _, body = remote_write(server, SERIES)  # Prometheus retrying the same request
        assert status == 204, body
        _wait_for(lambda: _stream_totals(caplog)[1] >= samples, "the resent samples built")
        assert _stream_totals(caplog) == (0, samples)  # every one repeats one exactly
        resent: set[bytes] = set()
        _wait_for(lambda: resent.update(landed_keys.take()) or resent >= first, "rows rewritten")
        assert _cells(target) == landed  # the resend's cells are the same cells, none added
        assert remote_read(server, QUERIES) == got
        response = subscriber.pull(subscription=dead_sub, max_messages=10, timeout=5)
        assert [json.loads(m.message.data) for m in response.received_messages] == []
    finally:
        _cancel(result, publisher, topic)
        server.stop()
