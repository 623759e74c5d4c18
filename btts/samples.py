"""Deterministic sample data for the demo, the tests and the benchmarks."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

from transforms.timefmt import to_datetime

METRIC_NAMES = ("cpu/cpu1_usr", "cpu/cpu1_nice", "io/blk_read", "io/blk_wrtn", "mem/used_pct")
# Lines a real feed produces by mistake, each a different reason to dead-letter.
BAD_METRIC_LINES = (
    "{not json",
    '{"hostname": "web#1", "timestamp": "2015-03-16T19:53:32.045Z", "metrics": {"cpu": 1}}',
    '{"hostname": "web1", "timestamp": "yesterday", "metrics": {"cpu": 1}}',
    '{"hostname": "web1", "timestamp": "2015-03-16T19:53:32.045Z", "metrics": {"cpu": "high"}}',
    '{"hostname": "web1", "timestamp": "2015-03-16T19:53:32.045", "metrics": {"cpu": 1}}',
    '{"timestamp": "2015-03-16T19:53:32.045Z", "metrics": {"cpu": 1}}',
    '{"hostname": "web1", "timestamp": "2015-03-16T19:53:32.045Z", "metrics": {"cpu": NaN}}',
    '["an", "array"]',
)


def iso_ms(ms: int) -> str:
    return to_datetime(ms).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def metric_events(
    hosts: int,
    seconds: int,
    interval_s: int = 5,
    start_ms: int = 1426535600000,
    seed: int = 7,
    metrics: tuple[str, ...] = METRIC_NAMES,
) -> Iterator[str]:
    """JSON lines of server metrics: every host reports every ``interval_s`` seconds."""
    rng = random.Random(seed)
    for step in range(0, seconds, interval_s):
        ts = iso_ms(start_ms + step * 1000)
        for h in range(hosts):
            values = {}
            for name in metrics:
                if name.startswith("io/"):
                    values[name] = rng.randrange(10**9)
                else:
                    values[name] = round(rng.random(), 2)
            yield json.dumps(
                {"hostname": f"server{h:04d}.example.com", "timestamp": ts, "metrics": values}
            )
