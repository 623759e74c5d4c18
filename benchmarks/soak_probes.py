"""Where a streaming run's landing rate goes: each suspect of the soak measured on its own.

    python -m benchmarks.soak_probes table    # Bigtable emulator: write rate vs rows in the table
    python -m benchmarks.soak_probes pubsub   # Pub/Sub emulator: pull rate vs backlog, no job

``table`` writes METRIC-shaped rows (four cells an event) with the raw data client in chunks
and prints rows/s per chunk against the rows already written: a new row per event into a family
with a GC rule (``max_versions: 1``, as METRIC declares), the same into one without, and a new
version of one of 50 rows per event (CURRENT_METRIC, ``max_versions: 1``), and the same events
with only each 1,000's newest cell per row and column written (CURRENT_METRIC_NEWEST). ``pubsub``
publishes a backlog of messages (100 events each) with no job reading, then drains it with a
trivial subscriber pulling the way the DirectRunner does (synchronous pulls of 10 messages,
acknowledged at once) and prints messages/s per chunk against the backlog left.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections.abc import Sequence

from google.cloud.bigtable.data import BigtableDataClient, RowMutationEntry, SetCell

from btts import admin, config
from btts.emulator import Emulator, PubSubEmulator
from transforms import schema as schema_lib

PROJECT = "test-project"


def table_growth(rows: int, chunk: int, only: Sequence[str] = ()) -> list[dict]:
    """Rows/s of each ``chunk`` of new rows, by rows already in the table, with and without a
    GC rule on the written family."""
    decls = schema_lib.builtin("server_metrics").decls()
    out = []
    with Emulator():
        target = config.Target(PROJECT, f"probe{uuid.uuid4().hex[:8]}")
        # family METRIC: max_versions 1 in both
        admin.preflight(target, [decls["METRIC"], decls["CURRENT_METRIC"]], create=True)
        from google.cloud.bigtable import Client

        instance = Client(project=PROJECT, admin=True).instance(target.instance)
        instance.table("NOGC").create(column_families={"METRIC": None})  # the same, no GC rule
        with BigtableDataClient(project=PROJECT) as client:
            cases = ("METRIC", "NOGC", "CURRENT_METRIC", "CURRENT_METRIC_NEWEST")
            for name in cases:
                if only and name not in only:
                    continue
                # CURRENT_METRIC_NEWEST: the same events, only each 1,000's newest cell per row
                # and column written (the others are dead on arrival under max_versions 1)
                newest = name == "CURRENT_METRIC_NEWEST"
                table_id = "CURRENT_METRIC" if newest else name
                gc = name != "NOGC"
                family = "METRIC"
                if table_id == "CURRENT_METRIC":  # 50 rows, a new version of each per event

                    def key(i: int) -> bytes:
                        return f"host{i % 50:02d}".encode()
                else:  # a new row per event

                    def key(i: int) -> bytes:
                        return f"host{i % 50:02d}#{i:013d}".encode()

                table = client.get_table(target.instance, table_id)
                written = 0
                while written < rows:
                    entries = [
                        RowMutationEntry(
                            key(i),
                            [
                                SetCell(family, f"M{m}".encode(), b"1.25", i * 1000)
                                for m in range(4)
                            ],
                        )
                        for i in range(written, written + chunk)
                    ]
                    if newest:  # entries are in time order: the last of each key wins
                        entries = [
                            e
                            for at in range(0, len(entries), 1000)
                            for e in {e.row_key: e for e in entries[at : at + 1000]}.values()
                        ]
                    started = time.monotonic()
                    for at in range(0, len(entries), 1000):
                        table.bulk_mutate_rows(entries[at : at + 1000])
                    seconds = time.monotonic() - started
                    out.append(
                        {"table": name, "gc_rule": gc, "rows_before": written,
                         "rows_per_s": round(chunk / seconds)}
                    )  # fmt: skip
                    print(
                        f"  {name} (gc rule: {gc}) events before {written:8,}: "
                        f"{chunk / seconds:8,.0f} events/s",
                        flush=True,
                    )
                    written += chunk
    return out


def pubsub_backlog(messages: int, chunk: int) -> list[dict]:
    """Messages/s of a trivial subscriber draining a backlog of ``messages``, per ``chunk``."""
    from google.cloud import pubsub_v1

    body = b"\n".join(
        b'{"hostname": "h%02d.example.com", "timestamp": %d, "metrics": {"a": 1.5, "b": 2}}'
        % (i % 50, 1_700_000_000_000 + i)
        for i in range(100)
    )
    out = []
    with PubSubEmulator():
        publisher = pubsub_v1.PublisherClient()
        subscriber = pubsub_v1.SubscriberClient()
        topic = publisher.topic_path(PROJECT, "probe")
        sub = subscriber.subscription_path(PROJECT, "probe-sub")
        publisher.create_topic(name=topic)
        subscriber.create_subscription(name=sub, topic=topic)
        started = time.monotonic()
        futures = [publisher.publish(topic, body) for _ in range(messages)]
        for future in futures:
            future.result()
        print(f"  published {messages:,} messages in {time.monotonic() - started:.1f}s", flush=True)
        left = messages
        while left > 0:
            started = time.monotonic()
            got = pulls = 0
            while got < chunk and left - got > 0:
                pulls += 1
                response = subscriber.pull(subscription=sub, max_messages=10, timeout=30)
                ids = [m.ack_id for m in response.received_messages]
                if ids:
                    subscriber.acknowledge(subscription=sub, ack_ids=ids)
                got += len(ids)
            seconds = time.monotonic() - started
            out.append({"backlog": left, "messages_per_s": round(got / seconds), "pulls": pulls})
            print(
                f"  backlog {left:7,} messages: {got / seconds:7,.0f} messages/s "
                f"({got / pulls:.1f} per pull)",
                flush=True,
            )
            left -= got
        subscriber.close()
    return out


def job_drain(messages: int, every: float, flags: Sequence[str]) -> list[dict]:
    """The server-metrics job draining a backlog of ``messages`` (100 events each) published
    before it starts, with nothing else in the process: landed rows/s per ``every`` seconds,
    from the job's own counter of rows written to METRIC."""
    from google.cloud import pubsub_v1

    from benchmarks.soak import cancel, start_job
    from benchmarks.soak_load import LandedCounter, PublisherProcess

    out = []
    with Emulator(), PubSubEmulator():
        publisher = pubsub_v1.PublisherClient()
        subscriber = pubsub_v1.SubscriberClient()
        topics = {}
        for name in ("events", "dead"):
            topic = publisher.topic_path(PROJECT, f"probe-{name}")
            sub = subscriber.subscription_path(PROJECT, f"probe-{name}-sub")
            publisher.create_topic(name=topic)
            subscriber.create_subscription(name=sub, topic=topic)
            topics[name] = (topic, sub)
        target = config.Target(PROJECT, f"probe{uuid.uuid4().hex[:8]}")
        result = start_job(topics["events"][1], topics["dead"][0], target, flags)
        burst = PublisherProcess(topics["events"][0], 50_000, 50, 0, 100)
        burst.start()
        while burst.acked_good < messages * 100:
            time.sleep(0.05)
        burst.stop()
        print(f"  published {burst.acked_good:,} events", flush=True)
        counter = LandedCounter(PROJECT, target.instance, 50)
        started = time.monotonic()
        before, idle = 0, 0.0
        total = burst.acked_good
        while before < total:
            time.sleep(every)
            landed = counter.refresh()
            t = time.monotonic() - started
            out.append(
                {"t_s": round(t, 1), "landed": landed, "per_s": round((landed - before) / every)}
            )
            print(
                f"  t={t:6.1f}s landed {landed:8,} ({(landed - before) / every:7,.0f} rows/s)",
                flush=True,
            )
            idle = idle + every if landed == before else 0.0
            if idle >= 30:
                break
            before = landed
        counter.close()
        cancel(result)
        subscriber.close()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.soak_probes", description=__doc__)
    parser.add_argument("probe", choices=("table", "pubsub", "job"))
    parser.add_argument("--job_flag", action="append", default=[], help="job: an extra job flag")
    parser.add_argument("--rows", type=int, default=400_000, help="table: rows written per table")
    parser.add_argument(
        "--tables", help="table: METRIC,NOGC,CURRENT_METRIC,CURRENT_METRIC_NEWEST (default all)"
    )
    parser.add_argument("--chunk", type=int, default=50_000, help="rows or messages per figure")
    parser.add_argument("--messages", type=int, default=5_000, help="pubsub: backlog messages")
    args = parser.parse_args(argv)
    if args.probe == "table":
        table_growth(args.rows, args.chunk, args.tables.split(",") if args.tables else ())
    elif args.probe == "job":
        job_drain(args.messages, 5.0, args.job_flag)
    else:
        pubsub_backlog(args.messages, min(args.chunk, args.messages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
