"""btts serve's shortcut for a map entry's points (records.map_entry_points) gives what the
records of decode_table give for that entry: the same series, times and values, in the same
order, whatever versions, duplicate times, text values and hosts the rows hold."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from btts.query import records
from btts.tsdb import catalog
from transforms.mutations import Cell, ReadRow

SCHEMA = next(s for s in catalog.builtin_schemas() if s.dataset == "server_metrics")
TABLE = "METRIC"
ENTRY = "CPU/CPU1_USR"
TAGS = ("hostname",)


def from_records(scans):
    """What btts serve made of the records before the shortcut: per series, the entry's
    numbers in time order."""
    out: dict = {}
    for record in records.decode_table(SCHEMA, TABLE, scans):
        value = record.get("metrics")
        value = value.get(ENTRY) if isinstance(value, dict) else None
        if not isinstance(value, Decimal):
            continue
        labels = tuple(sorted((t, str(record.get(t, ""))) for t in TAGS))
        out.setdefault(labels, []).append((record["ts_ms"], value))
    for points in out.values():
        points.sort(key=lambda p: p[0])
    return out


def shortcut(scans):
    found = records.map_entry_points(SCHEMA, TABLE, scans, "metrics", ENTRY, TAGS)
    assert found is not None
    out = {}
    for labels, points in found.items():
        kept = sorted((p for p in points if type(p[1]) is Decimal), key=lambda p: p[0])
        if kept:
            out[labels] = kept
    return out


values = st.sampled_from([b"0.32", b"1", b"-7.50", b"1e3", b"n/a", b"", b"0.0"])
cell_times = st.integers(1426536000000_000, 1426536000003_999)  # µs: several in one ms


@st.composite
def scans(draw):
    out = []
    for _ in range(draw(st.integers(1, 3))):
        rows = []
        for host in sorted(draw(st.sets(st.sampled_from(["a.com", "b.com", "c.com"]), max_size=3))):
            for ms in sorted(draw(st.sets(st.integers(0, 3), min_size=1, max_size=3))):
                key = f"{host}#{1426536000000 + ms}".encode()
                # newest first, as Bigtable returns a column's versions; ties keep their order
                stamps = sorted(draw(st.lists(cell_times, min_size=0, max_size=3)), reverse=True)
                cells = tuple(Cell("METRIC", ENTRY.encode(), draw(values), ts) for ts in stamps)
                rows.append(ReadRow(key, cells))
        out.append(rows)
    return out


@settings(max_examples=150, deadline=None)
@given(scans())
def test_the_shortcut_gives_what_the_records_give(scans):
    assert shortcut(scans) == from_records(scans)


def test_another_column_or_a_clashing_tag_falls_back_to_the_records():
    row = ReadRow(b"a.com#1426536000000", (Cell("METRIC", b"MEM/USED_PCT", b"1", 10**12),))
    assert records.map_entry_points(SCHEMA, TABLE, [[row]], "metrics", ENTRY, TAGS) is None
    # a tag named like a record field the records would overwrite
    assert records.map_entry_points(SCHEMA, TABLE, [[]], "metrics", ENTRY, ("ts_ms",)) is None
