"""The job's reader of time patterns (transforms/text/timepatterns.py, through
``timefmt.make_parser``): what a pattern writes it reads back to the same instant, quarters and
weekless ISO weeks included; what it does not write is a dead letter naming the field; day
numbers count from their origin; a pattern that cannot read back what it writes is refused."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from btts.draft.times import TEXT_FORMATS
from transforms.errors import InvalidEvent
from transforms.text import timefmt, timepatterns

PATTERNS = [f for f in TEXT_FORMATS if "%" in f]
EARLY = timefmt.MIN_EPOCH_MS


def _kept(moment: dt.datetime, fmt: str) -> dt.datetime:
    """What of ``moment`` ``fmt`` keeps: the quarter's first day, the ISO week's Monday, the
    month's first day, or its fields down to the finest directive."""
    if "%q" in fmt:
        return dt.datetime(moment.year, 3 * ((moment.month - 1) // 3) + 1, 1)
    if "%V" in fmt:
        year, week, _ = moment.isocalendar()
        return dt.datetime.combine(dt.date.fromisocalendar(year, week, 1), dt.time())
    day = moment.day if "%d" in fmt else 1
    clock = [moment.hour if "%H" in fmt else 0, moment.minute if "%M" in fmt else 0]
    clock += [moment.second if "%S" in fmt else 0, moment.microsecond if "%f" in fmt else 0]
    return dt.datetime(moment.year, moment.month, day, *clock)


@settings(max_examples=300, deadline=None)
@given(
    fmt=st.sampled_from(PATTERNS),
    moment=st.datetimes(dt.datetime(1970, 1, 1), dt.datetime(2068, 12, 31)),
)
def test_what_a_pattern_writes_reads_back_to_the_instant_it_kept(fmt, moment):
    """Round trip through the job's parser (two-digit years kept to 1970..2068, where %y is
    unambiguous)."""
    text = timepatterns.write(moment, fmt)
    ms = timefmt.make_parser(fmt, "when", earliest=EARLY)(text)
    kept = _kept(moment, fmt).replace(tzinfo=timefmt.UTC)
    assert ms == (kept - timefmt.EPOCH) // timefmt.MILLISECOND


@pytest.mark.parametrize(
    ("fmt", "text", "expected"),
    [
        ("%Y Q%q", "1970 Q1", "1970-01-01"),
        ("%YQ%q", "1970q3", "1970-07-01"),  # (case as people write it)
        ("%Y-Q%q", "1970-Q4", "1970-10-01"),
        ("Q%q %Y", "Q2 1999", "1999-04-01"),
        ("%G-W%V", "2020-W05", "2020-01-27"),
        ("%G-W%V", "2021-W01", "2021-01-04"),  # ISO year 2021 starts on 4 January
        ("%GW%V", "2015W53", "2015-12-28"),
        ("%d-%b-%y", "5-Jan-09", "2009-01-05"),
        ("%b %d %Y", "Jan 5 2009", "2009-01-05"),
        ("%Y %b", "1991 Jul", "1991-07-01"),
        ("%b-%y", "Sep-19", "2019-09-01"),
        ("ordinal_day", "733000", "2007-11-20"),
        ("ordinal_day", "733000.0", "2007-11-20"),
        ("epoch_d", "18000", "2019-04-14"),
        ("epoch_d", "0", "1970-01-01"),
    ],
)
def test_people_s_ways_of_writing_a_time_read_as_the_day_they_name(fmt, text, expected):
    ms = timefmt.make_parser(fmt, "when", earliest=EARLY)(text)
    assert timefmt.iso(ms)[:10] == expected and ms % 86_400_000 == 0


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("%Y Q%q", "1970 Q5"),
        ("%Y Q%q", "1970 Q1 x"),
        ("%Y Q%q", "1970Q1"),  # a space in the pattern is a space in the value
        ("%G-W%V", "2021-W53"),  # 2021 has 52 ISO weeks
        ("%G-W%V", "2020-W00"),
        ("%d-%b-%y", "5-Jan-2009"),
        ("ordinal_day", "0"),
        ("ordinal_day", "7.5"),
        ("ordinal_day", "-3"),
        ("epoch_d", "abc"),
    ],
)
def test_a_value_the_pattern_does_not_write_is_a_dead_letter_naming_the_field(fmt, text):
    with pytest.raises(InvalidEvent, match="'when'"):
        timefmt.make_parser(fmt, "when", earliest=EARLY)(text)


def test_a_pattern_is_compiled_once_not_guessed_per_value():
    """The reader of a quarter or week pattern is one regex match per value."""
    read = timepatterns.compile_pattern("%Y Q%q")
    assert [read(t).month for t in ("2001 Q1", "2001 Q2", "2001 Q3", "2001 Q4")] == [1, 4, 7, 10]


@pytest.mark.parametrize(
    ("fmt", "words"),
    [
        ("Q%q", "needs its year"),
        ("%V", "needs its ISO year"),
        ("%Y Q%q %H", "cannot be combined"),
        ("quarterly", "holds % directives"),
    ],
)
def test_a_pattern_that_cannot_read_back_what_it_writes_is_refused(fmt, words):
    assert words in timefmt.strptime_problem(fmt)


def test_epoch_days_before_1970_are_refused_unless_the_field_declares_them():
    with pytest.raises(InvalidEvent, match="outside 1970-01-01"):
        timefmt.make_parser("epoch_d", "d")("-1")
    assert timefmt.iso(timefmt.make_parser("epoch_d", "d", earliest=EARLY)("-1"))[:10] == (
        "1969-12-31"
    )
