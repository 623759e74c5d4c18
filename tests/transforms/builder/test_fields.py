"""An integer field reads a CSV cell of plain digits by a shortcut; it must say what the
general reading says of every cell (a leading zero, non-ASCII digits, signs, floats, bounds)."""

from __future__ import annotations

import pytest

from transforms.builder.fields import field_parser
from transforms.errors import InvalidEvent
from transforms.schema import FieldSpec
from transforms.text.events import CsvText, Num

CELLS = ["1956", "0", "7", "-5", "1.0", "007", "00", "\u0663", "\u00b2", "12a", "", "1e3",
         "9223372036854775807", "9223372036854775808", "150", "99"]  # fmt: skip


def _read(parse, value):
    try:
        return parse(value)
    except InvalidEvent as err:
        return type(err).__name__


@pytest.mark.parametrize("cell", CELLS)
def test_a_csv_cell_of_digits_reads_as_its_number_would(cell):
    plain = field_parser(FieldSpec("n", "integer"))
    bounded = field_parser(FieldSpec("n", "integer", minimum=0, maximum=100))
    general = {"1956": 1956, "0": 0, "7": 7, "-5": -5, "1.0": 1, "150": 150, "99": 99}
    general["9223372036854775807"] = 2**63 - 1
    assert _read(plain, CsvText(cell)) == general.get(cell, "InvalidEvent")
    if cell in general:  # (a JSON number of the same text: the general reading)
        assert _read(plain, Num(cell)) == general[cell]
    assert _read(bounded, CsvText(cell)) == (
        general[cell] if cell in general and 0 <= general[cell] <= 100 else "InvalidEvent"
    )
