"""The soak's load and its meter, each in a process of its own.

The DirectRunner runs the job in the soak's process, where every Python thread shares one
interpreter lock: a publisher thread and a landed-rows counter there took about a third of that
process's samples (py-spy) and so slowed the job they measure. Here both are spawned processes:
:class:`PublisherProcess` offers events at a rate the soak may change while it runs, and
:class:`LandedCounter` counts METRIC rows with keys-only reads. They still share the machine's
cores, not the job's lock. :func:`rollup_check` compares METRIC_HOURLY with the publisher's own
hourly totals.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Sequence

HOUR_MS = 3_600_000
METRICS = ("cpu/cpu1_usr", "cpu/cpu1_nice", "io/blk_read", "mem/used_pct")
_SPAWN = multiprocessing.get_context("spawn")  # no fork of a process holding gRPC channels


def host_name(index: int) -> str:
    return f"soak{index:04d}.example.com"


def metric_value(n: int, i: int) -> int:
    """Event ``n``'s value of metric ``i``, in hundredths (published as ``value / 100``)."""
    return (n * 7 + i) % 1000


def bad_event(n: int, bad_every: int) -> bool:
    return bool(bad_every) and n % bad_every == bad_every - 1


class PublisherProcess:
    """Publishes events at ``rate`` a second (changeable with :meth:`set_rate`) until
    :meth:`stop`. Each event is stamped with the wall clock at publish time minus ``lag_ms``,
    strictly increasing per host (so every event is its own METRIC row); ``per_message`` events
    go in one message, one per line."""

    def __init__(
        self, topic: str, rate: float, hosts: int, bad_every: int, per_message: int, lag_ms: int = 0
    ) -> None:
        self._rate = _SPAWN.Value("d", rate)
        self._stop = _SPAWN.Event()
        self.done = _SPAWN.Event()
        self._ready = _SPAWN.Event()
        self._counts = _SPAWN.Array("q", 4)  # sent, acked good, acked bad, errors
        self._ended = _SPAWN.Value("d", 0.0)
        self._totals = _SPAWN.Queue()
        self._process = _SPAWN.Process(
            target=_publish,
            args=(topic, hosts, bad_every, per_message, lag_ms, self._rate, self._stop,
                  self._ready, self.done, self._counts, self._ended, self._totals),
            name="soak-publisher",
            daemon=True,
        )  # fmt: skip
        self.hourly: dict | None = None

    def start(self, timeout: float = 120.0) -> None:
        """Start the process; returns once it is ready to publish."""
        self._process.start()
        if not self._ready.wait(timeout):
            raise RuntimeError(f"the publisher process was not ready after {timeout:g}s")

    def set_rate(self, rate: float) -> None:
        self._rate.value = rate

    def stop(self) -> None:
        """Stop publishing; returns once every publish is acknowledged (or failed)."""
        self._stop.set()
        self.hourly = self._totals.get(timeout=300)
        self._process.join(timeout=60)

    @property
    def acked_good(self) -> int:
        return self._counts[1]

    @property
    def acked_bad(self) -> int:
        return self._counts[2]

    @property
    def errors(self) -> int:
        return self._counts[3]

    @property
    def ended(self) -> float:
        """time.monotonic() (the same clock in every process) at the last acknowledgement."""
        return self._ended.value


def _publish(
    topic, hosts, bad_every, per_message, lag_ms, rate, stop, ready, done, counts, ended, out
):
    from google.cloud import pubsub_v1

    client = pubsub_v1.PublisherClient(
        batch_settings=pubsub_v1.types.BatchSettings(max_messages=500, max_latency=0.05)
    )
    ready.set()
    lock = threading.Lock()
    last_ts = [0] * hosts
    # (host, hour start, metric index) → [sum of hundredths, count], of acknowledged good events
    hourly: dict[tuple[int, int, int], list[int]] = {}
    sent = 0
    due = 0.0
    messages = 0
    answered = [0]  # messages whose callback has run

    def acked(good: list[tuple[int, int, int]], bad: int):
        def callback(future) -> None:
            with lock:
                answered[0] += 1
                if future.exception() is not None:
                    counts[3] += 1
                    return
                counts[1] += len(good)
                counts[2] += bad
                for host, ts, n in good:
                    hour = ts - ts % HOUR_MS
                    for i in range(len(METRICS)):
                        total = hourly.setdefault((host, hour, i), [0, 0])
                        total[0] += metric_value(n, i)
                        total[1] += 1

        return callback

    def publish(count: int) -> None:
        nonlocal sent, messages
        bodies, good = [], []
        for _ in range(count):
            n = sent
            sent += 1
            if bad_event(n, bad_every):
                bodies.append(b'{"hostname": "soak#bad", "timestamp": 0, "metrics": {}}')
                continue
            host = n % hosts
            ts = max(int(time.time() * 1000) - lag_ms, last_ts[host] + 1)
            last_ts[host] = ts
            values = ", ".join(
                f'"{m}": {metric_value(n, i) / 100:.2f}' for i, m in enumerate(METRICS)
            )
            bodies.append(
                f'{{"hostname": "{host_name(host)}", "timestamp": {ts}, '
                f'"metrics": {{{values}}}}}'.encode()
            )
            good.append((host, ts, n))
        counts[0] = sent
        messages += 1
        client.publish(topic, b"\n".join(bodies)).add_done_callback(acked(good, count - len(good)))

    try:
        last = time.monotonic()
        while not stop.is_set():
            now = time.monotonic()
            due += (now - last) * rate.value
            last = now
            while due >= per_message:
                publish(per_message)
                due -= per_message
            time.sleep(0.01)
    finally:
        client.stop()  # flushes what is batched, waits for the acknowledgements
        deadline = time.monotonic() + 60  # and their callbacks, which run in other threads
        while answered[0] < messages and time.monotonic() < deadline:
            time.sleep(0.01)
        ended.value = time.monotonic()
        done.set()
        with lock:
            out.put({f"{h}|{hour}|{i}": t for (h, hour, i), t in hourly.items()})


class LandedCounter:
    """METRIC rows landed so far, counted incrementally per host with keys-only reads (each
    host's range past the newest key seen), in a process of its own."""

    def __init__(self, project: str, instance: str, hosts: int) -> None:
        self._conn, child = _SPAWN.Pipe()
        self._process = _SPAWN.Process(
            target=_count, args=(child, project, instance, hosts), name="soak-landed", daemon=True
        )
        self._process.start()
        self.rows = 0
        self.newest: dict[str, int] = {}
        self.refresh()  # returns once the process and its client are up

    def refresh(self) -> int:
        self._conn.send("refresh")
        self.rows, self.newest = self._conn.recv()
        return self.rows

    def close(self) -> None:
        self._conn.send("stop")
        self._process.join(timeout=30)


def _count(conn, project: str, instance: str, hosts: int) -> None:
    from google.cloud.bigtable.data import BigtableDataClient, ReadRowsQuery, RowRange

    from transforms.bigtable.filters import KEYS_ONLY

    names = [host_name(i) for i in range(hosts)]
    newest = dict.fromkeys(names, -1)
    rows = 0
    with BigtableDataClient(project=project) as client:
        table = client.get_table(instance, "METRIC")
        while conn.recv() == "refresh":
            ranges = [
                RowRange(start_key=f"{h}#{newest[h] + 1:013d}".encode(), end_key=f"{h}$".encode())
                for h in names
            ]
            for row in table.read_rows(ReadRowsQuery(row_ranges=ranges, row_filter=KEYS_ONLY)):
                host, ts = bytes(row.row_key).decode().rsplit("#", 1)
                newest[host] = max(newest[host], int(ts))
                rows += 1
            conn.send((rows, dict(newest)))


def expected_hourly(hourly: dict, hosts: Sequence[str]) -> dict:
    """The publisher's totals as (host name, hour start) → metric index → [sum, count]."""
    out: dict[tuple[str, int], dict[int, list[int]]] = {}
    for name, total in hourly.items():
        host, hour, i = (int(x) for x in name.split("|"))
        out.setdefault((hosts[host], hour), {})[i] = total
    return out


def rollup_check(target, hourly: dict, hosts: int) -> dict:
    """METRIC_HOURLY's latest exact_sum / exact_count of every host-hour and metric against the
    publisher's totals (values are hundredths; the rollup scales by 10**6)."""
    from btts.query import engine
    from pipelines import server_metrics

    names = [host_name(i) for i in range(hosts)]
    expected = expected_hourly(hourly, names)
    key_fn = server_metrics.JOB.rollup.key_fn
    qualifiers = [m.upper().encode() for m in METRICS]
    stored = {r.key: r.latest() for r in engine.read_rows(target, "METRIC_HOURLY")}
    mismatches = 0
    for (host, hour), totals in expected.items():
        cells = stored.pop(key_fn(host, hour), {})
        for i, (hundredths, count) in totals.items():
            got_sum = cells.get(("exact_sum", qualifiers[i]))
            got_count = cells.get(("exact_count", qualifiers[i]))
            if (
                got_sum is None
                or got_count is None
                or int.from_bytes(got_sum, "big", signed=True) != hundredths * 10**4
                or int.from_bytes(got_count, "big") != count
            ):
                mismatches += 1
    return {
        "rollup_rows_expected": len(expected),
        "rollup_mismatches": mismatches,
        "rollup_unexpected_rows": len(stored),
    }
