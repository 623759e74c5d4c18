"""``btts serve`` at cardinality: suggest, lookup and a ``*`` query over 1k, 10k and 100k
series, beside the floor (the data client's ``read_rows`` of the same cells).

    python -m benchmarks.read_scale [--sizes 1000,10000,100000] [--points 3] [--rounds 30]

One landing by the real server-metrics job: ``max(sizes)`` hosts reporting ``--points`` times a
minute apart; host ``h`` sends the metric ``SCALE/N<size>`` of every size above ``h``, so the
metric of a size has exactly that many series (one per host) while the index holds them all.
``btts serve`` runs in a subprocess (its own interpreter); each figure is the median of its
rounds, the requests over HTTP as Grafana sends them:

* suggest: ``/api/suggest?type=tagv&q=<prefix>&max=25`` over changing prefixes;
* lookup: ``/api/search/lookup?m=<metric>{hostname=*}&limit=25`` and one host's series;
* ``*``: ``hostname=*`` raw (one answer series per host) over the landed minutes, against the
  floor: one multi-range ``read_rows`` of the same key ranges with the same server filter
  (the cells btts reads), rows built by the data client and nothing else.

Writes benchmarks/results/read_scale.json. Targets: suggest and lookup p50 at most 50 ms at
100k series; ``*`` at 10k series at most 1.5x its floor.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

from google.cloud.bigtable.data import BigtableDataClient, ReadRowsQuery, RowRange, row_filters

from benchmarks import serve_load
from benchmarks.report import run_and_write
from btts import config
from btts.samples import data as samples
from pipelines import load
from transforms.text import timefmt

START = 1426536000000  # 2015-03-16T20:00:00Z
MINUTE = 60_000
ROOT = Path(__file__).resolve().parent
TARGETS = {"suggest_p50_ms_at_100k": 50, "lookup_p50_ms_at_100k": 50, "star_vs_floor_at_10k": 1.5}


def metric(size: int) -> str:
    return f"scale/n{size}"


def records(sizes: list[int], points: int):
    """Every host's readings, a minute apart: host ``h`` sends each size's metric above ``h``."""
    rng = random.Random(3)
    hosts = max(sizes)
    for step in range(points):
        ts = samples.iso_ms(START + step * MINUTE)
        for h in range(hosts):
            values = {metric(n): round(rng.random(), 3) for n in sizes if h < n}
            yield {"hostname": samples.host_name(h), "timestamp": ts, "metrics": values}


def land(target: config.Target, sizes: list[int], points: int, work: Path) -> dict:
    path = work / "scale.jsonl"
    count = samples.write_jsonl(path, records(sizes, points))
    argv = [f"--input={path}", f"--dead_letter={work / 'dead'}", "--create_tables"]
    argv += [f"--bigtable_project={target.project}", f"--bigtable_instance={target.instance}"]
    began = time.perf_counter()
    load("server_metrics").run(argv)
    return {"events": count, "seconds": round(time.perf_counter() - began, 1)}


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=120) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def post(url: str, body: dict) -> tuple[int, bytes]:
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=300) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def p50_ms(call, rounds: int) -> tuple[float, int]:
    """The median of ``rounds`` calls (ms), and how many did not answer 200."""
    times, bad = [], 0
    for i in range(rounds):
        began = time.perf_counter()
        status, _ = call(i)
        times.append(time.perf_counter() - began)
        bad += status != 200
    return round(1000 * statistics.median(times), 1), bad


def star_body(size: int, points: int) -> dict:
    return {
        "start": START // 1000,
        "end": (START + points * MINUTE) // 1000,
        "msResolution": True,
        "queries": [
            {
                "metric": f"server_metrics.metrics.{metric(size).upper()}",
                "aggregator": "sum",
                "tags": {"hostname": "*"},
            }
        ],
    }


def floor_read(client: BigtableDataClient, target: config.Target, size: int) -> float:
    """The data client reading the cells btts reads for the ``*`` of ``size`` series (the
    hours around the window, as OpenTSDB reads them, of the metric's column): seconds."""
    table = client.get_table(target.instance, "METRIC")
    window = [START - START % 3_600_000, START - START % 3_600_000 + 2 * 3_600_000]
    micros = [timefmt.EPOCH + dt.timedelta(milliseconds=ms) for ms in window]
    column = metric(size).upper().encode()
    cells = row_filters.RowFilterChain(
        filters=[
            row_filters.TimestampRangeFilter(start=micros[0], end=micros[1]),
            row_filters.ColumnRangeFilter("METRIC", column, column, True, True),
        ]
    )
    spans = [
        RowRange(
            start_key=f"{samples.host_name(h)}#{window[0]}".encode(),
            end_key=f"{samples.host_name(h)}#{window[1]}".encode(),
        )
        for h in range(size)
    ]
    began = time.perf_counter()
    rows = table.read_rows(ReadRowsQuery(row_ranges=spans, row_filter=cells))
    took = time.perf_counter() - began
    assert len(rows) >= size, f"the floor read {len(rows)} rows of {size} series"
    return took


def measure(url: str, client, target, size: int, points: int, rounds: int) -> dict:
    name = f"server_metrics.metrics.{metric(size).upper()}"
    hosts = [samples.host_name(h) for h in range(size)]
    rng = random.Random(size)
    prefixes = [h[: rng.randrange(7, 14)] for h in rng.sample(hosts, min(rounds, size))]

    def suggest(i: int):
        q = urllib.parse.quote(prefixes[i % len(prefixes)])
        return get(f"{url}/api/suggest?type=tagv&q={q}&max=25")

    def lookup(i: int):
        m = urllib.parse.quote(f"{name}{{hostname=*}}")
        return get(f"{url}/api/search/lookup?m={m}&limit=25")

    def lookup_one(i: int):
        m = urllib.parse.quote(f"{name}{{hostname={hosts[(i * 7919) % size]}}}")
        return get(f"{url}/api/search/lookup?m={m}&limit=25")

    out: dict = {"series": size}
    for label, call in (("suggest", suggest), ("lookup", lookup), ("lookup_one", lookup_one)):
        call(0)  # warm
        out[f"{label}_p50_ms"], out[f"{label}_errors"] = p50_ms(call, rounds)
    body = star_body(size, points)
    status, answer = post(f"{url}/api/query", body)  # warm, and check the answer
    if status != 200:
        out["star_error"] = f"{status}: {answer[:300]!r}"
        return out
    series = json.loads(answer)
    assert len(series) == size, f"{len(series)} series answered of {size}"
    star_rounds = 5 if size <= 10_000 else 3
    star, floor = [], []
    for turn in range(star_rounds):  # taking turns: a shared machine weighs on both alike
        for which in ("star", "floor") if turn % 2 == 0 else ("floor", "star"):
            if which == "star":
                began = time.perf_counter()
                post(f"{url}/api/query", body)
                star.append(time.perf_counter() - began)
            else:
                floor.append(floor_read(client, target, size))
    out["star_ms"] = round(1000 * statistics.median(star), 1)
    out["floor_ms"] = round(1000 * statistics.median(floor), 1)
    out["star_vs_floor"] = round(statistics.median(star) / statistics.median(floor), 2)
    out["star_points"] = sum(len(s["dps"]) for s in series)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="series counts")
    parser.add_argument("--points", type=int, default=3, help="readings per host (a minute apart)")
    parser.add_argument("--rounds", type=int, default=30, help="requests per suggest/lookup p50")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "results" / "read_scale.json", help="report file"
    )
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    out = args.out
    report = run_and_write(out, lambda: run(sizes, args.points, args.rounds))
    print(table(report))
    print(f"report: {out}")
    return 0


def run(sizes: list[int], points: int, rounds: int) -> dict:
    target = config.Target("bench-project", f"r{uuid.uuid4().hex[:12]}")
    report: dict = {"sizes": sizes, "points": points, "targets": TARGETS}
    with tempfile.TemporaryDirectory() as work:
        report["landing"] = land(target, sizes, points, Path(work))
    limits = ["--max_points", str(10 * max(sizes) * points), "--deadline", "600"]
    proc, url = serve_load.start_server(target, *limits)
    try:
        report["machine"] = f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
        with BigtableDataClient(project=target.project) as client:
            report["results"] = [measure(url, client, target, n, points, rounds) for n in sizes]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return report


def table(report: dict) -> str:
    lines = [
        f"{'series':>8}{'suggest p50':>13}{'lookup p50':>12}{'lookup 1':>10}{'* ms':>9}"
        f"{'floor ms':>10}{'*/floor':>9}"
    ]
    for r in report["results"]:
        if "star_error" in r:
            r = {**r, "star_ms": 0, "floor_ms": 0, "star_vs_floor": 0}
        lines.append(
            f"{r['series']:>8,}{r['suggest_p50_ms']:>11.1f}ms{r['lookup_p50_ms']:>10.1f}ms"
            f"{r['lookup_one_p50_ms']:>8.1f}ms{r['star_ms']:>9.0f}{r['floor_ms']:>10.0f}"
            f"{r['star_vs_floor']:>9.2f}"
        )
    lines.append(f"landing: {report['landing']}; targets: {report['targets']}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
