"""The production path of remote write: ``btts serve --remote_write_topic`` publishes every
sample to Pub/Sub and answers 204 once Pub/Sub has taken them; the events are what the
pipelines land: the generic batch job over the published lines writes the cells remote read
returns bit for bit (the streaming job on the subscription itself: test_pubsub_stream.py)."""

from __future__ import annotations

import uuid

from tests.support.jobs import run_job, write_lines
from tests.support.prom import SERIES, T0, create_tables
from tests.support.prom import expected as _expected
from tests.support.prom import read as _read
from tests.support.prom import write as _write
from tests.support.serving import Server
from transforms.schema import DECLARATIONS


def test_published_samples_land_through_the_job_bit_for_bit(target, pubsub_emulator, tmp_path):
    from google.cloud import pubsub_v1

    publisher, subscriber = pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
    topic = publisher.topic_path(target.project, f"prom-{uuid.uuid4().hex[:8]}")
    subscription = subscriber.subscription_path(target.project, f"prom-{uuid.uuid4().hex[:8]}")
    publisher.create_topic(name=topic)
    subscriber.create_subscription(name=subscription, topic=topic)
    create_tables(target)
    server = Server(target, "--schema", "prometheus", "--remote_write_topic", topic)
    try:
        status, _, body = _write(server, SERIES)
        assert status == 204, body
        assert _read(server, [(0, 5000, [(2, "__name__", ".+")])]) == [{}]  # not written here
        lines = []
        while True:
            got = subscriber.pull(subscription=subscription, max_messages=100, timeout=10)
            if not got.received_messages:
                break
            for message in got.received_messages:
                lines += message.message.data.decode().splitlines()
            ack = [m.ack_id for m in got.received_messages]
            subscriber.acknowledge(subscription=subscription, ack_ids=ack)
        assert len(lines) == sum(map(len, SERIES.values()))
        path = write_lines(tmp_path / "published.jsonl", lines)
        schema = f"--schema={DECLARATIONS / 'prometheus.yaml'}"
        result = run_job("generic", target, path, tmp_path / "dead", [schema])
        assert result.counters.get("dead_letters", 0) == 0
        want = _expected(SERIES)
        early, late = want.pop(next(k for k in want if k[0][1] == "early")), want
        queries = [
            (0, 5000, [(2, "__name__", ".+")]),
            (T0, T0 + 400 * 15_000, [(2, "__name__", ".+")]),
        ]
        got = _read(server, queries)
        assert list(got[0].values()) == [early]
        assert got[1] == late
    finally:
        server.stop()
        subscriber.close()
