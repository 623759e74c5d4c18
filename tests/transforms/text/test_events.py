"""Decoding source lines: decimal text survives, types are checked, reasons are precise."""

from __future__ import annotations

import pytest

from transforms.builder import fields
from transforms.errors import InvalidEvent
from transforms.schema import FieldSpec
from transforms.text import events


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


def test_an_undeclared_field_holding_null_drops_nothing_so_is_not_unexpected():
    # pandas writes a column with no value as null in every line: no data in it to lose
    events.check_fields({"a": 1, "wk66": None}, ["a"])
    with pytest.raises(InvalidEvent, match=r"unexpected field\(s\): wk67 "):
        events.check_fields({"a": 1, "wk66": None, "wk67": 0}, ["a"])


def _parsed(kind: str, obj: dict, name: str):
    """A field of ``obj`` read the way the compiled builders read it (transforms/builder.py)."""
    return fields.field_parser(FieldSpec(name, kind))(obj[name])


def test_typed_fields():
    obj = events.parse_json_object(b'{"s": "x", "n": 12, "f": 1.5, "b": true, "neg": -3}')
    assert _parsed("text", obj, "s") == "x"
    assert _parsed("number", obj, "f") == "1.5"
    assert _parsed("integer", obj, "n") == 12
    assert _parsed("boolean", obj, "b") == "true"
    with pytest.raises(InvalidEvent, match="expected a string, got number"):
        _parsed("text", obj, "n")
    with pytest.raises(InvalidEvent, match="expected a number, got boolean"):
        _parsed("number", obj, "b")
    with pytest.raises(InvalidEvent, match="expected an integer"):
        _parsed("integer", obj, "f")
    with pytest.raises(InvalidEvent, match="below its minimum 0"):
        fields.field_parser(FieldSpec("neg", "integer", minimum="0"))(obj["neg"])
    with pytest.raises(InvalidEvent, match="outside"):
        _parsed("integer", {"big": events.Num(str(2**63))}, "big")


def test_csv_cells_convert_where_they_fit():
    header = events.parse_csv_header(b"name,value,flag,note")
    rec = events.parse_csv_line(b'web1,600.60,true,"a, b"', header)
    assert rec == {"name": "web1", "value": "600.60", "flag": "true", "note": "a, b"}
    assert _parsed("text", rec, "name") == "web1"
    assert type(events.as_number(rec["value"])) is events.Num
    assert _parsed("number", rec, "value") == "600.60"
    assert _parsed("boolean", rec, "flag") == "true"
    with pytest.raises(InvalidEvent, match="expected a number"):
        _parsed("number", rec, "name")


def test_csv_empty_cells_are_absent_and_ragged_lines_refused():
    header = ("a", "b")
    assert events.parse_csv_line(b"x,", header) == {"a": "x"}
    with pytest.raises(InvalidEvent, match="3 cells; the header has 2"):
        events.parse_csv_line(b"x,y,z", header)
    with pytest.raises(InvalidEvent, match="not UTF-8"):
        events.parse_csv_line(b"x,\xff", header)
