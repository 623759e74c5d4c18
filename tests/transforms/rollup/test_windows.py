"""The rollup's window rules without a runner (transforms.rollup.windows): on-time panes,
late points within the lateness, too-late points, and the totals each mode writes."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from transforms.rollup.core import HOUR_MS, point, unscale
from transforms.rollup.windows import WindowRules, window

LATE = 10 * 60_000


def _rules(exact: bool) -> WindowRules:
    return WindowRules(
        "HOURLY", lambda entity, start: f"{entity}#{start}".encode(), HOUR_MS, LATE, exact
    )


def test_points_wait_for_the_tick_that_ends_their_window():
    rules = _rules(exact=False)
    windows: dict = {}
    added = rules.add(
        "h1", [point("h1", b"cpu", 1_000, "1.5"), point("h1", b"cpu", 2_000, "2")], windows, None
    )
    assert (added.rows, added.too_late, added.changed) == ([], [], True)
    assert rules.due(windows) == HOUR_MS  # the window's end
    assert rules.tick("h1", windows, HOUR_MS - 1) == []
    (row,) = rules.tick("h1", windows, HOUR_MS)
    assert row[0] == "HOURLY" and row[1] == b"h1#0"
    assert window(windows, 0)[0] is True  # fired, kept until its lateness is over
    assert rules.due(windows) == HOUR_MS + LATE
    assert rules.tick("h1", windows, HOUR_MS + LATE) == []
    assert windows == {} and rules.due(windows) is None


def test_add_mode_writes_a_late_point_as_its_own_delta():
    rules = _rules(exact=False)
    windows: dict = {}
    rules.add("h1", [point("h1", b"cpu", 1_000, "1")], windows, None)
    rules.tick("h1", windows, HOUR_MS)
    added = rules.add(
        "h1", [point("h1", b"cpu", 5_000, "4"), point("h1", b"cpu", 6_000, "1")], windows, HOUR_MS
    )
    assert added.late_accepted == 2 and not added.changed
    (row,) = added.rows  # one delta for the bundle's late points of the window
    assert row[1] == b"h1#0"
    assert [c.amount for c in row[2]] == [5 * 10**6, 2]  # AddToCell sum (scaled) and count


def test_exact_mode_rewrites_the_totals_at_a_newer_pane():
    rules = _rules(exact=True)
    windows: dict = {}
    rules.add("h1", [point("h1", b"cpu", 1_000, "1")], windows, None)
    (on_time,) = rules.tick("h1", windows, HOUR_MS)
    added = rules.add("h1", [point("h1", b"cpu", 5_000, "4")], windows, HOUR_MS)
    (late,) = added.rows
    assert added.changed and window(windows, 0)[2] == 1  # one pane after the on-time one
    assert late[2][0].timestamp_us > on_time[2][0].timestamp_us  # the newer pane wins
    totals = {(c.family, c.qualifier): int.from_bytes(c.value, "big") for c in late[2]}
    assert totals == {("exact_sum", b"cpu"): 5 * 10**6, ("exact_count", b"cpu"): 2}


def test_a_point_past_the_lateness_is_refused_with_its_reason():
    rules = _rules(exact=True)
    windows: dict = {}
    late = point("h1", b"cpu", 1_000, "3.25")
    added = rules.add("h1", [late], windows, HOUR_MS + LATE)
    assert added.too_late == [(late, 0)] and not added.changed and windows == {}
    raw, reason = rules.too_late(late, 0)
    assert json.loads(raw) == {
        "entity": "h1",
        "metric": "cpu",
        "timestamp_ms": 1000,
        "value": "3.25",
    }
    assert reason == "later than the allowed lateness (10 min) of its window starting 0 ms"


def test_state_from_before_the_exact_mode_reads_as_pane_zero():
    assert window({0: (True, {b"cpu": [1, 1]})}, 0) == (True, {b"cpu": [1, 1]}, 0)
    assert window({}, 0) == (False, {}, 0)


@given(
    st.lists(st.tuples(st.integers(0, 5 * HOUR_MS), st.integers(-1000, 1000)), max_size=30),
    st.booleans(),
)
def test_on_time_points_are_summed_exactly_once_per_window(values, exact):
    """With no late data, the on-time panes hold every point once: sums and counts per hour."""
    rules = _rules(exact)
    windows: dict = {}
    rules.add("e", [point("e", b"m", ts, str(v)) for ts, v in values], windows, None)
    rows = rules.tick("e", windows, 6 * HOUR_MS)
    got = {}
    for row in rows:
        start = int(row[1].split(b"#")[1])
        if exact:
            cells = {c.family: int.from_bytes(c.value, "big", signed=True) for c in row[2]}
            got[start] = (cells["exact_sum"], cells["exact_count"])
        else:
            got[start] = (row[2][0].amount, row[2][1].amount)
    expected: dict = {}
    for ts, v in values:
        s, c = expected.get(ts - ts % HOUR_MS, (0, 0))
        expected[ts - ts % HOUR_MS] = (s + v * 10**6, c + 1)
    assert got == expected
    assert all(
        unscale(s) == sum(v for ts, v in values if ts - ts % HOUR_MS == k)
        for k, (s, _c) in got.items()
    )
