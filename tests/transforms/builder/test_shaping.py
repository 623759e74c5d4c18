"""Input records → events: integral floats, times made from several fields, unpivot of wide
files and extra fields (transforms/builder/shaping.py and the schema checks in
transforms/schema/shape.py).
"""

from __future__ import annotations

import calendar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from transforms import schema as sf
from transforms.builder import builder as generic
from transforms.builder import shaping
from transforms.errors import InvalidEvent
from transforms.text.events import CsvText, integral_text, parse_csv_line, parse_json_object

QUARTERLY = """\
dataset: q
event:
  time: start
  fields:
    year: integer
    quarter: {type: integer, min: 1, max: 4}
    start: {type: time, from: {year: year, quarter: quarter}, earliest: "1900-01-01"}
    v: number
tables:
  - name: Q
    pattern: TS-COLS
    cell_timestamp: offset
    families: [{name: m, max_versions: 1}]
    key: [{const: Q}, {time: start, format: yyyymm}]
    columns: [{family: m, qualifier: v, value: v}]
"""


def _ms(*parts: int) -> int:
    return calendar.timegm((*parts, 0, 0, 0)[:6]) * 1000


@given(st.integers(min_value=-(10**12), max_value=10**12), st.integers(1, 5))
def test_an_integral_float_is_its_whole_number(n, zeros):
    assert integral_text(f"{n}.{'0' * zeros}") == str(n)
    assert integral_text(str(n)) == str(n)


@given(st.integers(0, 10**6), st.integers(1, 999))
def test_a_fraction_stays_as_written(n, fraction):
    text = f"{n}.{fraction:03d}"
    assert integral_text(text) == text


@pytest.mark.parametrize(
    ("parts", "wall"),
    [
        ({"year": "1959.0", "quarter": "2.0"}, "1959-04-01T00:00:00.000000"),
        ({"year": 1959, "quarter": 4}, "1959-10-01T00:00:00.000000"),
        ({"year": "2001", "month": "Sept"}, "2001-09-01T00:00:00.000000"),
        ({"year": "2001", "month": "DEC"}, "2001-12-01T00:00:00.000000"),
        ({"year": "2001", "month": "february"}, "2001-02-01T00:00:00.000000"),
        ({"year": 2001, "month": 3.0, "day": "7"}, "2001-03-07T00:00:00.000000"),
        ({"year": 2001, "month": 3, "day": 7, "time": "9:05"}, "2001-03-07T09:05:00.000000"),
        ({"date": "1854-04-01", "time": "23:59:58.5"}, "1854-04-01T23:59:58.500000"),
    ],
)
def test_times_made_of_several_fields(parts, wall):
    assert shaping.made_time(parts, "t") == wall


@pytest.mark.parametrize(
    ("parts", "words"),
    [
        ({"year": "1959", "quarter": "5"}, "quarter '5' is not a whole number 1-4"),
        ({"year": "1959", "quarter": "1.5"}, "quarter '1.5'"),
        ({"year": "1959.5", "quarter": "1"}, "year '1959.5'"),
        ({"year": "2001", "month": "Sprit"}, "month 'Sprit'"),
        ({"year": "2001", "month": "13"}, "month '13'"),
        ({"date": "2001/03/07"}, "is not YYYY-MM-DD"),
        ({"date": "2001-03-07", "time": "25:00"}, "is not HH:MM"),
    ],
)
def test_a_bad_part_is_named(parts, words):
    with pytest.raises(InvalidEvent, match="field 't': ") as err:
        shaping.made_time(parts, "t")
    assert words in str(err.value)


def test_year_and_quarter_land_as_one_time_and_a_bad_quarter_is_a_dead_letter():
    builder = generic.Builder(sf.loads(QUARTERLY))
    (row,) = builder(parse_json_object('{"year": 1959.0, "quarter": 3.0, "v": 1.5}'))
    assert row.key == b"Q#195907"
    assert row.cells[0].timestamp_us == (_ms(1959, 7, 1) + 62135596800000) * 1000
    with pytest.raises(InvalidEvent, match="quarter"):
        builder(parse_json_object('{"year": 1959, "quarter": 2.5, "v": 1}'))
    with pytest.raises(InvalidEvent, match="missing field"):
        builder(parse_json_object('{"year": 1959, "v": 1}'))


def test_unpivot_copies_other_columns_and_skips_empty_cells():
    record = {"date": "d", "A": CsvText("1"), "B": CsvText(""), "C": CsvText("3")}
    events = shaping.unpivoted(record, ["A", "B", "C"], "name", "value")
    assert events == [
        {"date": "d", "name": "A", "value": "1"},
        {"date": "d", "name": "C", "value": "3"},
    ]


WIDE = """\
dataset: w
event:
  time: date
  unpivot: {match: "[A-Z]+", name: symbol, value: price}
  fields:
    date: {type: time, format: date}
    symbol: {type: text, whitespace: none}
    price: number
tables:
  - name: W
    pattern: TS-COLS
    families: [{name: p, max_versions: 1}]
    key: [{text: symbol}, {time: date, format: yyyymmdd}]
    columns: [{family: p, qualifier: p, value: price}]
"""


def test_a_wide_record_becomes_an_event_per_non_empty_column():
    builder = generic.Builder(sf.loads(WIDE))
    header = ["date", "AAPL", "GOOG", "MSFT"]
    rows = builder(parse_csv_line("2004-08-01,17.25,,22.47", header))
    assert [r.key for r in rows] == [b"AAPL#20040801", b"MSFT#20040801"]
    framed, entries = builder.framed(parse_csv_line("2004-08-01,17.25,,22.47", header))
    assert framed == rows and len(entries) == 2
    assert builder.take_empty_cells() == 0  # a matched column is known only when present
    listed = WIDE.replace('{match: "[A-Z]+", ', "{columns: [AAPL, GOOG, MSFT], ")
    by_name = generic.Builder(sf.loads(listed))
    assert len(by_name(parse_csv_line("2004-08-01,17.25,,22.47", header))) == 2
    assert len(by_name(parse_csv_line("2004-08-01,,,22.47", header))) == 1
    assert by_name.take_empty_cells() == 3 and by_name.take_empty_cells() == 0
    # a record with no value in any listed column would land none of its other fields either
    nulls = '{"date": "2004-08-01", "AAPL": null, "GOOG": null, "MSFT": null}'
    with pytest.raises(InvalidEvent, match="no column to unpivot"):
        by_name(parse_json_object(nulls))
    with pytest.raises(InvalidEvent, match="no column to unpivot"):
        by_name(parse_csv_line("2004-08-01,,,", header))
    with pytest.raises(InvalidEvent, match="no column to unpivot"):
        builder(parse_json_object('{"date": "2004-08-01", "aapl": 1}'))
    with pytest.raises(InvalidEvent, match="unexpected field"):
        builder(parse_json_object('{"date": "2004-08-01", "AAPL": 1, "note": "x"}'))
    bad = []  # one bad column: the whole record is one dead letter, no row appended
    with pytest.raises(InvalidEvent):
        builder.frame_into(parse_csv_line("2004-08-01,17.25,x,22.47", header), bad, [])
    assert bad == []


def test_extra_fields_ignore_drops_and_refuse_names_the_nearest_field():
    text = QUARTERLY.replace("  time: start\n", "  time: start\n  extra_fields: ignore\n")
    record = '{"year": 1959, "quarter": 1, "v": 2, "cpi": 28.98, "m1": 139.7}'
    (row,) = generic.Builder(sf.loads(text))(parse_json_object(record))
    assert row.key == b"Q#195901"
    with pytest.raises(InvalidEvent) as err:
        generic.Builder(sf.loads(QUARTERLY))(parse_json_object(record))
    assert str(err.value) == (
        "unexpected field(s): cpi, m1 (declared: quarter, start, v, year; "
        "event.extra_fields: ignore drops the others)"
    )
    typo = '{"year": 1959, "quarter": 1, "v": 2, "yeer": 1}'
    with pytest.raises(InvalidEvent, match="nearest declared field: 'year'"):
        generic.Builder(sf.loads(QUARTERLY))(parse_json_object(typo))


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("  time: start\n", "  time: start\n  extra_fields: drop\n", "extra_fields is refuse or"),
        ("{year: year, quarter: quarter}", "{year: yeer, quarter: quarter}", "'yeer' is not a"),
        ("{year: year, quarter: quarter}", "{quarter: quarter}", "does not make a time"),
        ("{year: year, quarter: quarter}", "{year: year, fortnight: quarter}", "unknown key"),
        ("v: number", "v: {type: number, from: {year: year}}", "applies to time fields only"),
    ],
)
def test_schema_mistakes_in_the_new_keys_name_their_line(old, new, words):
    assert old in QUARTERLY
    with pytest.raises(sf.SchemaError) as err:
        sf.loads(QUARTERLY.replace(old, new), "q.yaml")
    assert any(words in message for _, message in err.value.problems), err.value.problems


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ('{match: "[A-Z]+", ', '{match: "[A-Z]+", columns: [A], ', "either columns"),
        ('{match: "[A-Z]+", ', '{match: "[A-Z", ', "match '[A-Z'"),
        ("name: symbol,", "name: sym,", "name 'sym' is not a declared field"),
        ("name: symbol,", "name: price,", "must be text"),
        ('{match: "[A-Z]+", ', "{columns: [date], ", "also a declared field"),
    ],
)
def test_unpivot_mistakes_are_refused_with_their_fix(old, new, words):
    assert old in WIDE
    with pytest.raises(sf.SchemaError) as err:
        sf.loads(WIDE.replace(old, new), "w.yaml")
    assert any(words in message for _, message in err.value.problems), err.value.problems
