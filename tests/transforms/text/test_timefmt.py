"""Event times: exact milliseconds, refused when ambiguous, labelled for buckets."""

from __future__ import annotations

import zoneinfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from transforms.errors import InvalidEvent
from transforms.text import timefmt


@pytest.mark.parametrize(
    ("value", "ms"),
    [
        ("2015-03-16T19:53:32.045Z", 1426535612045),
        ("2015-03-16T20:53:32.045+01:00", 1426535612045),
        ("2015-03-16T19:53:32Z", 1426535612000),
        ("2015-03-16T19:53:32.045999Z", 1426535612045),  # sub-ms digits truncated
        ("1426535612045", 1426535612045),
        (1426535612045, 1426535612045),
        ("1970-01-01T00:00:00Z", 0),
    ],
)
def test_parse_event_time(value, ms):
    assert timefmt.parse_event_time(value) == ms


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("2015-03-16T19:53:32.045", "no UTC offset"),
        ("yesterday", "not an RFC 3339"),
        ("", "not an RFC 3339"),
        (True, "got bool"),
        (None, "got NoneType"),
        (1.5, "got float"),
        ("1969-12-31T23:59:59Z", "outside"),
        ("9999-01-01T00:00:00Z", "outside"),
        (-5, "outside"),
    ],
)
def test_parse_event_time_refuses(value, reason):
    with pytest.raises(InvalidEvent, match=reason):
        timefmt.parse_event_time(value)


_EPOCH = timefmt.dt.datetime(1970, 1, 1, tzinfo=timefmt.UTC)


@given(st.integers(min_value=0, max_value=timefmt.MAX_EPOCH_MS), st.sampled_from("T t_"))
def test_the_fast_utc_path_agrees_with_the_general_parser(ms, sep):
    moment = _EPOCH + timefmt.dt.timedelta(milliseconds=ms)
    texts = {  # the instant each text names (3.10's fromisoformat cannot say: it refuses Z)
        moment.strftime(f"%Y-%m-%d{sep}%H:%M:%S.") + f"{ms % 1000:03d}Z": ms,
        moment.strftime(f"%Y-%m-%d{sep}%H:%M:%SZ"): ms - ms % 1000,
    }
    for text, expected in texts.items():
        assert timefmt.parse_event_time(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "2015-03-16T19:60:00.000Z",  # minute 60
        "2015-03-16T19:59:60.000Z",  # leap second: fromisoformat refuses it too
        "2015-02-30T19:00:00.000Z",  # no such day
        "2015-03-16T24:00:00.000Z",
        "2015-03-16T19:5\u0663:00.000Z",  # an Arabic-Indic digit
        "2015-03-16T19:53:00.0\uff10\uff10Z",  # full-width digits
    ],
)
def test_the_fast_utc_path_refuses_what_the_general_parser_refuses(text):
    with pytest.raises(InvalidEvent, match="not an RFC 3339"):
        timefmt.parse_event_time(text)


def test_labels():
    ms = timefmt.parse_event_time("2021-03-05T12:00:00Z")
    assert timefmt.hour_label(ms) == "2021-03-05-12"
    assert timefmt.day_label(ms) == "2021-03-05"
    assert timefmt.iso_week_label(ms) == "2021-W09"
    assert timefmt.month_label(ms) == "2021-03"
    assert timefmt.minute_label(ms) == "2021-03-05-1200"
    assert timefmt.compact_day(ms) == "20210305"
    assert timefmt.compact_month(ms) == "202103"
    assert timefmt.time_of_day(ms) == "1200"
    battery = timefmt.parse_event_time("2015-03-01T12:45:01.001Z")
    assert timefmt.compact_millis(battery) == "20150301124501001"


def test_iso_week_uses_the_iso_year():
    # 2021-01-03 is a Sunday in ISO week 53 of 2020; the docs' "week1" would be wrong here.
    assert timefmt.iso_week_label(timefmt.parse_event_time("2021-01-03T10:00:00Z")) == "2020-W53"


def test_labels_follow_a_configured_zone():
    ms = timefmt.parse_event_time("2017-07-26T23:30:00Z")
    paris = zoneinfo.ZoneInfo("Europe/Paris")
    assert timefmt.compact_day(ms) == "20170726"
    assert timefmt.compact_day(ms, paris) == "20170727"
    assert timefmt.time_of_day(ms, paris) == "0130"


@given(st.integers(0, timefmt.MAX_EPOCH_MS))
def test_cached_labels_equal_exact_conversion(ms):
    moment = timefmt.to_datetime(ms)
    assert timefmt.hour_label(ms) == moment.strftime("%Y-%m-%d-%H")
    iso = moment.isocalendar()
    assert timefmt.iso_week_label(ms) == f"{iso[0]:04d}-W{iso[1]:02d}"


@given(st.integers(0, timefmt.MAX_EPOCH_MS))
def test_fast_time_of_day_equals_the_datetime_conversion(ms):
    assert timefmt.time_of_day(ms) == timefmt.to_datetime(ms).strftime("%H%M")
