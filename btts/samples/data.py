"""Deterministic sample data for the demo, the tests and the benchmarks.

Every generator is seeded: the same sizes give the same records in every run and process, so
the demo's answers can be checked against the events themselves. Records are the JSON objects
the jobs read (one per line); each dataset also has lines a real feed produces by mistake, each
a different reason to dead-letter. Sizes live in :class:`Sizes`; :meth:`Sizes.tiny` is for
tests.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from transforms.text.timefmt import iso as iso_ms

__all__ = [
    "BAD_BALLOON_LINES",
    "BAD_BATTERY_LINES",
    "BAD_GAME_LINES",
    "BAD_GARDEN_LINES",
    "BAD_METER_LINES",
    "BAD_METRIC_LINES",
    "BAD_SALES_LINES",
    "BAD_TICK_LINES",
    "BALLOONS_START_MS",
    "BATTERY_START_MS",
    "METERS_START_MS",
    "METRICS_START_MS",
    "SYMBOLS",
    "TICKS_START_MS",
    "Sizes",
    "balloon_records",
    "battery_records",
    "device_records",
    "game_records",
    "garden_records",
    "host_name",
    "meter_records",
    "metric_records",
    "sales_records",
    "tick_records",
    "write_jsonl",
]

METRIC_NAMES = ("cpu/cpu1_usr", "cpu/cpu1_nice", "io/blk_read", "io/blk_wrtn", "mem/used_pct")
# Lines a real feed produces by mistake, each a different reason to dead-letter.
BAD_METRIC_LINES = (
    "{not json",
    '{"hostname": "web#1", "timestamp": "2015-03-16T19:53:32.045Z", "metrics": {"cpu": 1}}',
    '{"hostname": "web1", "timestamp": "yesterday", "metrics": {"cpu": 1}}',
    '{"hostname": "web1", "timestamp": "2015-03-16T19:53:32.045Z", "metrics": {"cpu": "high"}}',
    '{"hostname": "web1", "timestamp": "2015-03-16T19:53:32.045", "metrics": {"cpu": 1}}',
    '{"timestamp": "2015-03-16T19:53:32.045Z", "metrics": {"cpu": 1}}',
    '{"hostname": "web1", "timestamp": "2015-03-16T19:53:32.045Z", "metrics": {"cpu": NaN}}',
    '["an", "array"]',
)
BAD_METER_LINES = (
    '{"meter_id": -5, "timestamp": "2017-07-26T00:15:00Z", "reading": 13.45}',
    '{"meter_id": 987654, "timestamp": "2017-07-26T00:15:00Z", "reading": "lots"}',
    '{"meter_id": 987654, "timestamp": "2017-07-26T00:15:00Z"}',
    '{"meter_id": 12345678901, "timestamp": "2017-07-26T00:15:00Z", "reading": 1}',
    '{"meter_id": 987654, "timestamp": "26/07/2017 00:15", "reading": 1}',
    "meter 987654 read 13.45",
)
BAD_TICK_LINES = (
    '{"exchange": "NASDAQ", "symbol": "ZXZZT", "bid": 600.55}',
    '{"exchange": "NASDAQ-GS", "symbol": "ZXZZT", "bid": 600.55, "ask": 600.6, "bid_size": 500, '
    '"ask_size": 1500, "last_sale": 600.58, "last_size": 300, '
    '"quote_time": "2015-03-16T19:53:32.156Z", "trade_time": "2015-03-16T19:53:32.045Z", '
    '"volume": 89000}',
    '{"exchange": "NYSE", "symbol": "IBM", "bid": 160.1, "ask": 160.2, "bid_size": -1, '
    '"ask_size": 10, "last_sale": 160.15, "last_size": 3, '
    '"quote_time": "2015-03-16T19:53:32.156Z", "trade_time": "2015-03-16T19:53:32.045Z", '
    '"volume": 100}',
    '{"exchange": "NYSE", "symbol": "IBM", "bid": 160.1, "ask": 160.2, "bid_size": 1, '
    '"ask_size": 10, "last_sale": 160.15, "last_size": 3, "quote_time": "soon", '
    '"trade_time": "2015-03-16T19:53:32.045Z", "volume": 100}',
    "{truncated",
)
BAD_BALLOON_LINES = (
    '{"location": "us-west2", "balloon_id": 3698, "timestamp": "2021-03-05T12:00:00Z", '
    '"pressure": 94558, "temperature": "warm", "humidity": 61, "altitude": 612}',
    '{"location": "us#west2", "balloon_id": 3698, "timestamp": "2021-03-05T12:00:00Z", '
    '"pressure": 94558, "temperature": 9.6, "humidity": 61, "altitude": 612}',
    '{"location": "us-west2", "balloon_id": 3698, "timestamp": "2021-03-05T12:00:00Z", '
    '"pressure": 94558, "temperature": 9.6, "humidity": 61}',
    '{"location": "us-west2", "balloon_id": -1, "timestamp": "2021-03-05T12:00:00Z", '
    '"pressure": 94558, "temperature": 9.6, "humidity": 61, "altitude": 612}',
)
BAD_GAME_LINES = (
    '{"game": "LoL", "player": "Corrie", "date": "2015-03-32", "win": false, "kda": 4.25}',
    '{"game": "LoL", "player": "Corrie", "date": "2015-03-01", "win": "no", "kda": 4.25}',
    '{"game": "LoL", "player": "Corrie ", "date": "2015-03-01", "win": true, "kda": 4.25}',
    '{"game": "LoL", "player": "Corrie", "date": "2015-03-01", "win": true, "kda": -1}',
)
BAD_BATTERY_LINES = (
    '{"user": "Corrie", "timestamp": "20150301124501001", "percentage": 101}',
    '{"user": "Cor#rie", "timestamp": "20150301124501001", "percentage": 50}',
    '{"user": "Corrie", "timestamp": "20151301124501001", "percentage": 50}',
    '{"user": "Corrie", "percentage": 50}',
)
BAD_GARDEN_LINES = (
    '{"garden": "VEGGIEGARDEN", "date": "2015-02-30", "temp": 60.4}',
    '{"garden": "VEGGIEGARDEN", "date": "2015-03-01", "temp": "mild"}',
    '{"garden": "VEGGIEGARDEN", "date": "2015-03-01T10:00:00Z", "temp": 60.4}',
)
BAD_SALES_LINES = (
    '{"employee": "Corrie", "timestamp": "2015-03-16T19:53:32.045Z", "amount_cents": 19.99}',
    '{"employee": "Corrie", "timestamp": "2015-03-16T19:53:32.045Z"}',
    '{"employee": "", "timestamp": "2015-03-16T19:53:32.045Z", "amount_cents": 1999}',
)

METRICS_START_MS = 1426535600000  # 2015-03-16T19:53:20Z
METERS_START_MS = 1500940800000  # 2017-07-25T00:00:00Z
TICKS_START_MS = 1426464000000  # 2015-03-16T00:00:00Z
BALLOONS_START_MS = 1614902400000  # 2021-03-05T00:00:00Z
BATTERY_START_MS = 1425168000000  # 2015-03-01T00:00:00Z
DEVICE_START_MS = 1556668800000  # 2019-05-01T00:00:00Z
GAMES_FIRST_DAY = (2015, 3, 1)
GAMES_DAYS = 61  # March and April 2015
GARDEN_DAYS = 61
SALES_START_MS = 1420070400000  # 2015-01-01T00:00:00Z
SALES_DAYS = 90

SYMBOLS = (
    ("NASDAQ", "ZXZZT", "600.00"),
    ("NASDAQ", "GOOG", "550.00"),
    ("NASDAQ", "AAPL", "125.00"),
    ("NYSE", "IBM", "160.00"),
    ("NYSE", "GE", "25.00"),
    ("NYSE", "KO", "41.00"),
    ("BATS", "SPY", "205.00"),
    ("BATS", "QQQ", "107.00"),
)
PLAYERS = (
    "Corrie", "Ana", "Lucas", "Sofia", "Mateo", "Jose", "Aiko", "Noah", "Lea", "Ivan",
    "Maya", "Omar", "Zoe", "Finn", "Nia", "Kai", "Ines", "Tom", "Yara", "Eli",
)  # fmt: skip
GAMES = ("LoL", "Dota")
GARDENS = ("VEGGIEGARDEN", "HERBGARDEN")
TENANTS = ("altostrat", "acme", "acme2")


@dataclass(frozen=True)
class Sizes:
    """How much of each dataset to generate. The defaults are the demo's (the issue's
    minimums: 1,000 meters × 2 days, 100 hosts × 10 minutes at 5 s, a day of ticks for several
    symbols, a day of balloon data)."""

    meters: int = 1000
    meter_days: int = 2
    hosts: int = 100
    metric_minutes: int = 10
    symbols: int = 6
    tick_seconds: int = 60  # one message per symbol this often, for a day
    balloons: int = 2
    balloon_minutes: int = 24 * 60
    players: int = 20
    battery_users: int = 20
    battery_minutes: int = 24 * 60
    battery_every_minutes: int = 5
    employees: int = 10
    devices: int = 2
    device_days: int = 3

    @classmethod
    def tiny(cls) -> Sizes:
        """Small enough for a test run of the whole demo in seconds."""
        return cls(
            meters=4,
            meter_days=2,
            hosts=3,
            metric_minutes=1,
            symbols=2,
            tick_seconds=3600,
            balloons=1,
            balloon_minutes=30,
            players=4,
            battery_users=3,
            battery_minutes=120,
            battery_every_minutes=15,
            employees=2,
            devices=1,
            device_days=1,
        )


# -- server metrics ---------------------------------------------------------------------------


def metric_records(
    hosts: int,
    seconds: int,
    interval_s: int = 5,
    start_ms: int = METRICS_START_MS,
    seed: int = 7,
    metrics: tuple[str, ...] = METRIC_NAMES,
) -> Iterator[dict]:
    """Server metrics: every host reports every ``interval_s`` seconds, in time order."""
    rng = random.Random(seed)
    for step in range(0, seconds, interval_s):
        ts = iso_ms(start_ms + step * 1000)
        for h in range(hosts):
            values = {}
            for name in metrics:
                if name.startswith("io/"):
                    values[name] = rng.randrange(10**9)
                else:
                    values[name] = round(rng.random(), 2)
            yield {"hostname": host_name(h), "timestamp": ts, "metrics": values}


def host_name(index: int) -> str:
    return f"server{index:04d}.example.com"


def metric_events(
    hosts: int,
    seconds: int,
    interval_s: int = 5,
    start_ms: int = METRICS_START_MS,
    seed: int = 7,
    metrics: tuple[str, ...] = METRIC_NAMES,
) -> Iterator[str]:
    """JSON lines of :func:`metric_records`."""
    return map(json.dumps, metric_records(hosts, seconds, interval_s, start_ms, seed, metrics))


# -- smart meters -----------------------------------------------------------------------------


def meter_ids(meters: int, seed: int = 11) -> list[int]:
    """Distinct numeric meter IDs, the guidance's 987654 first, the rest spread over 6–9 digits."""
    rng = random.Random(seed)
    ids = [987654]
    seen = set(ids)
    while len(ids) < meters:
        candidate = rng.randrange(100_000, 999_999_999)
        if candidate not in seen:
            seen.add(candidate)
            ids.append(candidate)
    return ids[:meters]


def meter_records(
    meters: int, days: int, start_ms: int = METERS_START_MS, seed: int = 11
) -> Iterator[dict]:
    """A cumulative kWh register per meter, read every 15 minutes, all meters per slot in
    turn (the order a head-end system forwards them)."""
    rng = random.Random(seed)
    ids = meter_ids(meters, seed)
    totals = [rng.uniform(0, 5000) for _ in ids]
    for slot in range(days * 96):
        ts = iso_ms(start_ms + slot * 900_000)
        for i, meter in enumerate(ids):
            totals[i] += rng.uniform(0.0, 0.6)
            yield {"meter_id": meter, "timestamp": ts, "reading": round(totals[i], 2)}


# -- market data ------------------------------------------------------------------------------


def tick_records(
    symbols: int, every_s: int = 60, start_ms: int = TICKS_START_MS, seed: int = 13
) -> Iterator[dict]:
    """A day of quote+trade messages per exchange/symbol: a random walk around a start price."""
    rng = random.Random(seed)
    chosen = SYMBOLS[:symbols]
    prices = {(ex, sym): float(price) for ex, sym, price in chosen}
    volumes = dict.fromkeys(prices, 0)
    for step in range(0, 86_400, every_s):
        base = start_ms + step * 1000
        for ex, sym, _ in chosen:
            price = prices[(ex, sym)] = max(1.0, prices[(ex, sym)] * (1 + rng.gauss(0, 0.0008)))
            spread = round(max(0.01, price * 0.0002), 2)
            last_size = rng.randrange(1, 50) * 100
            volumes[(ex, sym)] += last_size
            quote_ms = base + rng.randrange(0, min(every_s, 60) * 1000)
            trade_ms = max(base, quote_ms - rng.randrange(0, 500))
            yield {
                "exchange": ex,
                "symbol": sym,
                "bid": round(price - spread / 2, 2),
                "ask": round(price + spread / 2, 2),
                "bid_size": rng.randrange(1, 40) * 100,
                "ask_size": rng.randrange(1, 40) * 100,
                "last_sale": round(price, 2),
                "last_size": last_size,
                "quote_time": iso_ms(quote_ms),
                "trade_time": iso_ms(trade_ms),
                "volume": volumes[(ex, sym)],
            }


# -- weather balloons -------------------------------------------------------------------------


def balloon_records(
    balloons: int, minutes: int, start_ms: int = BALLOONS_START_MS, seed: int = 17
) -> Iterator[dict]:
    """One measurement a minute per balloon: rising, cooling, thinning air, noisy humidity."""
    rng = random.Random(seed)
    ids = [3698 + i for i in range(balloons)]
    for minute in range(minutes):
        ts = iso_ms(start_ms + minute * 60_000)
        for balloon in ids:
            altitude = 600 + (minute * 7 + balloon) % 30_000
            yield {
                "location": "us-west2",
                "balloon_id": balloon,
                "timestamp": ts,
                "pressure": int(101_325 * (1 - 2.25577e-5 * altitude) ** 5.25588),
                "temperature": round(
                    max(-56.5, 15 - 0.0065 * altitude) + rng.uniform(-0.5, 0.5), 1
                ),
                "humidity": rng.randrange(10, 95),
                "altitude": altitude,
            }


# -- game results -----------------------------------------------------------------------------


def game_records(players: int, seed: int = 19) -> Iterator[dict]:
    """March and April 2015: each player plays each game on about half of the days (one
    result per player, game and day)."""
    rng = random.Random(seed)
    first = dt.date(*GAMES_FIRST_DAY)
    for offset in range(GAMES_DAYS):
        day = (first + dt.timedelta(days=offset)).isoformat()
        for game in GAMES:
            for player in PLAYERS[:players]:
                if rng.random() < 0.5:
                    yield {
                        "game": game,
                        "player": player,
                        "date": day,
                        "win": rng.random() < 0.5,
                        "kda": round(rng.uniform(0.2, 9.0), 2),
                    }


# -- battery ----------------------------------------------------------------------------------


def battery_records(
    users: int, minutes: int, every: int = 5, start_ms: int = BATTERY_START_MS, seed: int = 23
) -> Iterator[dict]:
    """Phones report their charge every ``every`` minutes; each user at its own second and
    millisecond, so no two users share a time (the salted key does not hold the user)."""
    rng = random.Random(seed)
    names = [
        PLAYERS[i % len(PLAYERS)] + (str(i // len(PLAYERS)) if i >= len(PLAYERS) else "")
        for i in range(users)
    ]
    levels = [rng.randrange(40, 100) for _ in names]
    offsets = [i * 1_013 + 1 for i in range(users)]  # distinct ms offsets within the minute
    for minute in range(0, minutes, every):
        for i, user in enumerate(names):
            levels[i] = levels[i] - rng.randrange(0, 3) if levels[i] > 5 else 100
            ms = start_ms + minute * 60_000 + offsets[i] % 60_000
            yield {"user": user, "timestamp": iso_ms(ms), "percentage": levels[i]}


# -- garden and sales -------------------------------------------------------------------------


def garden_records(seed: int = 29) -> Iterator[dict]:
    """Daily temperatures (°F) of two gardens for March and April 2015."""
    rng = random.Random(seed)
    first = dt.date(2015, 3, 1)
    for garden in GARDENS:
        temp = rng.uniform(45, 55)
        for offset in range(GARDEN_DAYS):
            temp += rng.uniform(-3, 3.4)
            day = (first + dt.timedelta(days=offset)).isoformat()
            yield {"garden": garden, "date": day, "temp": round(temp, 1)}


def sales_records(employees: int, start_ms: int = SALES_START_MS, seed: int = 31) -> Iterator[dict]:
    """January–March 2015: a few sales a day per employee, now and then a refund."""
    rng = random.Random(seed)
    names = PLAYERS[:employees]
    for day in range(SALES_DAYS):
        for employee in names:
            for _ in range(rng.randrange(0, 5)):
                ms = start_ms + day * 86_400_000 + rng.randrange(8 * 3_600_000, 20 * 3_600_000)
                amount = rng.randrange(199, 50_000)
                if rng.random() < 0.05:
                    amount = -amount
                yield {"employee": employee, "timestamp": iso_ms(ms), "amount_cents": amount}


# -- multi-tenant device data -----------------------------------------------------------------


def device_records(
    devices: int, days: int, start_ms: int = DEVICE_START_MS, seed: int = 37
) -> Iterator[dict]:
    """Hourly phone readings of each tenant's devices (the devices.yaml schema's events)."""
    rng = random.Random(seed)
    for tenant in TENANTS:
        ids = [f"{rng.getrandbits(32):08x}" for _ in range(devices)]
        for device in ids:
            for hour in range(days * 24):
                yield {
                    "tenant": tenant,
                    "kind": "phone",
                    "device": device,
                    "timestamp": iso_ms(start_ms + hour * 3_600_000),
                    "readings": {
                        "memusage": rng.randrange(10, 95),
                        "battery": rng.randrange(5, 100),
                    },
                }


# -- files ------------------------------------------------------------------------------------


def write_jsonl(path: Path, records: Iterable[dict], bad_lines: Sequence[str] = ()) -> int:
    """Write records as JSON lines, the bad lines spread among them (deterministically).
    Returns the number of lines written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pending = list(bad_lines)
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for index, record in enumerate(records):
            if pending and index % 97 == 13:
                out.write(pending.pop(0) + "\n")
                count += 1
            out.write(json.dumps(record) + "\n")
            count += 1
        for line in pending:
            out.write(line + "\n")
            count += 1
    return count
