"""The answers the demo checks, beside the sample generator that makes the events: for each
documented query (``btts query …``), the records it must return, computed from the generated
events alone (never from keys), one per event, in the schema's field names
(:mod:`btts.query.engine` says how a row becomes a record).

``btts demo`` runs each check's command and compares; the query tests reuse the record
builders.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from btts import config
from btts.query import engine
from btts.samples import data as samples
from btts.samples.data import Sizes
from transforms.errors import SystemFailure
from transforms.text import timefmt

__all__ = ["Check", "CheckFailed", "checks", "records", "without_key"]


def records(name: str, sizes: Sizes) -> Iterable[dict]:
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


class CheckFailed(SystemFailure):
    """An action of a check (dropping a tenant) did not leave what the generated events say."""


@dataclass
class Check:
    """One documented query and its answer, computed from the generated records alone."""

    title: str
    command: str  # the `btts query …` line shown; the query it plans is the one run
    expected: list
    note: str = ""
    after: Callable[[config.Target], str] | None = None  # a step run after it (its report line)


def _ms(text: str) -> int:
    return timefmt.parse_event_time(text)


def _dec(value: object) -> Decimal:
    return Decimal(str(value))


def _span(start: int, end: int) -> str:
    """The ``--start``/``--end`` flags of a time range."""
    return f"--start {timefmt.iso(start)} --end {timefmt.iso(end)}"


def without_key(records: Sequence[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "key"} for r in records]


# The records a query returns, computed from generated events (never from keys): one per event,
# the schema's field names (btts/query/engine.py says how a row becomes a record).
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


def checks(sizes: Sizes, balloon_queries: Mapping[str, str]) -> Iterator[Check]:
    """Each documented query with its answer computed from the generated records alone
    (``balloon_queries``: each balloon layout's query, ``btts query balloon --pattern``).
    One dataset at a time, so only one dataset's records are held at once."""
    yield from _metric_checks(sizes)
    yield from _meter_checks(sizes)
    yield from _market_checks(sizes)
    yield from _game_checks(sizes)
    yield from _balloon_checks(sizes, balloon_queries)
    yield from _battery_checks(sizes)
    yield from _garden_and_sales_checks(sizes)
    yield from _tenant_checks(sizes)


def _metric_checks(sizes: Sizes) -> Iterator[Check]:
    """Server metrics: one host's range, the fleet's latest, the latest N."""
    metrics = list(records("server_metrics", sizes))
    host = samples.host_name(min(42, sizes.hosts - 1))
    span = sizes.metric_minutes * 60_000
    start = samples.METRICS_START_MS + span // 4
    end = start + max(span // 4, 10_000)
    mine = [metric_record(r) for r in metrics if r["hostname"] == host]
    yield Check(
        "Metrics of one host between two times (METRIC range)",
        f"btts query metrics --host {host} {_span(start, end)}",
        [r for r in mine if start <= r["ts_ms"] < end],
    )
    fleet = latest_metric_records(metrics)
    yield Check(
        "Latest metrics of the whole fleet (CURRENT_METRIC)",
        "btts query current",
        list(fleet.values()),
    )
    chosen = [samples.host_name(0), host]
    yield Check(
        "Latest metrics of chosen hosts (CURRENT_METRIC rows)",
        "btts query current " + " ".join(f"--host {h}" for h in chosen),
        [fleet[h] for h in chosen],
    )
    yield Check(
        "Latest 5 readings of one host, newest first (METRIC_RECENT, reversed timestamps)",
        f"btts query recent --host {host} -n 5",
        sorted(mine, key=lambda r: -r["ts_ms"])[:5],
    )


def _meter_checks(sizes: Sizes) -> Iterator[Check]:
    """Smart meters: one meter's day (single row), every meter's day (nightly table)."""
    last_day = dt.date(2017, 7, 25) + dt.timedelta(days=sizes.meter_days - 1)
    label = f"{last_day:%Y%m%d}"
    days = meter_day_records(
        r for r in records("smart_meters", sizes) if r["timestamp"][:10] == f"{last_day}"
    )
    yield Check(
        "One meter for one day (a single SENSOR row)",
        f"btts query meter --meter 987654 --date {last_day}",
        [days[(987654, label)]],
    )
    yield Check(
        "All meters for one day (scan of the nightly table SENSOR_YYYYMMDD)",
        f"btts query meters-of-day --date {last_day}",
        list(days.values()),
    )


def _market_checks(sizes: Sizes) -> Iterator[Check]:
    """Market data: quotes and trades of one exchange + symbol between two times."""
    exchange, symbol, _ = samples.SYMBOLS[0]
    start, end = samples.TICKS_START_MS + 10 * 3_600_000, samples.TICKS_START_MS + 12 * 3_600_000
    ticks = [
        r
        for r in records("market_data", sizes)
        if (r["exchange"], r["symbol"]) == (exchange, symbol)
    ]
    window = f"--exchange {exchange} --symbol {symbol} {_span(start, end)}"
    for what, record in (("quotes", quote_record), ("trades", trade_record)):
        found = sorted((record(r) for r in ticks), key=lambda x: x["ts_ms"])
        yield Check(
            f"{what.title()} of one exchange + symbol between two times "
            f"({what[:-1].upper()} range)",
            f"btts query {what} {window}",
            [x for x in found if start <= x["ts_ms"] < end],
        )


def _game_checks(sizes: Sizes) -> Iterator[Check]:
    """Game results: a player's month, all games of a month."""
    games = [
        r for r in records("game_results", sizes)
        if r["game"] == "LoL" and r["date"].startswith("2015-03")
    ]  # fmt: skip
    yield Check(
        "A player's games in a month (GAME_BY_PLAYER range)",
        "btts query player-games --game LoL --player Corrie --month 2015-03",
        [game_record(g) for g in sorted(games, key=lambda g: g["date"])
         if g["player"] == "Corrie"],
    )  # fmt: skip
    yield Check(
        "All games of a month (GAME_BY_DATE range)",
        "btts query games --game LoL --month 2015-03",
        [game_record(g) for g in sorted(games, key=lambda g: (g["date"], g["player"]))],
    )


def _balloon_checks(sizes: Sizes, balloon_queries: Mapping[str, str]) -> Iterator[Check]:
    """Weather balloons: one time range, the same answer from each of the four layouts."""
    minutes = sizes.balloon_minutes
    start = samples.BALLOONS_START_MS + (minutes // 2) * 60_000
    end = start + min(30, max(1, minutes // 4)) * 60_000
    measured = [
        balloon_record(r)
        for r in records("weather_balloons", sizes)
        if r["balloon_id"] == 3698 and start <= _ms(r["timestamp"]) < end
    ]
    for pattern, name in balloon_queries.items():
        yield Check(
            f"Balloon measurements for a time range, layout {pattern} ({name.upper()})",
            f"btts query balloon --pattern {pattern} --location us-west2 --balloon 3698 "
            f"{_span(start, end)}",
            measured,
            note="protobuf blobs decoded" if pattern == "TS-BLOB" else "",
        )


def _battery_checks(sizes: Sizes) -> Iterator[Check]:
    """Battery: salted reads merged in time order, and the promoted table for one user."""
    start = samples.BATTERY_START_MS + (sizes.battery_minutes // 4) * 60_000
    end = start + (sizes.battery_minutes // 2) * 60_000
    levels = sorted(
        (battery_record(r) for r in records("battery", sizes)
         if start <= _ms(r["timestamp"]) < end),
        key=lambda b: b["ts_ms"],
    )  # fmt: skip
    yield Check(
        "Battery levels of every user between two times (BATTERY_SALTED: one scan per "
        "salt bucket, merged in time order)",
        f"btts query battery {_span(start, end)}",
        levels,
    )
    yield Check(
        "One user's battery levels between two times (BATTERY, user promoted)",
        f"btts query battery --user Corrie {_span(start, end)}",
        [b for b in levels if b["user"] == "Corrie"],
    )


def _garden_and_sales_checks(sizes: Sizes) -> Iterator[Check]:
    """Garden and sales: a short-wide month row; aggregate cells."""
    yield Check(
        "A garden's month as one short-wide row (GARDEN_MONTHLY)",
        "btts query garden --garden VEGGIEGARDEN --month 2015-03",
        [garden_month_record(records("garden", sizes), "VEGGIEGARDEN", 2015, 3)],
    )
    sales = [
        m for m in monthly_sales_records(records("sales", sizes), "Corrie")
        if "201501" <= m["ts"] <= "201503"
    ]  # fmt: skip
    yield Check(
        "An employee's monthly sales totals (SALES_MONTHLY, AddToCell sums)",
        "btts query sales --employee Corrie --from 2015-01 --to 2015-03",
        sales,
    )


def _tenant_checks(sizes: Sizes) -> Iterator[Check]:
    """Tenants: one tenant's rows; then offboarding another by dropping its prefix."""
    devices = list(records("device", sizes))
    yield Check(
        "A tenant's rows (DEVICE prefix TENANT#)",
        "btts query tenant --tenant altostrat",
        tenant_records(devices, "altostrat"),
    )
    acme_rows = len({(r["device"], r["timestamp"][:10]) for r in devices if r["tenant"] == "acme"})
    survivors = tenant_records(devices, "acme2")

    def tenant_rows(target: config.Target, tenant: str) -> list[dict]:
        return without_key(engine.ask(target, "devices", "tenant_rows", {"tenant": tenant}))

    def drop_acme(target: config.Target) -> str:
        """Raises CheckFailed (a SystemFailure)."""
        dropped = engine.offboard_tenant(target, "acme")
        gone = tenant_rows(target, "acme")
        kept = tenant_rows(target, "acme2")
        if dropped != acme_rows or gone or kept != survivors:
            raise CheckFailed(
                f"demo: dropping tenant acme: {dropped} rows dropped (expected {acme_rows}), "
                f"{len(gone)} left; acme2 {'intact' if kept == survivors else 'CHANGED'}"
            )
        return (
            f"btts tenant drop --tenant acme --yes → dropped {dropped} row(s); acme has 0 left, "
            f"acme2 keeps its {len(kept)} readings ✓"
        )

    yield Check(
        "Dropping a tenant (one admin call on the row range acme#; acme2# untouched)",
        "btts query tenant --tenant acme",
        tenant_records(devices, "acme"),
        after=drop_acme,
    )
