"""CSV files as people's tools write them land whole from their untouched drafts (issue 57):
``btts init FILE -o s.yaml`` (exit 0), the generic job on the test emulator (no dead letter),
``btts query`` reads back every value equal to what the file says.

The files are written here, and the values expected are stated here by hand, not computed by
the code under test: a European Excel file (``;``, decimal comma, thousands dots, cp1252 with
umlauts, CRLF), a weather station's file whose header is on line 2, a header that names one
column twice, tab and pipe delimiters, a UTF-8 byte-order mark, names that plain only to one
name (``a.b`` and ``a_b``).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from btts_cli import main as cli
from tests.support.jobs import draft_land_and_query

EUROPEAN = (
    "datum;temp;druck;ort\r\n"
    "2020-01-01;1,5;1013,25;Köln\r\n"
    "2020-01-02;-2,0;1.013,5;München\r\n"
    "2020-01-03;3;999,75;Düsseldorf\r\n"
).encode("cp1252")
EUROPEAN_BACK = [
    {"temp": "1.5", "druck": "1013.25", "ort": "Köln"},
    {"temp": "-2.0", "druck": "1013.5", "ort": "München"},
    {"temp": "3", "druck": "999.75", "ort": "Düsseldorf"},
]

PREAMBLE = (
    b"Station 4711 Hamburg-Fuhlsbuettel, 11 m\n"
    b"date,temp,rain\n"
    b"2020-01-01,1.5,0\n2020-01-02,2.5,1.2\n2020-01-03,-0.5,0\n"
)
PREAMBLE_BACK = [
    {"temp": "1.5", "rain": "0"},
    {"temp": "2.5", "rain": "1.2"},
    {"temp": "-0.5", "rain": "0"},
]

REPEATED = b"date,ISE,ISE,SP\n2020-01-01,1.5,2.5,3\n2020-01-02,1.6,2.6,4\n2020-01-03,1.7,2.7,5\n"
REPEATED_BACK = [
    {"ISE": "1.5", "ISE_2": "2.5", "SP": "3"},
    {"ISE": "1.6", "ISE_2": "2.6", "SP": "4"},
    {"ISE": "1.7", "ISE_2": "2.7", "SP": "5"},
]

TABS = b"\xef\xbb\xbfdate\tvalue\tnote\n2020-01-01\t1.25\ta, b\n2020-01-02\t2.5\tc\n"
TABS_BACK = [{"value": "1.25", "note": "a, b"}, {"value": "2.5", "note": "c"}]

PIPES = b"date|value|n\n2020-01-01|1,013.5|1\n2020-01-02|2,000.25|2\n2020-01-03|7.5|3\n"
PIPES_BACK = [
    {"value": "1013.5", "n": "1"},
    {"value": "2000.25", "n": "2"},
    {"value": "7.5", "n": "3"},
]

# ten series side by side (a map field takes them), two of them under one name
WIDE = (
    b"date,s1,s1,s3,s4,s5,s6,s7,s8,s9,s10\n"
    b"2020-01-01,1.5,2.5,3,4,5,6,7,8,9,10\n"
    b"2020-01-02,1.6,2.6,3,4,5,6,7,8,9,11\n"
    b"2020-01-03,1.7,2.7,3,4,5,6,7,8,9,12\n"
)

COLLIDING = b"date,a.b,a_b,a-b\n2020-01-01,1,2,3\n2020-01-02,4,5,6\n"

CASES = {
    "european.csv": (EUROPEAN, EUROPEAN_BACK),
    "station.csv": (PREAMBLE, PREAMBLE_BACK),
    "repeated.csv": (REPEATED, REPEATED_BACK),
    "tabs.tsv": (TABS, TABS_BACK),
    "pipes.txt": (PIPES, PIPES_BACK),
}


def _number(value: object) -> object:
    """A number's value as a decimal text (``-2.0`` and ``-2`` alike); any other text as is."""
    try:
        return str(Decimal(str(value)).normalize())
    except ArithmeticError:
        return value


def _values(record: dict, names) -> dict:
    return {name: _number(record[name]) for name in names}


def _normal(expected: list[dict]) -> list[dict]:
    return [{k: _number(v) for k, v in record.items()} for record in expected]


def _land(tmp_path: Path, name: str, data: bytes, capsys) -> tuple[dict, list[dict]]:
    """``btts init`` → the generic job → ``btts query``: the draft and what reads back."""
    source = tmp_path / name
    source.write_bytes(data)
    return draft_land_and_query(source, tmp_path, capsys)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_csv_in_its_own_dialect_lands_whole_from_its_draft(
    name, bigtable_emulator, tmp_path, capsys
):
    data, expected = CASES[name]
    drafted, back = _land(tmp_path, name, data, capsys)
    names = list(expected[0])
    assert [_values(r, names) for r in back] == _normal(expected)
    assert [r["time"][:10] for r in back] == [f"2020-01-0{i}" for i in range(1, len(back) + 1)]
    if name == "repeated.csv":  # each ISE column read by its position
        fields = drafted["event"]["fields"]
        assert (fields["ISE"]["from"], fields["ISE_2"]["from"]) == (2, 3)


def test_the_european_draft_declares_the_dialect_it_read(tmp_path, capsys):
    source = tmp_path / "european.csv"
    source.write_bytes(EUROPEAN)
    assert cli.main(["init", str(source), "-o", str(tmp_path / "s.yaml")]) == 0
    drafted = yaml.safe_load((tmp_path / "s.yaml").read_text(encoding="utf-8"))
    assert drafted["event"]["csv"] == {
        "delimiter": ";",
        "encoding": "cp1252",
        "decimal": ",",
        "thousands": ".",
    }
    assert drafted["event"]["fields"]["temp"]["type"] == "number"


def test_names_that_plain_alike_draft_distinct_fields_that_land(
    bigtable_emulator, tmp_path, capsys
):
    """``a.b``, ``a_b`` and ``a-b`` all plain to ``a_b``: the draft loads (each its own name)
    and every value lands."""
    drafted, back = _land(tmp_path, "colliding.csv", COLLIDING, capsys)
    refs = [spec.get("as", name) for name, spec in drafted["event"]["fields"].items()]
    assert len(refs) == len(set(refs)) == 4
    values = sorted(
        v for record in back for k, v in record.items() if k not in ("time", "key", "ts_ms")
    )
    assert values == [1, 2, 3, 4, 5, 6]


def test_a_repeated_column_among_a_maps_series_lands_under_a_name_of_its_own(
    bigtable_emulator, tmp_path, capsys
):
    """The map field takes every other column by its header name: the second ``s1`` is named
    by position in ``event.csv.names``, so both land (before, every record was a dead letter)."""
    drafted, back = _land(tmp_path, "wide.csv", WIDE, capsys)
    assert drafted["event"]["csv"] == {"names": {2: "s1", 3: "s1_2"}}
    series = [{k: Decimal(str(v)) for k, v in r["series"].items()} for r in back]
    assert [(s["s1"], s["s1_2"], s["s10"]) for s in series] == [
        (Decimal("1.5"), Decimal("2.5"), 10),
        (Decimal("1.6"), Decimal("2.6"), 11),
        (Decimal("1.7"), Decimal("2.7"), 12),
    ]
    assert all(len(s) == 10 for s in series)


def test_a_repeated_column_an_unpivot_reads_lands_under_a_name_of_its_own(
    bigtable_emulator, tmp_path, capsys
):
    """Past 100 series the draft unpivots (one event per series and time), reading the columns
    by their header names: the second ``s1`` is named by position, and every cell lands."""
    names = ["s1", "s1", *(f"s{i}" for i in range(3, 106))]
    rows = [f"2020-01-0{d}," + ",".join(str(d * 1000 + i) for i in range(105)) for d in (1, 2)]
    data = "\n".join(["date," + ",".join(names), *rows, ""]).encode()
    drafted, back = _land(tmp_path, "wider.csv", data, capsys)
    assert drafted["event"]["csv"] == {"names": {2: "s1", 3: "s1_2"}}
    got = {(r["time"][:10], r["series"]): r["value"] for r in back}
    assert len(got) == len(back) == 210
    assert (got[("2020-01-01", "s1")], got[("2020-01-01", "s1_2")]) == (1000, 1001)
    assert (got[("2020-01-02", "s1_2")], got[("2020-01-02", "s105")]) == (2001, 2104)


def test_every_field_takes_a_name_of_its_own_and_the_draft_loads(tmp_path):
    """Names that plain alike, and plain names a record read back already uses (``key``,
    ``time``): each its own, an already plain name kept."""
    from btts.draft import draft, review
    from btts.draft.design import unique_refs

    assert unique_refs(["date", "a.b", "a_b", "a-b", "key", "key_value", "time"], "date") == {
        "date": "date",
        "a.b": "a_b_2",
        "a_b": "a_b",
        "a-b": "a_b_3",
        "key": "key_value_2",
        "key_value": "key_value",
        "time": "time_value",
    }
    source = tmp_path / "names.csv"
    source.write_text("date,a.b,a_b,a-b,key,key_value,time\n2020-01-01,1,2,3,4,5,6\n")
    problems, _ = review(draft([str(source)]).text)
    assert problems is None


def test_files_of_two_dialects_are_refused_in_one_line(tmp_path, capsys):
    """One schema reads its files in one dialect: a second file written otherwise would be
    misread, so init refuses naming both."""
    (tmp_path / "eu.csv").write_bytes(EUROPEAN)
    (tmp_path / "plain.csv").write_text("datum,temp,druck,ort\n2020-02-01,1.5,1013.25,Bonn\n")
    argv = ["init", str(tmp_path / "eu.csv"), str(tmp_path / "plain.csv")]
    assert cli.main([*argv, "-o", str(tmp_path / "s.yaml")]) == 1
    err = capsys.readouterr().err
    assert "plain.csv is not written in the CSV dialect of eu.csv" in err
