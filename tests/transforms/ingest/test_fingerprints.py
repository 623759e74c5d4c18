"""A bundle's fingerprints (transforms/ingest/fingerprints.py ``RowPrints``) are a format: the
numbers a worker hands on for its rows are their key hashes and row ids (``key_hashes``,
``row_ids``: what the check's second read computes again) whichever way the build step joined
and hashed them (blocks of keys of one width read in place, keys holding the separator byte,
widths changing between blocks or within one), in any process."""

from __future__ import annotations

import json
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.processes import printed_under_hash_seeds
from transforms.ingest import fingerprints

TABLES = {"T": True, "U": False}  # T's key holds its stamp; U's does not (its keys are counted)


def _row(table: str, key: bytes, stamp: int) -> tuple:
    return (table, key, (("f", b"q", b"v", stamp),))


def _drained(blocks: list[list[tuple]], flush: int) -> list[tuple[int, fingerprints.Prints]]:
    """Every handover of one worker given ``blocks``, ``flush`` rows a flush."""
    worker = fingerprints.RowPrints(TABLES)
    out = []
    with mock.patch.object(fingerprints, "FLUSH_ROWS", flush):
        for at, block in enumerate(blocks):
            worker.add(block, "f.jsonl", "jsonl", at * 100)
            if worker.full:
                out += worker.drain()
        out += worker.drain()
    return out


def _expected(blocks: list[list[tuple]]) -> tuple[dict, dict]:
    """Per table, the identities of its rows (sorted) and its distinct key hashes (sorted),
    from ``key_hashes`` and ``row_ids`` over all its rows at once."""
    ids, keys = {}, {}
    for table, stamped_by_key in TABLES.items():
        rows = [row for block in blocks for row in block if row[0] == table]
        if not rows:
            continue
        kh = fingerprints.key_hashes([row[1] for row in rows], fingerprints.table_salt(table))
        stamps = None if stamped_by_key else np.array([row[2][0][3] for row in rows], np.int64)
        ids[table] = sorted((fingerprints.row_ids(kh, stamps) & fingerprints.IDENTITY).tolist())
        if not stamped_by_key:
            keys[table] = sorted(set(kh.tolist()))
    return ids, keys


def _got(drained: list[tuple[int, fingerprints.Prints]]) -> tuple[dict, dict]:
    ids: dict[str, list[int]] = {}
    keys: dict[str, list[int]] = {}
    for _shard, prints in drained:
        for table, numbers in prints.ids.items():
            ids.setdefault(table, []).extend((numbers & fingerprints.IDENTITY).tolist())
        for table, hashes in prints.keys.items():
            keys.setdefault(table, []).extend(hashes.tolist())
    return {t: sorted(v) for t, v in ids.items()}, {t: sorted(v) for t, v in keys.items()}


@st.composite
def blocks_of_keys(draw) -> list[list[tuple]]:
    """Blocks of rows of both tables, each block's keys of one width (that width changing
    between blocks or not, some keys all separator bytes) or of several, some holding the
    separator byte."""
    blocks = []
    widths = st.sampled_from([1, 7, 8, 13, 22, 36])
    width = draw(widths)
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.booleans()):
            width = draw(widths)
        key = st.binary(min_size=width, max_size=width)
        kind = draw(st.integers(0, 3))
        if kind == 0:  # some keys all separator bytes
            key = st.one_of(key, st.just(b"\xff" * width))
        elif kind == 1:  # keys of several widths
            key = st.one_of(key, st.binary(max_size=40))
        table = st.sampled_from(sorted(TABLES)) if draw(st.booleans()) else st.just("U")
        rows = draw(st.lists(st.tuples(table, key, st.integers(-(2**40), 2**50)), max_size=12))
        blocks.append([_row(*row) for row in rows])
    return blocks


@settings(max_examples=150, deadline=None)
@given(blocks_of_keys(), st.sampled_from([1, 3, 8, 8192]))
def test_a_workers_numbers_are_the_key_hashes_and_row_ids_of_its_rows(blocks, flush):
    drained = _drained(blocks, flush)
    assert _got(drained) == _expected(blocks)
    for _shard, prints in drained:  # each number names a flush its worker handed on with it
        for numbers in prints.ids.values():
            assert int((numbers >> np.uint64(60)).max()) < len(prints.flushes)


def test_blocks_of_one_width_then_another_then_mixed_in_one_flush():
    """One flush of blocks of 36-byte keys, then 22-byte ones, then a block of both, then a
    block whose keys hold the separator: each number as key_hashes makes it."""
    wide = [_row("U", b"server%04d.example.com#%013d" % (i, 10**12 + i), i) for i in range(5)]
    narrow = [_row("U", b"server%04d.example.com" % i, 1000 * i) for i in range(5)]
    separated = [_row("U", b"\xffserver%03d.example.com" % i, 7) for i in range(3)]
    blocks = [wide, narrow, wide[:2] + narrow[:3], separated, [_row("U", b"\xff" * 22, 1)]]
    blocks += [[_row("T", b"k" * 36, 0)] * 3, [_row("T", b"j" * 22, 0)] * 3]
    assert _got(_drained(blocks, 8192)) == _expected(blocks)


def test_a_workers_numbers_are_the_same_in_every_process():
    """Python's own hash differs between processes; the numbers handed on must not."""
    code = (
        "import json; from tests.transforms.ingest import test_fingerprints as t;"
        "print(json.dumps(t._numbers()))"
    )
    runs = printed_under_hash_seeds(code)
    assert runs == {json.dumps(_numbers()) + "\n"}


def _numbers() -> list:
    """Every shard's numbers and key hashes of a fixed input (plain lists, for JSON)."""
    blocks = [
        [_row("T", b"host%02d#%013d" % (i % 7, 1426535600000 + i), 0) for i in range(40)],
        [_row("U", b"host%02d" % (i % 7), 1426535600000 + i) for i in range(40)],
        [_row("U", "é#%d".encode() % i, i) for i in range(12)],
    ]
    return [
        [
            shard,
            sorted(
                (t, v.tolist())
                for t, v in {**p.ids, **{f"k{t}": k for t, k in p.keys.items()}}.items()
            ),
        ]
        for shard, p in _drained(blocks, 16)
    ]
