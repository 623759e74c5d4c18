"""The coder of the check's fingerprints (transforms/ingest/prints_coder.py) is what Beam codes
the build step's ``prints`` output with, gives back every field as it was (its arrays as read-
only views, which the check's next step reads as it reads the arrays a worker made), codes one
value to the same bytes in any process, and refuses bytes it did not write."""

from __future__ import annotations

from unittest import mock

import apache_beam as beam
import numpy as np
import pytest
from apache_beam import coders
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.processes import printed_under_hash_seeds
from transforms.errors import SystemFailure
from transforms.ingest import build_rows, fingerprints, prints_coder
from transforms.ingest.fingerprints import Prints

CODER = prints_coder.PrintsCoder()
TABLES = {"T": True, "U": False}  # T's key holds its stamp; U's does not (its keys are counted)


def _row(table: str, key: bytes, stamp: int) -> tuple:
    return (table, key, (("f", b"q", b"v", stamp),))


def _drained(blocks: list[list[tuple]], flush: int) -> list[tuple[int, Prints]]:
    """Every handover of one worker given ``blocks`` (each from its own source), ``flush``
    rows a flush."""
    worker = fingerprints.RowPrints(TABLES)
    out = []
    with mock.patch.object(fingerprints, "FLUSH_ROWS", flush):
        for at, block in enumerate(blocks):
            worker.add(block, f"in-{at % 3}.jsonl", "jsonl" if at % 2 else "csv", at * 100)
            if worker.full:
                out += worker.drain()
        out += worker.drain()
    return out


@st.composite
def blocks_of_rows(draw) -> list[list[tuple]]:
    """Blocks of rows of both tables, keys of one width or of several."""
    blocks = []
    for _ in range(draw(st.integers(1, 8))):
        width = draw(st.sampled_from([3, 8, 21]))
        key = st.one_of(st.binary(min_size=width, max_size=width), st.binary(max_size=30))
        table = st.sampled_from(sorted(TABLES))
        rows = draw(st.lists(st.tuples(table, key, st.integers(-(2**40), 2**50)), max_size=12))
        blocks.append([_row(*row) for row in rows])
    return blocks


def _fields(prints: Prints) -> tuple:
    """Every field of ``prints`` as plain values (arrays as their dtype and numbers)."""

    def plain(values: np.ndarray) -> tuple:
        return values.dtype.str, values.tolist()

    return (
        {table: plain(values) for table, values in prints.ids.items()},
        {table: plain(values) for table, values in prints.keys.items()},
        [plain(flush) for flush in prints.flushes],
        prints.sources,
        prints.keyed,
    )


@settings(max_examples=100, deadline=None)
@given(blocks_of_rows(), st.sampled_from([1, 3, 8192]))
def test_every_handover_comes_back_as_it_was(blocks, flush):
    for _shard, prints in _drained(blocks, flush):
        back = CODER.decode(CODER.encode(prints))
        assert _fields(back) == _fields(prints)
        assert all(not values.flags.writeable for values in back.ids.values())


def test_empty_fields_and_any_source_name_come_back():
    names = {7: {"gs://b/é.jsonl", "plain.csv"}, 1 << 23: {"bad\udcff.jsonl"}, 0: set()}
    for prints in (
        Prints({}, {}, (), {}, frozenset()),
        Prints(
            {"T": np.array([1, 2**64 - 1], np.uint64), "E": np.zeros(0, np.uint64)},
            {"U": np.array([5], np.uint64)},
            (np.array([3], np.uint64), np.zeros(0, np.uint64)),
            names,
            frozenset({"U", "Ü"}),
        ),
    ):
        assert _fields(CODER.decode(CODER.encode(prints))) == _fields(prints)


def test_what_the_check_finds_is_the_same_from_coded_fingerprints():
    """Repeated row ids (candidates: their flushes' blocks located) and distinct rows, from
    the workers' own arrays and from the decoded views."""
    blocks = [
        [_row("T", b"host%02d#%013d" % (i % 5, i % 9), 0) for i in range(60)],
        [_row("U", b"host%02d" % (i % 4), i % 7) for i in range(60)],
    ]
    by_shard: dict[int, list[Prints]] = {}
    for shard, prints in _drained(blocks, 4):
        by_shard.setdefault(shard, []).append(prints)
    found = 0
    for group in by_shard.values():
        distinct, candidates = fingerprints.repeats(group)
        coded_distinct, coded = fingerprints.repeats(CODER.decode(CODER.encode(p)) for p in group)
        assert coded_distinct == distinct
        assert coded.sources == candidates.sources
        assert {t: (r.tolist(), loc.tolist()) for t, (r, loc) in coded.tables.items()} == {
            t: (r.tolist(), loc.tolist()) for t, (r, loc) in candidates.tables.items()
        }
        found += len(candidates.tables)
    assert found  # the input does repeat row ids


def _coded() -> str:
    """A fixed handover's elements, coded (hex, for another process to compare)."""
    blocks = [
        [_row("T", b"host%02d#%013d" % (i % 7, 1426535600000 + i), 0) for i in range(40)],
        [_row("U", b"host%02d" % (i % 7), 1426535600000 + i) for i in range(40)],
        [_row("U", "é#%d".encode() % i, i) for i in range(12)],
    ]
    worker = fingerprints.RowPrints(TABLES)
    for at, block in enumerate(blocks):
        worker.add(block, f"in-{at % 2}.jsonl", "jsonl", at * 100)
    return ",".join(f"{shard}:{CODER.encode(prints).hex()}" for shard, prints in worker.drain())


def test_one_value_codes_to_the_same_bytes_in_every_process():
    code = "from tests.transforms.ingest import test_prints_coder as t; print(t._coded())"
    runs = printed_under_hash_seeds(code)
    assert runs == {_coded() + "\n"}
    assert CODER.is_deterministic()


def test_bytes_it_did_not_write_are_a_system_failure():
    good = CODER.encode(Prints({"T": np.array([1, 2], np.uint64)}, {}, (), {}, frozenset()))
    for bad in (b"", b"not fingerprints at all", good[:-8], good + b"\0" * 8):
        with pytest.raises(SystemFailure):
            CODER.decode(bad)


def test_an_elements_size_is_its_arrays_without_coding_it():
    prints = _drained([[_row("U", b"k%07d" % i, i) for i in range(300)]], 64)[0][1]
    size = CODER.estimate_size(prints)
    assert size >= sum(values.nbytes for values in prints.ids.values())
    assert abs(size - len(CODER.encode(prints))) < 256


def test_beam_codes_the_build_steps_fingerprints_with_it():
    assert type(coders.registry.get_coder(Prints)) is prints_coder.PrintsCoder
    check = build_rows.OverwriteCheck(TABLES)
    lines = beam.Pipeline() | beam.Create([("f.jsonl", "{}")])  # built, never run
    built = lines | build_rows.BuildRows(lambda record: [], "t", check=check)
    coder = coders.registry.get_coder(built[build_rows.PRINTS].element_type)
    assert type(coder) is coders.TupleCoder
    assert [type(c) for c in coder.coders()] == [coders.VarIntCoder, prints_coder.PrintsCoder]
