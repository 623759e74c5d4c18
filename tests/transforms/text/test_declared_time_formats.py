"""Time formats people write: strptime patterns, epoch seconds and microseconds, a declared zone
for times without an offset, and the hours a daylight-saving change repeats or skips handled
explicitly (a dead letter by default, never a silent shift)."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest

from btts.query import engine
from pipelines import common
from tests.support.jobs import read_dead_letters, run_job, write_lines
from transforms import schema as sf
from transforms.builder import builder as generic
from transforms.errors import InvalidEvent
from transforms.text import timefmt
from transforms.text.events import Num, parse_csv_header, parse_csv_line

PARIS = zoneinfo.ZoneInfo("Europe/Paris")


def _ms(*args, tz=dt.timezone.utc) -> int:
    return int(dt.datetime(*args, tzinfo=tz).timestamp() * 1000)


@pytest.mark.parametrize(
    ("fmt", "zone", "text", "expected"),
    [
        ("%Y/%m/%d", None, "2012/01/01", _ms(2012, 1, 1)),
        ("%d/%m/%Y %H:%M", None, "31/12/2016 23:59", _ms(2016, 12, 31, 23, 59)),
        ("%d/%m/%Y %H:%M", PARIS, "26/07/2017 00:15", _ms(2017, 7, 26, 0, 15, tz=PARIS)),
        ("%Y-%m-%d %H:%M:%S%z", None, "2017-07-26 00:15:00+0200", _ms(2017, 7, 25, 22, 15)),
        ("auto", PARIS, "2017-07-26T00:15:00", _ms(2017, 7, 26, 0, 15, tz=PARIS)),
        ("auto", PARIS, "2017-07-26T00:15:00Z", _ms(2017, 7, 26, 0, 15)),
    ],
)
def test_declared_formats_and_zones_give_exact_epoch_ms(fmt, zone, text, expected):
    assert timefmt.make_parser(fmt, "t", zone)(text) == expected


def test_epoch_seconds_and_microseconds_as_well_as_milliseconds():
    assert timefmt.make_parser("epoch_s", "t")(Num("1426535612")) == 1426535612000
    assert timefmt.make_parser("epoch_s", "t")(Num("1426535612.045")) == 1426535612045
    assert timefmt.make_parser("epoch_ms", "t")(Num("1426535612045")) == 1426535612045
    assert timefmt.make_parser("epoch_us", "t")(Num("1426535612045999")) == 1426535612045
    with pytest.raises(InvalidEvent, match="expected epoch microseconds"):
        timefmt.make_parser("epoch_us", "t")(Num("1.5"))
    with pytest.raises(InvalidEvent, match="expected epoch seconds, got string"):
        timefmt.make_parser("epoch_s", "t")("1426535612")  # a JSON string, not a number


@pytest.mark.parametrize(
    ("value", "looks"),
    [
        (Num("1956"), "looks like a year; declare format: year"),
        (1956, "looks like a year; declare format: year"),
        ("2001", "looks like a year; declare format: year"),
        (Num("1426535612"), "looks like epoch seconds; declare format: epoch_s"),
        (Num("99999999999"), "looks like epoch seconds; declare format: epoch_s"),
        (Num("123456"), "too small to be epoch milliseconds; declare format: epoch_ms"),
        (Num("0"), "too small to be epoch milliseconds"),
    ],
)
def test_auto_never_guesses_epoch_milliseconds_for_a_number_that_is_not_plausibly_one(value, looks):
    """A JSON ``"year": 1956`` under ``format: auto`` once landed at 1970-01-01T00:00:01.956Z."""
    for parse in (timefmt.parse_event_time, timefmt.make_parser("auto", "t", PARIS)):
        with pytest.raises(InvalidEvent, match=looks):
            parse(value)
    assert timefmt.parse_event_time(Num("100000000000")) == 10**11  # 1973-03-03: plausible


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Num("2001"), _ms(2001, 1, 1)),
        ("2001", _ms(2001, 1, 1)),
        (" 2024 ", _ms(2024, 1, 1)),
        (2024, _ms(2024, 1, 1)),
    ],
)
def test_a_year_format_reads_numbers_and_text(value, expected):
    assert timefmt.make_parser("year", "y")(value) == expected
    assert timefmt.make_parser("year", "y", PARIS)(value) == expected - 3_600_000


@pytest.mark.parametrize("value", [Num("2001.5"), "20O1", "0", "12345", Num("-5"), None, True])
def test_a_year_format_refuses_what_is_not_a_year(value):
    with pytest.raises(InvalidEvent, match="expected a year such as 1956"):
        timefmt.make_parser("year", "y")(value)


def test_strptime_patterns_read_json_numbers_by_their_digits():
    assert timefmt.make_parser("%Y%m%d", "d")(Num("20240501")) == _ms(2024, 5, 1)
    assert timefmt.make_parser("%Y", "d")(Num("2024")) == _ms(2024, 1, 1)
    with pytest.raises(InvalidEvent, match="expected a time '%Y%m%d', got number"):
        timefmt.make_parser("%Y%m%d", "d")(Num("2024.5"))


def test_the_hours_a_dst_change_repeats_or_skips_are_never_shifted_silently():
    parse = timefmt.make_parser("%d/%m/%Y %H:%M", "t", PARIS)
    with pytest.raises(InvalidEvent, match="does not exist in Europe/Paris"):
        parse("26/03/2017 02:30")  # clocks jump from 02:00 to 03:00
    with pytest.raises(InvalidEvent, match=r"happens twice in Europe/Paris.*ambiguous"):
        parse("29/10/2017 02:30")  # 02:00-03:00 happens twice
    earliest = timefmt.make_parser("%d/%m/%Y %H:%M", "t", PARIS, "earliest")("29/10/2017 02:30")
    latest = timefmt.make_parser("%d/%m/%Y %H:%M", "t", PARIS, "latest")("29/10/2017 02:30")
    assert latest - earliest == 3_600_000
    assert earliest == _ms(2017, 10, 29, 0, 30)  # 02:30 CEST is 00:30 UTC


SEATTLE = """\
dataset: seattle_weather
event:
  time: date
  fields:
    date: {type: time, format: "%Y/%m/%d"}
    precipitation: number
    temp_max: number
    temp_min: number
    wind: number
    weather: {type: text, max_length: 32}
tables:
  - name: WEATHER
    pattern: TS-COLS
    families:
      - {name: w, max_versions: 1}
    key:
      - const: SEATTLE
      - {time: date, format: yyyymmdd}
    columns:
      - {family: w, qualifier: precipitation, value: precipitation}
      - {family: w, qualifier: temp_max, value: temp_max}
      - {family: w, qualifier: weather, value: weather}
"""


def test_the_schema_file_accepts_strptime_patterns_and_refuses_broken_ones():
    schema = sf.loads(SEATTLE)
    assert schema.fields[0].format == "%Y/%m/%d"
    with pytest.raises(sf.SchemaError, match=r":5: .*bad directive"):
        sf.loads(SEATTLE.replace("%Y/%m/%d", "%Y/%Q"))
    with pytest.raises(sf.SchemaError, match=r"unknown time zone 'Mars/Base'"):
        sf.loads(SEATTLE.replace('"%Y/%m/%d"', '"%Y/%m/%d", timezone: Mars/Base'))
    with pytest.raises(sf.SchemaError, match=r"ambiguous is one of error, earliest, latest"):
        sf.loads(SEATTLE.replace('"%Y/%m/%d"', '"%Y/%m/%d", ambiguous: later'))


def test_a_csv_with_slash_dates_lands_every_good_line(target, tmp_path):
    """The public Seattle weather CSV writes its dates 2012/01/01: with the format declared,
    every good line lands (read back from the emulator) and a bad date is a dead letter."""
    schema_path = tmp_path / "seattle.yaml"
    schema_path.write_text(SEATTLE)
    lines = [
        "date,precipitation,temp_max,temp_min,wind,weather",
        "2012/01/01,0.0,12.8,5.0,4.7,drizzle",
        "2012/01/02,10.9,10.6,2.8,4.5,rain",
        "2012-01-03,0.8,11.7,7.2,2.3,rain",  # not the declared format
    ]
    source = write_lines(tmp_path / "weather.csv", lines)
    dead = tmp_path / "dead" / "w"
    result = run_job("generic", target, source, dead, [f"--schema={schema_path}"])
    rows = engine.read_rows(target, "WEATHER", latest_only=True)
    assert [r.key for r in rows] == [b"SEATTLE#20120101", b"SEATTLE#20120102"]
    assert rows[1].latest()[("w", b"precipitation")] == b"10.9"
    assert rows[0].cells[0].timestamp_us == _ms(2012, 1, 1) * 1000
    (letter,) = read_dead_letters(dead)
    assert letter["reason"].startswith(
        "field 'date': '2012-01-03' does not match format %Y/%m/%d (declare the file's format"
    )
    assert result.counters["events_valid"] == 2


def test_a_declared_zone_labels_local_days_and_stamps_absolute_times():
    text = SEATTLE.replace(
        'date: {type: time, format: "%Y/%m/%d"}',
        'date: {type: time, format: "%Y/%m/%d %H:%M", timezone: America/Los_Angeles}',
    )
    build = generic.Builder(sf.loads(text))
    header = parse_csv_header("date,precipitation,temp_max,temp_min,wind,weather")
    record = parse_csv_line("2012/01/01 23:30,0.0,12.8,5.0,4.7,sun", header)
    (row,) = build(record)
    la = zoneinfo.ZoneInfo("America/Los_Angeles")
    assert row.cells[0].timestamp_us == _ms(2012, 1, 1, 23, 30, tz=la) * 1000
    assert row.key == b"SEATTLE#20120102"  # labels are UTC days unless the job says otherwise


def test_a_builtin_job_takes_the_same_choices_as_flags(target, tmp_path):
    """smart meters from a source writing local day/month/year times: --time_format and
    --input_timezone, with the zone's repeated hour a dead letter by default."""
    lines = [
        '{"meter_id": 987654, "timestamp": "26/07/2017 02:15", "reading": 13.45}',
        '{"meter_id": 987654, "timestamp": "29/10/2017 02:30", "reading": 1.5}',  # twice
    ]
    source = write_lines(tmp_path / "m.jsonl", lines)
    dead = tmp_path / "dead" / "m"
    flags = ["--time_format=timestamp=%d/%m/%Y %H:%M", "--input_timezone=Europe/Paris"]
    result = run_job("smart_meters", target, source, dead, flags)
    assert result.counters["events_valid"] == 1
    (row,) = engine.read_rows(target, "SENSOR", latest_only=True)
    assert row.key == b"0000987654#20170726"  # 02:15 in Paris is 00:15 UTC: UTC labels
    assert row.latest()[("METER", b"0015")] == b"13.45"
    (letter,) = read_dead_letters(dead)
    assert "happens twice in Europe/Paris" in letter["reason"]
    with pytest.raises(SystemExit, match="not a time field"):
        run_job("smart_meters", target, source, dead, ["--time_format=reading=epoch_s"])


DRIVING = """\
dataset: driving
event:
  time: year
  fields:
    year: {type: time, format: FORMAT}
    miles: number
tables:
  - name: DRIVING_TABLE
    pattern: TS-COLS
    families:
      - {name: d, max_versions: 1}
    key:
      - const: US
      - {time: year, format: yyyymm}
    columns:
      - {family: d, qualifier: miles, value: miles}
"""


@pytest.mark.parametrize("fmt", ["year", "auto"])
def test_integer_years_land_with_format_year_and_never_near_1970_without_it(target, tmp_path, fmt):
    """A JSON array of yearly statistics with ``"year": 2001``: with ``format: year`` each year
    lands at its 1 January; with ``auto`` every record is a dead letter saying to declare it."""
    schema_path = tmp_path / "driving.yaml"
    schema_path.write_text(DRIVING.replace("FORMAT", fmt).replace("TABLE", fmt.upper()))
    source = tmp_path / "driving.json"
    source.write_text('[{"year": 2001, "miles": 2.78}, {"year": 2002, "miles": 2.83}]')
    dead = tmp_path / "dead" / "d"
    if fmt == "year":
        run_job("generic", target, source, dead, [f"--schema={schema_path}"])
    else:  # nothing valid: the job fails, naming the reason
        with pytest.raises(common.JobFailed, match=r"no valid event.*looks like a year"):
            run_job("generic", target, source, dead, [f"--schema={schema_path}"])
    rows = engine.read_rows(target, f"DRIVING_{fmt.upper()}", latest_only=True)
    letters = read_dead_letters(dead)
    if fmt == "year":
        assert [r.key for r in rows] == [b"US#200101", b"US#200201"]
        assert rows[1].latest()[("d", b"miles")] == b"2.83"
        assert rows[0].cells[0].timestamp_us == _ms(2001, 1, 1) * 1000
        assert not letters
    else:
        assert rows == []
        assert [d["reason"] for d in letters] == [
            "field 'year': the number 2001 looks like a year; declare format: year",
            "field 'year': the number 2002 looks like a year; declare format: year",
        ]
