"""The writer takes lean rows (transforms/mutations.py) as it takes whole ones: with their
entries, the same requests byte for byte (split at the same row, byte and mutation limits: a
lean row's count stands for its cells), and the same row and cell counters per table."""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from transforms.bigtable import write as bigtable_write
from transforms.bigtable.transport import Attempt
from transforms.bigtable.write import _LeanBatcher, _SplitByTableFn
from transforms.builder import wire
from transforms.mutations import FramedRows

TABLE = "projects/p/instances/i/tables/T"


class _Inline:
    """A pool that runs nothing: the requests the batcher hands over, answered at once."""

    def __init__(self) -> None:
        self.requests = []

    def submit(self, sender, request):
        future = Future()
        future.set_result(Attempt(len(request.entries)))
        self.requests.append(request)
        return future


def _rows() -> tuple[list, list, list]:
    """Whole rows of one to three cells (one without a cell), their lean forms (every other
    row lean, as a build step's batch may mix them) and their entries."""
    whole, lean, entries = [], [], []
    for i in range(23):
        cells = tuple(("f", b"q%d" % c, b"v" * (1 + i), 1426535612045000 + i) for c in range(i % 4))
        row = ("T", b"k%02d" % i, cells)
        whole.append(row)
        entries.append(wire.framed(wire.entry(row)))
        lean.append(("T", row[1], len(cells), 1426535612045000 + i) if i % 2 == 0 else row)
    return whole, lean, entries


@pytest.mark.parametrize("flush_count", [1, 3, 7, 100])
@pytest.mark.parametrize("flush_bytes", [60, 250, 10**9])
@pytest.mark.parametrize("max_mutations", [3, 9, 100_000])
def test_lean_batches_make_the_requests_whole_ones_make(
    monkeypatch, flush_count, flush_bytes, max_mutations
):
    monkeypatch.setattr(bigtable_write, "MAX_MUTATIONS_PER_REQUEST", max_mutations)
    whole, lean, entries = _rows()
    cuts = [(0, 5), (5, 6), (6, 20), (20, 23)]

    def requests(rows: list, made: list | None) -> list:
        pool = _Inline()
        batcher = _LeanBatcher(TABLE, flush_count, flush_bytes, pool, sender=None)
        for start, end in cuts:
            batcher.add_rows(rows[start:end], None if made is None else made[start:end])
        batcher.close()
        return [b.to_bytes() for b in pool.requests]

    encoded = requests(whole, None)  # the writer's own encoding of every row
    assert requests(lean, entries) == requests(whole, entries) == encoded
    assert len(encoded) >= 1


def test_the_split_counts_a_lean_rows_cells():
    whole, lean, entries = _rows()
    counts = []
    for rows in (whole, lean):
        split = _SplitByTableFn(["T", "U"])
        split.setup()
        split.start_bundle()
        mixed = [*rows, ("U", b"u", 2, 1000)]
        out = list(split.process(FramedRows(mixed, [*entries, b"e"])))
        assert [o.tag for o in out] == ["T", "U"]
        assert out[0].value == rows and out[0].value.entries == entries
        counts.append(split._counts)
    assert counts[0] == counts[1] == {"T": [23, sum(i % 4 for i in range(23))], "U": [1, 2]}
