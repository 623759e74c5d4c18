"""A CSV file's dialect (transforms/text/csv_dialect.py) and its schema section (``event.csv``,
``from: N``): cells split and decoded as declared, numbers' marks read strictly, a mistake in
the section one line naming the fix."""

from __future__ import annotations

import pytest

from transforms import schema as schema_lib
from transforms.errors import InvalidEvent
from transforms.text import csv_dialect
from transforms.text.csv_dialect import CsvDialect

EU = CsvDialect(delimiter=";", encoding="cp1252", decimal=",", thousands=".")


@pytest.mark.parametrize(
    "cell, number",
    [("1,5", "1.5"), ("1013,25", "1013.25"), ("1.013,25", "1013.25"), ("-2", "-2"), ("NA", "NA")],
)
def test_decimal_comma_numbers_read_as_the_number_fields_read_them(cell, number):
    assert csv_dialect.number_reader(EU)(cell) == number


@pytest.mark.parametrize("cell", ["1.5", "10.00,5", "1.0134"])
def test_a_thousands_mark_where_no_group_fits_is_refused_not_guessed(cell):
    with pytest.raises(InvalidEvent, match="not a number written with ',' for decimals"):
        csv_dialect.number_reader(EU)(cell)


def test_a_dot_in_a_decimal_comma_file_without_thousands_is_refused():
    read = csv_dialect.number_reader(CsvDialect(";", decimal=","))
    assert read("1,5") == "1.5"
    with pytest.raises(InvalidEvent, match="declare thousands"):
        read("1.013")


def test_plain_numbers_need_no_reader():
    assert csv_dialect.number_reader(csv_dialect.DEFAULT) is None
    assert csv_dialect.number_reader(CsvDialect("|", thousands=","))("1,013.5") == "1013.5"


def test_a_line_is_split_and_decoded_as_declared():
    header = csv_dialect.header_names("datum;temp;ort".encode("cp1252"), EU)
    parse = csv_dialect.line_parser(header, EU)
    assert parse("2020-01-01;1,5;Köln".encode("cp1252")) == {
        "datum": "2020-01-01",
        "temp": "1,5",
        "ort": "Köln",
    }
    with pytest.raises(InvalidEvent, match="not cp1252: byte 0 is 0x81"):
        parse(b"\x81;1;x")
    with pytest.raises(InvalidEvent, match="CSV line has 2 cells; the header has 3"):
        parse(b"2020-01-01;1")


def test_columns_named_by_position_and_a_repeated_name_refused():
    dialect = csv_dialect.DEFAULT.with_columns([(2, "ISE"), (3, "ISE_2")])
    assert csv_dialect.header_names(b"\xef\xbb\xbfdate,ISE,ISE,SP", dialect) == (
        "date",
        "ISE",
        "ISE_2",
        "SP",
    )
    refuse = csv_dialect.line_parser(("date", "ISE", "ISE", "SP"))
    with pytest.raises(InvalidEvent, match="columns 2 and 3 are both named 'ISE'"):
        refuse(b"2020-01-01,1,2,3")


SCHEMA = """dataset: x
event:
  time: d
  csv: %s
  fields:
    d: {type: time, format: date}
    v: {type: number%s}
tables:
  - name: X
    pattern: TS-COLS
    families: [{name: m, max_versions: 1}]
    key: [{const: X}, {epoch_ms: d}]
    columns: [{family: m, qualifier: v, value: v}]
"""


def test_the_section_loads_into_the_schema():
    text = SCHEMA % (
        '{delimiter: tab, quote: none, encoding: latin-1, skip_lines: 2, decimal: ","}',
        ", from: 3",
    )
    loaded = schema_lib.loads(text, "x.yaml")
    assert loaded.csv == CsvDialect("\t", "", "latin-1", 2, ",", "", ((3, "v"),))


def test_a_column_that_is_no_field_is_named_by_position_in_the_section():
    """A repeated column that is a map's entry (no field of its own) takes its name from
    ``names:``; the header then names each column once, so no record is refused."""
    loaded = schema_lib.loads(SCHEMA % ("{names: {4: v_2}}", ", from: 3"), "x.yaml")
    assert loaded.csv.columns == ((3, "v"), (4, "v_2"))
    assert csv_dialect.header_names(b"d,x,v,v", loaded.csv) == ("d", "x", "v", "v_2")


@pytest.mark.parametrize(
    "section, field, message",
    [
        ("{delimiter: ':'}", "", "event.csv: delimiter ':': use one of"),
        ("{encoding: utf-16}", "", "event.csv: encoding 'utf-16'"),
        ("{decimal: ','}", "", "a comma decimal needs another delimiter"),
        ("{skip_lines: -1}", "", "skip_lines"),
        ("{sep: ';'}", "", "event.csv: unknown key 'sep'"),
        ("{}", ", from: 0", "from: 0: a CSV column is 1 or more"),
        ("{names: {0: w}}", "", "event.csv.names: 0: 'w': give a column's position"),
        ("{names: {2: w, 4: w}}", "", "event.csv.names: 'w' is given to two columns"),
        ("{names: {4: v}}", "", "event.csv.names: 'v' is a field's name: give the field from: 4"),
        ("{names: {3: w}}", ", from: 3", "event.csv.names: column 3 is already field 'v'"),
    ],
)
def test_a_mistake_in_the_section_is_one_line_naming_the_fix(section, field, message):
    with pytest.raises(schema_lib.SchemaError, match=message.replace("(", r"\(")):
        schema_lib.loads(SCHEMA % (section, field), "x.yaml")
