"""Deterministic benchmark inputs, written as JSON lines."""

from __future__ import annotations

import json
import random
from pathlib import Path

from btts.samples import data as samples

START_MS = 1_500_940_800_000  # 2017-07-25T00:00:00Z


def write(path: Path, lines) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for line in lines:
            out.write(line + "\n")
            count += 1
    return count


def metrics(path: Path, events: int) -> int:
    hosts = max(1, events // 120)  # ten minutes at one reading per 5 s
    seconds = 5 * -(-events // hosts)
    lines = samples.metric_events(hosts=hosts, seconds=seconds)
    return write(path, (line for _, line in zip(range(events), lines, strict=False)))


def meters(path: Path, readings: int, days: int = 1, seed: int = 11) -> int:
    """Readings every 15 minutes for as many meters as it takes, over ``days`` days."""
    rng = random.Random(seed)
    per_meter = 96 * days
    count_meters = max(1, -(-readings // per_meter))

    def lines():
        emitted = 0
        for slot in range(per_meter):
            ts = samples.iso_ms(START_MS + slot * 900_000)
            for meter in range(count_meters):
                if emitted == readings:
                    return
                emitted += 1
                value = f"{rng.uniform(0, 50):.2f}"
                yield f'{{"meter_id": {100000 + meter}, "timestamp": "{ts}", "reading": {value}}}'

    return write(path, lines())


def market(path: Path, ticks: int, seed: int = 5) -> int:
    rng = random.Random(seed)
    symbols = [("NASDAQ", s) for s in ("ZXZZT", "GOOG", "AAPL", "MSFT", "AMZN")] + [
        ("NYSE", s) for s in ("IBM", "GE", "KO", "T", "XOM")
    ]

    def lines():
        for i in range(ticks):
            exchange, symbol = symbols[i % len(symbols)]
            ts = START_MS + i * 37
            bid = rng.uniform(10, 900)
            yield json.dumps(
                {
                    "exchange": exchange,
                    "symbol": symbol,
                    "bid": round(bid, 2),
                    "ask": round(bid + 0.05, 2),
                    "bid_size": rng.randrange(1, 5000),
                    "ask_size": rng.randrange(1, 5000),
                    "last_sale": round(bid + 0.02, 2),
                    "last_size": rng.randrange(1, 1000),
                    "quote_time": samples.iso_ms(ts + 11),
                    "trade_time": samples.iso_ms(ts),
                    "volume": rng.randrange(1, 10**6),
                }
            )

    return write(path, lines())


def ticks(path: Path, count: int, seed: int = 7) -> int:
    """Stock ticks for the user-schema dataset (docs/schemas/ts-cols-stock-ticks.yaml)."""
    rng = random.Random(seed)
    symbols = [f"SYM{i:04d}" for i in range(400)]

    def lines():
        for i in range(count):
            price = f"{rng.uniform(1, 900):.2f}"
            ts = samples.iso_ms(START_MS + i * 7)
            yield (
                f'{{"symbol": "{symbols[i % len(symbols)]}", "ts": "{ts}", "price": {price}, '
                f'"size": {rng.randrange(1, 10_000)}}}'
            )

    return write(path, lines())
