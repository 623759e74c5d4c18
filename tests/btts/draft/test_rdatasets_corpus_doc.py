"""The corpus figures the README shows are the corpus report's (docs/corpus.md), and the
report's totals and refusal reasons are what its own rows say: a figure edited by hand in
either, or a report written without rendering the README, fails here."""

from __future__ import annotations

from tests import corpus_doc


def test_the_readme_shows_the_corpus_reports_totals_and_refusal_reasons():
    assert not corpus_doc.stale(), "run: python -m tests.corpus_doc"


def test_the_reports_totals_and_reasons_are_what_its_rows_say():
    report = corpus_doc.parse(corpus_doc.REPORT.read_text(encoding="utf-8"))
    again = corpus_doc.recount(report)
    assert len(report.cells) > 400 and report.totals["all"]["files"] > 1_000
    assert report.totals == again.totals
    assert report.reasons == again.reasons


def test_a_figure_edited_by_hand_is_stale(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("<!-- corpus: docs/corpus.md -->\n**1,221 files**\n<!-- /corpus -->\n")
    assert corpus_doc.stale(readme)
    corpus_doc.publish(readme)
    assert not corpus_doc.stale(readme)
    shown = readme.read_text(encoding="utf-8")
    every = corpus_doc.parse(corpus_doc.REPORT.read_text(encoding="utf-8")).totals["all"]
    assert f"{every['landed']:,} landed whole and equal" in shown and "lossy" in shown
    assert f"- {corpus_doc.SHORT_REASONS['month and day but no year']}" in shown


def test_a_refusal_the_short_list_does_not_know_is_shown_whole():
    report = corpus_doc.Report(
        totals={"all": {"files": 2, "landed": 1, "refused": 1, "lossy": 0}},
        cells={"pkg/item": ["refused: something new at line 12", "landed", ""]},
    )
    report.reasons = corpus_doc.recount(report).reasons
    assert "- something new at line N — 1 files (pkg/item)" in corpus_doc.block(report)


def test_a_row_the_totals_do_not_count_is_found():
    text = corpus_doc.REPORT.read_text(encoding="utf-8")
    head, rows = text.split("\n## Every dataset\n", 1)
    edited = corpus_doc.parse(
        f"{head}\n## Every dataset\n{rows.replace('| landed |', '| lossy: x |', 1)}"
    )
    assert edited.totals != corpus_doc.recount(edited).totals
