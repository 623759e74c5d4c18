"""``btts init``'s reading of times as people write them (issue 57, item 3), below the
end-to-end landings of test_written_times_land.py: the day order decided from the values (and
said to be a choice only when every value reads both ways), two fields of one instant checked
against each other (:mod:`btts.draft.zones`), refusals that name the column, a value and the
``format:``, and the job's side of a date and a time of day running to 24:00."""

from __future__ import annotations

import datetime as dt
import random
import zoneinfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from btts.draft import draft, zones
from btts.draft.fields import infer_columns
from btts.draft.sample import DraftError
from btts.draft.times import guess_times
from transforms import schema as schema_lib
from transforms.builder.shaping import made_time
from transforms.errors import InvalidEvent
from transforms.text import timefmt
from transforms.text.events import CsvText
from transforms.text.timepatterns import compile_pattern


def _guess(values: list[str], name: str = "date"):
    records = [{name: CsvText(v), "v": CsvText("1")} for v in values]
    return guess_times(infer_columns(records), records)[0]


def _write(tmp_path, name: str, lines: list[str]) -> str:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


# -- day first or month first --------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(
    days=st.lists(st.dates(dt.date(1990, 1, 1), dt.date(2030, 12, 31)), min_size=2, max_size=15),
    sep=st.sampled_from("/-."),
    day_first=st.booleans(),
)
def test_the_day_order_is_a_choice_only_when_every_value_reads_both_ways(days, sep, day_first):
    order = ("%d", "%m") if day_first else ("%m", "%d")
    fmt = f"{order[0]}{sep}{order[1]}{sep}%Y"
    guess = _guess([d.strftime(fmt) for d in days])
    other = f"{order[1]}{sep}{order[0]}{sep}%Y"
    both = all(d.day <= 12 for d in days)
    readings = [guess.format, *guess.alternatives]
    assert (fmt in readings) and ((other in readings) == both)
    expected = [timefmt.date_ms(d) for d in days]
    if guess.format == fmt:
        assert guess.ms == expected
    else:  # read the other way: only where every value reads both ways
        assert both and guess.format == other


def test_an_ambiguous_day_order_is_said_in_the_draft_with_the_format_for_the_other(tmp_path):
    path = _write(tmp_path, "amb.csv", ["date,v", "03/04/2020,1", "04/05/2020,2", "05/06/2020,3"])
    text = draft([path]).text
    assert 'date: {type: time, format: "%d/%m/%Y"}' in text
    assert "AMBIGUOUS: every" in text and "declare format: '%m/%d/%Y'" in text.replace("\n# ", " ")
    assert "Asked: Field date: is 03/04 the 3rd of April or March 4th?" in text.replace("\n# ", " ")
    answered = draft([path], ask=lambda question: 1).text
    assert 'date: {type: time, format: "%m/%d/%Y"}' in answered


@pytest.mark.parametrize(
    ("values", "fmt", "why"),
    [
        (["03/04/2020", "25/03/2020"], "%d/%m/%Y", "day first: '25/03/2020' reads only"),
        (["05/20/1987", "01/02/1988"], "%m/%d/%Y", "month first: '05/20/1987' reads only"),
        (["13.05.2021 14:30", "01.06.2021 08:00"], "%d.%m.%Y %H:%M", "day first"),
    ],
)
def test_the_day_order_is_decided_from_a_value_only_one_order_reads(values, fmt, why):
    guess = _guess(values)
    assert guess.format == fmt and why in guess.why
    assert not any(a[:5] == fmt[3:5] + fmt[2] + fmt[:2] for a in guess.alternatives)


# -- two fields of one instant -----------------------------------------------------------------


def _wall_and_true(
    zone: str, count: int = 300, seed: int = 7, local_floor: bool = False
) -> tuple[list[int], list[int]]:
    """Wall times (their digits as epoch ms, to the minute) in ``zone`` over two years, and
    their instants floored to the hour (``time_hour``; ``local_floor``: the instant of the wall
    clock's hour, as R's make_datetime gives it, which differs in a zone of half hours)."""
    tz = zoneinfo.ZoneInfo(zone)
    rng = random.Random(seed)
    wall, true = [], []
    while len(wall) < count:
        local = dt.datetime(2012, 1, 1) + dt.timedelta(minutes=rng.randrange(2 * 365 * 1440))
        aware = local.replace(tzinfo=tz)
        if aware.astimezone(timefmt.UTC).astimezone(tz).replace(tzinfo=None) != local:
            continue  # (skipped by the spring change)
        instant = (aware - timefmt.EPOCH) // timefmt.MILLISECOND
        wall.append((local.replace(tzinfo=timefmt.UTC) - timefmt.EPOCH) // timefmt.MILLISECOND)
        if local_floor:
            hour = aware.replace(minute=0)
            true.append((hour - timefmt.EPOCH) // timefmt.MILLISECOND)
        else:
            true.append(instant - instant % 3_600_000)
    return wall, true


@pytest.mark.parametrize("zone", ["America/New_York", "Europe/Paris", "Australia/Sydney"])
def test_wall_times_and_their_instants_name_the_zone_with_its_clock_changes(zone):
    wall, true = _wall_and_true(zone)
    found = zones.compare(wall, true, ("parts", "time_hour"))
    assert isinstance(found, zones.Zoned) and found.zone == zone
    instants = [
        (dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=w)).replace(
            tzinfo=zoneinfo.ZoneInfo(zone)
        )
        for w in wall
    ]
    assert found.ms == [(i - timefmt.EPOCH) // timefmt.MILLISECOND for i in instants]
    assert "'time_hour' gives each record's instant" in found.why


@pytest.mark.parametrize("local_floor", [False, True])
def test_a_zone_of_half_hours_is_found_whichever_clock_floored_the_hour(local_floor):
    wall, true = _wall_and_true("Asia/Kolkata", local_floor=local_floor)
    found = zones.compare(wall, true, ("parts", "time_hour"))
    assert isinstance(found, zones.Zoned) and found.zone == "Asia/Kolkata"


def test_one_offset_all_along_is_a_fixed_zone_and_no_offset_needs_none():
    wall = [timefmt.day_ms("2013-01-01") + h * 3_600_000 for h in range(48)]
    assert zones.compare(wall, [w + 5 * 3_600_000 for w in wall], ("a", "b")).zone == "Etc/GMT+5"
    assert zones.compare(wall, wall, ("a", "b")).zone == "UTC"


def test_a_repeated_hour_held_at_both_its_instants_is_the_zone_s_but_said_apart():
    """01:00 of New York's autumn change written twice, once for each of its instants: the
    zone explains both, but no ``ambiguous:`` reads them, which ``both`` says."""
    first = dt.datetime(2013, 11, 3, 3, tzinfo=timefmt.UTC)
    instants = [first + dt.timedelta(hours=h) for h in range(6)]
    true = [(i - timefmt.EPOCH) // timefmt.MILLISECOND for i in instants]
    wall = [
        (i.astimezone(zoneinfo.ZoneInfo("America/New_York")).replace(tzinfo=timefmt.UTC)
         - timefmt.EPOCH) // timefmt.MILLISECOND
        for i in instants
    ]  # fmt: skip
    assert len(set(wall)) == len(wall) - 1  # (01:00 twice)
    found = zones.compare(wall, true, ("parts", "time_hour"))
    assert isinstance(found, zones.Zoned) and found.zone == "America/New_York"
    assert found.both and not found.ambiguous
    assert "only 'time_hour' tells apart" in found.why
    one_instant = zones.compare(wall[:3] + wall[4:], true[:3] + true[4:], ("parts", "time_hour"))
    assert not one_instant.both and one_instant.ambiguous == "earliest"


def test_finer_wall_times_that_cannot_tell_a_repeated_hour_apart_are_refused(tmp_path):
    """Departures to the minute, two of them at 01:30 of the autumn change, one at each of its
    instants: the minutes would be lost by keeping ``time_hour``, and no ``ambiguous:`` reads
    both, so init refuses naming the field to declare the event time."""
    new_york = zoneinfo.ZoneInfo("America/New_York")
    lines = ["year,month,day,hour,minute,time_hour,v"]
    first = dt.datetime(2013, 11, 2, 20, 30, tzinfo=timefmt.UTC)
    for i in range(12):
        instant = first + dt.timedelta(hours=i)
        local = instant.astimezone(new_york)
        hour = instant.replace(minute=0)
        lines.append(
            f"{local.year},{local.month},{local.day},{local.hour},{local.minute},"
            f"{hour:%Y-%m-%dT%H:%M:%SZ},{i}"
        )
    with pytest.raises(DraftError) as refused:
        draft([_write(tmp_path, "f.csv", lines)])
    text = str(refused.value)
    assert "America/New_York" in text and "repeat" in text
    assert "time: time_hour" in text


def test_two_different_times_of_an_event_are_not_checked_as_one():
    rng = random.Random(3)
    first = timefmt.day_ms("2013-01-01")
    start = [first + rng.randrange(10**9) // 60_000 * 60_000 for _ in range(50)]
    end = [s + rng.randrange(1, 500) * 60_000 for s in start]
    assert zones.compare(start, end, ("start", "end")) is None


def test_one_instant_no_zone_explains_is_refused_naming_both_fields(tmp_path):
    """Offsets of -5 h and -4 h that follow no zone's calendar: refused, not guessed."""
    lines = ["year,month,day,hour,minute,time_hour,v"]
    for i in range(40):
        day = dt.date(2013, 1, 1) + dt.timedelta(days=9 * i)
        utc = dt.datetime(day.year, day.month, day.day, 12, tzinfo=timefmt.UTC)
        utc += dt.timedelta(hours=4 + (i * 7919) % 2)  # -4 h or -5 h, by no calendar
        lines.append(f"{day.year},{day.month},{day.day},12,30,{utc:%Y-%m-%dT%H:%M:%SZ},{i}")
    with pytest.raises(DraftError) as refused:
        draft([_write(tmp_path, "f.csv", lines)])
    text = str(refused.value)
    assert "'year, month, day, hour, minute' and 'time_hour'" in text
    assert "no time zone's offsets explain" in text and "2013-01-01 12:30:00" in text


# -- refusals ----------------------------------------------------------------------------------


def test_a_column_of_mixed_formats_is_refused_naming_it_a_value_and_the_format(tmp_path):
    path = _write(tmp_path, "m.csv", ["date,v", "5-Jan-09,1", "6-Jan-09,2", "7 Jan 2009,3"])
    with pytest.raises(DraftError) as refused:
        draft([path])
    text = str(refused.value)
    assert "field 'date'" in text and "'7 Jan 2009'" in text
    assert "format: '%d-%b-%y'" in text and "no field reads as a time" not in text


def test_a_time_no_known_format_reads_is_refused_with_the_way_to_declare_it(tmp_path):
    path = _write(tmp_path, "u.csv", ["when,v", "t+1,1", "t+2,2"])
    with pytest.raises(DraftError, match=r"field 'when' .*'t\+1'.*format: \"PATTERN\""):
        draft([path])


# -- the job's side: a date and a time of day, to 24:00 ------------------------------------------


@pytest.mark.parametrize(
    ("date", "time", "expected"),
    [
        ("01/01/1988", "01:00", "1988-01-01T01:00:00.000000"),
        ("01/01/1988", "24:00", "1988-01-02T00:00:00.000000"),
        ("12/31/1988", "24:00", "1989-01-01T00:00:00.000000"),
        ("02/28/1988", "24:00:00", "1988-02-29T00:00:00.000000"),
    ],
)
def test_24_00_is_the_end_of_its_day(date, time, expected):
    parts = {"date": date, "time": time}
    assert made_time(parts, "at", compile_pattern("%m/%d/%Y")) == expected


@pytest.mark.parametrize("time", ["24:30", "24:00:01", "25:00"])
def test_past_24_00_is_no_time_of_day(time):
    with pytest.raises(InvalidEvent, match="'at'"):
        made_time({"date": "1988-01-01", "time": time}, "at")


def test_hour_24_is_the_next_midnight():
    parts = {"year": 2013, "month": 12, "day": 31, "hour": 24}
    assert made_time(parts, "t") == "2014-01-01T00:00:00.000000"


_MADE = """
dataset: d
event:
  time: at
  fields:
    Date: {type: text}
    Time: {type: text}
    v: {type: number}
    at: {type: time, from: {date: Date, time: Time}, FORMAT}
tables:
  - name: T
    pattern: TS-COLS
    families: [{name: m, max_versions: 1}]
    key: [{const: T}, {epoch_ms: at}]
    columns: [{family: m, qualifier: v, value: v}]
"""


def test_a_made_time_s_format_reads_its_date_part():
    schema = schema_lib.loads(_MADE.replace("FORMAT", 'format: "%m/%d/%Y"'), "s.yaml")
    (made,) = [f for f in schema.fields if f.name == "at"]
    assert made.date_format == "%m/%d/%Y" and made.sources == (("date", "Date"), ("time", "Time"))


def test_a_format_on_a_made_time_without_a_date_part_is_refused():
    text = _MADE.replace("date: Date, time: Time", "year: Date").replace("FORMAT", 'format: "%Y"')
    with pytest.raises(schema_lib.SchemaError, match="only for its date part"):
        schema_lib.loads(text, "s.yaml")


def test_a_pattern_the_guesser_proposes_is_drafted_when_the_job_s_parser_reads_every_value():
    pytest.importorskip("pandas")
    days = [dt.date(2009, 1, 5) + dt.timedelta(days=9 * i) for i in range(12)]
    guess = _guess([f"{d:%A}, {d:%B} {d.day}, {d.year}" for d in days])
    assert guess.format == "%A, %B %d, %Y"
    assert guess.ms == [timefmt.date_ms(d) for d in days]
