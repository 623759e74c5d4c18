"""Load test of ``btts serve`` on loopback, in the same run as its ceiling: the Bigtable data
client doing the same reads with the same concurrency.

    python -m benchmarks.serve_load [--hosts 20] [--clients 8,32,128] [--seconds 5] [--probes]
        [--slices 2]

Starts a Bigtable emulator (unless BIGTABLE_EMULATOR_HOST is set), lands an hour of server
metrics with the real job, starts ``btts serve`` in a subprocess, then for each client count
runs a Grafana-shaped mix against it (keep-alive connections, as Grafana's) and the data
client's ``read_rows`` of the same rows, in turns (so a shared machine's load weighs on both);
reports requests/s, p50, p99 and the ratios, one host's raw points and ``hostname=*`` against
one multi-range read, and (``--probes``) the hostile probes of :mod:`benchmarks.serve_probes`.
Writes benchmarks/results/serve_load.json.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import http.client
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from google.cloud.bigtable.data import BigtableDataClient, ReadRowsQuery, RowRange, row_filters

from btts import config
from btts.emulator import ENV_HOST, Emulator
from btts.samples import data as samples
from pipelines import load
from transforms.text import timefmt

HOUR = 3_600_000
START = 1426536000000  # 2015-03-16T20:00:00Z
CPU = "server_metrics.metrics.CPU/CPU1_USR"
ROOT = Path(__file__).resolve().parent


def land(target: config.Target, hosts: int, work: Path) -> int:
    path = work / "metrics.jsonl"
    records = samples.metric_records(hosts=hosts, seconds=3600, interval_s=10, start_ms=START)
    count = samples.write_jsonl(path, records)
    argv = [f"--input={path}", f"--dead_letter={work / 'dead'}", "--create_tables"]
    argv += [f"--bigtable_project={target.project}", f"--bigtable_instance={target.instance}"]
    load("server_metrics").run(argv)
    return count


def body(query: dict) -> bytes:
    doc = {"start": START, "end": START + HOUR, "queries": [query], "msResolution": False}
    return json.dumps(doc).encode()


def host_range(h: int) -> tuple[bytes, bytes]:
    host = samples.host_name(h)
    return f"{host}#{START}".encode(), f"{host}#{START + HOUR}".encode()


def mix(hosts: int) -> list[tuple[bytes, list[tuple[bytes, bytes]]]]:
    """Grafana's requests (one host's raw hour, ``1m-avg``, ``10m-max``; ``hostname=*``
    ``5m-avg``) and the METRIC key ranges each one reads."""
    out = []
    for h in range(hosts):
        tags = {"hostname": samples.host_name(h)}
        for extra in ({}, {"downsample": "1m-avg"}, {"downsample": "10m-max"}):
            q = {"metric": CPU, "aggregator": "avg", "tags": tags, **extra}
            out.append((body(q), [host_range(h)]))
    star = {"metric": CPU, "aggregator": "sum", "downsample": "5m-avg", "tags": {"hostname": "*"}}
    out.append((body(star), [host_range(h) for h in range(hosts)]))
    return out


def stats(latencies: Sequence[float], errors: int, elapsed: float) -> dict:
    ordered = sorted(latencies)
    if not ordered:
        return {"requests": 0, "errors": errors}
    return {
        "requests": len(ordered),
        "errors": errors,
        "requests_per_s": round(len(ordered) / elapsed, 1),
        "p50_ms": round(1000 * ordered[len(ordered) // 2], 1),
        "p99_ms": round(1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 1),
    }


def _run_clients(make: Callable[[], Callable], items: list, clients: int, seconds: float):
    """``clients`` threads, each with its own ``make()`` (a connection), calling it on random
    items for ``seconds``: (latencies, errors, elapsed seconds)."""
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client(seed: int) -> None:
        rng, call = random.Random(seed), make()
        while time.monotonic() < stop_at:
            item = rng.choice(items)
            began = time.perf_counter()
            try:
                ok = call(item)
            except Exception:
                ok, call = False, make()
            took = time.perf_counter() - began
            with lock:
                latencies.append(took)
                errors[0] += not ok

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, errors[0], time.monotonic() - began


def load_round(make: Callable[[], Callable], items: list, clients: int, seconds: float) -> dict:
    """Requests/s, p50 and p99 of ``clients`` concurrent clients for ``seconds``."""
    return stats(*_run_clients(make, items, clients, seconds))


def paired_rounds(
    makers: Sequence[Callable[[], Callable]], items: list, clients: int, seconds: float, slices: int
) -> list[dict]:
    """:func:`load_round` of each maker for ``seconds`` in all, taken in ``slices`` turns
    (A B B A A B …), so that a shared machine's changing load weighs on each alike."""
    runs = [([], 0, 0.0) for _ in makers]
    for turn in range(slices):
        order = range(len(makers)) if turn % 2 == 0 else reversed(range(len(makers)))
        for i in order:
            lat, err, took = _run_clients(makers[i], items, clients, seconds / slices)
            runs[i] = (runs[i][0] + lat, runs[i][1] + err, runs[i][2] + took)
    return [stats(*run) for run in runs]


def poster(url: str) -> Callable[[], Callable]:
    """A keep-alive connection per client, POSTing a body to /api/query."""
    parts = urlsplit(url)

    def make() -> Callable:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        headers = {"Content-Type": "application/json", "Accept-Encoding": "gzip"}

        def call(item) -> bool:
            conn.request("POST", "/api/query", body=item[0], headers=headers)
            resp = conn.getresponse()
            resp.read()
            return resp.status == 200

        return call

    return make


def reader(
    client: BigtableDataClient, target: config.Target, row_filter=None
) -> Callable[[], Callable]:
    """The data client's ``read_rows`` of an item's key ranges (one multi-range read), whole
    rows unless ``row_filter`` is given."""
    table = client.get_table(target.instance, "METRIC")

    def make() -> Callable:
        def call(item) -> bool:
            spans = [RowRange(start_key=a, end_key=b) for a, b in item[1]]
            table.read_rows(ReadRowsQuery(row_ranges=spans, row_filter=row_filter))
            return True

        return call

    return make


def median_s(call: Callable[[], object], n: int) -> float:
    times = []
    for _ in range(n):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def same_cells() -> row_filters.RowFilter:
    """The server filter btts sends for the raw queries: the cells of the hours read, of the
    metric's one column."""
    window = [START - 3_600_000, START + 2 * HOUR]  # scan_window's whole hours, and more
    micros = [timefmt.EPOCH + dt.timedelta(milliseconds=ms) for ms in window]
    column = CPU.rsplit(".", 1)[1].encode()
    return row_filters.RowFilterChain(
        filters=[
            row_filters.TimestampRangeFilter(start=micros[0], end=micros[1]),
            row_filters.ColumnRangeFilter("METRIC", column, column, True, True),
        ]
    )


def single_ratios(url: str, client: BigtableDataClient, target: config.Target, hosts: int) -> dict:
    """One request at a time: a host's raw hour, and ``hostname=*`` raw over every host, by
    btts and by the data client (one multi-range read) of the whole rows (``ratio``) and of
    the cells btts reads, with its server filter (``ratio_same_cells``)."""
    post, read = poster(url)(), reader(client, target)()
    read_cells = reader(client, target, same_cells())()
    raw = (body({"metric": CPU, "aggregator": "none", "tags": {"hostname": samples.host_name(0)}}),)
    raw += ([host_range(0)],)
    star_q = {"metric": CPU, "aggregator": "none", "tags": {"hostname": "*"}}
    star = (body(star_q), [host_range(h) for h in range(hosts)])
    out = {}
    for name, item, n in (("raw_host_hour", raw, 30), ("star_all_hosts", star, 8)):
        post(item), read(item), read_cells(item)  # warm
        btts_s = median_s(lambda item=item: post(item), n)
        client_s = median_s(lambda item=item: read(item), n)
        cells_s = median_s(lambda item=item: read_cells(item), n)
        out[name] = {
            "btts_ms": round(1000 * btts_s, 1),
            "data_client_ms": round(1000 * client_s, 1),
            "ratio": round(btts_s / client_s, 2),
            "data_client_same_cells_ms": round(1000 * cells_s, 1),
            "ratio_same_cells": round(btts_s / cells_s, 2),
        }
    return out


def start_server(target: config.Target, *extra: str) -> tuple[subprocess.Popen, str]:
    argv = [sys.executable, "-m", "btts_cli.main", "serve", "--port", "0"]
    argv += ["--project", target.project, "--instance", target.instance, *extra]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    match = re.search(r"http://([0-9.]+):([0-9]+)/", proc.stdout.readline())
    if not match:
        proc.kill()
        raise SystemExit("btts serve did not start")
    return proc, f"http://{match.group(1)}:{match.group(2)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="example: python -m benchmarks.serve_load --clients 8,32 --seconds 3 --probes",
    )
    parser.add_argument("--hosts", type=int, default=20, help="hosts in the hour (default 20)")
    parser.add_argument(
        "--clients", default="8,32,128", help="concurrent clients per round (default 8,32,128)"
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per round (default 5)")
    parser.add_argument(
        "--slices",
        type=int,
        default=2,
        help="turns btts and the data client take within a round (default 2: A B B A)",
    )
    parser.add_argument("--probes", action="store_true", help="also run the hostile probes")
    args = parser.parse_args(argv)
    try:
        args.client_counts = [int(c) for c in args.clients.split(",") if c.strip()]
    except ValueError:
        parser.error(f"--clients {args.clients!r}: expected numbers separated by commas")
    with contextlib.ExitStack() as stack:
        if not os.environ.get(ENV_HOST):
            stack.enter_context(Emulator())
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from benchmarks import serve_probes

    target = config.Target("bench-project", f"l{uuid.uuid4().hex[:12]}")
    proc = None
    try:
        with tempfile.TemporaryDirectory() as work:
            events = land(target, args.hosts, Path(work))
        proc, url = start_server(target)
        items = mix(args.hosts)
        report: dict = {"events": events, "hosts": args.hosts, "seconds": args.seconds}
        report["machine"] = f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
        with BigtableDataClient(project=target.project) as client:
            load_round(poster(url), items[:4], 2, 1.0)  # warm-up: imports, channels, caches
            report["single"] = single_ratios(url, client, target, args.hosts)
            report["rounds"] = {}
            for n in args.client_counts:
                load = round(os.getloadavg()[0], 1)  # the machine may be shared: say how busy
                served, ceiling = paired_rounds(
                    [poster(url), reader(client, target)], items, n, args.seconds, args.slices
                )
                ratio = served.get("requests_per_s", 0) / max(ceiling["requests_per_s"], 1e-9)
                report["rounds"][n] = {
                    "btts": served,
                    "data_client": ceiling,
                    "ratio": round(ratio, 2),
                    "server_rss_kib": serve_probes.rss_kib(proc.pid),
                    "server_threads": serve_probes.threads(proc.pid),
                    "load_average": load,
                }
            if args.probes:
                report["probes"] = serve_probes.run_all(url, proc.pid, args.hosts)
        out = ROOT / "results" / "serve_load.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2))
        print(json.dumps(report, indent=2))
        errors = sum(r["btts"]["errors"] for r in report["rounds"].values())
        return 0 if errors == 0 else 1
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
