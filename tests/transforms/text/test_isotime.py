"""Times read the same on every Python the package accepts (setup.py: 3.10 and later): 3.10's
``datetime.fromisoformat`` refuses a trailing ``Z``, which every event of the guidance ends with.
``transforms.text.isotime`` reads as 3.11 does; here its Python reading is compared with 3.11's
C function (where the suite runs on 3.11 or later) on generated and mutated strings, and the
forms that matter are checked by value on every version (``make test-matrix`` runs this file on
each Python it finds)."""

from __future__ import annotations

import datetime as dt
import random
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transforms.text import isotime, timefmt

UTC = dt.timezone.utc
PLUS_ONE = dt.timezone(dt.timedelta(hours=1))
NATIVE = sys.version_info >= (3, 11)  # the C function reads 3.11's forms: compare with it

CASES = {
    "2015-03-16T19:53:32.045Z": dt.datetime(2015, 3, 16, 19, 53, 32, 45_000, UTC),
    "2015-03-16T19:53:32Z": dt.datetime(2015, 3, 16, 19, 53, 32, tzinfo=UTC),
    "2015-03-16 19:53:32.5Z": dt.datetime(2015, 3, 16, 19, 53, 32, 500_000, UTC),
    "2015-03-16T19:53:32.045123456Z": dt.datetime(2015, 3, 16, 19, 53, 32, 45_123, UTC),
    "2015-03-16T19:53:32,0451+01:00": dt.datetime(2015, 3, 16, 19, 53, 32, 45_100, PLUS_ONE),
    "2015-03-16T19:53:32+0100": dt.datetime(2015, 3, 16, 19, 53, 32, tzinfo=PLUS_ONE),
    "2015-03-16T19:53+01": dt.datetime(2015, 3, 16, 19, 53, tzinfo=PLUS_ONE),
    "20150316T195332Z": dt.datetime(2015, 3, 16, 19, 53, 32, tzinfo=UTC),
    "2015-W12-1T10:00Z": dt.datetime(2015, 3, 16, 10, tzinfo=UTC),
    "2015W121T10Z": dt.datetime(2015, 3, 16, 10, tzinfo=UTC),
    "2015-03-16T19:53:32.045+01:00": dt.datetime(2015, 3, 16, 19, 53, 32, 45_000, PLUS_ONE),
    "2015-03-16T19:53:32": dt.datetime(2015, 3, 16, 19, 53, 32),
    "2015-03-16": dt.datetime(2015, 3, 16),
}
REFUSED = [
    "2015-03-16T19:53:32.045z",  # lower-case z
    "2015-03-16T24:00:00Z",
    "2015-03-16T19:53:60Z",  # a leap second
    "2015-03-16T19:53:32+24:00",
    "2015-02-30T00:00Z",
    "2015-03-16T",
    "2015-03-16T19:5",
    "2015-03-16T19:53:32.5x",
    "2015-03-16T19:53:32.045+01:00Z",
    "16/03/2015 19:53",
    "",
]


@pytest.mark.parametrize("text", list(CASES))
def test_the_forms_events_use_read_the_same_on_this_python(text):
    assert isotime.fromisoformat(text) == CASES[text]
    assert isotime.fromisoformat(text).utcoffset() == CASES[text].utcoffset()
    assert isotime._parse(text) == CASES[text]


@pytest.mark.parametrize("text", REFUSED)
def test_what_no_python_reads_is_refused(text):
    for parse in (isotime.fromisoformat, isotime._parse):
        with pytest.raises(ValueError):
            parse(text)


def test_an_event_time_ending_in_z_lands_on_this_python():
    """The issue on 3.10: the guidance's own event times were dead letters."""
    assert timefmt.parse_event_time("2015-03-16T19:53:32.045Z") == 1_426_535_612_045
    parse = timefmt.make_parser("rfc3339")
    assert parse("2015-03-16T19:53:32.045123Z") == 1_426_535_612_045
    assert timefmt.make_parser("auto", tz=PLUS_ONE)("2015-03-16T20:53:32") == 1_426_535_612_000


def _same(text: str) -> None:
    """``_parse`` and the C function: the same datetime (and zone object), or both refuse."""
    try:
        want = dt.datetime.fromisoformat(text)
    except ValueError:
        with pytest.raises(ValueError):
            isotime._parse(text)
        return
    got = isotime._parse(text)
    assert (got, got.tzinfo) == (want, want.tzinfo), text
    assert got.utcoffset() == want.utcoffset(), text


_PIECES = {
    "date": ["2015-03-16", "20150316", "2015-W12", "2015-W12-1", "2015W12", "2015W121",
             "2020-W53-7", "2015-W53-1", "2015-02-30", "0001-01-01", "9999-12-31", "2015-3-16"],
    "sep": ["T", " ", "t", "é", "Z", "-", "1", ":", "W", ""],
    "time": ["", "19", "1953", "19:53", "195332", "19:53:32", "19:53:32.", "19:53:32.045",
             "19:53:32,0451", "19:53:32.045123456", "19332", "19.5", "19:53.5", "24:00",
             "23:59:59.999999", "1933221", "19:33:22:11", "19a", "19:"],
    "zone": ["", "Z", "z", "+00:00", "-00:00", "+01:00", "+0100", "+01", "-05", "+01:00:30",
             "+01:00:30.5", "+00:00:00.5", "+23:59", "+24:00", "+1:00", "+01:00:30.", "+01.5"],
}  # fmt: skip
_ALPHABET = "0123456789" * 3 + "-:.,TWZ+ tzé\x00"


def _mutated(rnd: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rnd.randint(1, 3)):
        at = rnd.randrange(len(chars) + 1)
        if rnd.random() < 0.4 and at < len(chars):
            del chars[at]
        else:
            chars.insert(at, rnd.choice(_ALPHABET))
    return "".join(chars)


@pytest.mark.skipif(not NATIVE, reason="compares with 3.11's C function, not on this Python")
def test_the_python_reading_is_the_c_functions_on_thousands_of_strings():
    rnd = random.Random(51)
    for _ in range(4_000):
        text = "".join(rnd.choice(_PIECES[part]) for part in ("date", "sep", "time", "zone"))
        _same(text)
        _same(_mutated(rnd, text))


@pytest.mark.skipif(not NATIVE, reason="compares with 3.11's C function, not on this Python")
@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_ALPHABET + "é😀", min_size=0, max_size=32))
def test_the_python_reading_is_the_c_functions_on_any_text(text):
    _same(text)
