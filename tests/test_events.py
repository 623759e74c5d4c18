"""Decoding source lines: decimal text survives, types are checked, reasons are precise."""

from __future__ import annotations

import pytest

from transforms import events
from transforms.errors import InvalidEvent


def test_numbers_keep_their_source_text():
    obj = events.parse_json_object(b'{"ask": 600.60, "nice": 0.00, "n": 89000, "e": 1E5}')
    assert obj == {"ask": "600.60", "nice": "0.00", "n": "89000", "e": "1E5"}
    assert all(type(v) is events.Num for v in obj.values())


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"{not json", "invalid JSON"),
        (b"", "invalid JSON"),
        (b"[1, 2]", "got array"),
        (b'"text"', "got string"),
        (b'{"a": NaN}', "NaN is not a number"),
        (b'{"a": Infinity}', "Infinity is not a number"),
        (b'{"a": -Infinity}', "-Infinity is not a number"),
        (b'{"a": "\xff"}', "not UTF-8: byte 7 is 0xff"),
        (b"[" * 100_000, "invalid JSON"),
    ],
)
def test_bad_json_is_refused_with_a_reason(raw, reason):
    with pytest.raises(InvalidEvent, match=reason):
        events.parse_json_object(raw)


def test_fields_missing_and_unexpected():
    with pytest.raises(InvalidEvent, match="missing field"):
        events.check_fields({"a": 1}, ["a", "b"])
    with pytest.raises(InvalidEvent, match=r"unexpected field.*: c"):
        events.check_fields({"a": 1, "b": 2, "c": 3}, ["a", "b"])
    events.check_fields({"a": 1}, ["a"], optional=["b"])


def test_typed_fields():
    obj = events.parse_json_object(b'{"s": "x", "n": 12, "f": 1.5, "b": true, "neg": -3}')
    assert events.text_field(obj, "s") == "x"
    assert events.number_field(obj, "f") == "1.5"
    assert events.int_field(obj, "n") == 12
    assert events.bool_field(obj, "b") is True
    with pytest.raises(InvalidEvent, match="expected a string, got number"):
        events.text_field(obj, "n")
    with pytest.raises(InvalidEvent, match="expected a number, got boolean"):
        events.number_field(obj, "b")
    with pytest.raises(InvalidEvent, match="expected an integer"):
        events.int_field(obj, "f")
    with pytest.raises(InvalidEvent, match="outside"):
        events.int_field(obj, "neg")


def test_csv_cells_convert_where_they_fit():
    header = events.parse_csv_header(b"name,value,flag,note")
    rec = events.parse_csv_line(b'web1,600.60,true,"a, b"', header)
    assert rec == {"name": "web1", "value": "600.60", "flag": "true", "note": "a, b"}
    assert events.text_field(rec, "name") == "web1"
    assert type(events.number_field(rec, "value")) is events.Num
    assert events.number_field(rec, "value") == "600.60"
    assert events.bool_field(rec, "flag") is True
    with pytest.raises(InvalidEvent, match="expected a number"):
        events.number_field(rec, "name")


def test_csv_empty_cells_are_absent_and_ragged_lines_refused():
    header = ("a", "b")
    assert events.parse_csv_line(b"x,", header) == {"a": "x"}
    with pytest.raises(InvalidEvent, match="3 cells; the header has 2"):
        events.parse_csv_line(b"x,y,z", header)
    with pytest.raises(InvalidEvent, match="not UTF-8"):
        events.parse_csv_line(b"x,\xff", header)
