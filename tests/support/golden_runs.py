"""How each worked example runs through the real jobs (the job, its flags, the table each of
its rows names), the key helpers its pure checks call, and how a row read back from the
emulator is checked: for the golden tests and the generic job's."""

from __future__ import annotations

from btts import config
from btts.query import engine
from tests.support.jobs import recipe_key
from transforms.text import keys

# How each case is produced: the job, its flags, and which table a case's rows name.
# ``None`` is the table of a case whose rows name none (the job writes one table).
RUNS: dict[str, tuple[str, list[str], dict]] = {
    "market-quote-trade-split": ("market_data", [], {}),
    "market-key-padding": ("market_data", [], {}),
    "server-metrics-fanout": ("server_metrics", [], {}),
    "current-metric-late-event": ("server_metrics", [], {}),
    "smart-meter-day-row": ("smart_meters", [], {}),
    "balloon-TB-COL": ("weather_balloons", ["--balloon_pattern=TB-COL"], {None: "BALLOON_TB_COL"}),
    "balloon-TB-CELL": (
        "weather_balloons",
        ["--balloon_pattern=TB-CELL"],
        {None: "BALLOON_TB_CELL"},
    ),
    "balloon-TS-BLOB": (
        "weather_balloons",
        ["--balloon_pattern=TS-BLOB"],
        {None: "BALLOON_TS_BLOB"},
    ),
    "balloon-TS-COLS": (
        "weather_balloons",
        ["--balloon_pattern=TS-COLS"],
        {None: "BALLOON_TS_COLS"},
    ),
    "battery-promotion": ("battery", ["--battery_layout=promoted"], {None: "BATTERY"}),
    "battery-timestamp-leading-antipattern": (
        "battery",
        ["--battery_layout=timestamp_first"],
        {None: "BATTERY_TS_FIRST"},
    ),
    "battery-salting": (
        "battery",
        ["--battery_layout=salted", "--salt_buckets=3"],
        {None: "BATTERY_SALTED"},
    ),
    "game-denormalized": (
        "game_results",
        [],
        {"by player": "GAME_BY_PLAYER", "by date": "GAME_BY_DATE"},
    ),
    "veggie-tall-and-month": (
        "garden",
        ["--garden_layout=both"],
        {"tall": "GARDEN_DAILY", "month": "GARDEN_MONTHLY"},
    ),
}

PURE = {
    "reverse_timestamp": keys.reverse_timestamp,
    "reverse_domain": keys.reverse_domain,
    "reverse_numeric_id": lambda digits: recipe_key(("reverse_id", digits)),
    "zero_pad": keys.zero_pad,
    "tenant_key": lambda tenant, *rest: recipe_key(
        ("tenant", tenant), *(("text", s) for s in rest)
    ),
}


def table_of(expected: dict, table_map: dict) -> str:
    if "table" in expected:
        return table_map.get(expected["table"], expected["table"])
    if "layout" in expected:
        return table_map[expected["layout"]]
    return table_map[None]


def check_row(target: config.Target, table: str, expected: dict) -> None:
    key = expected["row_key"].encode("utf-8")
    rows = engine.read_rows(target, table, start=key, end=key + b"\x00", latest_only=True)
    assert [r.key for r in rows] == [key], f"{table}: no row {expected['row_key']!r}"
    row = rows[0]
    if "cells" in expected:
        got = {(c.family, c.qualifier): c for c in row.cells}
        families = {c.family for c in row.cells}
        want = set()
        for cell in expected["cells"]:
            family = cell["family"]
            if family is None:  # the implementation's own short family: the row has just one
                assert len(families) == 1, f"{table}: expected one family, got {families}"
                family = next(iter(families))
            qualifier = cell["qualifier"].encode("utf-8")
            want.add((family, qualifier))
            assert (family, qualifier) in got, f"{table} {key!r}: no cell {family}:{qualifier!r}"
            stored = got[(family, qualifier)]
            assert stored.value == cell["value"].encode("utf-8"), (family, qualifier)
            if "timestamp_ms" in cell:
                assert stored.timestamp_us == cell["timestamp_ms"] * 1000, (family, qualifier)
        assert set(got) == want, f"{table} {key!r}: columns differ from the guidance"
    if "columns" in expected:
        assert {c.qualifier.decode() for c in row.cells} == set(expected["columns"])
