"""What the lean rows' tests share (transforms/mutations.py): the check that lean rows land and
tell what the plain rows do, and a user's schema with a series index whose tables take every
path of the lean builder (optional fields, a map, two families, a long value checked apart
for the limits, a time-of-day column the index folds from cells), with records for it."""

from __future__ import annotations

import random

from transforms.builder import wire
from transforms.limits import MAX_QUALIFIER_BYTES
from transforms.mutations import cell_count, cell_total, first_stamps, is_lean
from transforms.text.timefmt import iso


def same_rows(lean: list, entries: list, plain: list) -> int:
    """Asserts that ``lean`` rows (with their ``entries``) land what ``plain`` rows land and
    tell what they tell; returns how many were lean."""
    assert len(lean) == len(entries) == len(plain)
    made = 0
    for row, entry, whole in zip(lean, entries, plain, strict=True):
        assert row[:2] == whole[:2]  # table and key
        if entry is None:  # the writer encodes it: its cells as built
            assert not is_lean(row) and row == whole
            continue
        assert entry == wire.framed(wire.entry(whole))  # the bytes that land
        assert cell_count(row) == len(whole[2]) and bool(row[2]) == bool(whole[2])
        if whole[2]:
            assert first_stamps([row]) == [whole[2][0][3]]
            assert {cell[3] for cell in whole[2]} == {whole[2][0][3]}  # one stamp: all of them
        if is_lean(row):
            made += 1
        else:
            assert row == whole
    assert cell_total(lean) == cell_total(plain)
    return made


PROBES = """
dataset: lean_probes
event:
  time: ts
  fields:
    host: {type: text, max_length: 64}
    site: {type: text, max_length: 16}
    ts: time
    temp: number
    hum: {type: number, optional: true}
    extra: {type: map, optional: true}
    note: {type: text, optional: true, max_length: 30000}
tables:
  - name: BY_HOST
    pattern: TS-COLS
    families:
      - {name: r, max_versions: 1}
      - {name: x, max_versions: 3}
    key:
      - text: host
      - epoch_ms: ts
    columns:
      - {family: r, qualifier: temp, value: temp}
      - {family: r, qualifier: hum, value: hum}
      - {family: x, each: extra}
      - {family: r, qualifier: note, value: note}
  - name: BY_SITE
    pattern: TS-COLS
    families: [{name: r, max_versions: 1}]
    key:
      - text: site
      - epoch_ms: ts
    columns:
      - {family: r, qualifier: {time: hhmm}, value: temp}
index: {table: LEAN_PROBES_SERIES}
"""


def probe_records(rng: random.Random, count: int = 300) -> list[dict]:
    """Records for :data:`PROBES`: optional values present or not, a few notes long enough
    for the limits check, some times before the fast range, one bad record in twenty."""
    out = []
    for n in range(count):
        ms = rng.choice([1_500_000_000_000, 200_000_000_000]) + rng.randrange(0, 10**8)
        record = {"host": f"h{rng.randrange(5)}", "site": rng.choice("ab"), "ts": iso(ms)}
        record["temp"] = round(rng.uniform(-5, 30), 2)
        if rng.random() < 0.5:
            record["hum"] = round(rng.uniform(0, 1), 3)
        if rng.random() < 0.4:
            names = rng.sample(["a", "b", "c", "d"], rng.randrange(1, 4))
            record["extra"] = {k: rng.randrange(10) for k in names}
        if rng.random() < 0.1:
            record["note"] = "n" * rng.choice([3, 200, MAX_QUALIFIER_BYTES + 10])
        if n % 20 == 0:
            record["temp"] = "not a number"
        out.append(record)
    return out


def market_records(rng: random.Random, count: int = 200) -> list[dict]:
    """Records for the built-in market_data schema."""
    out = []
    for _ in range(count):
        ms = 1_500_000_000_000 + rng.randrange(0, 10**7)
        out.append(
            {
                "exchange": rng.choice(["NASDAQ", "NYSE"]),
                "symbol": rng.choice(["GOOG", "ZXZZT", "AB"]),
                "bid": 1.5,
                "ask": 1.75,
                "bid_size": rng.randrange(100),
                "ask_size": 3,
                "last_sale": 1.6,
                "last_size": 7,
                "quote_time": iso(ms),
                "trade_time": iso(ms - rng.randrange(1000)),
                "volume": rng.choice([10, -1]),  # -1: refused
            }
        )
    return out
