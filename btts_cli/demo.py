"""The main job: the whole system on a local emulator, from sample events to query answers.

    make demo          # or: btts demo [--meters 1000 --meter_days 2 --hosts 100 --minutes 10]

1. generates a deterministic sample for every dataset (with bad lines in each) under
   --output_dir/input;
2. starts a Bigtable emulator;
3. runs every batch pipeline on the DirectRunner (server metrics and their latest-first copy,
   smart meters, market data, weather balloons in the four column patterns, battery promoted
   and salted, game results, garden, sales, multi-tenant device data), then the nightly job;
4. prints the answer to each documented query, each checked against the generated events (an
   answer that differs fails the demo), and a summary: rows per table, dead letters,
   throughput, and the time of each phase;
5. stops the emulator.

Any failure stops the demo with a message and a non-zero exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import json
import logging
import shlex
import shutil
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple

from btts import admin, emulator, render, samples
from btts import query_engine as q
from btts.samples import Sizes
from btts_cli import query_command
from pipelines import common
from transforms import key_ranges, timefmt

_LOG = logging.getLogger(__name__)
SHOW_ROWS = 5
BUDGET_SECONDS = 300

# Two jobs without a module of their own: the latest-first copy of the server metrics
# (METRIC_RECENT, for the reversed-timestamp query) and the multi-tenant device readings.
RECENT_JOB = common.builtin_job(
    "queries",
    "Server metrics → METRIC_RECENT (HOSTNAME#reversed timestamp), latest first.",
    name="metric_recent",
)
DEVICE_JOB = common.builtin_job(
    "devices",
    "Device readings → DEVICE (TENANT#KIND#DEVICE#YYYYMMDD), tenant-prefixed.",
    name="device",
)


def run_job_spec(job: common.JobSpec, argv: Sequence[str]):
    """Run a :class:`common.JobSpec` exactly like an ingest module's ``run``."""
    return common.run_file_ingest(
        argv,
        classes=(common.FileInputOptions, common.BigtableOptions),
        job_for=job,
    )


# -- options ----------------------------------------------------------------------------------

# The size flags: --flag → (the Sizes field it sets, its help).
SIZE_FLAGS = {
    "meters": ("meters", "smart meters"),
    "meter_days": ("meter_days", "days of 15-min readings"),
    "hosts": ("hosts", "servers"),
    "minutes": ("metric_minutes", "minutes of server metrics at one reading per 5 s"),
    "symbols": ("symbols", "exchange symbols (at most 8)"),
}


def _options(argv: Sequence[str] | None) -> argparse.Namespace:
    defaults = Sizes()
    parser = argparse.ArgumentParser(
        prog="btts demo",
        description=__doc__.split("\n\n")[0],
        epilog="Sizes default to the issue's minimums; the demo's phases are timed.",
    )
    parser.add_argument(
        "--output_dir",
        default="demo-output",
        help="inputs, dead letters and each job's log (default: %(default)s)",
    )
    for flag, (field, text) in SIZE_FLAGS.items():
        parser.add_argument(f"--{flag}", type=int, default=getattr(defaults, field), help=text)
    parser.add_argument(
        "--tiny", action="store_true", help="tiny sizes (the test of the demo); overrides others"
    )
    opts = parser.parse_args(argv)
    if opts.tiny:
        opts.sizes = Sizes.tiny()
    else:
        if opts.meter_days < 2:
            parser.error("--meter_days must be at least 2 (the nightly job copies a past day)")
        if not 1 <= opts.symbols <= len(samples.SYMBOLS):
            parser.error(f"--symbols must be 1..{len(samples.SYMBOLS)}")
        opts.sizes = Sizes(**{field: getattr(opts, f) for f, (field, _) in SIZE_FLAGS.items()})
    return opts


# -- phase 1: sample data ---------------------------------------------------------------------


class Dataset(NamedTuple):
    name: str
    path: Path
    good: int
    bad: int


def _records(name: str, sizes: Sizes) -> Iterable[dict]:
    """The generated records of one dataset (regenerated on demand: they are deterministic)."""
    s = sizes
    return {
        "server_metrics": lambda: samples.metric_records(s.hosts, s.metric_minutes * 60),
        "smart_meters": lambda: samples.meter_records(s.meters, s.meter_days),
        "market_data": lambda: samples.tick_records(s.symbols, s.tick_seconds),
        "weather_balloons": lambda: samples.balloon_records(s.balloons, s.balloon_minutes),
        "battery": lambda: samples.battery_records(
            s.battery_users, s.battery_minutes, s.battery_every_minutes
        ),
        "game_results": lambda: samples.game_records(s.players),
        "garden": lambda: samples.garden_records(),
        "sales": lambda: samples.sales_records(s.employees),
        "device": lambda: samples.device_records(s.devices, s.device_days),
    }[name]()


BAD_LINES = {
    "server_metrics": samples.BAD_METRIC_LINES,
    "smart_meters": samples.BAD_METER_LINES,
    "market_data": samples.BAD_TICK_LINES,
    "weather_balloons": samples.BAD_BALLOON_LINES,
    "battery": samples.BAD_BATTERY_LINES,
    "game_results": samples.BAD_GAME_LINES,
    "garden": samples.BAD_GARDEN_LINES,
    "sales": samples.BAD_SALES_LINES,
    "device": (
        '{"tenant": "acme#evil", "kind": "phone", "device": "1", '
        '"timestamp": "2019-05-01T00:00:00Z", "readings": {"memusage": 1}}',
        '{"tenant": "acme", "kind": "phone", "device": "1", '
        '"timestamp": "2019-05-01T00:00:00Z", "readings": {}}',
    ),
}


def generate(out: Path, sizes: Sizes) -> dict[str, Dataset]:
    datasets = {}
    for name, bad in BAD_LINES.items():
        path = out / f"{name}.jsonl"
        lines = samples.write_jsonl(path, _records(name, sizes), bad)
        datasets[name] = Dataset(name, path, lines - len(bad), len(bad))
    return datasets


# -- phase 3: the pipelines -------------------------------------------------------------------


@dataclass
class JobRun:
    label: str
    seconds: float
    counters: dict[str, int]

    @property
    def events(self) -> int:
        return self.counters.get("events_valid", 0)


def _run_step(label: str, run: Callable[[], Any], log_path: Path) -> tuple[Any, float]:
    """Run one job with its own printout captured to ``log_path``; failures stop the demo."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.StringIO()
    started = time.monotonic()
    try:
        with contextlib.redirect_stdout(buffer):
            result = run()
    except SystemExit as stop:  # a job's configuration error
        raise SystemExit(f"demo: {label} failed: {stop.code}") from None
    except Exception as err:
        raise SystemExit(f"demo: {label} failed: {type(err).__name__}: {err}") from err
    finally:
        log_path.write_text(buffer.getvalue())
    return result, time.monotonic() - started


def _check_counts(label: str, data: Dataset, counters: dict[str, int]) -> None:
    """Every line is accounted for: the good ones landed, the bad ones are dead letters."""
    lines = counters.get("lines_read", 0)
    valid = counters.get("events_valid", 0)
    dead = counters.get("dead_letters", 0)
    blank = counters.get("blank_lines", 0)
    if lines != valid + dead + blank or valid != data.good or dead != data.bad:
        raise SystemExit(
            f"demo: {label}: counts do not reconcile: {lines} lines read, {valid} valid "
            f"(expected {data.good}), {dead} dead letters (expected {data.bad})"
        )


def run_pipelines(out: Path, datasets: dict[str, Dataset]) -> list[JobRun]:
    from pipelines import load

    balloons = load("weather_balloons").run
    steps: list[tuple[str, str, Callable[[list[str]], Any], list[str]]] = [
        ("server_metrics", "server_metrics", load("server_metrics").run, []),
        ("metric_recent", "server_metrics", lambda a: run_job_spec(RECENT_JOB, a), []),
        ("smart_meters", "smart_meters", load("smart_meters").run, []),
        ("market_data", "market_data", load("market_data").run, []),
        *(
            (f"weather_balloons {p}", "weather_balloons", balloons, [f"--balloon_pattern={p}"])
            for p in ("TS-COLS", "TS-BLOB", "TB-CELL", "TB-COL")
        ),
        ("battery promoted", "battery", load("battery").run, ["--battery_layout=promoted"]),
        ("battery salted", "battery", load("battery").run, ["--battery_layout=salted"]),
        ("game_results", "game_results", load("game_results").run, []),
        ("garden", "garden", load("garden").run, ["--garden_layout=both"]),
        ("sales", "sales", load("sales").run, []),
        ("device", "device", lambda a: run_job_spec(DEVICE_JOB, a), []),
    ]
    runs = []
    print(f"  {'job':<26}{'lines':>10}{'events':>10}{'dead':>6}{'seconds':>9}{'events/s':>10}")
    for label, name, run, extra in steps:
        if name not in datasets:
            continue
        data = datasets[name]
        slug = label.replace(" ", "_")
        dead_letter = out / "dead-letters" / slug
        argv = [f"--input={data.path}", f"--dead_letter={dead_letter}", "--create_tables", *extra]
        result, seconds = _run_step(label, lambda r=run, a=argv: r(a), out / "logs" / slug)
        counters = result.btts_counters
        _check_counts(label, data, counters)
        job = JobRun(label, seconds, counters)
        runs.append(job)
        print(
            f"  {label:<26}{counters.get('lines_read', 0):>10,}{job.events:>10,}"
            f"{counters.get('dead_letters', 0):>6,}{seconds:>9.1f}"
            f"{job.events / max(seconds, 1e-9):>10,.0f}",
            flush=True,
        )
    return runs


def run_nightly(out: Path, sizes: Sizes) -> tuple[list[str], float]:
    from pipelines import nightly

    first = dt.datetime.fromtimestamp(samples.METERS_START_MS / 1000, dt.timezone.utc).date()
    last = first + dt.timedelta(days=sizes.meter_days - 1)
    argv = [f"--dates={first:%Y%m%d}..{last:%Y%m%d}"]
    result, seconds = _run_step("nightly", lambda: nightly.run(argv), out / "logs" / "nightly")
    plan = result.nightly_plan
    counters = result.btts_counters
    copied = sum(counters.get(f"rows_{t}", 0) for t in plan.destinations)
    print(
        f"  nightly: SENSOR → {', '.join(plan.destinations)}: {copied:,} rows copied and "
        f"verified (row counts and checksums) in {seconds:.1f}s"
    )
    return list(plan.destinations), seconds


# -- phase 4: the queries, checked against the generated events -------------------------------


@dataclass
class DemoQuery:
    title: str
    command: str  # the `btts query …` line shown; the query it plans is the one run
    expected: list
    note: str = ""
    after: Callable[[admin.Target], str] | None = None

    @property
    def query(self) -> q.Query:
        return query_command.plan(shlex.split(self.command)[2:])


def _ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def _dec(value: object) -> Decimal:
    return Decimal(str(value))


def _span(start: int, end: int) -> str:
    """The ``--start``/``--end`` flags of a time range."""
    return f"--start {timefmt.iso(start)} --end {timefmt.iso(end)}"


def _no_key(records: Sequence[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "key"} for r in records]


# The records a query returns, computed from generated events (never from keys): one per event,
# the schema's field names (btts/query_engine.py says how a row becomes a record).
def metric_record(r: dict) -> dict:
    values = {k.upper(): _dec(v) for k, v in sorted(r["metrics"].items())}
    return {"hostname": r["hostname"], "ts_ms": _ms(r["timestamp"]), "metrics": values}


def latest_metric_records(records: Iterable[dict]) -> dict[str, dict]:
    """Each host's newest reading (the CURRENT_METRIC row), by host."""
    latest: dict[str, dict] = {}
    for r in map(metric_record, records):
        if r["hostname"] not in latest or r["ts_ms"] > latest[r["hostname"]]["ts_ms"]:
            latest[r["hostname"]] = r
    return dict(sorted(latest.items()))


def meter_day_records(records: Iterable[dict]) -> dict[tuple[int, str], dict]:
    """One record per meter and UTC day (a SENSOR row), by (meter, YYYYMMDD)."""
    days: dict[tuple[int, str], dict] = {}
    for r in records:
        moment = dt.datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00"))
        label = f"{moment:%Y%m%d}"
        day = days.setdefault(
            (r["meter_id"], label),
            {"meter": r["meter_id"], "date": label, "ts_ms": 0, "reading": {}},
        )
        day["reading"][f"{moment:%H%M}"] = _dec(r["reading"])
        day["ts_ms"] = max(day["ts_ms"], _ms(r["timestamp"]))
    for day in days.values():
        day["reading"] = dict(sorted(day["reading"].items()))
    return dict(sorted(days.items()))


def quote_record(r: dict) -> dict:
    return {
        "exchange": r["exchange"], "symbol": r["symbol"], "ts_ms": _ms(r["quote_time"]),
        "bid": _dec(r["bid"]), "ask": _dec(r["ask"]),
        "bid_size": r["bid_size"], "ask_size": r["ask_size"],
    }  # fmt: skip


def trade_record(r: dict) -> dict:
    return {
        "exchange": r["exchange"], "symbol": r["symbol"], "ts_ms": _ms(r["trade_time"]),
        "last_sale": _dec(r["last_sale"]), "last_size": r["last_size"], "volume": r["volume"],
    }  # fmt: skip


def game_record(r: dict) -> dict:
    day = _ms(f"{r['date']}T00:00:00Z")
    return {"game": r["game"], "player": r["player"], "ts_ms": day, "win": r["win"],
            "kda": _dec(r["kda"])}  # fmt: skip


BALLOON_FIELDS = ("pressure", "temperature", "humidity", "altitude")


def balloon_record(r: dict) -> dict:
    measured = {m: _dec(r[m]) for m in BALLOON_FIELDS}
    return {"location": r["location"], "balloon_id": str(r["balloon_id"]),
            "ts_ms": _ms(r["timestamp"]), **measured}  # fmt: skip


def battery_record(r: dict) -> dict:
    return {"user": r["user"], "ts_ms": _ms(r["timestamp"]), "percentage": _dec(r["percentage"])}


def garden_month_record(records: Iterable[dict], garden: str, year: int, month: int) -> dict:
    """The GARDEN_MONTHLY row: day of month → temperature, stamped with the newest day."""
    label = f"{year:04d}-{month:02d}"
    mine = sorted((r for r in records if r["garden"] == garden and r["date"][:7] == label),
                  key=lambda r: r["date"])  # fmt: skip
    temps = {str(int(r["date"][8:])): _dec(r["temp"]) for r in mine}
    newest = max(_ms(f"{r['date']}T00:00:00Z") for r in mine)
    return {"garden": garden, "date": label.replace("-", ""), "ts_ms": newest, "temp": temps}


def monthly_sales_records(records: Iterable[dict], employee: str) -> list[dict]:
    """SALES_MONTHLY rows: the sums of one employee's months, oldest first."""
    months: dict[str, dict] = {}
    for r in records:
        if r["employee"] == employee:
            label = r["timestamp"][:7]
            month = months.setdefault(label, {
                "employee": employee, "ts": label.replace("-", ""),
                "ts_ms": _ms(f"{label}-01T00:00:00Z"), "amount_cents": 0, "COUNT": 0,
            })  # fmt: skip
            month["amount_cents"] += r["amount_cents"]
            month["COUNT"] += 1
    return [months[m] for m in sorted(months)]


def tenant_records(records: Iterable[dict], tenant: str) -> list[dict]:
    """A tenant's device readings in key order (kind, device, day), one record per event."""
    found = [
        {"tenant": tenant, "kind": r["kind"], "device": r["device"], "ts_ms": _ms(r["timestamp"]),
         "readings": {k.upper(): _dec(v) for k, v in sorted(r["readings"].items())}}
        for r in records
        if r["tenant"] == tenant
    ]  # fmt: skip
    return sorted(found, key=lambda d: (d["kind"], d["device"], d["ts_ms"]))


def build_queries(sizes: Sizes) -> list[DemoQuery]:
    """Each documented query with its answer computed from the generated records alone."""
    return list(_demo_queries(sizes))


def _demo_queries(sizes: Sizes) -> Iterator[DemoQuery]:
    # Server metrics: one host's range, the fleet's latest, the latest N.
    metrics = list(_records("server_metrics", sizes))
    host = samples.host_name(min(42, sizes.hosts - 1))
    span = sizes.metric_minutes * 60_000
    start = samples.METRICS_START_MS + span // 4
    end = start + max(span // 4, 10_000)
    mine = [metric_record(r) for r in metrics if r["hostname"] == host]
    yield DemoQuery(
        "Metrics of one host between two times (METRIC range)",
        f"btts query metrics --host {host} {_span(start, end)}",
        [r for r in mine if start <= r["ts_ms"] < end],
    )
    fleet = latest_metric_records(metrics)
    yield DemoQuery(
        "Latest metrics of the whole fleet (CURRENT_METRIC)",
        "btts query current",
        list(fleet.values()),
    )
    chosen = [samples.host_name(0), host]
    yield DemoQuery(
        "Latest metrics of chosen hosts (CURRENT_METRIC rows)",
        "btts query current " + " ".join(f"--host {h}" for h in chosen),
        [fleet[h] for h in chosen],
    )
    yield DemoQuery(
        "Latest 5 readings of one host, newest first (METRIC_RECENT, reversed timestamps)",
        f"btts query recent --host {host} -n 5",
        sorted(mine, key=lambda r: -r["ts_ms"])[:5],
    )
    del metrics

    # Smart meters: one meter's day (single row), every meter's day (nightly table).
    last_day = dt.date(2017, 7, 25) + dt.timedelta(days=sizes.meter_days - 1)
    label = f"{last_day:%Y%m%d}"
    days = meter_day_records(
        r for r in _records("smart_meters", sizes) if r["timestamp"][:10] == f"{last_day}"
    )
    yield DemoQuery(
        "One meter for one day (a single SENSOR row)",
        f"btts query meter --meter 987654 --date {last_day}",
        [days[(987654, label)]],
    )
    yield DemoQuery(
        "All meters for one day (scan of the nightly table SENSOR_YYYYMMDD)",
        f"btts query meters-of-day --date {last_day}",
        list(days.values()),
    )
    del days

    # Market data: quotes and trades of one exchange + symbol between two times.
    exchange, symbol, _ = samples.SYMBOLS[0]
    start, end = samples.TICKS_START_MS + 10 * 3_600_000, samples.TICKS_START_MS + 12 * 3_600_000
    ticks = [
        r
        for r in _records("market_data", sizes)
        if (r["exchange"], r["symbol"]) == (exchange, symbol)
    ]
    window = f"--exchange {exchange} --symbol {symbol} {_span(start, end)}"
    for what, record in (("quotes", quote_record), ("trades", trade_record)):
        found = sorted((record(r) for r in ticks), key=lambda x: x["ts_ms"])
        yield DemoQuery(
            f"{what.title()} of one exchange + symbol between two times "
            f"({what[:-1].upper()} range)",
            f"btts query {what} {window}",
            [x for x in found if start <= x["ts_ms"] < end],
        )

    # Game results: a player's month, all games of a month.
    games = [
        r for r in _records("game_results", sizes)
        if r["game"] == "LoL" and r["date"].startswith("2015-03")
    ]  # fmt: skip
    yield DemoQuery(
        "A player's games in a month (GAME_BY_PLAYER range)",
        "btts query player-games --game LoL --player Corrie --month 2015-03",
        [game_record(g) for g in sorted(games, key=lambda g: g["date"])
         if g["player"] == "Corrie"],
    )  # fmt: skip
    yield DemoQuery(
        "All games of a month (GAME_BY_DATE range)",
        "btts query games --game LoL --month 2015-03",
        [game_record(g) for g in sorted(games, key=lambda g: (g["date"], g["player"]))],
    )

    # Weather balloons: one time range, the same answer from each of the four layouts.
    minutes = sizes.balloon_minutes
    start = samples.BALLOONS_START_MS + (minutes // 2) * 60_000
    end = start + min(30, max(1, minutes // 4)) * 60_000
    measured = [
        balloon_record(r)
        for r in _records("weather_balloons", sizes)
        if r["balloon_id"] == 3698 and start <= _ms(r["timestamp"]) < end
    ]
    for pattern, name in query_command.BALLOON_QUERIES.items():
        yield DemoQuery(
            f"Balloon measurements for a time range, layout {pattern} ({name.upper()})",
            f"btts query balloon --pattern {pattern} --location us-west2 --balloon 3698 "
            f"{_span(start, end)}",
            measured,
            note="protobuf blobs decoded" if pattern == "TS-BLOB" else "",
        )

    # Battery: salted reads merged in time order, and the promoted table for one user.
    start = samples.BATTERY_START_MS + (sizes.battery_minutes // 4) * 60_000
    end = start + (sizes.battery_minutes // 2) * 60_000
    levels = sorted(
        (battery_record(r) for r in _records("battery", sizes)
         if start <= _ms(r["timestamp"]) < end),
        key=lambda b: b["ts_ms"],
    )  # fmt: skip
    yield DemoQuery(
        "Battery levels of every user between two times (BATTERY_SALTED: one scan per "
        "salt bucket, merged in time order)",
        f"btts query battery {_span(start, end)}",
        levels,
    )
    yield DemoQuery(
        "One user's battery levels between two times (BATTERY, user promoted)",
        f"btts query battery --user Corrie {_span(start, end)}",
        [b for b in levels if b["user"] == "Corrie"],
    )

    # Garden and sales (short-wide month row; aggregate cells).
    yield DemoQuery(
        "A garden's month as one short-wide row (GARDEN_MONTHLY)",
        "btts query garden --garden VEGGIEGARDEN --month 2015-03",
        [garden_month_record(_records("garden", sizes), "VEGGIEGARDEN", 2015, 3)],
    )
    sales = [
        m for m in monthly_sales_records(_records("sales", sizes), "Corrie")
        if "201501" <= m["ts"] <= "201503"
    ]  # fmt: skip
    yield DemoQuery(
        "An employee's monthly sales totals (SALES_MONTHLY, AddToCell sums)",
        "btts query sales --employee Corrie --from 2015-01 --to 2015-03",
        sales,
    )

    # Tenants: one tenant's rows; then offboarding another by dropping its prefix.
    devices = list(_records("device", sizes))
    yield DemoQuery(
        "A tenant's rows (DEVICE prefix TENANT#)",
        "btts query tenant --tenant altostrat",
        tenant_records(devices, "altostrat"),
    )
    acme_rows = len({(r["device"], r["timestamp"][:10]) for r in devices if r["tenant"] == "acme"})
    survivors = tenant_records(devices, "acme2")

    def tenant_rows(target: admin.Target, tenant: str) -> list[dict]:
        return _no_key(q.ask(target, "devices", "tenant_rows", {"tenant": tenant}))

    def drop_acme(target: admin.Target) -> str:
        dropped = q.drop_tenant(target, "acme")
        gone = tenant_rows(target, "acme")
        kept = tenant_rows(target, "acme2")
        if dropped != acme_rows or gone or kept != survivors:
            raise SystemExit(
                f"demo: dropping tenant acme: {dropped} rows dropped (expected {acme_rows}), "
                f"{len(gone)} left; acme2 {'intact' if kept == survivors else 'CHANGED'}"
            )
        return (
            f"btts tenant drop --tenant acme --yes → dropped {dropped} row(s); acme has 0 left, "
            f"acme2 keeps its {len(kept)} readings ✓"
        )

    yield DemoQuery(
        "Dropping a tenant (one admin call on the row range acme#; acme2# untouched)",
        "btts query tenant --tenant acme",
        tenant_records(devices, "acme"),
        after=drop_acme,
    )


def cbt_row_keys(text: str) -> list[str]:
    """The row keys of ``cbt read`` output: each row follows a line of 40 dashes."""
    lines = text.splitlines()
    return [lines[i + 1] for i, line in enumerate(lines[:-1]) if line == "-" * 40]


def _cbt_check(target: admin.Target, scan: key_ranges.Scan, keys: list[str]) -> str | None:
    """``cbt read`` of the same range sees the same rows (when cbt is installed)."""
    cbt = shutil.which("cbt")
    args = scan.cbt_args()
    if not cbt or not args:
        return None
    command = [cbt, "-project", target.project, "-instance", target.instance, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise SystemExit(f"demo: cbt failed: {done.stderr.strip()}")
    seen = cbt_row_keys(done.stdout)
    shown = " ".join(f"'{a}'" if " " in a else a for a in ["cbt", *command[1:]])
    if seen != keys:
        raise SystemExit(f"demo: {shown} shows {len(seen)} rows, the query {len(keys)}")
    return f"{shown}\n    → the same {len(seen)} rows ✓"


def run_queries(target: admin.Target, sizes: Sizes) -> float:
    started = time.monotonic()
    for number, item in enumerate(build_queries(sizes), 1):
        print(f"\nQ{number}. {item.title}")
        print(f"    $ {item.command}")
        query = item.query
        for scan in query.scans:
            print(f"    read {scan.describe()}")
        got = q.run(target, query)
        shown = render.to_table(got[:SHOW_ROWS]).replace("\n", "\n    ")
        print(f"    {shown}")
        for grid in render.wide_grids(got):
            print("    " + grid.replace("\n", "\n    "))
        more = f"; first {SHOW_ROWS} shown" if len(got) > SHOW_ROWS else ""
        if _no_key(got) != item.expected:
            raise SystemExit(
                f"demo: Q{number} ({item.title}): {len(got)} records read, "
                f"{len(item.expected)} expected from the generated events; they differ"
            )
        if not got:
            raise SystemExit(f"demo: Q{number} ({item.title}): the answer is empty")
        note = f"; {item.note}" if item.note else ""
        print(f"    {len(got):,} record(s){more}{note} — equal to the generated events ✓")
        if number == 1:
            line = _cbt_check(target, query.scans[0], [r["key"] for r in got])
            if line:
                print(f"    {line}")
        if item.after:
            print(f"    {item.after(target)}")
    return time.monotonic() - started


# -- the summary ------------------------------------------------------------------------------


def print_summary(
    target: admin.Target, runs: list[JobRun], phases: dict[str, float], out: Path
) -> None:
    with admin.Admin(target) as api:
        names = api.list_tables()
    print("\nRows per table")
    for name in names:
        print(f"  {name:<22}{q.count_rows(target, name):>10,}")
    letters = sorted((out / "dead-letters").glob("server_metrics-*"))
    if letters:
        print(f"\nDead letters of server_metrics ({letters[0]}), by reason:")
        for line in letters[0].read_text(encoding="utf-8").splitlines():
            print(f"  {json.loads(line)['reason']}")
    dead = sum(r.counters.get("dead_letters", 0) for r in runs)
    events = sum(r.events for r in runs)
    seconds = sum(r.seconds for r in runs)
    print(
        f"\nPipelines: {len(runs)} jobs, {events:,} events landed, {dead:,} dead letters "
        f"(every bad line, with its reason), {events / max(seconds, 1e-9):,.0f} events/s overall"
    )
    print("Phases: " + ", ".join(f"{k} {v:.1f}s" for k, v in phases.items()))


def run(argv: Sequence[str] | None = None) -> None:
    """The demo; any failure raises SystemExit with a message (a non-zero exit code)."""
    opts = _options(argv)
    with contextlib.suppress(AttributeError, ValueError):
        sys.stdout.reconfigure(line_buffering=True)  # progress in order, even through a pipe
    # Show the jobs' progress lines, not their table-creation chatter.
    for name in ("pipelines.common", "pipelines.nightly"):
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        _demo(opts)
    except Exception as err:  # not SystemExit or KeyboardInterrupt: those pass through
        traceback.print_exc()
        raise SystemExit(f"demo: failed: {type(err).__name__}: {err}") from None


def _demo(opts: argparse.Namespace) -> None:
    sizes: Sizes = opts.sizes
    out = Path(opts.output_dir)
    for sub in ("dead-letters", "logs"):
        shutil.rmtree(out / sub, ignore_errors=True)
    warnings.filterwarnings("ignore", message="Connecting to Bigtable emulator")
    phases: dict[str, float] = {}
    began = time.monotonic()

    print("bigtable-timeseries demo: sample events → Beam pipelines → Bigtable emulator → queries")
    print(f"\n[1/5] Sample data (deterministic) in {out / 'input'}")
    started = time.monotonic()
    datasets = generate(out / "input", sizes)
    for d in datasets.values():
        print(f"  {d.name:<18}{d.good:>10,} events + {d.bad} bad lines")
    phases["sample data"] = time.monotonic() - started

    started = time.monotonic()
    try:
        emu = emulator.Emulator().start()
    except emulator.EmulatorError as err:
        raise SystemExit(f"demo: cannot start the Bigtable emulator: {err}") from None
    with emu:
        phases["emulator start"] = time.monotonic() - started
        print(f"\n[2/5] Bigtable emulator on {emu.endpoint} (pid {emu.process.pid})")
        target = admin.resolve_target(None, None)

        print("\n[3/5] Batch pipelines on the DirectRunner (each job's own report: logs/)")
        started = time.monotonic()
        runs = run_pipelines(out, datasets)
        phases["pipelines"] = time.monotonic() - started

        print("\n[4/5] Nightly job")
        _, phases["nightly"] = run_nightly(out, sizes)

        print("\n[5/5] The documented queries, each answer checked against the generated events")
        phases["queries"] = run_queries(target, sizes)

        print_summary(target, runs, phases, out)
    total = time.monotonic() - began
    print(f"\nStopped the emulator. Done in {total:.0f}s.")
    if total > BUDGET_SECONDS:
        print(f"WARNING: over the {BUDGET_SECONDS}s budget", flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    run()
