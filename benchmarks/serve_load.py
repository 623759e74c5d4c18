"""Load test of ``btts serve`` on loopback: N concurrent Grafana-shaped ``/api/query`` requests
for a few seconds, against ``cbt read`` of the same key ranges.

    python -m benchmarks.serve_load [--hosts 20] [--clients 8] [--seconds 5]

Starts a Bigtable emulator (unless BIGTABLE_EMULATOR_HOST is set), lands an hour of server
metrics with the real job (METRIC and the METRIC_HOURLY rollup), starts ``btts serve`` in a
subprocess, then runs two rounds of load; prints requests/s, p50/p99 latency, errors and the
server's resident memory before and after each round (flat memory: round 2 ends where round 1
did). ``cbt read`` times the same host ranges, one process per read, as a shell user would.
Bounded: every request has a timeout, every round a duration.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

from google.cloud.bigtable.data import BigtableDataClient, ReadRowsQuery, RowRange

from btts import config
from btts.emulator import ENV_HOST, Emulator
from btts.samples import data as samples
from pipelines import load

HOUR = 3_600_000
START = 1426536000000  # 2015-03-16T20:00:00Z
CPU = "server_metrics.metrics.CPU/CPU1_USR"


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def land(target: config.Target, hosts: int, work: Path) -> int:
    path = work / "metrics.jsonl"
    records = samples.metric_records(hosts=hosts, seconds=3600, interval_s=10, start_ms=START)
    count = samples.write_jsonl(path, records)
    argv = [
        f"--input={path}",
        f"--dead_letter={work / 'dead'}",
        f"--bigtable_project={target.project}",
        f"--bigtable_instance={target.instance}",
        "--create_tables",
        "--hourly_rollup",
    ]
    load("server_metrics").run(argv)
    return count


def bodies(hosts: int) -> list[dict]:
    """The dashboards' requests, as Grafana's OpenTSDB data source POSTs them."""

    def body(query: dict, start: int = START, end: int = START + HOUR) -> dict:
        return {
            "start": start,
            "end": end,
            "queries": [query],
            "msResolution": False,
            "globalAnnotations": True,
        }

    out = []
    for h in range(hosts):
        host = samples.host_name(h)
        out.append(body({"metric": CPU, "aggregator": "avg", "tags": {"hostname": host}}))
        out.append(
            body(
                {
                    "metric": CPU,
                    "aggregator": "avg",
                    "downsample": "1m-avg",
                    "tags": {"hostname": host},
                }
            )
        )
        out.append(
            body(
                {
                    "metric": CPU,
                    "aggregator": "sum",
                    "downsample": "1h-avg",
                    "tags": {"hostname": host},
                }
            )
        )
    out.append(
        body(
            {"metric": CPU, "aggregator": "sum", "downsample": "5m-avg", "tags": {"hostname": "*"}}
        )
    )
    return out


def round_of_load(url: str, requests: list[dict], clients: int, seconds: float) -> dict:
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client(seed: int) -> None:
        rng = random.Random(seed)
        while time.monotonic() < stop_at:
            data = json.dumps(rng.choice(requests)).encode()
            req = urllib.request.Request(
                url + "/api/query", data=data, headers={"Content-Type": "application/json"}
            )
            began = time.perf_counter()
            try:
                with urllib.request.urlopen(req, timeout=30) as resp:
                    resp.read()
                    ok = resp.status == 200
            except Exception:
                ok = False
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
    elapsed = time.monotonic() - began
    ordered = sorted(latencies)
    return {
        "requests": len(ordered),
        "errors": errors[0],
        "requests_per_s": round(len(ordered) / elapsed, 1),
        "p50_ms": round(1000 * ordered[len(ordered) // 2], 1) if ordered else None,
        "p99_ms": round(1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 1)
        if ordered
        else None,
    }


def cbt_reads(target: config.Target, hosts: int, reads: int) -> dict | None:
    """``cbt read`` of one host's hour of METRIC (the range btts serve reads), timed."""
    cbt = shutil.which("cbt")
    if cbt is None:
        return None
    times = []
    for i in range(reads):
        host = samples.host_name(i % hosts)
        argv = [cbt, "-project", target.project, "-instance", target.instance, "read", "METRIC"]
        argv += [f"start={host}#{START}", f"end={host}#{START + HOUR}"]
        began = time.perf_counter()
        subprocess.run(
            argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60
        )
        times.append(time.perf_counter() - began)
    return {
        "reads": reads,
        "p50_ms": round(1000 * statistics.median(times), 1),
        "p99_ms": round(1000 * sorted(times)[min(reads - 1, int(reads * 0.99))], 1),
        "reads_per_s_one_process_each": round(reads / sum(times), 1),
    }


def client_reads(target: config.Target, hosts: int, reads: int) -> dict:
    """The same ranges read in-process with the Bigtable data client (no HTTP, no decoding):
    the ceiling a server on this machine could approach."""
    times = []
    with BigtableDataClient(project=target.project) as client:
        table = client.get_table(target.instance, "METRIC")
        for i in range(reads):
            host = samples.host_name(i % hosts)
            span = RowRange(
                start_key=f"{host}#{START}".encode(), end_key=f"{host}#{START + HOUR}".encode()
            )
            began = time.perf_counter()
            table.read_rows(ReadRowsQuery(row_ranges=[span]))
            times.append(time.perf_counter() - began)
    ordered = sorted(times)
    return {
        "reads": reads,
        "p50_ms": round(1000 * statistics.median(times), 1),
        "p99_ms": round(1000 * ordered[min(reads - 1, int(reads * 0.99))], 1),
    }


def start_server(target: config.Target) -> tuple[subprocess.Popen, str]:
    argv = [sys.executable, "-m", "btts_cli.main", "serve", "--port", "0"]
    argv += ["--project", target.project, "--instance", target.instance]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    match = re.search(r"http://([0-9.]+):([0-9]+)/", proc.stdout.readline())
    if not match:
        proc.kill()
        raise SystemExit("btts serve did not start")
    return proc, f"http://{match.group(1)}:{match.group(2)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--hosts", type=int, default=20, help="hosts in the landed hour (default 20)"
    )
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per round (default 5)")
    parser.add_argument(
        "--cbt_reads", type=int, default=20, help="cbt read runs to time (default 20)"
    )
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        if not os.environ.get(ENV_HOST):
            stack.enter_context(Emulator())
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    target = config.Target("bench-project", f"l{uuid.uuid4().hex[:12]}")
    proc = None
    try:
        with tempfile.TemporaryDirectory() as work:
            events = land(target, args.hosts, Path(work))
        proc, url = start_server(target)
        requests = bodies(args.hosts)
        round_of_load(url, requests[:4], 2, 1.0)  # warm-up: imports, channels, caches
        report = {
            "events": events,
            "hosts": args.hosts,
            "clients": args.clients,
            "seconds": args.seconds,
        }
        report["rss_kib_start"] = rss_kib(proc.pid)
        report["round1"] = round_of_load(url, requests, args.clients, args.seconds)
        report["rss_kib_after_round1"] = rss_kib(proc.pid)
        report["round2"] = round_of_load(url, requests, args.clients, args.seconds)
        report["rss_kib_after_round2"] = rss_kib(proc.pid)
        report["client_read"] = client_reads(target, args.hosts, 200)
        report["cbt_read"] = cbt_reads(target, args.hosts, args.cbt_reads)
        print(json.dumps(report, indent=2))
        return 0 if report["round1"]["errors"] == report["round2"]["errors"] == 0 else 1
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
