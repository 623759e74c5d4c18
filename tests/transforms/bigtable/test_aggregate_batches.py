"""The AddToCell writer's bookkeeping without Beam or a client
(transforms.bigtable.aggregate_batches): requests within the limits, and partial failures."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from transforms.bigtable.aggregate_batches import EntryBatches, partial_failure


@given(
    st.lists(st.integers(1, 40), max_size=60),
    st.integers(1, 7),
    st.integers(40, 100),
)
def test_requests_keep_every_entry_in_order_within_both_limits(cells, max_entries, max_cells):
    batches = EntryBatches(max_entries, max_cells)
    sent = []
    for index, n in enumerate(cells):
        sent += batches.add(index, n)
    sent.append(batches.take())
    sent = [batch for batch in sent if batch[0]]
    assert [i for entries, _ in sent for i in entries] == list(range(len(cells)))
    for entries, total in sent:
        assert 0 < len(entries) <= max_entries
        assert total == sum(cells[i] for i in entries) <= max_cells
    assert batches.take() == ([], 0)


def test_a_request_is_sent_before_an_entry_that_would_pass_the_cell_limit():
    batches = EntryBatches(10, max_cells=5)
    assert batches.add("a", 3) == []
    assert batches.add("b", 3) == [(["a"], 3)]
    assert batches.add("c", 2) == [] and batches.take() == (["b", "c"], 5)


def test_a_partial_failure_counts_what_was_applied_and_warns_about_retries():
    failed = [(b"k1", "DeadlineExceeded: slow")]
    outcome = partial_failure("SALES", [2, 2, 4], failed, {0})
    assert (outcome.applied_rows, outcome.applied_cells) == (2, 6)
    assert outcome.message == (
        "1 of 3 AddToCell entries to SALES failed: b'k1': DeadlineExceeded: slow. The other 2 "
        "were applied; AddToCell is not idempotent, so a retry of this bundle adds them again."
    )


def test_a_failure_naming_no_entry_counts_nothing_applied_and_long_lists_are_cut():
    failed = [(None, f"E{i}") for i in range(7)]
    outcome = partial_failure("T", [1] * 7, failed, set())
    assert (outcome.applied_rows, outcome.applied_cells) == (None, None)
    assert outcome.message.endswith("None: E4 (and 2 more).")
    assert "were applied" not in outcome.message
