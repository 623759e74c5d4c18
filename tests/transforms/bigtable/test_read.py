"""The parallel Bigtable reader: range splitting (pure, property-based) and reads on the emulator
(every row exactly once across forced splits, server-side filters, rows that write back)."""

from __future__ import annotations

import dataclasses
import itertools
import pickle

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that
from google.cloud.bigtable.data import BigtableDataClient, RowMutationEntry, SetCell, row_filters
from hypothesis import given, settings
from hypothesis import strategies as st

from btts import admin, config
from pipelines import common
from tests.support.jobs import dump
from transforms.bigtable.filters import key_suffix_filter, re2_literal
from transforms.bigtable.read import (
    ReadFromBigtableRows,
    merge_ranges,
    prefix_range,
    requested_ranges,
    split_ranges,
)
from transforms.bigtable.write import WriteRows
from transforms.mutations import Cell, RowMutation
from transforms.table_model import Family, KeyRecipe, Segment, TableDecl

# -- pure: range splitting ----------------------------------------------------------------------

keys_st = st.binary(min_size=1, max_size=4)


def _inside(key: bytes, start: bytes, end: bytes) -> bool:
    return key >= start and (not end or key < end)


@st.composite
def bounded_range(draw):
    start = draw(st.one_of(st.just(b""), keys_st))
    end = draw(st.one_of(st.just(b""), keys_st))
    if end and end < start:
        start, end = end, start
    return start, end


@settings(max_examples=300, deadline=None)
@given(
    rows=st.sets(keys_st, max_size=60),
    splits=st.lists(st.one_of(keys_st, st.just(b"")), max_size=25),
    bounds=bounded_range(),
)
def test_split_ranges_cover_every_key_exactly_once(rows, splits, bounds):
    start, end = bounds
    pieces = split_ranges(splits, start, end)
    if end and start == end:
        assert pieces == []
        return
    # contiguous, non-empty, in order, from start to end
    assert pieces[0][0] == start and pieces[-1][1] == end
    for (_, a_end), (b_start, _) in itertools.pairwise(pieces):
        assert a_end == b_start
    for s, e in pieces:
        assert not e or s < e
    # every row in [start, end) falls in exactly one piece; rows outside in none
    for key in rows | {k for k in splits if k}:
        hits = sum(_inside(key, s, e) for s, e in pieces)
        assert hits == (1 if _inside(key, start, end) else 0), (key, pieces)
    # one cut per distinct split key strictly inside the range
    inside = {k for k in splits if k and k > start and (not end or k < end)}
    assert len(pieces) == len(inside) + 1


def test_split_ranges_examples():
    assert split_ranges([]) == [(b"", b"")]
    assert split_ranges([b""]) == [(b"", b"")]  # sample_row_keys' final "end of table" key
    assert split_ranges([b"m", b"c", b"m", b""]) == [(b"", b"c"), (b"c", b"m"), (b"m", b"")]
    assert split_ranges([b"a", b"c", b"x"], b"b", b"x") == [(b"b", b"c"), (b"c", b"x")]
    assert split_ranges([b"b"], b"b", b"c") == [(b"b", b"c")]  # a cut at start is no cut
    assert split_ranges([b"q"], b"k", b"k") == []
    with pytest.raises(ValueError, match="after its end"):
        split_ranges([], b"z", b"a")


@settings(max_examples=300, deadline=None)
@given(prefix=st.binary(max_size=3), key=st.binary(max_size=5))
def test_prefix_range_holds_exactly_the_prefixed_keys(prefix, key):
    start, end = prefix_range(prefix)
    assert _inside(key, start, end) == key.startswith(prefix)


def test_prefix_range_examples():
    assert prefix_range(b"20170726#") == (b"20170726#", b"20170726$")
    assert prefix_range(b"a\xff\xff") == (b"a\xff\xff", b"b")
    assert prefix_range(b"\xff") == (b"\xff", b"")
    assert prefix_range(b"") == (b"", b"")


@settings(max_examples=300, deadline=None)
@given(ranges=st.lists(bounded_range(), max_size=8), keys=st.sets(keys_st, max_size=40))
def test_merge_ranges_keeps_membership_and_never_overlaps(ranges, keys):
    merged = merge_ranges(ranges)
    for key in keys:
        wanted = any(_inside(key, s, e) for s, e in ranges)
        assert sum(_inside(key, s, e) for s, e in merged) == (1 if wanted else 0)
    for (_, a_end), (b_start, _) in itertools.pairwise(merged):
        assert a_end and a_end < b_start  # sorted, disjoint and not touching


def test_requested_ranges():
    assert requested_ranges() == [(b"", b"")]
    assert requested_ranges(key_ranges=[]) == []
    assert requested_ranges([(b"a", b"c")], [b"b", b"x"]) == [(b"a", b"c"), (b"x", b"y")]


def test_key_suffix_filter_is_an_escaped_full_key_regex():
    assert re2_literal(b"#20170726") == b"\\x2320170726"
    assert re2_literal(b"a.b*") == b"a\\x2eb\\x2a"
    with pytest.raises(ValueError, match="non-UTF-8"):
        re2_literal(b"\xff")
    got = key_suffix_filter([b"#20170726", b"#20170727", b"#20170726"])
    assert got.regex == b"\\C*(?:\\x2320170726|\\x2320170727)"
    assert pickle.loads(pickle.dumps(got)).regex == got.regex  # ships to workers


# -- on the emulator ----------------------------------------------------------------------------

T = TableDecl(
    "READ_T",
    (Family("F"), Family("G", max_versions=1)),
    KeyRecipe((Segment("text", "k"),)),
    "TS-COLS",
)


def _load(target: config.Target, rows: list[RowMutation], table: str = "READ_T") -> None:
    with admin.Admin(target) as api:
        api.ensure(T if table == "READ_T" else dataclasses.replace(T, name=table))
    if not rows:
        return
    with BigtableDataClient(project=target.project) as client:
        handle = client.get_table(target.instance, table)
        for at in range(0, len(rows), 500):
            handle.bulk_mutate_rows(
                [
                    RowMutationEntry(
                        r.key,
                        [SetCell(c.family, c.qualifier, c.value, c.timestamp_us) for c in r.cells],
                    )
                    for r in rows[at : at + 500]
                ]
            )


def _canonical(row: RowMutation) -> RowMutation:
    return row._replace(cells=tuple(sorted(row.cells)))


def _same_rows(expected: list[RowMutation]):
    """A matcher: the read rows equal ``expected`` as a multiset (a duplicate fails it)."""
    want = sorted(_canonical(r) for r in expected)

    def check(actual):
        got = sorted(_canonical(r) for r in actual)
        if got != want:
            keys = [r.key for r in got]
            dupes = sorted({k for k in keys if keys.count(k) > 1})[:5]
            missing = sorted({r.key for r in want} - set(keys))[:5]
            extra = sorted(set(keys) - {r.key for r in want})[:5]
            raise AssertionError(
                f"read {len(got)} rows, expected {len(want)}; duplicates {dupes}, "
                f"missing {missing}, unexpected {extra}"
            )

    return check


def _read(target, expected, **kwargs) -> dict[str, int]:
    pipeline = beam.Pipeline(runner="DirectRunner")
    rows = pipeline | ReadFromBigtableRows(target.project, target.instance, "READ_T", **kwargs)
    assert_that(rows, _same_rows(expected))
    result = pipeline.run()
    result.wait_until_finish()
    return common.counters(result)


def _rows(n: int, days: tuple[str, ...] = ("20170726",)) -> list[RowMutation]:
    out = []
    for i in range(n):
        day = days[i % len(days)]
        ts = 1_500_000_000_000_000 + i * 1000
        out.append(
            RowMutation(
                "READ_T",
                f"{i * 7919 % 10**10:010d}#{day}".encode(),
                (
                    Cell("F", b"v", f"{i}".encode(), ts),
                    Cell("F", b"v", f"old{i}".encode(), ts - 5000),  # an older version
                    Cell("G", b"\x00bin", bytes([i % 256, 0, 255]), ts),
                ),
            )
        )
    return out


def test_empty_table_reads_nothing(target):
    _load(target, [])
    counters = _read(target, [], split_keys=[b"a", b"m"])
    assert counters.get("read_rows_READ_T", 0) == 0
    assert counters["read_ranges_READ_T"] >= 3


def test_one_row_table_read_once_whatever_the_splits(target):
    rows = _rows(1)
    _load(target, rows)
    key = rows[0].key
    counters = _read(target, rows, split_keys=[key, key + b"\x00", key[:3], b"\xff"])
    assert counters["read_rows_READ_T"] == 1
    assert counters["read_cells_READ_T"] == 3


def test_thousands_of_rows_with_forced_splits_each_read_exactly_once(target):
    rows = _rows(3000)
    _load(target, rows)
    keys = sorted(r.key for r in rows)
    # split exactly on row keys, between keys, before the first and after the last key
    splits = keys[::97] + [k + b"\x00" for k in keys[50::301]] + [b"\x00", b"\xff\xff", b""]
    counters = _read(target, rows, split_keys=splits, sample=False)
    assert counters["read_rows_READ_T"] == 3000
    assert counters["read_cells_READ_T"] == 9000
    assert counters["read_ranges_READ_T"] == len({s for s in splits if s}) + 1
    expected_bytes = sum(
        len(r.key) + sum(len(c.family) + len(c.qualifier) + len(c.value) for c in r.cells)
        for r in rows
    )
    assert counters["read_bytes_READ_T"] == expected_bytes


def test_sampled_splits_read_every_row_once(target):
    rows = _rows(2500)
    _load(target, rows)
    counters = _read(target, rows)  # the emulator's sample_row_keys gives ~20 keys here
    assert counters["read_rows_READ_T"] == 2500
    assert counters["read_ranges_READ_T"] > 1


def test_ranges_and_overlapping_prefixes_read_their_union_once(target):
    rows = _rows(1200)
    _load(target, rows)
    keys = sorted(r.key for r in rows)
    lo, hi = keys[100], keys[400]
    prefixes = [b"00000", b"000001", keys[350][:6]]  # nested and overlapping the range
    wanted = [r for r in rows if lo <= r.key < hi or any(r.key.startswith(p) for p in prefixes)]
    assert 300 < len(wanted) < 1200
    counters = _read(
        target, wanted, key_ranges=[(lo, hi)], prefixes=prefixes, split_keys=keys[::50]
    )
    assert counters["read_rows_READ_T"] == len(wanted)


def test_key_filter_runs_on_the_server(target):
    days = ("20170724", "20170725", "20170726", "20170727")
    rows = _rows(2000, days)
    # a decoy whose key contains the day, but not as its #YYYYMMDD suffix
    decoy = RowMutation("READ_T", b"0020170726#20170724", (Cell("F", b"v", b"x", 1000),))
    _load(target, [*rows, decoy])
    day_rows = [r for r in rows if r.key.endswith(b"#20170726")]
    counters = _read(target, day_rows, row_filter=key_suffix_filter([b"#20170726"]))
    # rows transferred to the client: the day's rows only, not the 2001 of the table
    assert counters["read_rows_READ_T"] == len(day_rows) == 500
    assert counters["read_cells_READ_T"] == 3 * 500


def test_cell_filter_and_latest_only(target):
    rows = _rows(50)
    _load(target, rows)
    latest = [r._replace(cells=(r.cells[0], r.cells[2])) for r in rows]
    counters = _read(target, latest, row_filter=row_filters.CellsColumnLimitFilter(1))
    assert counters["read_cells_READ_T"] == 100


def test_rows_read_write_back_identically_to_another_table(target):
    rows = _rows(700)
    _load(target, rows)
    _load(target, [], table="READ_COPY")
    pipeline = beam.Pipeline(runner="DirectRunner")
    (
        pipeline
        | ReadFromBigtableRows(target.project, target.instance, "READ_T")
        | beam.Map(lambda r: r._replace(table="READ_COPY"))
        | WriteRows(target.project, target.instance, ["READ_COPY"])
    )
    pipeline.run().wait_until_finish()
    copied = dump(target, "READ_COPY")
    assert copied == dump(target, "READ_T")
    assert len(copied) == 3 * 700  # every version, timestamps included
