"""Times as people write them land whole from their untouched drafts (issue 57, item 3): each
file is written here, drafted by ``btts init``, landed by the generic job on the emulator (no
dead letter) and read back with ``btts query``: every record at the instant the test computes
on its own (the standard library's datetime and zoneinfo), with its value.

The shapes: ``5-Jan-09``, ``1991 Jul``, ``1970 Q1``, an ISO week, day numbers of a column named
``ordinal_date``, a TMY-like file whose ``Time (HH:MM)`` runs 01:00 … 24:00 beside its
``Date (MM/DD/YYYY)``, and a flights file whose scheduled wall-time parts are New York's while
``time_hour`` gives their UTC hour: every flight lands at its true instant.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from pathlib import Path

import pytest

from tests.support.jobs import draft_land_and_query

UTC = dt.timezone.utc
NEW_YORK = zoneinfo.ZoneInfo("America/New_York")


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _days(first: dt.date, count: int, step: int = 1) -> list[dt.date]:
    return [first + dt.timedelta(days=step * i) for i in range(count)]


def _midnights(days: list[dt.date]) -> list[str]:
    return [_iso(dt.datetime(d.year, d.month, d.day, tzinfo=UTC)) for d in days]


def _day_month_year() -> tuple[list[str], list[str]]:
    days = _days(dt.date(2009, 1, 5), 40, 3)
    return [f"{d.day}-{d:%b-%y}" for d in days], _midnights(days)


def _year_month() -> tuple[list[str], list[str]]:
    months = [(1991 + (6 + i) // 12, (6 + i) % 12 + 1) for i in range(30)]
    return [dt.date(y, m, 1).strftime("%Y %b") for y, m in months], [
        _iso(dt.datetime(y, m, 1, tzinfo=UTC)) for y, m in months
    ]


def _quarters() -> tuple[list[str], list[str]]:
    quarters = [(1970 + i // 4, i % 4 + 1) for i in range(24)]
    return [f"{y} Q{q}" for y, q in quarters], [
        _iso(dt.datetime(y, 3 * q - 2, 1, tzinfo=UTC)) for y, q in quarters
    ]


def _weeks() -> tuple[list[str], list[str]]:
    mondays = _days(dt.date(2019, 12, 30), 60, 7)
    written = [f"{m.isocalendar()[0]}-W{m.isocalendar()[1]:02d}" for m in mondays]
    return written, _midnights(mondays)


def _ordinals() -> tuple[list[str], list[str]]:
    days = _days(dt.date(2007, 11, 20), 25, 11)
    return [str(d.toordinal()) for d in days], _midnights(days)


# case → (the time column's name, its values, the instants they name)
ONE_COLUMN = {
    "day_month_year": ("date", _day_month_year),
    "year_month": ("period", _year_month),
    "quarters": ("quarter", _quarters),
    "iso_weeks": ("week", _weeks),
    "ordinal_days": ("ordinal_date", _ordinals),
}


def _land(tmp_path: Path, name: str, lines: list[str], capsys) -> tuple[dict, list[dict]]:
    """``btts init`` the file, land it on a fresh emulator instance (no dead letter), and read
    its table back as JSON records."""
    source = tmp_path / name
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return draft_land_and_query(source, tmp_path, capsys)


@pytest.mark.parametrize("case", sorted(ONE_COLUMN))
def test_a_time_column_as_people_write_it_lands_every_record_at_its_instant(
    case, bigtable_emulator, tmp_path, capsys
):
    column, make = ONE_COLUMN[case]
    written, instants = make()
    lines = [f"{column},reading"] + [f"{w},{i}.5" for i, w in enumerate(written)]
    drafted, back = _land(tmp_path, f"{case}.csv", lines, capsys)
    assert drafted["event"]["time"] == column
    got = sorted((r["time"], str(r["reading"])) for r in back)
    assert got == sorted((t, f"{i}.5") for i, t in enumerate(instants))


def test_a_tmy_file_whose_hours_run_to_24_00_lands_at_the_end_of_each_day(
    bigtable_emulator, tmp_path, capsys
):
    """01:00 … 24:00 for each day, 24:00 the next day's midnight (NOAA's and TMY's way), the
    date written month first."""
    lines = ["Date (MM/DD/YYYY),Time (HH:MM),GHI (W/m^2),Dry-bulb (C)"]
    expected = []
    for day in _days(dt.date(1988, 12, 30), 3):
        for hour in range(1, 25):
            reading = f"{hour / 4:.2f}"
            lines.append(f"{day:%m/%d/%Y},{hour:02d}:00,{hour * 10},{reading}")
            moment = dt.datetime(*day.timetuple()[:3], tzinfo=UTC) + dt.timedelta(hours=hour)
            expected.append((_iso(moment), reading))
    drafted, back = _land(tmp_path, "tmy.csv", lines, capsys)
    spec = drafted["event"]["fields"][drafted["event"]["time"]]
    assert spec["format"] == "%m/%d/%Y" and set(spec["from"]) == {"date", "time"}
    got = sorted((r["time"], str(r["Dry_bulb_C"])) for r in back)
    assert got == sorted(expected)
    assert ("1989-01-02T00:00:00.000Z", "6.00") in got  # 01/01/1989 24:00


def _flights() -> tuple[list[str], list[tuple[str, str]]]:
    """Scheduled departures in New York's wall time as parts, and ``time_hour``: the UTC hour
    of each (R's nycflights13 layout), across both clock changes of 2013, one flight in the
    repeated hour of 3 November (its time_hour says the earlier, daylight one)."""
    lines = ["year,month,day,hour,minute,carrier,flight,dep_delay,time_hour"]
    expected = []
    days = [*_days(dt.date(2013, 1, 1), 8, 45), dt.date(2013, 3, 10), dt.date(2013, 11, 3)]
    number = 0
    for day in days:
        for hour, minute in ((1, 30), (5, 15), (9, 59), (14, 0), (23, 45)):
            if day == dt.date(2013, 3, 10) and hour == 1:
                hour = 3  # (02:xx does not exist that day; 01:30 then 03:.. is fine too)
            number += 1
            local = dt.datetime(day.year, day.month, day.day, hour, minute, tzinfo=NEW_YORK)
            instant = local.astimezone(UTC)
            time_hour = instant.replace(minute=0).strftime("%Y-%m-%dT%H:%M:%SZ")
            lines.append(
                f"{day.year},{day.month},{day.day},{hour},{minute},UA,{number},{number % 7},"
                f"{time_hour}"
            )
            expected.append((_iso(instant), str(number)))
    return lines, expected


def test_flights_land_at_their_true_instants_not_their_wall_times_read_as_utc(
    bigtable_emulator, tmp_path, capsys
):
    lines, expected = _flights()
    drafted, back = _land(tmp_path, "flights.csv", lines, capsys)
    spec = drafted["event"]["fields"][drafted["event"]["time"]]
    assert spec["timezone"] == "America/New_York" and spec["ambiguous"] == "earliest"
    assert sorted((r["time"], str(r["flight"])) for r in back) == sorted(expected)
    for record in back:  # each lands in the hour time_hour names
        assert record["time"][:13] == record["time_hour"][:13]


def test_a_station_reporting_the_repeated_hour_twice_lands_both_at_their_instants(
    bigtable_emulator, tmp_path, capsys
):
    """nycflights13's weather layout: hourly readings as New York's wall-time parts beside
    ``time_hour``, the autumn change's 01:00 reported at both its instants. The parts cannot
    tell those two apart, so ``time_hour`` is drafted as the event time and both land."""
    lines = ["origin,year,month,day,hour,temp,time_hour"]
    expected = []
    start = dt.datetime(2013, 3, 9, 22, tzinfo=UTC) + dt.timedelta(hours=5)
    stops = [start + dt.timedelta(hours=h) for h in range(12)]
    autumn = dt.datetime(2013, 11, 3, 3, tzinfo=UTC)
    stops += [autumn + dt.timedelta(hours=h) for h in range(8)]
    for i, instant in enumerate(stops):
        local = instant.astimezone(NEW_YORK)
        time_hour = instant.strftime("%Y-%m-%dT%H:%M:%SZ")
        temp = f"{40 + i}.5"
        lines.append(f"EWR,{local.year},{local.month},{local.day},{local.hour},{temp},{time_hour}")
        expected.append((_iso(instant), temp))
    assert sum(",11,3,1," in line for line in lines) == 2  # (01:00 of 3 November, twice)
    drafted, back = _land(tmp_path, "weather.csv", lines, capsys)
    assert drafted["event"]["time"] == "time_hour"
    assert sorted((r["time"], str(r["temp"])) for r in back) == sorted(expected)
