"""Garden temperatures (docs/patterns.md §5.6): tall day rows, short-wide month rows, or both."""

from __future__ import annotations

import json

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from btts import admin
from btts.query import engine
from pipelines import garden as garden_job
from tests.support.jobs import compiled, dump, read_dead_letters, run_job, write_lines
from transforms.errors import InvalidEvent
from transforms.mutations import Cell, RowMutation
from transforms.text import events

MARCH_1 = 1425168000000  # 2015-03-01T00:00:00Z
DAY = 86_400_000


def temp_line(garden_name="VEGGIEGARDEN", date="2015-03-01", temp="60.4") -> str:
    head = json.dumps({"garden": garden_name, "date": date})[:-1]
    return f'{head}, "temp": {temp}}}'


def rows_of(line: str, layout: str = "tall") -> list[RowMutation]:
    return compiled("garden", garden_job.LAYOUTS[layout])(events.parse_json_object(line))


def cells_of(rows: list[RowMutation], table: str) -> list[tuple]:
    return sorted(
        (r.key, c.family, c.qualifier, c.value, c.timestamp_us)
        for r in rows
        if r.table == table
        for c in r.cells
    )


# -- pure -------------------------------------------------------------------------------------


def test_each_layout_builds_its_rows():
    ts = (MARCH_1 + 30 * DAY) * 1000
    daily = RowMutation(
        "GARDEN_DAILY", b"VEGGIEGARDEN#20150331", (Cell("DAILY", b"TEMP", b"60.4", ts),)
    )
    monthly = RowMutation(
        "GARDEN_MONTHLY", b"VEGGIEGARDEN#201503", (Cell("TEMP", b"31", b"60.4", ts),)
    )
    line = temp_line(date="2015-03-31")
    assert rows_of(line) == [daily]
    assert rows_of(line, "month") == [monthly]
    assert rows_of(line, "both") == [daily, monthly]


def test_month_columns_are_unpadded_days_and_values_keep_their_text():
    (row,) = rows_of(temp_line(date="2015-03-01", temp="61.20"), "month")
    assert row.cells == (Cell("TEMP", b"1", b"61.20", MARCH_1 * 1000),)


def test_an_unknown_layout_is_refused(capsys):
    with pytest.raises(SystemExit):
        garden_job.run(["--input=x", "--garden_layout=wide"])
    assert "invalid choice: 'wide'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"garden": "G", "date": "2015-03-01"}', "missing field(s): temp"),
        (
            temp_line()[:-1] + ', "unit": "F"}',
            (
                "unexpected field(s): unit (declared: date, garden, temp; "
                "event.extra_fields: ignore drops the others)"
            ),
        ),
        (temp_line(temp='"60.4"'), "field 'temp': expected a number, got string"),
        (
            temp_line(date="2015-13-01"),
            "field 'date': '2015-13-01' is not a real date (month must be in 1..12)",
        ),
        (temp_line(date="01/03/2015"), "field 'date': '01/03/2015' is not a date YYYY-MM-DD"),
        (temp_line(garden_name="VEGGIE#GARDEN"), "field 'garden': contains the key delimiter '#'"),
        (
            temp_line(garden_name="VEGGIE\tGARDEN"),
            "field 'garden': contains a control or unprintable character",
        ),
    ],
)
def test_bad_records_are_refused_with_the_reason(line, reason):
    with pytest.raises(InvalidEvent) as err:
        rows_of(line, "both")
    assert str(err.value) == reason


def test_the_layout_flag_chooses_the_tables():
    def job(*argv):
        return garden_job.job_for(PipelineOptions(list(argv)))

    assert job().tables == ("GARDEN_DAILY",)
    assert job("--garden_layout=month").tables == ("GARDEN_MONTHLY",)
    assert job("--garden_layout=both").tables == ("GARDEN_DAILY", "GARDEN_MONTHLY")
    assert job("--garden_layout=month").builder(events.parse_json_object(temp_line())) == rows_of(
        temp_line(), "month"
    )


# -- the job on the emulator -----------------------------------------------------------------

MARCH = [
    temp_line(date=f"2015-03-{d:02d}", temp=t) for d, t in ((1, "60.4"), (2, "61.2"), (31, "60.4"))
]


def test_default_layout_writes_only_the_tall_table_and_dead_letters_bad_lines(target, tmp_path):
    bad = {
        temp_line(date="2015-02-29"): "field 'date': '2015-02-29' is not a real date "
        "(day is out of range for month)",
        temp_line(temp="null"): "field 'temp': expected a number, got null",
        '{"garden": "G", "date": "2015-03-01", "temp": 1, "t2": 2}': (
            "unexpected field(s): t2 (declared: date, garden, temp; "
            "event.extra_fields: ignore drops the others)"
        ),
    }
    lines = [MARCH[0], *bad, *MARCH[1:]]
    dead = tmp_path / "dead" / "garden"
    result = run_job("garden", target, write_lines(tmp_path / "in.jsonl", lines), dead)

    assert {d["raw"]: d["reason"] for d in read_dead_letters(dead)} == bad
    counts = result.counters
    assert counts["lines_read"] == len(lines) == counts["events_valid"] + counts["dead_letters"]
    assert (counts["events_valid"], counts["dead_letters"]) == (3, 3)
    assert (counts["rows_GARDEN_DAILY"], counts["cells_GARDEN_DAILY"]) == (3, 3)
    assert "rows_GARDEN_MONTHLY" not in counts
    with admin.Admin(target) as adm:
        assert adm.list_tables() == ["GARDEN_DAILY", "GARDEN_SERIES"]  # and its series index
    assert sorted(dump(target, "GARDEN_DAILY")) == cells_of(
        [r for line in MARCH for r in rows_of(line)], "GARDEN_DAILY"
    )


def test_month_layout_writes_one_wide_row_per_month(target, tmp_path):
    lines = [*MARCH, temp_line(date="2015-04-01", temp="58.0")]
    run_job(
        "garden",
        target,
        write_lines(tmp_path / "in.jsonl", lines),
        tmp_path / "dead",
        ["--garden_layout=month"],
    )
    with admin.Admin(target) as adm:
        assert adm.list_tables() == ["GARDEN_MONTHLY"]
    rows = engine.read_rows(target, "GARDEN_MONTHLY")
    assert [r.key for r in rows] == [b"VEGGIEGARDEN#201503", b"VEGGIEGARDEN#201504"]
    assert rows[0].latest() == {
        ("TEMP", b"1"): b"60.4",
        ("TEMP", b"2"): b"61.2",
        ("TEMP", b"31"): b"60.4",
    }
    assert sorted(dump(target, "GARDEN_MONTHLY")) == cells_of(
        [r for line in lines for r in rows_of(line, "month")], "GARDEN_MONTHLY"
    )


def test_csv_input_with_both_layouts_and_reruns_are_idempotent(target, tmp_path):
    csv_lines = [
        "date,garden,temp",
        "2015-03-01,VEGGIEGARDEN,60.4",
        "2015-03-31,VEGGIEGARDEN,60.40",
        "2015-03-31,VEGGIEGARDEN,warm",
    ]
    source = write_lines(tmp_path / "temps.csv", csv_lines)
    flags = ["--garden_layout=both"]
    result = run_job("garden", target, source, tmp_path / "dead1", flags)
    assert [d["reason"] for d in read_dead_letters(tmp_path / "dead1")] == [
        "field 'temp': expected a number, got CSV text"
    ]
    assert result.counters["rows_GARDEN_MONTHLY"] == 2
    want = rows_of(temp_line(date="2015-03-01"), "both") + rows_of(
        temp_line(date="2015-03-31", temp="60.40"), "both"
    )
    first = {t: dump(target, t) for t in ("GARDEN_DAILY", "GARDEN_MONTHLY")}
    for table, cells in first.items():
        assert sorted(cells) == cells_of(want, table)
    run_job("garden", target, source, tmp_path / "dead2", flags)
    assert {t: dump(target, t) for t in ("GARDEN_DAILY", "GARDEN_MONTHLY")} == first
