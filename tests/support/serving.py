"""Landing data with the real pipelines and running ``btts serve`` on it, for the serve tests
and the load benchmark."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

from btts import config
from btts.samples import data as samples
from btts_cli import demo
from btts_cli import main as cli
from tests.support.jobs import read_dead_letters, run_job, write_lines

HOUR = 3_600_000
T0 = 1426536000000  # 2015-03-16T20:00:00Z, an hour boundary
GAP = (T0 + 20 * 60_000, T0 + 40 * 60_000)  # host 1 sends nothing in this window
GAP_HOST = samples.host_name(1)


def _ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def metric_events() -> list[dict]:
    """Three hosts every minute for three hours from T0 - 30 min; host 1 silent in GAP."""
    out = []
    for r in samples.metric_records(
        hosts=3, seconds=3 * 3600, interval_s=60, start_ms=T0 - 30 * 60_000
    ):
        t = _ms(r["timestamp"])
        if r["hostname"] == GAP_HOST and GAP[0] <= t < GAP[1]:
            continue
        out.append(r)
    return out


def land(target: config.Target, work: Path) -> SimpleNamespace:
    """Server metrics (METRIC, METRIC_RECENT reversed, METRIC_HOURLY rollup), battery levels
    (BATTERY promoted, BATTERY_SALTED salted) and tenant devices, by the real jobs."""
    runs = iter(range(100))

    def ingest(job, records, extra=()):
        n = next(runs)
        path = write_lines(work / f"in{n}.jsonl", [json.dumps(r) for r in records])
        if isinstance(job, str):
            result = run_job(job, target, path, work / f"dead{n}", extra)
        else:
            argv = [f"--input={path}", f"--dead_letter={work / f'dead{n}'}", "--create_tables"]
            argv += [
                f"--bigtable_project={target.project}",
                f"--bigtable_instance={target.instance}",
            ]
            result = demo.run_job_spec(job, argv)
        assert result.counters.get("dead_letters", 0) == 0

    data = SimpleNamespace(target=target)
    data.metrics = metric_events()
    ingest("server_metrics", data.metrics, ["--hourly_rollup"])
    ingest(demo.RECENT_JOB, data.metrics)
    data.battery = list(samples.battery_records(4, 120, 15))
    for layout in ("promoted", "salted"):
        ingest("battery", data.battery, [f"--battery_layout={layout}"])
    data.devices = list(samples.device_records(2, 1))
    ingest(demo.DEVICE_JOB, data.devices)
    return data


def points(records, host: str | None, metric: str, start: int, end: int) -> dict[str, list]:
    """Per host, the (ts, Decimal) points of one metric in [start, end), from the events."""
    out: dict[str, list] = {}
    for r in records:
        t = _ms(r["timestamp"])
        if (host is None or r["hostname"] == host) and start <= t < end:
            out.setdefault(r["hostname"], []).append((t, Decimal(str(r["metrics"][metric]))))
    return out


class Server:
    """``btts serve`` in a subprocess on a free loopback port."""

    def __init__(self, target: config.Target, *extra: str) -> None:
        argv = [sys.executable, "-m", "btts_cli.main", "serve", "--port", "0"]
        argv += ["--project", target.project, "--instance", target.instance, *extra]
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ)
        )
        line = self.proc.stdout.readline()
        match = re.search(r"http://([0-9.]+):([0-9]+)/", line)
        if not match:
            self.proc.kill()
            raise RuntimeError(f"btts serve did not start: {line}{self.proc.stderr.read()}")
        self.url = f"http://{match.group(1)}:{match.group(2)}"

    def call(
        self, path: str, body: object = None, raw: bytes | None = None, method: str | None = None
    ):
        """(status, parsed JSON or text) of one request."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                status, text = resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            status, text = err.code, err.read().decode()
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def grafana_body(
    queries: list[dict], start: int, end: int | None, ms_resolution: bool = True
) -> dict:
    """The body Grafana's OpenTSDB data source POSTs to /api/query (datasource.ts,
    performTimeSeriesQuery): start, queries, msResolution, globalAnnotations, end if any."""
    body = {
        "start": start,
        "queries": queries,
        "msResolution": ms_resolution,
        "globalAnnotations": True,
    }
    if end is not None:
        body["end"] = end
    return body


def grafana_query(
    metric: str, aggregator: str = "avg", downsample: str | None = None, **more
) -> dict:
    """One target as convertTargetToQuery builds it."""
    q = {"metric": metric, "aggregator": aggregator}
    if downsample:
        q["downsample"] = downsample
    q.update(more)
    return q


def new_target() -> config.Target:
    return config.Target("test-project", f"s{uuid.uuid4().hex[:12]}")


def wait_until(fn, timeout: float = 10.0):
    end = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except Exception:
            if time.monotonic() > end:
                raise
            time.sleep(0.2)


# -- a series from 1700 -----------------------------------------------------------------------

LEVELS_SCHEMA = """\
dataset: old_levels
doc: One reading a year since 1700.
event:
  time: year
  fields:
    year: {type: time, format: year, earliest: 1700-01-01}
    level: integer
tables:
  - name: LEVELS
    pattern: TS-COLS
    cell_timestamp: offset
    families: [{name: m, max_versions: 1}]
    key: [{const: THAMES}, {time: year, format: yyyymmdd}]
    columns: [{family: m, qualifier: level, value: level}]
"""
LEVEL_YEARS = range(1700, 2026)  # one reading a year since 1700


def year_ms(year: int) -> int:
    return int(dt.datetime(year, 1, 1, tzinfo=dt.timezone.utc).timestamp() * 1000)


def level_of(year: int) -> int:
    return 300 + (year * 37) % 101


def land_levels(target: config.Target, work: Path) -> Path:
    """Create the table and land one reading a year from 1700 by the generic job (a series for
    the tests of times before 1970 and of the chart page); the schema file's path."""
    schema = work / "levels.yaml"
    schema.write_text(LEVELS_SCHEMA, encoding="utf-8")
    source = work / "levels.jsonl"
    source.write_text(
        "".join(json.dumps({"year": y, "level": level_of(y)}) + "\n" for y in LEVEL_YEARS),
        encoding="utf-8",
    )
    where = ["--project", target.project, "--instance", target.instance]
    assert cli.main(["tables", "create", "--schema", str(schema), *where]) == 0
    run_job("generic", target, source, work / "dead", [f"--schema={schema}"])
    assert read_dead_letters(work / "dead") == []
    return schema
