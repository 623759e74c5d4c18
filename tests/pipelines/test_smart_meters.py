"""Smart meters (docs/patterns.md §5.3): day rows with one HHMM column per reading, in UTC or a
zone."""

from __future__ import annotations

import json
import zoneinfo

import pytest

from btts import admin, config
from btts.query import engine
from tests.support.jobs import compiled, read_dead_letters, run_job, write_lines
from transforms.errors import InvalidEvent
from transforms.mutations import Cell, RowMutation
from transforms.text import events, timefmt

NEW_YORK = zoneinfo.ZoneInfo("America/New_York")
KOLKATA = zoneinfo.ZoneInfo("Asia/Kolkata")
T0 = 1501027200000  # 2017-07-26T00:00:00Z


def reading(meter_id=987654, timestamp="2017-07-26T00:15:00Z", value="13.45") -> str:
    return json.dumps({"meter_id": meter_id, "timestamp": timestamp, "reading": 0}).replace(
        '"reading": 0', f'"reading": {value}'
    )


def latest_dump(target: config.Target) -> list[tuple]:
    """Every column's newest cell. METER keeps one version; the emulator applies that GC rule
    lazily, so older versions of ``ID`` may or may not still be there."""
    return [
        (row.key, c.family, c.qualifier, c.value, c.timestamp_us)
        for row in engine.read_rows(target, "SENSOR", latest_only=True)
        for c in row.cells
    ]


def rows_of(line: str, tz=timefmt.UTC) -> list[RowMutation]:
    return compiled("smart_meters", tz=tz)(events.parse_json_object(line))


# -- pure -------------------------------------------------------------------------------------


def test_a_reading_is_a_column_of_its_meters_day_row():
    ts = (T0 + 15 * 60_000) * 1000
    assert rows_of(reading()) == [
        RowMutation(
            "SENSOR",
            b"0000987654#20170726",
            (Cell("METER", b"ID", b"987654", ts), Cell("METER", b"0015", b"13.45", ts)),
        )
    ]


def test_decimal_text_and_the_largest_meter_id_are_kept():
    (row,) = rows_of(reading(meter_id=9_999_999_999, timestamp=T0 + 86_399_999, value="28.90"))
    assert row.key == b"9999999999#20170726"
    assert row.cells == (
        Cell("METER", b"ID", b"9999999999", (T0 + 86_399_999) * 1000),
        Cell("METER", b"2359", b"28.90", (T0 + 86_399_999) * 1000),
    )


def test_the_day_and_the_column_follow_the_configured_zone():
    late = "2017-07-27T03:30:00Z"  # 23:30 on the 26th in New York (EDT, UTC-4)
    assert [(r.key, r.cells[1].qualifier) for r in rows_of(reading(timestamp=late))] == [
        (b"0000987654#20170727", b"0330")
    ]
    (row,) = rows_of(reading(timestamp=late), NEW_YORK)
    assert (row.key, row.cells[1].qualifier) == (b"0000987654#20170726", b"2330")
    assert row.cells[1].timestamp_us == 1501126200000 * 1000  # still the absolute event time
    # A half-hour offset: 20:00Z is 01:30 the next day in Kolkata (UTC+5:30).
    (row,) = rows_of(reading(timestamp="2017-07-26T20:00:00Z"), KOLKATA)
    assert (row.key, row.cells[1].qualifier) == (b"0000987654#20170727", b"0130")


def test_the_repeated_hour_of_a_dst_change_shares_columns_of_one_row():
    # 2017-11-05 in New York: 01:30 EDT (05:30Z) and, an hour later, 01:30 EST (06:30Z).
    first, second = (
        rows_of(reading(timestamp=t), NEW_YORK)[0]
        for t in ("2017-11-05T05:30:00Z", "2017-11-05T06:30:00Z")
    )
    assert first.key == second.key == b"0000987654#20171105"
    assert first.cells[1].qualifier == second.cells[1].qualifier == b"0130"
    # Distinct event times: the later reading is the newer version (METER keeps one).
    assert second.cells[1].timestamp_us - first.cells[1].timestamp_us == 3_600_000_000


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"meter_id": 1, "reading": 1.5}', "missing field(s): timestamp"),
        (
            '{"meter_id": 1, "timestamp": 0, "reading": 1.5, "unit": "kWh"}',
            (
                "unexpected field(s): unit (declared: meter_id, reading, timestamp; "
                "event.extra_fields: ignore drops the others)"
            ),
        ),
        (
            reading(meter_id=10_000_000_000),
            "field 'meter_id': 10000000000 is above its maximum 9999999999",
        ),
        (reading(meter_id=-1), "field 'meter_id': -1 is below its minimum 0"),
        (reading(meter_id="987654"), "field 'meter_id': expected an integer, got string '987654'"),
        (reading(meter_id=98.5), "field 'meter_id': expected an integer, got number '98.5'"),
        (reading(value='"high"'), "field 'reading': expected a number, got string"),
        (reading(value="null"), "field 'reading': expected a number, got null"),
        (
            reading(timestamp="2017-07-26"),
            "field 'timestamp': time '2017-07-26' has no UTC offset (add 'Z')",
        ),
        (reading(timestamp="soon"), "field 'timestamp': not an RFC 3339 time: 'soon'"),
    ],
)
def test_bad_readings_are_refused_with_the_reason(line, reason):
    with pytest.raises(InvalidEvent) as err:
        rows_of(line)
    assert str(err.value) == reason


# -- the job on the emulator -----------------------------------------------------------------


def test_job_appends_readings_and_dead_letters_bad_lines(target, tmp_path):
    good = [
        reading(timestamp="2017-07-26T00:00:00Z", value="12.34"),
        reading(timestamp="2017-07-26T00:15:00Z", value="13.45"),
        reading(meter_id=42, timestamp="2017-07-26T00:15:00Z", value="0.50"),
        reading(timestamp="2017-07-27T00:00:00Z", value="1.00"),
    ]
    bad = {
        reading(
            meter_id=12_345_678_901
        ): "field 'meter_id': 12345678901 is above its maximum 9999999999",
        reading(value='"n/a"'): "field 'reading': expected a number, got string",
        '{"meter_id": 1}': "missing field(s): timestamp, reading",
        "[1, 2]": "expected a JSON object, got array",
    }
    lines = [good[0], *bad, *good[1:]]
    dead = tmp_path / "dead" / "sm"
    result = run_job("smart_meters", target, write_lines(tmp_path / "in.jsonl", lines), dead)

    assert {d["raw"]: d["reason"] for d in read_dead_letters(dead)} == bad
    counts = result.counters
    assert counts["lines_read"] == len(lines) == counts["events_valid"] + counts["dead_letters"]
    assert (counts["events_valid"], counts["dead_letters"]) == (4, 4)
    assert (counts["rows_SENSOR"], counts["cells_SENSOR"]) == (4, 8)

    latest = {r.key: r.latest() for r in engine.read_rows(target, "SENSOR", latest_only=True)}
    assert latest == {
        b"0000000042#20170726": {("METER", b"ID"): b"42", ("METER", b"0015"): b"0.50"},
        b"0000987654#20170726": {
            ("METER", b"ID"): b"987654",
            ("METER", b"0000"): b"12.34",
            ("METER", b"0015"): b"13.45",
        },
        b"0000987654#20170727": {("METER", b"ID"): b"987654", ("METER", b"0000"): b"1.00"},
    }
    families = admin.Admin(target).get_families("SENSOR")
    assert families["METER"].gc_rule.max_num_versions == 1


def test_job_uses_the_timezone_flag(target, tmp_path):
    lines = [
        reading(timestamp="2017-07-26T04:00:00Z", value="1.0"),  # 00:00 EDT on the 26th
        reading(timestamp="2017-07-27T03:45:00Z", value="2.0"),  # 23:45 EDT on the 26th
        reading(timestamp="2017-07-27T04:00:00Z", value="3.0"),  # 00:00 EDT on the 27th
    ]
    run_job(
        "smart_meters",
        target,
        write_lines(tmp_path / "in.jsonl", lines),
        tmp_path / "dead",
        ["--timezone=America/New_York"],
    )
    ms = [1501041600000, 1501127100000, 1501128000000]
    assert sorted(latest_dump(target)) == [
        (b"0000987654#20170726", "METER", b"0000", b"1.0", ms[0] * 1000),
        (b"0000987654#20170726", "METER", b"2345", b"2.0", ms[1] * 1000),
        (b"0000987654#20170726", "METER", b"ID", b"987654", ms[1] * 1000),
        (b"0000987654#20170727", "METER", b"0000", b"3.0", ms[2] * 1000),
        (b"0000987654#20170727", "METER", b"ID", b"987654", ms[2] * 1000),
    ]


def test_an_unknown_timezone_stops_the_job_before_it_runs(target, tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [reading()])
    with pytest.raises(SystemExit) as err:
        run_job("smart_meters", target, source, tmp_path / "dead", ["--timezone=Mars/Olympus"])
    assert str(err.value) == (
        "smart_meters: error: unknown time zone 'Mars/Olympus' (use an IANA name)"
    )


def test_csv_input_lands_the_same_cells_and_reruns_are_idempotent(target, tmp_path):
    csv_lines = [
        "timestamp,meter_id,reading",
        "2017-07-26T23:30:00Z,987654,27.89",
        "1501112700000,987654,28.90",
        "2017-07-26T23:30:00Z,98765x,1",
    ]
    source = write_lines(tmp_path / "readings.csv", csv_lines)
    result = run_job("smart_meters", target, source, tmp_path / "dead1")
    assert [d["reason"] for d in read_dead_letters(tmp_path / "dead1")] == [
        "field 'meter_id': expected an integer, got CSV text '98765x'"
    ]
    assert result.counters["events_valid"] == 2
    first = latest_dump(target)
    ts1, ts2 = 1501111800000 * 1000, 1501112700000 * 1000
    assert sorted(first) == [
        (b"0000987654#20170726", "METER", b"2330", b"27.89", ts1),
        (b"0000987654#20170726", "METER", b"2345", b"28.90", ts2),
        (b"0000987654#20170726", "METER", b"ID", b"987654", ts2),
    ]
    run_job("smart_meters", target, source, tmp_path / "dead2")
    assert latest_dump(target) == first
