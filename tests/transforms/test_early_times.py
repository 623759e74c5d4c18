"""Times before 1970 (docs/user-guide.md "Times and their formats"): a field declares how early
its times may be, calendar-label keys hold them as they are, epoch keys are refused by the
checker, and a table stamps its cells as microseconds since year 1 (cell_timestamp: offset),
which every read undoes."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from btts.query import engine
from btts.query import records as query_records
from btts_cli import main as cli
from tests.support.jobs import dump, read_dead_letters, run_job
from transforms import schema as schema_file
from transforms.builder import builder as generic
from transforms.errors import InvalidEvent
from transforms.table_model import CELL_TIMESTAMPS, cell_micros, event_ms
from transforms.text import timefmt
from transforms.text.events import Num, parse_json_object


def _ms(*ymd: int) -> int:
    moment = dt.datetime(*ymd, tzinfo=dt.timezone.utc)
    return (moment - timefmt.EPOCH) // timefmt.MILLISECOND


# -- parsing ------------------------------------------------------------------------------------

EARLY = timefmt.day_ms("1850-01-01")


@pytest.mark.parametrize(
    ("fmt", "value", "expected"),
    [
        ("%Y-%m", "1854-04", _ms(1854, 4, 1)),
        ("date", "1854-04-01", _ms(1854, 4, 1)),
        ("year", Num("1856"), _ms(1856, 1, 1)),
        ("year", "1856", _ms(1856, 1, 1)),
        ("auto", "1855-01-31T12:00:00Z", _ms(1855, 1, 31, 12)),
        ("rfc3339", "1855-01-31T12:00:00+01:00", _ms(1855, 1, 31, 11)),
        ("epoch_ms", Num("-3786825600000"), _ms(1850, 1, 1)),
        ("epoch_s", Num("-3786825599.5"), _ms(1850, 1, 1) + 500),
        ("epoch_us", Num("-1500"), -2),  # floored, as a positive time is
        ("auto", Num("-3786825600000"), _ms(1850, 1, 1)),
        ("yyyymmddhhmmssmmm", "18540401000000000", _ms(1854, 4, 1)),
    ],
)
def test_every_format_reads_times_back_to_the_fields_earliest(fmt, value, expected):
    assert timefmt.make_parser(fmt, "t", earliest=EARLY)(value) == expected


@pytest.mark.parametrize("fmt", ["date", "%Y-%m-%d", "auto", "rfc3339"])
def test_a_time_before_the_fields_earliest_is_refused_with_the_advice(fmt):
    parse = timefmt.make_parser(fmt, "t", earliest=EARLY, advice="; declare {earliest} here")
    with pytest.raises(InvalidEvent) as err:
        parse("1849-12-31" if fmt in ("date", "%Y-%m-%d") else "1849-12-31T00:00:00Z")
    assert str(err.value).endswith("is outside 1850-01-01..2286-11-20; declare 1849-01-01 here")


def test_without_earliest_the_1970_rule_and_its_message_are_unchanged():
    with pytest.raises(InvalidEvent, match=r"'1969-12-31' is outside 1970-01-01\.\.2286-11-20\Z"):
        timefmt.make_parser("date", "date")("1969-12-31")
    with pytest.raises(InvalidEvent, match="expected epoch milliseconds, got number"):
        timefmt.make_parser("epoch_ms", "t")(Num("-1"))  # no era declared: as before
    with pytest.raises(InvalidEvent, match="looks like a year; declare format: year"):
        timefmt.parse_event_time(Num("1956"), "year")  # auto never lands 1956 near 1970


def test_auto_refuses_a_small_negative_number_even_with_an_early_earliest():
    with pytest.raises(InvalidEvent, match="too close to 1970 to be epoch milliseconds"):
        timefmt.parse_event_time(Num("-1956"), "t", EARLY)


# -- cell timestamps ----------------------------------------------------------------------------


@pytest.mark.parametrize("ms", [timefmt.MIN_EPOCH_MS, _ms(1854, 4, 1), -1, 0, timefmt.MAX_EPOCH_MS])
def test_offset_cell_timestamps_are_positive_and_read_back_exactly(ms):
    micros = cell_micros(ms, "offset")
    assert micros > 0  # Bigtable keeps cell timestamps > 0
    assert micros % 1000 == 0  # Bigtable's millisecond granularity
    assert event_ms(micros, "offset") == ms
    if ms >= 0:
        assert cell_micros(ms, "unix") == ms * 1000 and event_ms(ms * 1000, "unix") == ms
    assert set(CELL_TIMESTAMPS) == {"unix", "offset"}


def test_offset_stamps_keep_time_order():
    times = [timefmt.MIN_EPOCH_MS, _ms(1854, 4, 1), _ms(1969, 12, 31), 0, _ms(2024, 1, 1)]
    stamps = [cell_micros(ms, "offset") for ms in times]
    assert stamps == sorted(stamps)


# -- a schema of the 1850s, end to end ----------------------------------------------------------

CRIMEA = """\
dataset: crimean_war
doc: Deaths in the British army in the East, by month (April 1854 to March 1856).
event:
  time: month
  fields:
    month: {type: time, format: "%Y-%m", earliest: 1854-01-01}
    army: integer
    disease: integer
    wounds: integer
    other: integer
tables:
  - name: DEATHS
    pattern: TS-COLS
    cell_timestamp: offset
    families:
      - {name: d, max_versions: 1}
    key:
      - const: CRIMEA
      - {time: month, format: yyyymm}
    columns:
      - {family: d, qualifier: army, value: army}
      - {family: d, qualifier: disease, value: disease}
      - {family: d, qualifier: wounds, value: wounds}
      - {family: d, qualifier: other, value: other}
"""

MONTHS = [(1854 + (3 + i) // 12, (3 + i) % 12 + 1) for i in range(24)]  # 1854-04 … 1856-03


def _deaths() -> list[dict]:
    return [
        {"month": f"{y}-{m:02d}", "army": 28000 + 700 * i, "disease": 1 + 97 * i % 2700,
         "wounds": 13 * i % 300, "other": 7 * i % 400}
        for i, (y, m) in enumerate(MONTHS)
    ]  # fmt: skip


def _event(record: dict) -> dict:
    """A record as the readers decode it (numbers keep their text)."""
    return parse_json_object(json.dumps(record))


def _schema(text: str = CRIMEA, tmp_path=None):
    if tmp_path is None:
        return schema_file.loads(text, "crimea.yaml")
    path = tmp_path / "crimea.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_builder_keys_1850s_months_by_label_and_stamps_them_after_year_one():
    builder = generic.Builder(_schema())
    (row,) = builder(_event(_deaths()[0]))
    assert row.table == "DEATHS" and row.key == b"CRIMEA#185404"
    stamp = row.cells[0].timestamp_us
    assert stamp == (_ms(1854, 4, 1) - timefmt.YEAR_ONE_MS) * 1000 > 0
    assert {c.timestamp_us for c in row.cells} == {stamp}
    assert [c.value for c in row.cells] == [b"28000", b"1", b"0", b"0"]


def test_the_same_schema_without_earliest_dead_letters_with_what_to_declare():
    text = CRIMEA.replace(", earliest: 1854-01-01", "").replace("    cell_timestamp: offset\n", "")
    builder = generic.Builder(_schema(text))
    with pytest.raises(InvalidEvent) as err:
        builder(_event(_deaths()[0]))
    assert str(err.value) == (
        "field 'month': '1854-04' is outside 1970-01-01..2286-11-20; declare earliest: "
        "1854-01-01 (or earlier) on field 'month', and cell_timestamp: offset on table DEATHS, "
        "to land older times"
    )


def test_a_time_before_the_declared_earliest_says_to_declare_an_earlier_one():
    builder = generic.Builder(_schema())
    with pytest.raises(InvalidEvent) as err:
        builder(_event({**_deaths()[0], "month": "1853-12"}))
    assert str(err.value) == (
        "field 'month': '1853-12' is outside 1854-01-01..2286-11-20; declare an earlier "
        "earliest (1853-01-01 or before) on field 'month'"
    )


def test_integer_years_land_with_format_year():
    text = """\
dataset: driving
event:
  time: year
  fields:
    year: {type: time, format: year, earliest: 1900-01-01}
    miles: integer
tables:
  - name: MILES
    pattern: TS-COLS
    cell_timestamp: offset
    families: [{name: m, max_versions: 1}]
    key: [{const: US}, {time: year, format: yyyymmdd}]
    columns: [{family: m, qualifier: miles, value: miles}]
"""
    builder = generic.Builder(schema_file.loads(text, "driving.yaml"))
    (row,) = builder(_event({"year": 1956, "miles": 627843}))
    assert row.key == b"US#19560101"
    assert event_ms(row.cells[0].timestamp_us, "offset") == _ms(1956, 1, 1)


def test_crimean_months_land_and_read_back_with_their_true_dates(target, tmp_path, capsys):
    schema_path = _schema(CRIMEA, tmp_path)
    source = tmp_path / "deaths.json"
    source.write_text(json.dumps(_deaths(), indent=1), encoding="utf-8")  # one JSON array
    where = ["--project", target.project, "--instance", target.instance]
    assert cli.main(["tables", "create", "--schema", str(schema_path), *where]) == 0
    result = run_job("generic", target, source, tmp_path / "dead", [f"--schema={schema_path}"])
    assert read_dead_letters(tmp_path / "dead") == []
    del result
    capsys.readouterr()

    cells = dump(target, "DEATHS")
    assert len(cells) == 24 * 4
    assert all(stamp > 0 for *_, stamp in cells)  # Bigtable keeps cell timestamps > 0
    assert sorted({key for key, *_ in cells})[0] == b"CRIMEA#185404"

    # the query engine: records stamped with their true times, in key (= time) order
    schema = schema_file.load(schema_path)
    query = engine.table_query(schema, "DEATHS", {})
    rows = engine.run(target, query)
    records = query_records.decode_table(schema, "DEATHS", [rows])
    assert [r["ts_ms"] for r in records] == [_ms(y, m, 1) for y, m in MONTHS]
    assert records[0]["army"] == 28000 and records[-1]["army"] == 28000 + 700 * 23

    # a time window before 1970: the key range and the cell-timestamp filter both convert
    window = engine.table_query(schema, "DEATHS", {}, _ms(1855, 1, 1), _ms(1855, 4, 1))
    assert window.scans[0].cell_window()[0] > 0
    got = query_records.decode_table(schema, "DEATHS", [engine.run(target, window)])
    assert [r["ts_ms"] for r in got] == [_ms(1855, 1, 1), _ms(1855, 2, 1), _ms(1855, 3, 1)]

    # btts query --schema F --table T: the true dates, decoded and raw
    code = cli.main(
        ["query", "--schema", str(schema_path), "--table", "DEATHS", "--start", "1855-01-01",
         "--end", "1855-03-01", "--format", "json", *where]
    )  # fmt: skip
    printed = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [r["time"] for r in printed] == ["1855-01-01T00:00:00.000Z", "1855-02-01T00:00:00.000Z"]
    assert printed[0]["disease"] == 1 + 97 * 9 % 2700
    code = cli.main(
        ["query", "--schema", str(schema_path), "--table", "DEATHS", "--raw", "--limit", "1",
         "--format", "json", *where]
    )  # fmt: skip
    (raw,) = json.loads(capsys.readouterr().out)
    assert code == 0
    assert raw["key"] == "CRIMEA#185404"
    assert {c["timestamp_ms"] for c in raw["cells"]} == {_ms(1854, 4, 1)}


# -- the checker's refusals ---------------------------------------------------------------------

EPOCH_KEYED = """\
dataset: old_ticks
event:
  time: t
  fields:
    t: {type: time, earliest: 1900-01-01}
    v: number
tables:
  - name: TICK
    pattern: TS-COLS
    cell_timestamp: offset
    families: [{name: f, max_versions: 1}]
    key:
      - const: X
      - epoch_ms: t
    columns: [{family: f, qualifier: v, value: v}]
"""


def _problems(text: str) -> list[tuple[int, str]]:
    with pytest.raises(schema_file.SchemaError) as err:
        schema_file.loads(text, "old.yaml")
    return err.value.problems


def test_an_epoch_key_of_a_field_with_early_times_is_refused_with_the_way_out():
    assert _problems(EPOCH_KEYED) == [
        (
            14,
            "table TICK: key segment epoch_ms: t declares earliest: 1900-01-01, but epoch_ms "
            "digits count from 1970 and hold no earlier time; key the table by a calendar label "
            "instead ({time: t, format: yyyymmdd}, or yyyymm, day, hour…), which holds any year",
        )
    ]
    reversed_key = EPOCH_KEYED.replace("- epoch_ms: t", "- {reverse_ts: t, bucket: day}")
    ((line, message),) = _problems(reversed_key)
    assert line == 14 and message.startswith("table TICK: key segment reverse_ts: t declares")
    calendar = EPOCH_KEYED.replace("- epoch_ms: t", "- {time: t, format: day}")
    assert schema_file.loads(calendar).table("TICK").decl.cell_timestamp == "offset"


def test_a_table_stamped_with_early_times_must_declare_offset_cell_timestamps():
    assert _problems(CRIMEA.replace("    cell_timestamp: offset\n", "")) == [
        (
            12,
            "table DEATHS: its cells are stamped with field 'month', which declares earliest: "
            "1854-01-01, but Bigtable keeps cell timestamps after 1970; declare cell_timestamp: "
            "offset (microseconds since 0001-01-01; every read gives the true time)",
        )
    ]


@pytest.mark.parametrize(
    ("change", "line", "message"),
    [
        (("earliest: 1854-01-01", "earliest: 1854-13-01"), 6,
         "'1854-13-01' is not a real date (month must be in 1..12)"),
        (("earliest: 1854-01-01", "earliest: '1854-02-30'"), 6,
         "field 'month': earliest '1854-02-30' is not a day YYYY-MM-DD (e.g. 1850-01-01)"),
        (("earliest: 1854-01-01", "earliest: 0001-01-01"), 6,
         "field 'month': earliest is a day from 0001-01-02 on, not 0001-01-01"),
        (("earliest: 1854-01-01", "earliest: 1854"), 6,
         "field 'month': earliest is a day YYYY-MM-DD, got int"),
        (("army: integer", "army: {type: integer, earliest: 1854-01-01}"), 7,
         "field 'army': 'earliest' applies to time fields"),
        (("cell_timestamp: offset", "cell_timestamp: epoch"), 14,
         "table DEATHS: cell_timestamp is one of unix, offset (default: unix; offset holds "
         "times before 1970)"),
    ],
)  # fmt: skip
def test_bad_era_declarations_are_refused_with_their_lines(change, line, message):
    assert (line, message) in _problems(CRIMEA.replace(*change))


def test_a_later_earliest_narrows_the_range_and_needs_no_offset():
    text = CRIMEA.replace("earliest: 1854-01-01", "earliest: 2000-01-01")
    text = text.replace("    cell_timestamp: offset\n", "").replace('"%Y-%m"', "date")
    builder = generic.Builder(schema_file.loads(text))
    with pytest.raises(InvalidEvent, match=r"'1999-12-31' is outside 2000-01-01\.\.2286-11-20"):
        builder(_event({**_deaths()[0], "month": "1999-12-31"}))


def test_a_jobs_time_flags_keep_the_fields_earliest():
    changed = schema_file.with_times(_schema(), {"month": "%Y/%m"})
    (month,) = [f for f in changed.fields if f.name == "month"]
    assert (month.format, month.earliest) == ("%Y/%m", "1854-01-01")


# -- the summary's warning when the landed times look misread ---------------------------------

YEARS_AS_MS = """\
dataset: driving_ms
event:
  time: year
  fields:
    year: {type: time, format: epoch_ms}
    miles: integer
tables:
  - name: MILES
    pattern: TS-COLS
    families: [{name: m, max_versions: 1}]
    key: [{const: US}, {epoch_ms: year}]
    columns: [{family: m, qualifier: miles, value: miles}]
"""


def test_span_warning_names_identical_times_and_times_within_a_day_of_1970():
    assert "all 3 valid events have the same time, 2015-03-01" in timefmt.span_warning(
        _ms(2015, 3, 1), _ms(2015, 3, 1), 3
    )
    assert "within a day of 1970-01-01" in timefmt.span_warning(1956, 1999, 44)
    assert timefmt.span_warning(_ms(1854, 4, 1), _ms(1856, 3, 1), 24) == ""
    assert timefmt.span_warning(_ms(2015, 3, 1), _ms(2015, 3, 1), 1) == ""  # one event: a time


def test_check_warns_when_years_were_read_as_epoch_milliseconds(tmp_path, capsys):
    schema_path = tmp_path / "driving.yaml"
    schema_path.write_text(YEARS_AS_MS, encoding="utf-8")
    source = tmp_path / "driving.jsonl"
    source.write_text("".join(f'{{"year": {y}, "miles": {y * 3}}}\n' for y in range(1956, 2000)))
    code = cli.main(["check", "--schema", str(schema_path), f"--input={source}"])
    out = capsys.readouterr().out
    assert code == 0
    assert (
        "warning: every event time is within a day of 1970-01-01 (1970-01-01T00:00:01.956Z .. "
        "1970-01-01T00:00:01.999Z): numbers read as epoch milliseconds? declare the time "
        "field's format (year, epoch_s, …)"
    ) in out
