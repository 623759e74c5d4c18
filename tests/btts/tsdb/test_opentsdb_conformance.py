"""``btts serve`` answers as OpenTSDB 2.4 answers: a conformance suite.

Two kinds of cases, both as data:

* vectors ported from OpenTSDB's own unit tests (``TestAggregationIterator``, ``TestRateSpan``,
  ``TestFillingDownsampler``, ``TestDownsampler``, ``TestAggregators``): stored points and the
  expected values those tests assert, run through :mod:`btts.tsdb.series`;
* requests over three small stored sets (gauges at misaligned times with a gap, counters with a
  reset and a wrap, integer series) × windows × aggregators, downsamples, fills and rates, run
  through the request path (``request.parse_body`` → ``answer.compute`` over the points of
  the window the server reads → ``answer.render``), each compared with
  :mod:`tests.support.opentsdb_reference` (OpenTSDB's iterators re-written: slots and seeks,
  doubles).

Where btts deliberately differs the case says so (``DIFFERENCES``, also in docs/dashboards.md):
decimals stay exact where OpenTSDB computes in doubles or truncating longs, so values are
compared to 1e-9 relative, and the cases of long truncation assert btts' exact answer.
"""

from __future__ import annotations

import functools
import json
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from btts.tsdb import answer, planning, request, series
from tests.support.opentsdb_conformance import (
    NAN,
    SETS,
    WINDOWS,
    M,
    S,
    T,
    point_value,
    reference_answer,
    request_body,
    same_series,
)

D = Decimal
DIFFERENCES = {
    "exact": "integer series stay exact decimals: OpenTSDB's long arithmetic truncates "
    "an average or an interpolation (avg of 1 and 2: btts 1.5, OpenTSDB 1)",
}


# -- ported unit-test vectors ---------------------------------------------------------------------

B = 1356998400000  # BASE_TIME of OpenTSDB's tests
POINTS_1 = [(B, 40), (B + 10_000, 50), (B + 30_000, 70)]
POINTS_2 = [(B + 10_000, 37), (B + 20_000, 48)]
DATA_5SEC = [(B + s * 1000, 1.0) for s in (0, 7, 10, 15, 20, 25, 30, 35, 40, 45, 50)]
RATE_POINTS = [
    (1356998400000, 40.0),
    (1356998400000 + 2000000, 50),
    (1357002000000, 40),
    (1357002000000 + 5000, 50.0),
    (1357005600000, 40),
    (1357005600000 + 2000000, 50.0),
]
FILL_POINTS = [(500 + 25 * k, 1.0) for k in (4, 5, 7, 12, 15, 24, 25, 26, 27)]
OOB_BASE = 1425335895000
OOB_POINTS = [
    (OOB_BASE - 60000 * 5 + 320, 53.0),
    (OOB_BASE - 60000 * 2 + 8839, 16.0),
    (OOB_BASE + 849, 9.0),
    (OOB_BASE + 3849, 8.0),
    (OOB_BASE + 6210, 7.0),
    (OOB_BASE + 42216, 6.0),
    (OOB_BASE + 60000 + 167, 5.0),
    (OOB_BASE + 60000 + 28593, 4.0),
    (OOB_BASE + 120000 + 30384, 37.0),
    (OOB_BASE + 240000 + 1530, 86.0),
]
HOUR_MS, DAY_MS = 3_600_000, 86_400_000
CAL_POINTS = [(B + k * 10_000 + 5000, D(2**k)) for k in range(6)]
HOUR_POINTS = [
    (B + dt, D(k + 1))
    for k, dt in enumerate((0, 1_800_000, 3_599_000, 3_600_000, 5_400_000, 7_199_000))
]
DST = 1450137600000
DAY_POINTS = [
    (DST + dt, D(k + 1))
    for k, dt in enumerate((0, 86_399_000, 126_001_000, 172_799_000, 172_800_000, 242_999_000))
]


def _cal(points, spec, tz):
    ds = request.parse_downsample(spec, tz)
    return series.downsample(points, ds, series.Window(0, 2**50))


def _agg(groups, agg, rates=False):
    return series.aggregate(groups, agg, rates)


def _ds(points, spec, start, end):
    iv, agg, fill = spec
    return series.downsample(points, series.Downsample(iv, agg, fill), series.Window(start, end))


VECTORS = [
    # TestAggregationIterator
    ("AggregationIterator single span", lambda: _agg([POINTS_1], "sum"), POINTS_1),
    (
        "AggregationIterator double spans (60 interpolated)",
        lambda: _agg([POINTS_1, POINTS_2], "sum"),
        [(B, 40), (B + 10_000, 87), (B + 20_000, 108), (B + 30_000, 70)],
    ),
    (
        "AggregationIterator seven spans downsampled 10s-avg from +1s",
        lambda: _agg([_ds(DATA_5SEC, (10_000, "avg", "none"), B + 1000, B + 100_000)] * 7, "sum"),
        [(B + k * 10_000, 7) for k in range(1, 6)],
    ),
    # TestRateSpan (the first rate is taken from time zero)
    (
        "RateSpan iterate all",
        lambda: series.rate_span(RATE_POINTS),
        [
            (1356998400000, 40.0 / 1356998400),
            (1356998400000 + 2000000, 10.0 / 2000.0),
            (1357002000000, -10.0 / (1357002000 - 1356998400 - 2000)),
            (1357002000000 + 5000, 10.0 / 5.0),
            (1357005600000, -10.0 / (1357005600 - 1357002005)),
            (1357005600000 + 2000000, 10.0 / 2000.0),
        ],
    ),
    (
        "RateSpan after seek",
        lambda: series.rate_span([p for p in RATE_POINTS if p[0] >= 1357002000000]),
        [
            (1357002000000, 40.0 / 1357002000),
            (1357002000000 + 5000, 10.0 / 5.0),
            (1357005600000, -10.0 / (1357005600 - 1357002005)),
            (1357005600000 + 2000000, 10.0 / 2000.0),
        ],
    ),
    (
        "RateSpan counter, counterMax 70",
        lambda: series.rate_span(RATE_POINTS, series.Rate(counter=True, counter_max=70)),
        [
            (1356998400000, 40.0 / 1356998400),
            (1356998400000 + 2000000, 10.0 / 2000.0),
            (1357002000000, (40.0 + 20) / 1600.0),
            (1357002000000 + 5000, 10.0 / 5.0),
            (1357005600000, (40.0 + 20) / 3595),
            (1357005600000 + 2000000, 10.0 / 2000.0),
        ],
    ),
    (
        "RateSpan counter, drop resets",
        lambda: series.rate_span(RATE_POINTS, series.Rate(counter=True, drop_resets=True)),
        [
            (1356998400000, 40.0 / 1356998400),
            (1356998400000 + 2000000, 10.0 / 2000.0),
            (1357002000000 + 5000, 10.0 / 5.0),
            (1357005600000 + 2000000, 10.0 / 2000.0),
        ],
    ),
    (
        "RateSpan counter with a reset value: a too big change reads 0",
        lambda: series.rate_span(
            [(B, D(40)), (B + 1000, D(50)), (B + 2000, D(40))], series.Rate(True, 70, reset_value=1)
        ),
        [(B, 40 / 1356998400.0), (B + 1000, 10), (B + 2000, 0)],
    ),
    (
        "RateSpan counter at Long.MAX_VALUE",
        lambda: series.rate_span(
            [(B + 30_000, D(2**63 - 56)), (B + 60_000, D(2**63 - 26)), (B + 90_000, D(5))],
            series.Rate(True, 2**63 - 1),
        ),
        [(B + 30_000, (2**63 - 56) / 1356998430.0), (B + 60_000, 1), (B + 90_000, 1)],
    ),
    (
        "RateSpan counter dropping resets",
        lambda: series.rate_span(
            [(B, D(40)), (B + 1000, D(50)), (B + 2000, D(40)), (B + 3000, D(50))],
            series.Rate(True, 70, 1, True),
        ),
        [(B, 40 / 1356998400.0), (B + 1000, 10), (B + 3000, 10)],
    ),
    (
        "RateSpan counter dropping resets, nothing after",
        lambda: series.rate_span(
            [(B, D(40)), (B + 1000, D(50)), (B + 2000, D(40))], series.Rate(True, 70, 1, True)
        ),
        [(B, 40 / 1356998400.0), (B + 1000, 10)],
    ),
    (
        "RateSpan big long values",
        lambda: series.rate_span([(B, D(2**63 - 1 - 100)), (B + 100_000, D(2**63 - 1 - 20))])[1:],
        [(B + 100_000, 0.8)],
    ),
    # TestFillingDownsampler
    (
        "FillingDownsampler 100ms-sum-nan, gaps before, during and after",
        lambda: _ds(FILL_POINTS, (100, "sum", "nan"), 500, 500 + 36 * 25),
        list(zip(range(500, 1400, 100), [NAN, 3, NAN, 2, NAN, NAN, 4, NAN, NAN], strict=True)),
    ),
    (
        "FillingDownsampler 100ms-sum-zero",
        lambda: _ds(FILL_POINTS, (100, "sum", "zero"), 500, 500 + 36 * 25),
        list(zip(range(500, 1400, 100), [0, 3, 0, 2, 0, 0, 4, 0, 0], strict=True)),
    ),
    (
        "FillingDownsampler without missing intervals",
        lambda: _ds(
            [(1000 + 25 * k, float(12 - k)) for k in range(12)], (100, "sum", "nan"), 1000, 1300
        ),
        [(1000, 42.0), (1100, 26.0), (1200, 10.0)],
    ),
    (
        "FillingDownsampler out-of-bounds data (after the aggregation iterator's seek)",
        lambda: _ds(OOB_POINTS, (60_000, "sum", "nan"), OOB_BASE, OOB_BASE + 120_000),
        [(1425335940000, 9.0)],
    ),
    (
        "FillingDownsampler out-of-bounds data early: only a fill",
        lambda: _ds(OOB_POINTS[:2], (60_000, "sum", "nan"), OOB_BASE, OOB_BASE + 120_000),
        [(1425335940000, NAN)],
    ),
    # TestDownsampler
    (
        "Downsampler 10s-avg of the 5s data",
        lambda: _ds(DATA_5SEC, (10_000, "avg", "none"), B, B + 60_000),
        [(B + k * 10_000, 1.0) for k in range(6)],
    ),
    (
        "Downsampler 10s-sum of the 5s data",
        lambda: _ds(DATA_5SEC, (10_000, "sum", "none"), B, B + 60_000),
        [(B + k * 10_000, 2.0) for k in range(5)] + [(B + 50_000, 1.0)],
    ),
    (
        "Downsampler 0all-sum: one value at the query start",
        lambda: _ds(DATA_5SEC, (0, "sum", "none"), B + 5000, B + 45_000),
        [(B + 5000, 8.0)],
    ),
    # TestDownsampler's calendar cases (1dc, 1hc, 4hc, 3dc in a time zone)
    *[
        (
            f"Downsampler calendar {spec} in {tz}",
            functools.partial(_cal, pts, spec, tz),
            want,
        )
        for pts, spec, tz, want in [
            (CAL_POINTS, "1dc-sum", "America/Denver", [(1356937200000, 63)]),
            (HOUR_POINTS, "1hc-sum", "Pacific/Funafuti", [(B, 6), (B + HOUR_MS, 15)]),
            (
                HOUR_POINTS,
                "1hc-sum",
                "Asia/Kabul",
                [(1356996600000, 1), (1356996600000 + HOUR_MS, 9), (1357003800000, 11)],
            ),
            (HOUR_POINTS, "4hc-sum", "Asia/Kabul", [(1356996600000, 21)]),
            (DAY_POINTS, "1dc-sum", "UTC", [(DST, 3), (DST + DAY_MS, 7), (DST + 2 * DAY_MS, 11)]),
            (
                DAY_POINTS,
                "1dc-sum",
                "Pacific/Funafuti",
                [(1450094400000 + k * DAY_MS, v) for k, v in enumerate((1, 5, 9, 6))],
            ),
            (
                DAY_POINTS,
                "1dc-sum",
                "Pacific/Fiji",
                [(1450090800000 + k * DAY_MS, v) for k, v in enumerate((1, 2, 12, 6))],
            ),
            (
                DAY_POINTS,
                "1dc-sum",
                "Asia/Kabul",
                [(1450121400000 + k * DAY_MS, v) for k, v in enumerate((1, 5, 15))],
            ),
            (DAY_POINTS, "3dc-sum", "Asia/Kabul", [(1450121400000, 21)]),
        ]
    ],
    # TestAggregators
    ("Aggregators dev", lambda: [(0, series.combine("dev", [2, 4, 4, 4, 5, 5, 7, 9]))], [(0, 2)]),
    (
        "Aggregators p50/p90/p999 (Commons Math)",
        lambda: [(p, series.combine(p, list(range(1, 11)))) for p in ("p50", "p90", "p999")],
        [("p50", 5.5), ("p90", 9.9), ("p999", 10)],
    ),
    (
        "Aggregators NaN: sum/min/max/avg skip it, count counts the rest, first keeps it",
        lambda: [
            (a, series.combine(a, [NAN, D(2), NAN, D(4)]))
            for a in ("sum", "min", "max", "avg", "count", "first", "last", "median")
        ],
        [
            ("sum", 6),
            ("min", 2),
            ("max", 4),
            ("avg", 3),
            ("count", 2),
            ("first", NAN),
            ("last", 4),
            ("median", 4),
        ],
    ),
    (
        "Aggregators all NaN: NaN, count 0",
        lambda: [(a, series.combine(a, [NAN, NAN])) for a in ("sum", "avg", "min", "count")],
        [("sum", NAN), ("avg", NAN), ("min", NAN), ("count", 0)],
    ),
]


@pytest.mark.parametrize("name,run,want", VECTORS, ids=[v[0] for v in VECTORS])
def test_ported_opentsdb_vector(name, run, want):
    assert same_series(run(), want), run()


# -- requests over stored sets --------------------------------------------------------------------


SHAPES = [  # (aggregator, downsample, rate options or None)
    ("sum", None, None),
    ("avg", None, None),
    ("min", None, None),
    ("max", None, None),
    ("count", None, None),
    ("zimsum", None, None),
    ("mimmin", None, None),
    ("mimmax", None, None),
    ("first", None, None),
    ("last", None, None),
    ("dev", None, None),
    ("p90", None, None),
    ("none", None, None),
    ("median", None, None),
    ("pfsum", None, None),
    ("diff", None, None),
    ("ep90r7", None, None),
    ("ep50r3", "1m-avg", None),
    ("squareSum", "1m-avg", None),
    ("sum", "1m-avg", None),
    ("avg", "1m-avg", None),
    ("count", "1m-avg", None),
    ("sum", "10s-avg", None),
    ("max", "5m-max", None),
    ("sum", "1m-sum-nan", None),
    ("count", "1m-avg-null", None),
    ("first", "2m-min-zero", None),
    ("avg", "7m-avg-nan", None),
    ("sum", "0all-sum", None),
    ("sum", "0all-count", None),
    ("sum", "1h-avg", None),
    ("sum", None, {}),
    ("avg", None, {"counter": True}),
    ("sum", None, {"counter": True, "counterMax": 1000}),
    ("sum", None, {"counter": True, "dropResets": True}),
    ("sum", "1m-avg", {"counter": True, "counterMax": 1000, "resetValue": 100}),
    ("max", "1m-avg-nan", {}),
    ("none", "2m-avg", {"counter": True, "dropResets": True}),
]
CASES = [
    (s, w, *shape)
    for s in SETS
    for w in WINDOWS
    for shape in SHAPES
    if not (shape[2] and s == "integers" and w == "short")
]


def btts_answer(stored: dict, body: dict) -> list:
    """What btts serve answers: the points of the scan window, then ``answer.compute``."""
    tq = request.parse_body(body)
    (q,) = tq.queries
    iv = q.downsample.interval_ms if q.downsample else 0
    ws, we = series.scan_window(tq.start_ms, tq.end_ms, iv)
    data = {(("host", h),): [(t, v) for t, v in pts if ws <= t < we] for h, pts in stored.items()}
    results = answer.compute(planning.asked(q, tq), data)
    text = answer.render(results, True).decode()
    return json.loads(text, parse_constant=_refuse)


def _refuse(name):
    raise ValueError(f"invalid JSON constant {name}")


@pytest.mark.parametrize(
    "data,window,agg,ds,rate",
    CASES,
    ids=[f"{s}-{w}-{a}-{d or 'raw'}-{'rate' if r is not None else ''}" for s, w, a, d, r in CASES],
)
def test_request_answer_equals_opentsdb(data, window, agg, ds, rate):
    start, end = WINDOWS[window]
    body = request_body(start, end, agg, ds, rate)
    got = btts_answer(SETS[data], body)
    want = reference_answer(SETS[data], body)
    assert len(got) == len(want)
    for g, (_keys, dps) in zip(got, want, strict=True):
        pts = [(int(t), point_value(v)) for t, v in g["dps"].items()]
        assert same_series(pts, dps), (pts[:6], dps[:6])


def test_the_suite_is_large_enough_and_covers_the_edges():
    assert len(CASES) + len(VECTORS) >= 150
    start, end = WINDOWS["aligned"]
    got = btts_answer(SETS["gauges"], request_body(start, end, "sum", None, None))
    (s,) = got
    assert str(end) in s["dps"]  # the end is included
    first = btts_answer(SETS["gauges"], request_body(*WINDOWS["misaligned"], "sum", "1m-avg", None))
    assert min(int(t) for t in first[0]["dps"]) >= WINDOWS["misaligned"][0]  # no bucket before


def test_integer_series_stay_exact_where_opentsdb_truncates_longs():
    # DIFFERENCES["exact"]: OpenTSDB aggregates integer series in longs (avg 1 and 2 → 1)
    stored = {"x": [(T, D(1)), (T + 20 * S, D(3))], "y": [(T + 10 * S, D(2))]}
    (got,) = btts_answer(stored, request_body(T, T + 60 * S, "avg", None, None))
    assert got["dps"] == {str(T): 1, str(T + 10 * S): 2, str(T + 20 * S): 3}
    (got,) = btts_answer(stored, request_body(T, T + 60 * S, "sum", None, None))
    assert got["dps"][str(T + 10 * S)] == 4  # x interpolated at 2 exactly
    stored = {"x": [(T, D(1)), (T + 30 * S, D(2))], "y": [(T + 10 * S, D(5))]}
    (got,) = btts_answer(stored, request_body(T, T + 60 * S, "sum", None, None))
    assert got["dps"][str(T + 10 * S)] == pytest.approx(5 + 1 + 1 / 3)  # OpenTSDB: 6


PERCENTILES = (("50", 500), ("75", 750), ("90", 900), ("95", 950), ("99", 990), ("999", 999))
AGGREGATOR_VECTORS = [  # TestAggregators: (aggregator, values, expected, tolerance)
    *[
        (f"{pre}{name}{post}", range(1, 1001), want, 1.0)
        for name, want in PERCENTILES
        for pre, post in (("p", ""), ("ep", "r3"), ("ep", "r7"))
    ],
    ("dev", range(10000), 2886.7513315143719, 0.01),  # numpy.std(range(10000))
    ("median", [5, 2, -1, 400, 3], 3, 0),
    ("median", [5, 2, -1, 400, 3, -42], 3, 0),
    ("median", [42], 42, 0),
    ("median", [5.1, 2.434, -1.99, 400.69487, 3.15168, -42], 3.15168, 0.0001),
    ("first", [D(k) for k in range(10)], 0, 0),
    ("last", [k + 0.5 for k in range(10)], 9.5, 0),
]


@pytest.mark.parametrize(
    "agg,values,want,tolerance",
    AGGREGATOR_VECTORS,
    ids=[f"{v[0]}-{v[2]}" for v in AGGREGATOR_VECTORS],
)
def test_ported_aggregator_vector(agg, values, want, tolerance):
    values = [D(v) if isinstance(v, int) else v for v in values]
    assert abs(float(series.combine(agg, values)) - want) <= tolerance


# -- any stored points, any window: the same answer ----------------------------------------------

AGGS = ["sum", "avg", "min", "max", "count", "zimsum", "mimmin", "mimmax", "first", "last", "dev"]
AGGS += ["none", "median", "pfsum", "p90", "ep75r3", "ep99r7", "diff", "squareSum"]
DOWNSAMPLES = [None, "1m-avg", "1m-sum-nan", "5m-count-zero", "10s-max-null", "0all-avg"]
RATES = [None, {}, {"counter": True, "counterMax": 1000}, {"counter": True, "dropResets": True}]


@st.composite
def stored_sets(draw):
    out = {}
    for k in range(draw(st.integers(1, 3))):
        times = draw(st.lists(st.integers(-90 * M, 150 * M), min_size=1, max_size=14, unique=True))
        values = draw(st.lists(st.integers(-99, 999), min_size=len(times), max_size=len(times)))
        scale = draw(st.sampled_from([D(1), D("0.01")]))
        out[f"h{k}"] = sorted((T + t, v * scale) for t, v in zip(times, values, strict=True))
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    stored=stored_sets(),
    start=st.integers(-30 * M, 60 * M),
    length=st.integers(1, 90 * M),
    agg=st.sampled_from(AGGS),
    ds=st.sampled_from(DOWNSAMPLES),
    rate=st.sampled_from(RATES),
)
def test_any_stored_points_any_window_answer_as_opentsdb(stored, start, length, agg, ds, rate):
    body = request_body(T + start, T + start + length, agg, ds, rate)
    got = btts_answer(stored, body)
    want = reference_answer(stored, body)
    assert len(got) == len(want)
    for g, (_keys, dps) in zip(got, want, strict=True):
        pts = [(int(t), point_value(v)) for t, v in g["dps"].items()]
        assert same_series(pts, dps), (pts[:8], dps[:8])
