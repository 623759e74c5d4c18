"""The conformance suite's requests over stored sets: three small sets of points (gauges at
misaligned times with a gap, counters with a reset and a wrap, integer series), the windows
asked, a request body as Grafana sends it, the answer of the OpenTSDB reference
(:mod:`tests.support.opentsdb_reference`) and the comparison of two series. Shared by the
pure suite and its live run through ``btts serve`` on the emulator."""

from __future__ import annotations

import math
from decimal import Decimal

from btts.tsdb import request
from tests.support import opentsdb_reference

D = Decimal
NAN = float("nan")
T = 1426536000000  # 2015-03-16T20:00:00Z: an hour boundary
S, M = 1000, 60_000


def _gauges() -> dict:
    """web01 every 30 s with a gap, web02 every 45 s from +7 s, web03 every 60 s from +13 s
    inside part of the range only."""
    out: dict = {}
    for k in range(-40, 140):
        t = T + k * 30 * S
        if not T + 20 * M <= t < T + 30 * M:
            out.setdefault("web01", []).append((t, D(str(round(50 + 30 * math.sin(k / 7), 2)))))
    for k in range(-30, 95):
        out.setdefault("web02", []).append((T + 7 * S + k * 45 * S, D(str(100 + (k * 37) % 41))))
    for k in range(5, 50):
        out.setdefault("web03", []).append((T + 13 * S + k * M, D(str(k * 1.25))))
    return out


def _counters() -> dict:
    """c1 grows, resets to near zero at +31 min; c2 counts to 1000 and wraps (counterMax 1000)."""
    c1, c2 = [], []
    total = 5000
    for k in range(-30, 90):
        total = 17 if k == 31 else total + 40 + (k * 13) % 29
        c1.append((T + k * M, D(total)))
    value = 600
    for k in range(-20, 60):
        value = (value + 35 + (k * 7) % 11) % 1000
        c2.append((T + 20 * S + k * 90 * S, D(value)))
    return {"c1": c1, "c2": c2}


def _integers() -> dict:
    return {
        "a": [(T + k * 20 * S, D((k * 3) % 17)) for k in range(-100, 300)],
        "b": [(T + 10 * S + k * 50 * S, D(k % 5)) for k in range(-50, 120)],
    }


SETS = {"gauges": _gauges(), "counters": _counters(), "integers": _integers()}
WINDOWS = {
    "aligned": (T, T + 60 * M),  # the end is a point of web01: included
    "misaligned": (T + 90 * S + 500, T + 45 * M + 30 * S),
    "short": (T + 10 * M + 5 * S, T + 21 * M),
}


def request_body(start, end, agg, ds, rate):
    q = {
        "metric": "m",
        "aggregator": agg,
        "filters": [{"type": "wildcard", "tagk": "host", "filter": "*", "groupBy": False}],
    }
    if ds:
        q["downsample"] = ds
    if rate is not None:
        q["rate"] = True
        q["rateOptions"] = rate
    return {"start": start, "end": end, "queries": [q], "msResolution": True}


def reference_answer(stored: dict, body: dict) -> list:
    (q,) = body["queries"]
    ds = None
    if q.get("downsample"):
        parsed = request.parse_downsample(q["downsample"])
        ds = (parsed.interval_ms, parsed.aggregator, parsed.fill)
    rate = None
    if q.get("rate"):
        o = q["rateOptions"]
        rate = {
            "counter": bool(o.get("counter")),
            "counter_max": o.get("counterMax", 2**63 - 1),
            "reset": o.get("resetValue", 0),
            "drop": bool(o.get("dropResets")),
        }
    data = {h: [(t, float(v)) for t, v in pts] for h, pts in stored.items()}
    longs = {
        h for h, pts in stored.items() if all(opentsdb_reference.is_integer(v) for _, v in pts)
    }
    return opentsdb_reference.query(
        data, body["start"], body["end"], q["aggregator"], ds, rate, longs
    )


def point_value(v):
    """A ``dps`` value as the comparison takes it: OpenTSDB's NaN (text or null) as a float."""
    return NAN if v in ("NaN", None) else v


def same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if math.isnan(float(a)) or math.isnan(float(b)):
        return math.isnan(float(a)) and math.isnan(float(b))
    a, b = float(a), float(b)
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def same_series(got, want) -> bool:
    return [t for t, _ in got] == [t for t, _ in want] and all(
        same(x, y) for (_, x), (_, y) in zip(got, want, strict=True)
    )
