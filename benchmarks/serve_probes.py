"""Hostile probes of a running ``btts serve`` (called by :mod:`benchmarks.serve_load`): what a
regular expression, a 999-value fan-out, an over-budget downsample and 1,000 slow connections
cost the server, in CPU seconds and resident memory read from /proc (the slow connections:
headers a byte at a time and bodies trickling, memory before, while held and after)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import statistics
import time
from pathlib import Path
from urllib.parse import urlsplit

from btts.samples import data as samples

HOUR = 3_600_000
START = 1426536000000
CPU = "server_metrics.metrics.CPU/CPU1_USR"
REGEX = "^" + ".*" * 9 + "X|server"  # 27 characters: 5.2 s of CPU on a backtracking engine


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def post(url: str, doc: dict) -> tuple[int, float]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    began = time.perf_counter()
    conn.request("POST", "/api/query", body=json.dumps(doc).encode())
    resp = conn.getresponse()
    resp.read()
    conn.close()
    return resp.status, time.perf_counter() - began


def costed(url: str, pid: int, doc: dict) -> dict:
    """One request's status, wall time, server CPU and server RSS growth."""
    cpu0, rss0 = cpu_s(pid), rss_kib(pid)
    status, took = post(url, doc)
    return {
        "status": status,
        "wall_ms": round(1000 * took, 1),
        "server_cpu_ms": round(1000 * (cpu_s(pid) - cpu0), 1),
        "rss_growth_mib": round((rss_kib(pid) - rss0) / 1024, 1),
    }


def query(*queries: dict, start: int = START, end: int = START + HOUR) -> dict:
    return {"start": start, "end": end, "queries": list(queries), "msResolution": False}


def probe_regex(url: str, pid: int) -> dict:
    """The pattern's own cost: the request with it, less the same request with ``*``."""
    out: dict = {"pattern": REGEX}
    for name, kind, text in (("wildcard", "wildcard", "*"), ("regexp", "regexp", REGEX)):
        f = {"type": kind, "tagk": "hostname", "filter": text, "groupBy": True}
        q = {"metric": CPU, "aggregator": "sum", "downsample": "5m-avg", "filters": [f]}
        costed(url, pid, query(q))  # warm: the enumeration cache, the compiled pattern
        runs = [costed(url, pid, query(q)) for _ in range(3)]
        out[name] = min(runs, key=lambda r: r["server_cpu_ms"])
    out["pattern_cpu_ms"] = round(
        out["regexp"]["server_cpu_ms"] - out["wildcard"]["server_cpu_ms"], 1
    )
    return out


def probe_fan_out(url: str, pid: int, hosts: int) -> dict:
    names = [samples.host_name(h) for h in range(hosts)]
    names += [f"absent{i}" for i in range(999 - hosts)]
    q = {"metric": CPU, "aggregator": "sum", "downsample": "5m-avg"}
    one = costed(url, pid, query({**q, "tags": {"hostname": "|".join(names)}}))
    five = costed(url, pid, query(*[{**q, "tags": {"hostname": "|".join(names)}}] * 5))
    return {"values": len(names), "one_sub_query": one, "five_sub_queries": five}


def probe_points(url: str, pid: int) -> dict:
    q = {"metric": CPU, "aggregator": "sum", "downsample": "1m-avg-zero"}
    q["tags"] = {"hostname": "*"}
    return costed(url, pid, query(*[q] * 10, start=START + HOUR - 99_000 * 60_000))


def normal_p50(url: str, n: int = 20) -> float:
    doc = query({"metric": CPU, "aggregator": "avg", "tags": {"hostname": samples.host_name(0)}})
    return statistics.median(post(url, doc)[1] for _ in range(n))


def _slow_sockets(url: str, connections: int, bodies: int) -> list[socket.socket]:
    """``connections`` sockets part-way through a request: the last ``bodies`` of them have
    sent a POST's headers and will trickle its body, the others are still in their headers."""
    parts = urlsplit(url)
    socks = []
    for i in range(connections):
        s = socket.create_connection((parts.hostname, parts.port))
        s.setblocking(False)
        if i < connections - bodies:
            s.send(b"GET /api/version HTTP/1.1\r\nX-Slow: ")
        else:
            s.send(b"POST /api/query HTTP/1.1\r\nContent-Length: 100000\r\n\r\n{")
        socks.append(s)
    return socks


def probe_slowloris(
    url: str, pid: int, connections: int = 1000, bodies: int = 200, hold_s: float = 6.0
) -> dict:
    """``connections`` sockets sending their headers (or, ``bodies`` of them, a body) a byte
    at a time while a normal client asks; the normal p50, and the server's memory (the most
    while they are held) and threads before, while held, and 2 s after they close."""
    before_ms, rss0, threads0 = 1000 * normal_p50(url), rss_kib(pid), threads(pid)
    socks = _slow_sockets(url, connections, bodies)
    time.sleep(1.0)
    end = time.monotonic() + hold_s
    during, rss_held, threads_held = [], rss_kib(pid), threads(pid)
    while time.monotonic() < end:
        for i, s in enumerate(socks):
            with contextlib.suppress(OSError):
                s.send(b"a" if i < connections - bodies else b" ")
        during.append(1000 * normal_p50(url, 5))
        rss_held, threads_held = max(rss_held, rss_kib(pid)), max(threads_held, threads(pid))
    for s in socks:
        s.close()
    time.sleep(2.0)
    return {
        "connections": connections,
        "trickling_bodies": bodies,
        "normal_p50_ms_before": round(before_ms, 1),
        "normal_p50_ms_during": round(statistics.median(during), 1),
        "p50_ratio": round(statistics.median(during) / before_ms, 2),
        "rss_mib_before_held_after": [round(v / 1024, 1) for v in (rss0, rss_held, rss_kib(pid))],
        "threads_before_held_after": [threads0, threads_held, threads(pid)],
    }


def run_all(url: str, pid: int, hosts: int) -> dict:
    return {
        "regex": probe_regex(url, pid),
        "fan_out": probe_fan_out(url, pid, hosts),
        "point_budget": probe_points(url, pid),
        "slowloris": probe_slowloris(url, pid),
    }
