"""The ``float64`` field type: a binary64 kept bit for bit as its 8 big-endian bytes, by the
generated builder and by the plain loop alike (NaN payloads, ±Inf, -0.0, subnormals); text
that is no number is a dead letter naming the field."""

from __future__ import annotations

import math
import struct

import pytest

from transforms.builder.builder import Builder
from transforms.errors import InvalidEvent, SchemaError
from transforms.schema import builtin, loads
from transforms.text.events import Num

STALE = struct.unpack(">d", bytes.fromhex("7ff0000000000002"))[0]


def _record(value) -> dict:
    return {
        "series": "a" * 32,
        "name": "up",
        "labels": "{}",
        "ts": Num(1_700_000_000_000),
        "value": value,
    }


@pytest.mark.parametrize(
    "value", [STALE, math.nan, -math.nan, math.inf, -math.inf, -0.0, 5e-324, 0.1, 7]
)
@pytest.mark.parametrize("official", ["", "builder"])
def test_a_float_lands_as_its_bits(value, official, monkeypatch):
    monkeypatch.setenv("BTTS_OFFICIAL", official)
    builder = Builder(builtin("prometheus"), ["PROM_SAMPLES"])
    ((_table, key, ((_f, _q, stored, stamp),)),) = builder.rows(_record(value))
    assert stored == struct.pack(">d", value)
    assert key.endswith(b"#2023-11-14-22") and stamp == 1_700_000_000_000_000


def test_bits_as_hex_text_and_number_text_are_taken_and_other_text_is_refused():
    builder = Builder(builtin("prometheus"), ["PROM_SAMPLES"])
    (row,) = builder.rows(_record("0x7ff0000000000002"))
    assert row[2][0][2] == bytes.fromhex("7ff0000000000002")
    (row,) = builder.rows(_record(Num("2.5")))
    assert row[2][0][2] == struct.pack(">d", 2.5)
    with pytest.raises(InvalidEvent, match="field 'value': expected a float64"):
        builder.rows(_record("0xnothex"))


def test_the_schema_checker_knows_the_type():
    text = builtin("prometheus").text.replace("type: float64", "type: float65")
    with pytest.raises(SchemaError, match=r"unknown type 'float65'.*float64"):
        loads(text)
