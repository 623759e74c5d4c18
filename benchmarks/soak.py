"""Soak: a bounded streaming run of the server-metrics job, Pub/Sub emulator → Bigtable emulator.

    python -m benchmarks.soak                        # make soak: 3 minutes at 200 events/s
    python -m benchmarks.soak --minutes 10 --rate 500 --hosts 50

A publisher thread sends server-metric events at a fixed rate (one in ``--bad_every`` is
malformed, to keep the dead-letter path busy); the job (``pipelines.server_metrics`` with
``--input_subscription``, on the DirectRunner, in this process) lands them in METRIC and
CURRENT_METRIC. Every ``--report_every`` seconds the soak prints and records:

* published — events the emulator acknowledged (and how many of them were bad);
* landed — METRIC rows, counted incrementally: one keys-only read (values stripped by the
  server) of every host's range past the newest key already seen;
* dead — dead letters received on the dead-letter topic's subscription;
* lag — each event's timestamp is its publish time, so ``now - newest landed timestamp`` is how
  far behind the newest landed event is, and the same for the host furthest behind;
* rss — this process's resident memory (VmRSS of /proc/self/status): the runner runs here.

After the publishing phase the soak waits (``--drain_seconds`` at most) until every published
event is accounted for (landed or dead-lettered), cancels the job, and checks the tables: lost
events (published good events without a METRIC row) and duplicates (cells beyond one per metric
of each row) must both be 0. Memory is called flat when RSS grew by less than 10% over the second
half of the publishing phase. The JSON report goes to ``benchmarks/results/soak.json``.
Not part of ``make test``: it takes minutes by design.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import apache_beam as beam
from google.cloud.bigtable.data import BigtableDataClient, ReadRowsQuery, RowRange

from btts import admin
from btts.emulator import Emulator, PubSubEmulator
from btts.query_engine import KEYS_ONLY
from pipelines import common, server_metrics

ROOT = Path(__file__).resolve().parent
DEFAULT_OUTPUT = ROOT / "results" / "soak.json"
PROJECT = "test-project"
METRICS = ("cpu/cpu1_usr", "cpu/cpu1_nice", "io/blk_read", "mem/used_pct")
FLAT_GROWTH = 0.10  # RSS growth over the second half below this is "flat"


def rss_bytes() -> int:
    """Resident memory of this process (Linux)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def host_name(index: int) -> str:
    return f"soak{index:04d}.example.com"


def memory_growth(samples: Sequence[tuple[float, int]], until: float) -> float:
    """Relative RSS growth over the second half of ``[0, until]``: last sample of the half
    against its first (samples are ``(seconds, rss)``)."""
    half = [rss for t, rss in samples if until / 2 <= t <= until]
    if len(half) < 2:
        raise ValueError("too few memory samples in the second half; run longer")
    return (half[-1] - half[0]) / half[0]


class Publisher(threading.Thread):
    """Publishes ``rate`` events a second for ``seconds``; each event's timestamp is the wall
    clock at publish time (strictly increasing per host, so every event is its own row)."""

    def __init__(
        self,
        topic: str,
        rate: float,
        seconds: float,
        hosts: int,
        bad_every: int,
        per_message: int = 1,
    ):
        super().__init__(name="soak-publisher", daemon=True)
        from google.cloud import pubsub_v1

        self._client = pubsub_v1.PublisherClient(
            batch_settings=pubsub_v1.types.BatchSettings(max_messages=500, max_latency=0.05)
        )
        self._topic = topic
        self._rate = rate
        self._seconds = seconds
        self._hosts = hosts
        self._bad_every = bad_every
        self._per_message = per_message
        self._lock = threading.Lock()
        self.sent = 0
        self.acked_good = 0
        self.acked_bad = 0
        self.errors: list[str] = []
        self.done = threading.Event()
        self.ended = 0.0  # time.monotonic() when the last event was acknowledged
        self._last_ts = [0] * hosts

    def _message(self, n: int) -> tuple[bytes, bool]:
        if self._bad_every and n % self._bad_every == self._bad_every - 1:
            return b'{"hostname": "soak#bad", "timestamp": 0, "metrics": {}}', False
        host = n % self._hosts
        ts = max(int(time.time() * 1000), self._last_ts[host] + 1)
        self._last_ts[host] = ts
        values = ", ".join(f'"{m}": {(n * 7 + i) % 1000 / 100:.2f}' for i, m in enumerate(METRICS))
        body = f'{{"hostname": "{host_name(host)}", "timestamp": {ts}, "metrics": {{{values}}}}}'
        return body.encode(), True

    def _acked(self, good: int, bad: int):
        def callback(future) -> None:
            with self._lock:
                if future.exception() is not None:
                    self.errors.append(str(future.exception()))
                else:
                    self.acked_good += good
                    self.acked_bad += bad

        return callback

    def _publish(self, count: int) -> None:
        """``count`` events in one message, one per line."""
        bodies, good = [], 0
        for _ in range(count):
            data, ok = self._message(self.sent)
            bodies.append(data)
            good += ok
            self.sent += 1
        message = b"\n".join(bodies)
        self._client.publish(self._topic, message).add_done_callback(
            self._acked(good, count - good)
        )

    def run(self) -> None:
        started = time.monotonic()
        try:
            while True:
                elapsed = time.monotonic() - started
                if elapsed >= self._seconds:
                    break
                due = int(elapsed * self._rate) - self.sent
                while due >= self._per_message:
                    self._publish(self._per_message)
                    due -= self._per_message
                time.sleep(0.01)
            if int(self._seconds * self._rate) > self.sent:  # the last, partial message
                self._publish(int(self._seconds * self._rate) - self.sent)
        finally:
            self._client.stop()  # flushes what is batched, waits for the acknowledgements
            self.ended = time.monotonic()
            self.done.set()

    @property
    def last_ts(self) -> list[int]:
        return list(self._last_ts)


class Landed:
    """METRIC rows landed so far, counted incrementally per host with keys-only reads."""

    def __init__(self, target: admin.Target, hosts: int) -> None:
        self._target = target
        self._hosts = [host_name(i) for i in range(hosts)]
        self.newest = dict.fromkeys(self._hosts, -1)  # newest landed timestamp per host
        self.rows = 0

    def refresh(self, client: BigtableDataClient) -> None:
        ranges = [
            RowRange(start_key=f"{h}#{self.newest[h] + 1:013d}".encode(), end_key=f"{h}$".encode())
            for h in self._hosts
        ]
        table = client.get_table(self._target.instance, "METRIC")
        for row in table.read_rows(ReadRowsQuery(row_ranges=ranges, row_filter=KEYS_ONLY)):
            host, ts = bytes(row.row_key).decode().rsplit("#", 1)
            self.newest[host] = max(self.newest[host], int(ts))
            self.rows += 1


class DeadLetters:
    """Counts the dead letters arriving on a subscription (a streaming pull in the background:
    a synchronous pull on the emulator waits out its timeout when nothing is there)."""

    def __init__(self, subscriber, subscription: str) -> None:
        self._lock = threading.Lock()
        self.count = 0
        self._future = subscriber.subscribe(subscription, self._received)

    def _received(self, message) -> None:
        message.ack()
        with self._lock:
            self.count += 1

    def stop(self) -> None:
        self._future.cancel()
        self._future.result(timeout=30)


def start_job(subscription: str, dead_topic: str, target: admin.Target, extra: Sequence[str]):
    """The job as ``run`` starts it (validation, preflight, graph), without waiting for it."""
    options = common.parse_args(
        [
            f"--input_subscription={subscription}",
            f"--dead_letter_topic={dead_topic}",
            f"--bigtable_project={target.project}",
            f"--bigtable_instance={target.instance}",
            "--create_tables",
            *extra,
        ],
        "soak",
        "",
        server_metrics.OPTION_CLASSES,
    )
    common.validate_input(options, server_metrics.JOB)
    common.prepare(options, common.job_tables(options, server_metrics.JOB))
    pipeline = beam.Pipeline(options=options)
    server_metrics.build(pipeline, options)
    return pipeline.run()


def cancel(result, timeout: float = 120.0) -> bool:
    """Cancel the streaming job (it waits out its reader's pending pull); False on timeout."""
    thread = threading.Thread(target=result.cancel, daemon=True)
    thread.start()
    thread.join(timeout)
    return not thread.is_alive()


def final_check(target: admin.Target, good: int, hosts: int) -> dict:
    """Every row and cell of METRIC and CURRENT_METRIC, against what was published."""
    with BigtableDataClient(project=target.project) as client:
        metric = client.get_table(target.instance, "METRIC")
        rows = cells = 0
        for row in metric.read_rows(ReadRowsQuery()):
            rows += 1
            cells += len(row.cells)
        current = client.get_table(target.instance, "CURRENT_METRIC")
        current_rows = sum(1 for _ in current.read_rows(ReadRowsQuery(row_filter=KEYS_ONLY)))
    return {
        "metric_rows": rows,
        "metric_cells": cells,
        "current_metric_rows": current_rows,
        "lost": good - rows,
        "duplicates": cells - rows * len(METRICS),
        "current_metric_expected": min(hosts, good),
    }


def soak(args: argparse.Namespace) -> dict:
    from google.cloud import pubsub_v1

    seconds = args.minutes * 60
    with Emulator() as bigtable, PubSubEmulator() as pubsub:
        target = admin.Target(PROJECT, f"soak{uuid.uuid4().hex[:8]}")
        publisher_admin = pubsub_v1.PublisherClient()
        subscriber = pubsub_v1.SubscriberClient()
        topics = {}
        for name in ("events", "dead"):
            topic = publisher_admin.topic_path(PROJECT, f"soak-{name}")
            sub = subscriber.subscription_path(PROJECT, f"soak-{name}-sub")
            publisher_admin.create_topic(name=topic)
            subscriber.create_subscription(name=sub, topic=topic)
            topics[name] = (topic, sub)
        result = start_job(topics["events"][1], topics["dead"][0], target, args.job_flag)
        print(
            f"soak: server_metrics streaming job started; publishing {args.rate:g} events/s "
            f"for {args.minutes:g} min over {args.hosts} hosts (1 in {args.bad_every} bad) "
            f"(bigtable {bigtable.endpoint}, pubsub {pubsub.endpoint})",
            flush=True,
        )
        publisher = Publisher(
            topics["events"][0],
            args.rate,
            seconds,
            args.hosts,
            args.bad_every,
            args.events_per_message,
        )
        landed = Landed(target, args.hosts)
        samples: list[dict] = []
        dead_letters = DeadLetters(subscriber, topics["dead"][1])
        started = time.monotonic()
        publisher.start()
        previous = (0.0, 0, 0)
        drain_deadline = None
        with BigtableDataClient(project=target.project) as client:
            while True:
                time.sleep(args.report_every)
                landed.refresh(client)
                dead = dead_letters.count
                now_s = time.monotonic() - started
                now_ms = int(time.time() * 1000)
                published = publisher.acked_good + publisher.acked_bad
                newest = [ts for ts in landed.newest.values() if ts >= 0]
                sample = {
                    "t_s": round(now_s, 1),
                    "published": published,
                    "published_bad": publisher.acked_bad,
                    "landed_rows": landed.rows,
                    "dead_letters": dead,
                    "in_per_s": round((published - previous[1]) / (now_s - previous[0]), 1),
                    "landed_per_s": round((landed.rows - previous[2]) / (now_s - previous[0]), 1),
                    "lag_newest_s": round((now_ms - max(newest)) / 1000, 2) if newest else None,
                    "lag_slowest_host_s": (
                        round((now_ms - min(newest)) / 1000, 2)
                        if len(newest) == args.hosts
                        else None
                    ),
                    "rss_mb": round(rss_bytes() / 2**20, 1),
                    "phase": "publish" if not publisher.done.is_set() else "drain",
                }
                samples.append(sample)
                previous = (now_s, published, landed.rows)
                print(
                    f"  t={sample['t_s']:6.1f}s published={published:7,} "
                    f"landed={landed.rows:7,} dead={dead:5,} in={sample['in_per_s']:6.1f}/s "
                    f"out={sample['landed_per_s']:6.1f}/s lag={sample['lag_newest_s']}s "
                    f"(slowest host {sample['lag_slowest_host_s']}s) rss={sample['rss_mb']} MB",
                    flush=True,
                )
                if publisher.done.is_set():
                    publish_end = publisher.ended - started
                    if drain_deadline is None:
                        drain_deadline = publisher.ended + args.drain_seconds
                    accounted = landed.rows + dead >= publisher.acked_good + publisher.acked_bad
                    if accounted or time.monotonic() > drain_deadline:
                        break
        # When the last event was seen accounted for (at report granularity), after publishing;
        # None when the drain ran out first.
        drained_s = max(0.0, now_s - publish_end) if accounted else None
        cancelled = cancel(result)
        dead_letters.stop()
        dead = dead_letters.count
        check = final_check(target, publisher.acked_good, args.hosts)
        subscriber.close()

    rss = [(s["t_s"], int(s["rss_mb"] * 2**20)) for s in samples if s["phase"] == "publish"]
    growth = memory_growth(rss, publish_end)
    publish_samples = [s for s in samples if s["phase"] == "publish"]
    lags = [s["lag_newest_s"] for s in publish_samples if s["lag_newest_s"] is not None]
    summary = {
        "published": publisher.acked_good + publisher.acked_bad,
        "published_good": publisher.acked_good,
        "published_bad": publisher.acked_bad,
        "publish_errors": len(publisher.errors),
        "landed_rows": landed.rows,
        "dead_letters": dead,
        "lost": check["lost"],
        "duplicates": check["duplicates"],
        "dead_letters_missing": publisher.acked_bad - dead,
        "current_metric_rows": check["current_metric_rows"],
        "publish_seconds": round(publish_end, 1),
        "accounted_for": accounted,
        "accounted_for_within_s": None if drained_s is None else round(drained_s, 1),
        "drain_seconds": args.drain_seconds,
        "events_per_message": args.events_per_message,
        "throughput_events_per_s": round(landed.rows / publish_end, 1),
        "lag_newest_s_median": statistics.median(lags) if lags else None,
        "lag_newest_s_max": max(lags) if lags else None,
        "rss_mb_start": publish_samples[0]["rss_mb"],
        "rss_mb_end": publish_samples[-1]["rss_mb"],
        "rss_mb_max": max(s["rss_mb"] for s in samples),
        "rss_growth_second_half": round(growth, 4),
        "memory_flat": growth < FLAT_GROWTH,
        "job_cancelled": cancelled,
    }
    return {
        "config": {
            "minutes": args.minutes,
            "rate": args.rate,
            "hosts": args.hosts,
            "bad_every": args.bad_every,
            "report_every_s": args.report_every,
            "metrics_per_event": len(METRICS),
            "job_flags": list(args.job_flag),
        },
        "machine": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "beam": beam.__version__,
        },
        "samples": samples,
        "summary": summary,
        "ok": summary["lost"] == 0
        and summary["duplicates"] == 0
        and summary["dead_letters_missing"] == 0
        and summary["memory_flat"],
    }


def accounting(s: dict) -> str:
    """One verdict on where the events went, consistent with the final check's counts."""
    if s["accounted_for"] and s["lost"] <= 0 and s["dead_letters_missing"] <= 0:
        return f"all events accounted for {s['accounted_for_within_s']}s after the last publish"
    missing = max(s["lost"], 0) + max(s["dead_letters_missing"], 0)
    if missing == 0:
        return (
            f"all events accounted for only at the final check: the {s['drain_seconds']:g}s "
            "drain ran out first (the job is slower than the publishing rate)"
        )
    return (
        f"NOT all events accounted for: {s['lost']} good events without a row and "
        f"{s['dead_letters_missing']} bad ones without a dead letter after the "
        f"{s['drain_seconds']:g}s drain"
    )


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.soak",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--minutes", type=float, default=3.0, help="publishing time (default 3)")
    parser.add_argument("--rate", type=float, default=200.0, help="events/s (default 200)")
    parser.add_argument("--hosts", type=int, default=20, help="distinct hosts (default 20)")
    parser.add_argument(
        "--bad_every", type=int, default=100, help="one malformed event in N (0: none)"
    )
    parser.add_argument(
        "--events_per_message",
        type=int,
        default=100,
        help="events per Pub/Sub message, one per line (default 100; 1 gives one event per "
        "message, which caps the DirectRunner's stream near 300 events/s)",
    )
    parser.add_argument("--report_every", type=float, default=10.0, help="seconds (default 10)")
    parser.add_argument(
        "--drain_seconds",
        type=float,
        default=180.0,
        help="after publishing, wait at most this long for every event to be accounted for",
    )
    parser.add_argument(
        "--job_flag",
        action="append",
        default=[],
        help="an extra flag for the job (repeatable), e.g. --job_flag=--hourly_rollup",
    )
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="the JSON report")
    args = parser.parse_args(argv)
    if args.events_per_message < 1:
        parser.error("--events_per_message must be at least 1")
    if args.minutes <= 0 or args.rate <= 0 or args.hosts < 1 or args.report_every <= 0:
        parser.error("--minutes, --rate, --report_every must be positive and --hosts at least 1")
    if args.minutes * 60 < 4 * args.report_every:
        parser.error("run at least four report intervals (memory needs a second half)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    report = soak(args)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    s = report["summary"]
    print(
        f"soak: {s['published']:,} published ({s['published_bad']:,} bad), "
        f"{s['landed_rows']:,} rows landed, {s['dead_letters']:,} dead letters; "
        f"lost {s['lost']}, duplicates {s['duplicates']}; "
        f"{s['throughput_events_per_s']:,} events/s sustained "
        f"({s['events_per_message']} events per message); lag median "
        f"{s['lag_newest_s_median']}s, max {s['lag_newest_s_max']}s"
    )
    print(f"soak: {accounting(s)}")
    print(
        f"soak: memory {'FLAT' if s['memory_flat'] else 'NOT FLAT'}: RSS {s['rss_mb_start']} → "
        f"{s['rss_mb_end']} MB over the publishing phase, "
        f"{s['rss_growth_second_half']:+.1%} over its second half (flat: < {FLAT_GROWTH:.0%})"
    )
    print(f"soak: report written to {args.output}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
