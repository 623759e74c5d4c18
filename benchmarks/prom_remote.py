"""Prometheus remote write and read through ``btts serve --schema prometheus``, against the data
client on the same cells (issue 60), on the emulator:

* write: samples/s of remote-write requests (2,000 samples each, as Prometheus batches them:
  every series' next sample in turn, 4 senders at once like its shards) against the data
  client's ``mutations_batcher`` writing the same rows, built beforehand (target ≥ 0.5×);
* read: one remote read (SAMPLES) of SERIES series × 1 h at 15 s against ``read_rows`` of the
  same cells (the same key ranges and time filter), p50 of a few rounds (target ≤ 1.5×).

    python -m benchmarks.prom_remote [--series 1000] [--rounds 5]

Writes benchmarks/results/prom_remote.json and prints one line per figure.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cramjam
from google.cloud.bigtable.data import (
    BigtableDataClient,
    ReadRowsQuery,
    RowMutationEntry,
    RowRange,
    SetCell,
    row_filters,
)

import protos.prometheus_pb2 as pb
from benchmarks import serve_load
from benchmarks.report import run_and_write
from btts import config
from btts.admin import Admin
from btts.prom import labels as labels_lib
from transforms.builder.builder import Builder
from transforms.schema import builtin
from transforms.text import timefmt
from transforms.text.events import Num

ROOT = Path(__file__).resolve().parent
START = 1_700_002_800_000  # 2023-11-14T23:00:00Z: an hour boundary, one row per series
STEP_MS = 15_000
POINTS = 240  # 1 h at 15 s
PER_REQUEST = 2_000  # samples per remote-write request (Prometheus' max_samples_per_send)
SENDERS = 4
TARGETS = {"write_vs_batcher": 0.5, "read_vs_read_rows": 1.5}


def _write_body(series: dict) -> bytes:
    request = pb.WriteRequest()
    for labels, samples in series.items():
        ts = request.timeseries.add()
        ts.labels.extend(pb.Label(name=k, value=v) for k, v in labels)
        ts.samples.extend(pb.Sample(value=v, timestamp=t) for t, v in samples)
    return bytes(cramjam.snappy.compress_raw(request.SerializeToString()))


def _read_body(start: int, end: int, name: str) -> bytes:
    request = pb.ReadRequest()
    query = request.queries.add(start_timestamp_ms=start, end_timestamp_ms=end)
    query.matchers.add(type=pb.LabelMatcher.EQ, name="__name__", value=name)
    return bytes(cramjam.snappy.compress_raw(request.SerializeToString()))


def _post(url: str, body: bytes) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method="POST")
    req.add_header("Content-Encoding", "snappy")
    req.add_header("Content-Type", "application/x-protobuf")
    try:
        with urllib.request.urlopen(req, timeout=600) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def _labels(i: int) -> tuple[tuple[str, str], ...]:
    return (("__name__", "bench_metric"), ("instance", f"host-{i:05d}:9100"), ("job", "node"))


def _requests(series: int) -> list[bytes]:
    """Remote-write bodies: every series' next sample in turn, cut every PER_REQUEST samples."""
    samples = [
        (_labels(i), START + p * STEP_MS, float(i * 1000 + p))
        for p in range(POINTS)
        for i in range(series)
    ]
    out = []
    for at in range(0, len(samples), PER_REQUEST):
        by_series: dict = {}
        for labels, t, v in samples[at : at + PER_REQUEST]:
            by_series.setdefault(labels, []).append((t, v))
        out.append(_write_body(by_series))
    return out


def _batcher_entries(series: int) -> dict[str, list]:
    """The same rows as the remote writes, built by the schema's builder, as the data client's
    ``RowMutationEntry`` s (one per row, every sample of the row's hour)."""
    build = Builder(builtin("prometheus"))
    rows: dict[tuple[str, bytes], list] = {}
    for i in range(series):
        text = labels_lib.canonical(_labels(i))
        record = {"series": labels_lib.series_id(text), "name": "bench_metric", "labels": text}
        for p in range(POINTS):
            record["ts"], record["value"] = Num(START + p * STEP_MS), float(i * 1000 + p)
            for table, key, cells in build.rows(record):
                if table == "PROM_SERIES" and p:
                    continue  # the index row once per series, as btts serve writes it
                rows.setdefault((table, key), []).extend(SetCell(*c) for c in cells)
    out: dict[str, list] = {}
    for (table, key), cells in rows.items():
        out.setdefault(table, []).append(RowMutationEntry(key, cells))
    return out


def _instance(target: config.Target) -> None:
    with Admin(target) as admin:
        for decl in builtin("prometheus").decls().values():
            admin.ensure(decl)


def measure_write(series: int) -> dict:
    """Remote write through btts serve, then the batcher on a fresh instance: samples/s."""
    bodies = _requests(series)
    samples = series * POINTS
    ours = config.Target("bench-project", f"p{uuid.uuid4().hex[:12]}")
    _instance(ours)
    proc, url = serve_load.start_server(ours, "--schema", "prometheus")
    try:
        began = time.perf_counter()
        with ThreadPoolExecutor(SENDERS) as pool:
            codes = list(pool.map(lambda b: _post(url + "/api/v1/write", b)[0], bodies))
        ours_s = time.perf_counter() - began
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert set(codes) == {204}, sorted(set(codes))
    floor = config.Target("bench-project", f"p{uuid.uuid4().hex[:12]}")
    _instance(floor)
    entries = _batcher_entries(series)
    began = time.perf_counter()
    with BigtableDataClient(project=floor.project) as client:
        for table, rows in entries.items():
            with client.get_table(floor.instance, table).mutations_batcher() as batcher:
                for entry in rows:
                    batcher.append(entry)
    floor_s = time.perf_counter() - began
    return {
        "samples": samples,
        "requests": len(bodies),
        "remote_write_samples_per_s": round(samples / ours_s),
        "batcher_samples_per_s": round(samples / floor_s),
        "write_vs_batcher": round(floor_s / ours_s, 3),
        "target": ours,
    }


def measure_read(target: config.Target, series: int, rounds: int) -> dict:
    """One remote read of every series' hour against read_rows of the same cells: p50 s."""
    body = _read_body(START, START + (POINTS - 1) * STEP_MS, "bench_metric")
    proc, url = serve_load.start_server(target, "--schema", "prometheus", "--deadline", "600")
    ours = []
    try:
        for _ in range(rounds):
            began = time.perf_counter()
            status, answer = _post(url + "/api/v1/read", body)
            ours.append(time.perf_counter() - began)
            assert status == 200, answer[:200]
        data = bytes(cramjam.snappy.decompress_raw(answer))
        (result,) = pb.ReadResponse.FromString(data).results
        assert len(result.timeseries) == series
        assert all(len(ts.samples) == POINTS for ts in result.timeseries)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    window = [timefmt.EPOCH + dt.timedelta(milliseconds=ms) for ms in (START, START + 3_600_000)]
    hour = timefmt.to_datetime(START, timefmt.UTC).strftime("%Y-%m-%d-%H")
    spans = []
    for i in range(series):
        sid = labels_lib.series_id(labels_lib.canonical(_labels(i)))
        spans.append(
            RowRange(start_key=f"{sid}#{hour}".encode(), end_key=f"{sid}#{hour}~".encode())
        )
    query = ReadRowsQuery(
        row_ranges=spans,
        row_filter=row_filters.TimestampRangeFilter(start=window[0], end=window[1]),
    )
    floor = []
    with BigtableDataClient(project=target.project) as client:
        table = client.get_table(target.instance, "PROM_SAMPLES")
        for _ in range(rounds):
            began = time.perf_counter()
            rows = table.read_rows(query)
            floor.append(time.perf_counter() - began)
            assert sum(len(r.cells) for r in rows) == series * POINTS
    ours_p50, floor_p50 = statistics.median(ours), statistics.median(floor)
    return {
        "series": series,
        "samples": series * POINTS,
        "remote_read_p50_s": round(ours_p50, 3),
        "read_rows_p50_s": round(floor_p50, 3),
        "read_vs_read_rows": round(ours_p50 / floor_p50, 3),
    }


def run(series: int, rounds: int) -> dict:
    write = measure_write(series)
    target = write.pop("target")
    report = {
        "machine": f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}",
        "targets": TARGETS,
        "write": write,
        "read": measure_read(target, series, rounds),
    }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", type=int, default=1000, help="series (1 h at 15 s each)")
    parser.add_argument("--rounds", type=int, default=5, help="reads per p50")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "results" / "prom_remote.json", help="report file"
    )
    args = parser.parse_args(argv)
    out = args.out
    report = run_and_write(out, lambda: run(args.series, args.rounds))
    w, r = report["write"], report["read"]
    print(
        f"remote write {w['remote_write_samples_per_s']:,} samples/s, batcher "
        f"{w['batcher_samples_per_s']:,}: {w['write_vs_batcher']}x (target >= 0.5)"
    )
    print(
        f"remote read of {r['series']:,} series x 1 h at 15 s: {r['remote_read_p50_s']}s, "
        f"read_rows {r['read_rows_p50_s']}s: {r['read_vs_read_rows']}x (target <= 1.5)"
    )
    print(f"report: {out} ({report['machine']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
