"""The overwrite check's pure parts: fingerprints (transforms/ingest/fingerprints.py), the cell
by cell comparison (transforms/ingest/overwrites.py) and the report's lines, each against a
brute force over the same records."""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.common import report
from tests.support.processes import printed_under_hash_seeds
from transforms.ingest import fingerprints
from transforms.ingest.overwrites import Place, RecentRows, analyze, first_from_metric_name
from transforms.ingest.overwrites import first_metric_name as metric_name


def test_key_hashes_are_the_same_in_every_process():
    """Python's own hash differs between processes; the fingerprints must not."""
    keys = [b"host1#1426535612045", b"", b"a\x00", "é#1".encode()]
    code = (
        "from transforms.ingest import fingerprints as f;"
        f"print(f.key_hashes({keys!r}, f.table_salt('T')).tolist())"
    )
    runs = printed_under_hash_seeds(code)
    assert runs == {f"{fingerprints.key_hashes(keys, fingerprints.table_salt('T')).tolist()}\n"}


def test_key_hashes_keep_their_values():
    """The hash is a format (a worker's fingerprints meet another's, and the check's second
    read hashes its rows again): these values were made by the word-at-a-time loop it was
    first written as, for keys of one width (read in place, partial last word and not) and of
    several widths (zero-padded)."""
    salt = fingerprints.table_salt("T")
    keys = [b"server0000.example.com#1426535600000", b"0000100000#20170725", b"a", b""]
    keys += [b"12345678", b"x" * 40]
    assert [fingerprints.key_hashes([k], salt).tolist()[0] for k in keys] == [
        17551727266406617383,
        17598364402716591427,
        8117346106646389217,
        12724806855723459793,
        15864794632928267581,
        7146420889542305243,
    ]
    assert fingerprints.key_hashes(keys, 7).tolist() == [
        12677190202721808169,
        8980623464733922044,
        10733357699840086173,
        8360697188923789789,
        3840255164828209211,
        3325174297304732339,
    ]
    hosts = [b"server%04d.example.com" % i for i in range(3)]
    assert fingerprints.key_hashes(hosts, fingerprints.table_salt("CURRENT_METRIC")).tolist() == [
        17939023310068883790,
        3183144736189520072,
        16097018323556935076,
    ]
    kh = fingerprints.key_hashes([b"k1", b"k2"])
    stamps = np.array([1000, -5], np.int64)
    assert fingerprints.row_ids(kh, stamps).tolist() == [4873068869386943124, 14609988715947806256]


def test_distinct_key_hashes_are_numpys_unique():
    values = np.array([5, 3, 5, 0, 2**64 - 1, 3, 3], np.uint64)
    for part in (values, values[:1], values[:0]):
        assert fingerprints._sorted_distinct(part).tolist() == np.unique(part).tolist()


def test_distinct_values_of_sorted_distinct_runs_one_run_or_several():
    runs = [np.array(r, np.uint64) for r in ([1, 4, 9], [2, 4, 10], [9])]
    assert fingerprints._distinct(runs[:1]) == 3
    assert fingerprints._distinct(runs) == 5  # 1 2 4 9 10
    assert fingerprints._distinct([]) == 0
    values = np.array([9, 2, 9, 5, 2], np.uint64)
    assert fingerprints._sorted_distinct(values, in_place=True).tolist() == [2, 5, 9]


def test_key_hashes_tell_apart_what_padding_and_tables_would_blur():
    hashes = fingerprints.key_hashes([b"a", b"a\x00", b"a\x00\x00", b"\x00a", b""])
    assert len(set(hashes.tolist())) == 5
    one, other = (fingerprints.key_hashes([b"k"], fingerprints.table_salt(t)) for t in "AB")
    assert one.tolist() != other.tolist()


def test_no_collision_among_many_similar_keys():
    keys = [b"server%05d.example.com#%013d" % (i % 997, 1426535612045 + i) for i in range(200_000)]
    keys += [b"%d" % i for i in range(200_000)]
    assert len(np.unique(fingerprints.key_hashes(keys))) == len(set(keys))


def test_row_ids_mix_the_stamp_unless_the_key_holds_it():
    kh = fingerprints.key_hashes([b"k", b"k"])
    assert fingerprints.row_ids(kh, None) is kh
    ids = fingerprints.row_ids(kh, np.array([1_000, 2_000], np.int64))
    assert ids[0] != ids[1]


def _row(table: str, key: int, stamp: int, cells: dict) -> tuple:
    return (table, b"k%d" % key, tuple((f, q, v, stamp) for (f, q), v in sorted(cells.items())))


cell_values = st.dictionaries(
    st.tuples(st.sampled_from("fg"), st.sampled_from([b"a", b"b", b"c"])),
    st.sampled_from([b"1", b"2"]),
    min_size=1,
    max_size=3,
)
rows = st.builds(
    _row,
    st.sampled_from(["T", "U"]),
    st.integers(0, 3),
    st.sampled_from([1_000, 2_000, 3_000]),
    cell_values,
)
# A record writes a row id (table, key, stamp) once, as every builder does.
record = st.lists(rows, min_size=1, max_size=3, unique_by=lambda r: (r[0], r[1], r[2][0][3]))
records = st.lists(record, min_size=1, max_size=14)


def _brute(recs: list[list[tuple]]) -> tuple:
    """Conflicting cells, conflicting records, duplicates and the first pair, by definition."""
    writes: dict[tuple, set] = {}
    for index, rows_ in enumerate(recs):
        for table, key, cells in rows_:
            for family, qualifier, value, stamp in cells:
                writes.setdefault((table, key, family, qualifier, stamp), set()).add((index, value))
    bad = {c: w for c, w in writes.items() if len({v for _, v in w}) > 1}
    clashing = {i for w in bad.values() for i, _ in w}
    duplicates = sum(
        1
        for i, r in enumerate(recs)
        if i not in clashing and any(tuple(p) == tuple(r) for p in recs[:i])
    )
    first = None
    for index, rows_ in enumerate(recs):
        for table, key, cells in rows_:
            for family, qualifier, value, stamp in cells:
                cell = (table, key, family, qualifier, stamp)
                earlier = sorted(i for i, v in writes[cell] if i < index and v != value)
                if first is None and earlier:
                    first = (earlier[0], index, cell)
    return len(bad), len(clashing), duplicates, first


def _places(recs) -> list[tuple[Place, list]]:
    return [(Place("f.jsonl", i, i + 1), r) for i, r in enumerate(recs)]


@settings(max_examples=150, deadline=None)
@given(records)
def test_analyze_finds_what_the_definition_finds(recs):
    found = analyze(_places(recs))
    cells, clashing, duplicates, first = _brute(recs)
    assert (found.cells, found.records, found.duplicates) == (cells, clashing, duplicates)
    if first is None:
        assert found.first is None
    else:
        assert (found.first.first.line - 1, found.first.second.line - 1) == first[:2]
        assert found.first[:5] == first[2]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(record, min_size=1, max_size=40),
    st.integers(1, 40),
    st.sampled_from([1, 2, 4096]),
    st.randoms(use_true_random=False),
)
def test_fingerprints_over_workers_then_analysis_find_every_conflict(recs, blocks, flush, rnd):
    """Records cut into blocks built by two 'workers' (each its own RowPrints, handing its
    fingerprints on whenever full, as the build step does; ``flush``: rows per flush, so that
    rows come from many flushes), shards grouped as the runner would, the candidates' records
    compared: the same findings as the brute force over every record, and the distinct rows
    of each table exactly."""
    tables = {"T": False, "U": rnd.random() < 0.5}  # U's rows: the stamp taken from the key
    workers = [fingerprints.RowPrints(tables) for _ in range(2)]
    size = max(1, len(recs) // blocks)
    owner = {}
    by_shard: dict[int, list] = {}

    def hand_on(worker):
        for shard, prints in worker.drain():
            by_shard.setdefault(shard, []).append(prints)

    with mock.patch.object(fingerprints, "FLUSH_ROWS", flush):
        for start in range(0, len(recs), size):
            source = f"file{start}.jsonl"
            block = recs[start : start + size]
            worker = rnd.choice(workers)
            worker.add([r for rec in block for r in rec], source, "jsonl", start)
            owner[(source, start)] = block
            if worker.full:
                hand_on(worker)
        for worker in workers:
            hand_on(worker)
    distinct: dict[str, int] = {}
    wanted: dict[str, set] = {}
    sources = set()
    for prints in by_shard.values():
        counts, candidates = fingerprints.repeats(prints)
        for table, n in counts.items():
            distinct[table] = distinct.get(table, 0) + n
        for table, (rid, loc) in candidates.tables.items():
            wanted.setdefault(table, set()).update(rid.tolist())
            for value in loc.tolist():
                sid, offset = fingerprints.split_loc(value)
                sources |= {(s, offset) for s in candidates.sources[sid]}
    per_table = {t: len({r[1] for rec in recs for r in rec if r[0] == t}) for t in ("T", "U")}
    assert distinct == {t: n for t, n in per_table.items() if n}
    again = [  # every record of a block a candidate points at: what the check reads again
        (Place("f.jsonl", i, i + 1), rec)
        for i, rec in enumerate(recs)
        if any(rec is r for key in sources for r in owner[key])
    ]
    got = analyze(again)
    want = analyze(_places(recs))
    assert (got.cells, got.records, got.duplicates, got.first) == (
        want.cells,
        want.records,
        want.duplicates,
        want.first,
    )


def test_a_worker_hands_on_after_sixteen_flushes_and_each_row_names_its_flush():
    """4 bits of a row's number name its flush: a worker hands on after 16 flushes, and a
    repeated row's candidates point at the blocks of its own flush only."""
    worker = fingerprints.RowPrints({"T": False})
    drained = []
    with mock.patch.object(fingerprints, "FLUSH_ROWS", 1):
        for n in range(40):
            worker.add([_row("T", n % 30, 1_000, {("f", b"a"): b"1"})], "f.jsonl", "jsonl", n * 10)
            if worker.full:
                drained.append(worker.drain())
        drained.append(worker.drain())
    assert [sum(len(p.ids.get("T", ())) for _, p in d) for d in drained] == [16, 16, 8]
    found = [
        fingerprints.repeats([p for d in drained for s, p in d if s == shard])
        for shard in range(16)
    ]
    assert sum(counts.get("T", 0) for counts, _ in found) == 30
    offsets = sorted(
        fingerprints.split_loc(loc)[1]
        for _, candidates in found
        for _ids, locs in candidates.tables.values()
        for loc in locs.tolist()
    )
    assert offsets == [n * 10 for n in (*range(10), *range(30, 40))]  # keys 0-9, and nothing else


def test_recent_rows_compare_records_within_the_limit_and_ttl():
    now = [0.0]
    recent = RecentRows(limit=3, ttl_s=60, clock=lambda: now[0])
    for cells in (
        {("f", b"a"): b"1"},
        {("f", b"a"): b"2"},  # the first record's cell, another value: both records counted
    ):
        recent.add("s", 1, [_row("T", 1, 1_000, cells)])
    recent.add("s", 1, [_row("T", 2, 1_000, {("f", b"a"): b"1"})])
    recent.add("s", 1, [_row("T", 2, 1_000, {("f", b"a"): b"1"})])  # the same again: duplicate
    recent.add("s", 1, [_row("T", 3, 1_000, {("f", b"b"): b"1"})])  # other columns of one row
    recent.add("s", 1, [_row("T", 3, 1_000, {("f", b"c"): b"1"})])
    found = recent.drain()
    assert (found.cells, found.records, found.duplicates) == (1, 2, 1)
    assert found.first.first == Place("s", 1, 1) and found.first.second_value == b"2"
    assert recent.first_reported(found.first) and not recent.first_reported(found.first)
    now[0] = 61.0  # past the TTL: forgotten
    recent.add("s", 1, [_row("T", 2, 1_000, {("f", b"a"): b"9"})])
    assert recent.drain().records == 0
    for n in range(8, 12):  # past the limit: the oldest go first
        recent.add("s", 1, [_row("U", n, 1_000, {("f", b"a"): b"1"})])
    recent.add("s", 1, [_row("U", 8, 1_000, {("f", b"a"): b"2"})])
    assert recent.drain().records == 0


def test_the_first_conflict_survives_its_metric_name():
    recs = [[_row("T", 1, 1_000, {("f", b"q"): b"1"})], [_row("T", 1, 1_000, {("f", b"q"): b"2"})]]
    first = analyze(_places(recs)).first
    text = first_from_metric_name(metric_name(first))
    assert text == first.describe()
    assert text == (
        "f.jsonl:1 and f.jsonl:2 both write T row 'k1' column f:q at 1970-01-01T00:00:00.001Z: "
        "'1' then '2'"
    )


def test_the_summary_counts_only_records_whose_cells_survive():
    totals = {
        "lines_read": 10,
        "events_valid": 9,
        "dead_letters": 1,
        "rows_T": 9,
        "cells_T": 9,
        "distinct_rows_T": 6,
        "overwrite_records": 4,
        "overwrite_cells": 2,
        "duplicate_records": 1,
    }
    text = report.summary("job", totals, 1.0, None, overwrite="a:1 and a:2 both write …")
    assert "(9 row writes into 6 distinct rows)" in text
    assert "overwrites                 4   records wrote 2 cells" in text
    assert "first: a:1 and a:2 both write …" in text
    assert "repeated                   1   records repeat another record" in text
    written = report.landed_line(totals)
    assert written == "5 of 10 records landed (1 dead letters, 10.00%; 4 overwrote one another)"
    assert "9 of 10 records valid" in report.landed_line(totals, written=False)
    why = report.failure(totals, [], None, report.parse_bad_records("100%"), "a:1 and a:2 …")
    assert why.startswith("4 records wrote 2 cells") and "--accept_overwrites" in why
    accepted = report.failure(totals, [], None, report.parse_bad_records("100%"), None, True)
    assert accepted is None
    assert "last write to arrive wins" in report.summary("job", totals, 1.0, None, accepted=True)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.binary(max_size=40), min_size=1, max_size=30), st.integers(0, 2**64 - 1))
def test_a_keys_hash_does_not_depend_on_the_keys_hashed_with_it(keys, salt):
    """Keys of one length take another path than mixed ones: the same hash either way."""
    together = fingerprints.key_hashes(keys, salt).tolist()
    assert together == [fingerprints.key_hashes([k], salt)[0] for k in keys]
    same = [k.ljust(12, b"x")[:12] for k in keys]  # all of one length
    assert fingerprints.key_hashes(same, salt).tolist() == [
        fingerprints.key_hashes([k, b""], salt)[0] for k in same
    ]


def test_a_json_lines_block_read_again_from_its_offset_is_the_readers_block(tmp_path):
    """CRLF endings and a last line without one: the lines the job read, each placed at its
    own offset (a line read in two overlapping blocks is one record)."""
    from transforms.ingest import readers, reread

    lines = [b'{"a": %d}' % n for n in range(5)]
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(b"\r\n".join(lines))
    (whole,) = readers.file_ranges(str(path), path.stat().st_size)
    assert [item for block in readers.range_blocks(whole) for item in block.items] == lines
    third = len(lines[0]) + len(lines[1]) + 4
    ((again, places),) = reread.records_again(str(path), {third})
    assert again.items == lines[2:]
    assert [p.position for p in places] == [third + n * (len(lines[0]) + 2) for n in range(3)]
