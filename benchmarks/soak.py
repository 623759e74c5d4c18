"""Soak: a bounded streaming run of the server-metrics job, Pub/Sub emulator → Bigtable emulator.

    python -m benchmarks.soak                        # make soak: 3 minutes at 200 events/s
    python -m benchmarks.soak --minutes 10 --rate 500 --hosts 50
    python -m benchmarks.soak --ceiling --step_seconds 60   # the highest rate the job sustains

A publisher process sends server-metric events at the offered rate (one in ``--bad_every`` is
malformed, to keep the dead-letter path busy); the job (``pipelines.server_metrics`` with
``--input_subscription``, on the DirectRunner, in this process) lands them in METRIC and
CURRENT_METRIC. Every ``--report_every`` seconds the soak records:

* published — events the emulator acknowledged (and how many of them were bad);
* landed — METRIC rows, counted from Bigtable by a process of its own (keys-only reads of every
  host's range past the newest key already seen): what the job has written, not what was sent;
* backlog — good events published and not landed yet; dead — dead letters received;
* lag — ``now - newest landed event time`` for the host furthest behind (event times are the
  publish time, minus an hour with the rollup: see below);
* rss — this process's resident memory (VmRSS of /proc/self/status): the runner runs here.

**Sustained.** A rate is sustained over a step (the whole publishing phase in the fixed-rate
mode) when the backlog at the step's end is no greater than at its start plus
``--tolerance_s`` seconds of the offered rate: the job kept up, give or take its own latency.
The landed events/s of a step is its landed rows over its length; a run that was not sustained
reports what landed, never the publish rate.

**Ceiling** (``--ceiling``): the offered rate starts at ``--rate`` and is multiplied by
``--step_factor`` every ``--step_seconds`` until a step is not sustained (or ``--max_rate`` is
passed); the ceiling is the landed events/s of the highest sustained step. The job runs with
``--hourly_rollup`` (unless ``--no_rollup``) and events are stamped one hour back, so their
hours are already closed: every point is written into its exact hourly totals during the run,
and the final check compares each host-hour's exact_sum / exact_count with the publisher's own
totals. (The DirectRunner's Pub/Sub watermark is the wall clock: on-time hours would close only
at a real hour boundary. Closed hours take the rollup's late-pane path, a row per point, so the
figure is the rollup's worst case.)

After publishing the soak waits (``--drain_seconds`` at most) until every published event is
accounted for (landed or dead-lettered), cancels the job, and checks the tables: lost events
(published good events without a METRIC row), duplicates (cells beyond one per metric of each
row) and rollup mismatches must all be 0. Memory is called flat when RSS grew by less than 10%
over the second half of the publishing phase. The JSON report goes to
``benchmarks/results/soak.json`` (``soak-ceiling.json`` for the ceiling).
Not part of ``make test``: it takes minutes by design (tests run a small ceiling).
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
from google.cloud.bigtable.data import BigtableDataClient, ReadRowsQuery

from benchmarks.soak_load import HOUR_MS, METRICS, LandedCounter, PublisherProcess, rollup_check
from btts import config
from btts.emulator import Emulator, PubSubEmulator
from pipelines import common, server_metrics
from pipelines.common.runner import prepare
from transforms.bigtable.filters import KEYS_ONLY

ROOT = Path(__file__).resolve().parent
DEFAULT_OUTPUT = ROOT / "results" / "soak.json"
CEILING_OUTPUT = ROOT / "results" / "soak-ceiling.json"
PROJECT = "test-project"
FLAT_GROWTH = 0.10  # RSS growth over the second half below this is "flat"


def rss_bytes() -> int:
    """Resident memory of this process (Linux)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def memory_growth(samples: Sequence[tuple[float, int]], until: float) -> float:
    """Relative RSS growth over the second half of ``[0, until]``: last sample of the half
    against its first (samples are ``(seconds, rss)``)."""
    half = [rss for t, rss in samples if until / 2 <= t <= until]
    if len(half) < 2:
        raise ValueError("too few memory samples in the second half; run longer")
    return (half[-1] - half[0]) / half[0]


def step_verdict(start: dict, end: dict, tolerance_s: float) -> dict:
    """One step between two samples: offered and landed events/s, and whether the job kept up
    (backlog growth within ``tolerance_s`` seconds of the offered rate)."""
    seconds = end["t_s"] - start["t_s"]
    offered = (end["published"] - start["published"]) / seconds
    landed = (end["landed_rows"] - start["landed_rows"]) / seconds
    growth = end["backlog"] - start["backlog"]
    allowed = tolerance_s * offered
    return {
        "seconds": round(seconds, 1),
        "offered_per_s": round(offered, 1),
        "landed_per_s": round(landed, 1),
        "backlog_start": start["backlog"],
        "backlog_end": end["backlog"],
        "backlog_growth_allowed": round(allowed),
        "sustained": growth <= allowed,
    }


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


def start_job(subscription: str, dead_topic: str, target: config.Target, extra: Sequence[str]):
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
    config = common.job_config(options, server_metrics.JOB)
    prepare(config)
    pipeline = beam.Pipeline(options=options)
    common.ingest(pipeline, config)
    return pipeline.run()


def cancel(result, timeout: float = 120.0) -> bool:
    """Cancel the streaming job (it waits out its reader's pending pull); False on timeout."""
    thread = threading.Thread(target=result.cancel, daemon=True)
    thread.start()
    thread.join(timeout)
    return not thread.is_alive()


def final_check(target: config.Target, good: int, hosts: int, hourly: dict | None) -> dict:
    """Every row and cell of METRIC and CURRENT_METRIC, against what was published; with
    ``hourly`` (the publisher's totals), every METRIC_HOURLY row's exact totals too."""
    with BigtableDataClient(project=target.project) as client:
        metric = client.get_table(target.instance, "METRIC")
        rows = cells = 0
        for row in metric.read_rows(ReadRowsQuery()):
            rows += 1
            cells += len(row.cells)
        current = client.get_table(target.instance, "CURRENT_METRIC")
        current_rows = sum(1 for _ in current.read_rows(ReadRowsQuery(row_filter=KEYS_ONLY)))
    check = {
        "metric_rows": rows,
        "metric_cells": cells,
        "current_metric_rows": current_rows,
        "lost": good - rows,
        "duplicates": cells - rows * len(METRICS),
        "current_metric_expected": min(hosts, good),
    }
    if hourly is not None:
        check.update(rollup_check(target, hourly, hosts))
    return check


class Meter:
    """The soak's samples: published (from the publisher), landed (from Bigtable), dead
    letters, backlog, lag and RSS, every call of :meth:`sample`."""

    def __init__(self, publisher, landed, dead_letters, lag_ms: int, hosts: int) -> None:
        self._publisher = publisher
        self._landed = landed
        self._dead = dead_letters
        self._lag_ms = lag_ms
        self._hosts = hosts
        self.started = time.monotonic()
        self.samples: list[dict] = []

    def sample(self, phase: str, step: int | None = None) -> dict:
        published_good = self._publisher.acked_good
        published = published_good + self._publisher.acked_bad
        landed = self._landed.refresh()
        now_ms = int(time.time() * 1000) - self._lag_ms
        newest = [ts for ts in self._landed.newest.values() if ts >= 0]
        previous = self.samples[-1] if self.samples else None
        sample = {
            "t_s": round(time.monotonic() - self.started, 2),
            "phase": phase,
            "step": step,
            "published": published,
            "published_good": published_good,
            "published_bad": self._publisher.acked_bad,
            "landed_rows": landed,
            "dead_letters": self._dead.count,
            "backlog": published_good - landed,
            "lag_slowest_host_s": (
                round((now_ms - min(newest)) / 1000, 2) if len(newest) == self._hosts else None
            ),
            "rss_mb": round(rss_bytes() / 2**20, 1),
        }
        if previous is not None:
            seconds = max(sample["t_s"] - previous["t_s"], 1e-9)
            sample["in_per_s"] = round((published - previous["published"]) / seconds, 1)
            sample["landed_per_s"] = round((landed - previous["landed_rows"]) / seconds, 1)
        self.samples.append(sample)
        print(
            f"  t={sample['t_s']:6.1f}s {phase:7} published={published:8,} "
            f"landed={landed:8,} dead={sample['dead_letters']:5,} "
            f"in={sample.get('in_per_s', 0):7.1f}/s out={sample.get('landed_per_s', 0):7.1f}/s "
            f"backlog={sample['backlog']:7,} lag={sample['lag_slowest_host_s']}s "
            f"rss={sample['rss_mb']} MB",
            flush=True,
        )
        return sample

    def run_for(self, seconds: float, every: float, phase: str, step: int | None) -> dict:
        """Sample every ``every`` seconds for ``seconds``; the last sample."""
        end = time.monotonic() + seconds
        sample = None
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return sample or self.sample(phase, step)
            time.sleep(min(every, left))
            sample = self.sample(phase, step)


def rates(args: argparse.Namespace):
    """The offered rate of each step: one step in the fixed-rate mode."""
    if not args.ceiling:
        yield args.rate, args.minutes * 60
        return
    rate = args.rate
    while rate <= args.max_rate:
        yield rate, args.step_seconds
        rate *= args.step_factor


def soak(args: argparse.Namespace) -> dict:
    from google.cloud import pubsub_v1

    # Exact mode (the default) only: add mode's AddToCell sums are not checked here.
    rollup = "--hourly_rollup" in args.job_flag and "--rollup_mode=add" not in args.job_flag
    lag_ms = HOUR_MS if rollup else 0  # closed hours: see the module docstring
    with Emulator() as bigtable, PubSubEmulator() as pubsub:
        target = config.Target(PROJECT, f"soak{uuid.uuid4().hex[:8]}")
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
        mode = "ceiling" if args.ceiling else f"{args.rate:g} events/s for {args.minutes:g} min"
        print(
            f"soak: server_metrics streaming job started "
            f"({' '.join(args.job_flag) or 'no flags'}); "
            f"{mode} over {args.hosts} hosts (1 in {args.bad_every} bad) "
            f"(bigtable {bigtable.endpoint}, pubsub {pubsub.endpoint})",
            flush=True,
        )
        publisher = PublisherProcess(
            topics["events"][0], 0.0, args.hosts, args.bad_every, args.events_per_message, lag_ms
        )
        publisher.start()
        landed = LandedCounter(target.project, target.instance, args.hosts)
        dead_letters = DeadLetters(subscriber, topics["dead"][1])
        meter = Meter(publisher, landed, dead_letters, lag_ms, args.hosts)
        steps = []
        try:
            if args.warmup_seconds:  # start-up (first bundles, connections) is no step's cost
                publisher.set_rate(next(rates(args))[0])
                meter.run_for(args.warmup_seconds, args.report_every, "warmup", None)
            start = meter.sample("publish", 0)
            for index, (rate, seconds) in enumerate(rates(args)):
                publisher.set_rate(rate)
                end = meter.run_for(seconds, args.report_every, "publish", index)
                verdict = {
                    "step": index,
                    "rate": rate,
                    **step_verdict(start, end, args.tolerance_s),
                }
                steps.append(verdict)
                print(
                    f"soak: step {index}: offered {verdict['offered_per_s']:,.0f}/s, landed "
                    f"{verdict['landed_per_s']:,.0f}/s, backlog {verdict['backlog_start']:,} → "
                    f"{verdict['backlog_end']:,}: "
                    f"{'sustained' if verdict['sustained'] else 'NOT sustained'}",
                    flush=True,
                )
                start = end
                if args.ceiling and not verdict["sustained"]:
                    break
            publisher.stop()  # waits for every acknowledgement
            publish_end = publisher.ended - meter.started
            drain_deadline = publisher.ended + args.drain_seconds
            while True:
                last = meter.sample("drain")
                published = last["published"]
                accounted = last["landed_rows"] + last["dead_letters"] >= published
                if accounted or time.monotonic() > drain_deadline:
                    break
                time.sleep(args.report_every)
            # When the last event was seen accounted for (at report granularity), after
            # publishing; None when the drain ran out first.
            drained_s = max(0.0, last["t_s"] - publish_end) if accounted else None
            while rollup and accounted:  # the rollup's last panes land after the rows
                check = rollup_check(target, publisher.hourly, args.hosts)
                if not check["rollup_mismatches"] or time.monotonic() > drain_deadline:
                    break
                time.sleep(1.0)
        finally:
            # A blank line wakes the reader's pending pull (the runner waits it out before it
            # stops); the job counts it as a blank line: neither a row nor a dead letter.
            publisher_admin.publish(topics["events"][0], b"\n").result()
            cancelled = cancel(result)
            dead_letters.stop()
            landed.close()
        dead = dead_letters.count
        check = final_check(
            target, publisher.acked_good, args.hosts, publisher.hourly if rollup else None
        )
        subscriber.close()

    samples = meter.samples
    publish_samples = [s for s in samples if s["phase"] == "publish"]
    rss = [(s["t_s"], int(s["rss_mb"] * 2**20)) for s in publish_samples]
    growth = memory_growth(rss, publish_end)
    lags = [s["lag_slowest_host_s"] for s in publish_samples if s["lag_slowest_host_s"] is not None]
    sustained = [s for s in steps if s["sustained"]]
    publish_landed = publish_samples[-1]["landed_rows"] - publish_samples[0]["landed_rows"]
    publish_span = publish_samples[-1]["t_s"] - publish_samples[0]["t_s"]
    summary = {
        "published": publisher.acked_good + publisher.acked_bad,
        "published_good": publisher.acked_good,
        "published_bad": publisher.acked_bad,
        "publish_errors": publisher.errors,
        "landed_rows": check["metric_rows"],
        "dead_letters": dead,
        "lost": check["lost"],
        "duplicates": check["duplicates"],
        "dead_letters_missing": publisher.acked_bad - dead,
        "current_metric_rows": check["current_metric_rows"],
        "rollup_checked": rollup,
        "rollup_mismatches": check.get("rollup_mismatches"),
        "rollup_unexpected_rows": check.get("rollup_unexpected_rows"),
        "rollup_rows_expected": check.get("rollup_rows_expected"),
        "publish_seconds": round(publish_end, 1),
        "accounted_for": accounted,
        "accounted_for_within_s": None if drained_s is None else round(drained_s, 1),
        "drain_seconds": args.drain_seconds,
        "events_per_message": args.events_per_message,
        # What landed while publishing, over the publishing time: not the publish rate.
        "landed_events_per_s": round(publish_landed / max(publish_span, 1e-9), 1),
        "sustained": all(s["sustained"] for s in steps) if not args.ceiling else bool(sustained),
        "ceiling_events_per_s": max((s["landed_per_s"] for s in sustained), default=None),
        "ceiling_offered_per_s": max((s["offered_per_s"] for s in sustained), default=None),
        "first_unsustained_offered_per_s": next(
            (s["offered_per_s"] for s in steps if not s["sustained"]), None
        ),
        "lag_slowest_host_s_median": statistics.median(lags) if lags else None,
        "lag_slowest_host_s_max": max(lags) if lags else None,
        "rss_mb_start": publish_samples[0]["rss_mb"],
        "rss_mb_end": publish_samples[-1]["rss_mb"],
        "rss_mb_max": max(s["rss_mb"] for s in samples),
        "rss_growth_second_half": round(growth, 4),
        "memory_flat": growth < FLAT_GROWTH,
        "job_cancelled": cancelled,
    }
    return {
        "config": {
            "mode": "ceiling" if args.ceiling else "fixed",
            "minutes": None if args.ceiling else args.minutes,
            "rate": args.rate,
            "step_seconds": args.step_seconds if args.ceiling else None,
            "step_factor": args.step_factor if args.ceiling else None,
            "tolerance_s": args.tolerance_s,
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
        "steps": steps,
        "samples": samples,
        "summary": summary,
        "ok": summary["lost"] == 0
        and summary["duplicates"] == 0
        and summary["dead_letters_missing"] == 0
        and summary["publish_errors"] == 0
        and not summary["rollup_mismatches"]
        and not summary["rollup_unexpected_rows"]
        and summary["memory_flat"]
        and (summary["ceiling_events_per_s"] is not None if args.ceiling else True),
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


def throughput(s: dict, ceiling: bool) -> str:
    """The rate line: landed events/s, called sustained only when the backlog stayed bounded."""
    if ceiling:
        if s["ceiling_events_per_s"] is None:
            return "no step sustained: lower --rate"
        limit = s["first_unsustained_offered_per_s"]
        return (
            f"ceiling {s['ceiling_events_per_s']:,.0f} events/s landed and sustained (offered "
            f"{s['ceiling_offered_per_s']:,.0f}/s); "
            + (f"{limit:,.0f}/s offered was not" if limit else "the last step was sustained")
        )
    verdict = "sustained" if s["sustained"] else "NOT sustained: the backlog grew"
    return f"{s['landed_events_per_s']:,} events/s landed while publishing ({verdict})"


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.soak",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--minutes", type=float, default=3.0, help="publishing time (default 3)")
    parser.add_argument(
        "--rate", type=float, default=None, help="events/s (default 200; ceiling: first step 1000)"
    )
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
        "--tolerance_s",
        type=float,
        default=2.0,
        help="a step is sustained when its backlog grew by at most this many seconds of the "
        "offered rate (default 2)",
    )
    parser.add_argument(
        "--ceiling", action="store_true", help="step the rate up until the backlog grows"
    )
    parser.add_argument(
        "--step_seconds", type=float, default=60.0, help="ceiling: length of a step (default 60)"
    )
    parser.add_argument(
        "--step_factor", type=float, default=1.5, help="ceiling: rate factor per step (1.5)"
    )
    parser.add_argument(
        "--max_rate", type=float, default=100_000.0, help="ceiling: stop past this rate"
    )
    parser.add_argument(
        "--warmup_seconds",
        type=float,
        default=None,
        help="publish at the first rate this long before the first step is measured "
        "(default: 10 with --ceiling, else 0)",
    )
    parser.add_argument("--no_rollup", action="store_true", help="ceiling: without --hourly_rollup")
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
    parser.add_argument("--output", type=Path, default=None, help="the JSON report")
    args = parser.parse_args(argv)
    if args.rate is None:
        args.rate = 1000.0 if args.ceiling else 200.0
    if args.warmup_seconds is None:
        args.warmup_seconds = 10.0 if args.ceiling else 0.0
    if args.output is None:
        args.output = CEILING_OUTPUT if args.ceiling else DEFAULT_OUTPUT
    if args.ceiling and not args.no_rollup and "--hourly_rollup" not in args.job_flag:
        args.job_flag.append("--hourly_rollup")
    if args.events_per_message < 1:
        parser.error("--events_per_message must be at least 1")
    if args.minutes <= 0 or args.rate <= 0 or args.hosts < 1 or args.report_every <= 0:
        parser.error("--minutes, --rate, --report_every must be positive and --hosts at least 1")
    if args.ceiling and (args.step_factor <= 1 or args.step_seconds <= 0):
        parser.error("--step_factor must be above 1 and --step_seconds positive")
    if not args.ceiling and args.minutes * 60 < 4 * args.report_every:
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
        f"lost {s['lost']}, duplicates {s['duplicates']}"
        + (
            f", rollup mismatches {s['rollup_mismatches']} of {s['rollup_rows_expected']} "
            f"host-hours"
            if s["rollup_checked"]
            else ""
        )
    )
    print(
        f"soak: {throughput(s, args.ceiling)} ({s['events_per_message']} events per message); "
        f"slowest host's lag median {s['lag_slowest_host_s_median']}s, "
        f"max {s['lag_slowest_host_s_max']}s"
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
