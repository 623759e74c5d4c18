"""The drafting library under ``btts init`` (btts/draft/), on small made-up files: time formats
found and read exactly, wide files, entity fields, the key the rate calls for, the questions,
the bounded sample and the command's exits. The public datasets are
tests/btts/draft/test_drafts_of_public_files.py's."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from btts.draft import draft, review
from btts.draft import sample as sample_mod
from btts.draft.fields import infer_columns
from btts.draft.sample import DraftError
from btts.draft.times import TEXT_FORMATS, guess_times
from btts_cli import main as cli
from transforms import schema as schema_lib
from transforms.text import timefmt, timepatterns
from transforms.text.events import CsvText, Num


def _csv(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def _keys(text: str) -> list[tuple[str, str]]:
    schema = schema_lib.loads(text, "draft.yaml")
    (table,) = schema.decls().values()
    return [(s.kind, s.field) for s in table.key.segments]


# -- times -----------------------------------------------------------------------------------

_WRITTEN = [f for f in TEXT_FORMATS if "%" in f and "%f" not in f]


@settings(max_examples=60, deadline=None)
@given(
    fmt=st.sampled_from(_WRITTEN),
    moments=st.lists(
        st.datetimes(dt.datetime(1700, 1, 1), dt.datetime(2200, 1, 1)), min_size=3, max_size=12
    ),
)
def test_a_time_written_in_any_known_pattern_is_found_and_read_back_exactly(fmt, moments):
    """Whatever pattern wrote the times, the guess reads each one to the instant the pattern
    kept (day-first and month-first may both read a day ≤ 12: then either is exact)."""
    records = [{"when": CsvText(timepatterns.write(m, fmt)), "v": CsvText("1")} for m in moments]
    (guess, *_) = guess_times(infer_columns(records), records)
    assert guess.field == "when"
    read = timepatterns.compile_pattern(fmt)
    written = [read(timepatterns.write(m, fmt)) for m in moments]
    expected = [timefmt.local_to_ms(w, timefmt.UTC, "t", earliest=timefmt.MIN_EPOCH_MS)
                for w in written]  # fmt: skip
    same = guess.format.replace("%B", "%b") == fmt.replace("%B", "%b")  # (May is both)
    if not same:  # every day ≤ 12: read both ways, the other way is the question's
        swapped = fmt[3:5] + fmt[2] + fmt[:2] + fmt[5:]  # %d/%m ↔ %m/%d, any separator
        assert guess.format == swapped and fmt in guess.alternatives
        return
    assert guess.ms == expected


@pytest.mark.parametrize(
    ("values", "fmt"),
    [
        ([Num("1956"), Num("1957")], "year"),
        ([Num("1956.0"), Num("1957.0")], "year"),  # integral floats: issue 43 reads them
        (["1565", "1570"], "year"),
        ([Num("1426535612"), Num("1426535613.5")], "epoch_s"),
        ([Num("1426535612045"), Num("1426535612046")], "epoch_ms"),
        ([Num("1426535612045123"), Num("1426535612046999")], "epoch_us"),
        ([Num("19580329"), Num("19580405")], "%Y%m%d"),
        (["2015-03-16T19:53:32.045Z", "2015-03-16T19:53:33+01:00"], "rfc3339"),
    ],
)
def test_numbers_and_text_read_as_the_time_their_range_says(values, fmt):
    records = [{"time": v, "x": Num(str(i))} for i, v in enumerate(values)]
    (guess, *_) = guess_times(infer_columns(records), records)
    assert (guess.field, guess.format) == ("time", fmt)


def test_a_count_in_the_epoch_range_is_not_taken_for_a_time():
    records = [{"population": Num(str(10**9 + i)), "day": "2024-05-0" + str(i + 1)}
               for i in range(3)]  # fmt: skip
    assert [g.field for g in guess_times(infer_columns(records), records)] == ["day"]


def test_a_year_and_a_quarter_make_one_derived_time(tmp_path):
    path = _csv(tmp_path / "gdp.csv", "year,quarter,gdp", ["1959,1,2710.3", "1959,2,2778.8"])
    result = draft([str(path)])
    assert result.schema.time == "period"
    assert result.schema.fields["period"].value == {
        "type": "time", "from": {"year": "year", "quarter": "quarter"},
        "earliest": "1959-01-01",
    }  # fmt: skip
    assert review(result.text)[0] is None  # the loader takes the derived time


def test_day_first_or_month_first_is_a_question_only_when_someone_can_answer(tmp_path):
    path = _csv(tmp_path / "d.csv", "date,v", ["03/04/2020,1", "05/06/2020,2"])
    quiet = draft([str(path)])
    assert quiet.schema.fields["date"].value["format"] == "%d/%m/%Y"
    assert "Took %d/%m/%Y" in quiet.text  # the file says what was assumed, and the other way
    asked = []
    answered = draft([str(path)], ask=lambda q: asked.append(q.options) or 1)
    assert asked == [["%d/%m/%Y", "%m/%d/%Y"]]
    assert answered.schema.fields["date"].value["format"] == "%m/%d/%Y"


# -- shape and key ---------------------------------------------------------------------------


def test_the_entity_that_tells_records_apart_leads_the_key(tmp_path):
    rows = [f"{s},2024-05-0{d},{d}.5,{'up' if d % 2 else 'down'}" for s in "AB" for d in (1, 2)]
    path = _csv(tmp_path / "p.csv", "symbol,date,price,trend", rows)
    text = draft([str(path)]).text
    assert _keys(text) == [("text", "symbol"), ("epoch_ms", "date")]
    assert "{name: series, table: P, select: [symbol]}" in text


def test_query_fields_lead_the_key_in_the_order_given(tmp_path):
    rows = [f"{e},{s},2024-05-0{d},1" for e in ("NYSE", "LSE") for s in "AB" for d in (1, 2)]
    path = _csv(tmp_path / "q.csv", "exchange,symbol,date,v", rows)
    assert _keys(draft([str(path)], query=["symbol", "exchange"]).text)[:2] == [
        ("text", "symbol"),
        ("text", "exchange"),
    ]
    with pytest.raises(DraftError, match="--query sym: no such field"):
        draft([str(path)], query=["sym"])


def test_an_integer_the_query_selects_is_zero_padded_in_the_key(tmp_path):
    rows = [f"{m},{1714557600000 + i},{i}" for m in (7, 987654) for i in range(3)]
    path = _csv(tmp_path / "meters.csv", "meter,ts,kwh", rows)
    text = draft([str(path)], query=["meter"]).text
    assert _keys(text) == [("zero_pad", "meter"), ("epoch_ms", "ts")]
    assert "{zero_pad: meter, width: 6}" in text
    problems, findings = review(text)
    assert problems is None and not [f for fs in findings.values() for f in fs]


def test_latest_first_reverses_the_time_and_declares_the_latest_query(tmp_path):
    rows = [f"{s},{1714557600000 + i},{i}" for s in "AB" for i in range(5)]
    path = _csv(tmp_path / "l.csv", "sensor,ts,v", rows)
    text = draft([str(path)], latest=True).text
    assert _keys(text) == [("text", "sensor"), ("reverse_ts", "ts")]
    (latest,) = [q for q in schema_lib.loads(text, "l.yaml").queries if q.name == "latest"]
    assert (latest.select, latest.read, latest.limit) == (("sensor",), "prefix", 1)


def test_a_single_series_is_salted_only_when_the_declared_rate_calls_for_it(tmp_path):
    rows = [f"{1714557600000 + i},{i}" for i in range(50)]
    path = _csv(tmp_path / "s.csv", "ts,v", rows)
    calm = draft([str(path)], rate=1)
    assert [k for k, _ in _keys(calm.text)] == ["const", "epoch_ms"]
    busy = draft([str(path)], rate=5000)
    assert [k for k, _ in _keys(busy.text)] == ["const", "salt", "epoch_ms"]
    for result in (calm, busy):
        problems, findings = review(result.text)
        assert problems is None
        assert [f.rule for fs in findings.values() for f in fs if f.severity == "error"] == []


def test_month_columns_are_unpivoted_into_one_event_per_month(tmp_path):
    months = "JAN,FEB,MAR,APR,MAY,JUN,JUL,AUG,SEP,OCT,NOV,DEC"
    rows = [f"{y}," + ",".join(f"{20 + m}.5" for m in range(12)) for y in (1950, 1951)]
    result = draft([str(_csv(tmp_path / "w.csv", f"YEAR,{months}", rows))])
    assert result.schema.unpivot.value == {
        "columns": months.split(","), "name": "month", "value": "value",
    }  # fmt: skip
    assert result.schema.fields["period"].value["from"] == {"year": "YEAR", "month": "month"}


def test_many_series_side_by_side_are_a_map_in_csv(tmp_path):
    names = [f"s{i}" for i in range(12)]
    rows = [f"2024-05-0{d}," + ",".join(str(d * i) for i in range(12)) for d in (1, 2, 3)]
    result = draft([str(_csv(tmp_path / "m.csv", "day," + ",".join(names), rows))])
    assert result.schema.fields["series"].value == {"type": "map", "qualifier": "as_is"}
    assert {"family": "m", "each": "series"} in [c.value for c in result.schema.columns]
    # a record with no series value (tidyr's who: whole rows of NA) keeps its other fields
    rows.append("2024-05-04,x," + ",".join(["NA"] * 12))
    rows = [r.replace(",", ",x,", 1) if ",x," not in r else r for r in rows]
    path = _csv(tmp_path / "n.csv", "day,note," + ",".join(names), rows)
    result = draft([str(path)])
    assert result.schema.fields["series"].value == {
        "type": "map", "qualifier": "as_is", "optional": True,
    }  # fmt: skip
    assert "no series has a value in 1 of 4 records" in result.schema.fields["series"].comment
    assert not result.schema.losses


def test_missing_values_make_a_field_optional_and_a_time_cell_keeps_the_row(tmp_path):
    path = _csv(tmp_path / "c.csv", "date,co2", ["19580329,316.1", "19580405,"])
    result = draft([str(path)])
    assert result.schema.fields["co2"].value == {"type": "number", "optional": True}
    assert {"family": "m", "qualifier": "t", "value": "date"} in [
        c.value for c in result.schema.columns
    ]


def test_times_before_1970_get_earliest_a_label_key_and_offset_stamps(tmp_path):
    path = _csv(tmp_path / "old.csv", "YEAR,v", ["1700,5", "1701,11"])
    text = draft([str(path)]).text
    assert "earliest: 1700-01-01" in text and "cell_timestamp: offset" in text
    assert _keys(text)[-1] == ("time", "YEAR")


# -- the sample ------------------------------------------------------------------------------


def test_a_large_file_is_read_by_its_head_and_a_spread_of_windows(tmp_path):
    path = tmp_path / "big.jsonl"
    with open(path, "w", encoding="utf-8") as out:
        for i in range(200_000):
            out.write(json.dumps({"ts": 1714557600000 + i, "v": i}) + "\n")
    sample = sample_mod.read_sample(str(path))
    bound = sample_mod.HEAD_BYTES + sample_mod.SPREAD_WINDOWS * sample_mod.WINDOW_BYTES
    assert not sample.complete and sample.bytes_read <= bound < path.stat().st_size
    assert max(int(r["v"]) for r in sample.records) > 190_000  # the end of the file was seen


def test_a_large_json_array_is_sampled_from_its_head_and_its_windows(tmp_path):
    path = tmp_path / "big.json"
    with open(path, "w", encoding="utf-8") as out:
        out.write("[\n")
        out.write(",\n".join(json.dumps({"ts": 1714557600000 + i, "v": i}) for i in range(150_000)))
        out.write("\n]\n")
    sample = sample_mod.read_sample(str(path))
    assert sample.fmt == "json_array" and not sample.complete
    assert max(int(r["v"]) for r in sample.records) > 140_000


def test_a_gzip_file_gives_a_bounded_head(tmp_path):
    path = tmp_path / "big.csv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write("ts,v\n")
        out.writelines(f"{1714557600000 + i},{i}\n" for i in range(300_000))
    sample = sample_mod.read_sample(str(path))
    assert sample.fmt == "csv" and sample.compression == "gzip"
    assert not sample.complete and sample.bytes_read == sample_mod.HEAD_BYTES


# -- the command -----------------------------------------------------------------------------


def test_a_file_without_a_time_is_one_line_and_exit_2(tmp_path, capsys):
    path = _csv(tmp_path / "x.csv", "name,v", ["a,1", "b,2"])
    assert cli.main(["init", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("btts: error: no field reads as a time") and err.count("\n") == 1


def test_an_advisor_error_is_said_and_fails_the_command(tmp_path, capsys):
    rows = [f"{h}@example.com,{1714557600000 + i},1" for h in "ab" for i in range(20)]
    path = _csv(tmp_path / "h.csv", "email,ts,v", rows)
    # never chosen for a key by itself, but the user's --query is followed: the advisor objects
    argv = ["init", str(path), "--query", "email", "-o", str(tmp_path / "s.yaml")]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "ERROR KEY-PII" in err and "1 open error(s)" in err
    assert err.endswith(
        "btts init: error: the advisor finds an error in the draft: KEY-PII: key EMAIL#TS: EMAIL "
        "looks like personal data (guessed from its name: give the field's kind in the schema "
        "file's advisor: section)\n"
    )
    text = (tmp_path / "s.yaml").read_text()
    assert text.startswith("# ADVISOR ERROR KEY-PII: key EMAIL#TS: EMAIL looks like personal")


def test_records_no_field_tells_apart_fail_the_command_before_anything_is_lost(tmp_path, capsys):
    """Across files: a record's number tells apart the records of one file only, so records of
    two files that collide are refused (in one file they are numbered instead, below)."""
    for h in "ab":
        rows = [f"{h}@example.com,{1714557600000 + i},1" for i in range(20)]
        _csv(tmp_path / f"{h}.csv", "email,ts,v", rows)  # e-mails never lead a key unasked
    paths = [str(tmp_path / "a.csv"), str(tmp_path / "b.csv")]
    assert cli.main(["init", *paths, "-o", str(tmp_path / "s.yaml")]) == 1
    err = capsys.readouterr().err
    assert "btts init: error: 20 sampled records share their key fields and time" in err
    assert "WOULD LOSE RECORDS: 20 sampled records" in (tmp_path / "s.yaml").read_text()


def test_records_of_one_file_no_field_tells_apart_are_told_apart_by_their_number(tmp_path, capsys):
    """The same records in one file: the key ends with each record's number in it, said on
    stderr and in the draft, and the whole-file check finds every key unique."""
    rows = [f"{h}@example.com,{1714557600000 + i},1" for h in "ab" for i in range(20)]
    path = _csv(tmp_path / "h.csv", "email,ts,v", rows)
    assert cli.main(["init", str(path), "-o", str(tmp_path / "s.yaml")]) == 0
    err = capsys.readouterr().err
    assert "btts init: note: 20 sampled records share their key fields and time" in err
    text = " ".join((tmp_path / "s.yaml").read_text().replace("#", " ").split())  # unwrapped
    assert "NOTE: 20 sampled records" in text and "no two share a row key" in text
    drafted = schema_lib.load(tmp_path / "s.yaml")
    assert drafted.record_number == "record_number"
    key = drafted.tables[0].decl.key
    assert [seg.field for seg in key.segments][-2:] == ["ts", "record_number"]


def test_json_nulls_are_absent_values_of_an_optional_field(tmp_path, capsys):
    path = tmp_path / "n.jsonl"
    path.write_text('{"ts": 1714557600000, "v": 1}\n{"ts": 1714557600001, "v": null}\n')
    assert cli.main(["init", str(path), "-o", str(tmp_path / "s.yaml")]) == 0
    drafted = schema_lib.load(tmp_path / "s.yaml")
    assert drafted.field_by_ref()["v"].optional  # (issue 49: a null is no value, not an error)


def test_on_a_terminal_the_ambiguity_is_a_question_and_the_answer_is_followed(tmp_path):
    """stdin and stderr a terminal (a pty), stdout redirected as in `btts init d.csv > s.yaml`:
    the question and its prompt go to the terminal, never into the schema."""
    import os
    import pty
    import select
    import subprocess
    import sys

    path = _csv(tmp_path / "d.csv", "date,v", ["03/04/2020,1", "05/06/2020,2"])
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "btts_cli.main", "init", str(path)],
        stdin=follower, stderr=follower, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    os.close(follower)
    seen = b""
    while b"choice [1-2" not in seen:
        ready, _, _ = select.select([leader], [], [], 60)
        assert ready, f"no question within a minute; the terminal shows {seen!r}"
        seen += os.read(leader, 1024)
    os.write(leader, b"2\n")
    out, _ = proc.communicate(timeout=60)
    os.close(leader)
    assert b"is 03/04 the 3rd of April or March 4th?" in seen
    assert proc.returncode == 0
    assert 'date: {type: time, format: "%m/%d/%Y"}' in out and "choice" not in out


def test_several_files_and_a_quoted_glob_are_one_dataset(tmp_path):
    for day in (1, 2):
        _csv(tmp_path / f"part{day}.csv", "site,day,v", [f"{s},2024-05-0{day},1" for s in "AB"])
    both = draft([str(tmp_path / "part*.csv")])
    assert [s.path for s in both.samples] == [str(tmp_path / f"part{d}.csv") for d in (1, 2)]
    assert _keys(both.text) == [("text", "site"), ("epoch_ms", "day")]
    with pytest.raises(DraftError, match=r"nothing\*\.csv: no file matches"):
        draft([str(tmp_path / "nothing*.csv")])


def test_an_empty_file_is_one_line(tmp_path, capsys):
    (tmp_path / "e.csv").write_text("")
    assert cli.main(["init", str(tmp_path / "e.csv")]) == 2
    assert capsys.readouterr().err == f"btts: error: {tmp_path / 'e.csv'}: empty file\n"


def test_a_parquet_file_gives_the_first_rows_of_a_spread_of_row_groups(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    n = 200_000
    table = pa.table({"ts": pa.array([1714557600000 + i for i in range(n)], pa.int64()),
                      "v": pa.array(range(n))})  # fmt: skip
    pq.write_table(table, tmp_path / "m.parquet", row_group_size=2_000)  # 100 groups
    sample = sample_mod.read_sample(str(tmp_path / "m.parquet"))
    assert (sample.fmt, sample.total, sample.complete) == ("parquet", n, False)
    assert len(sample.records) <= sample_mod.MAX_RECORDS
    assert max(int(r["v"]) for r in sample.records) >= n - 2_000  # the last group was read


def test_values_the_job_would_refuse_whatever_the_schema_fail_the_draft(tmp_path):
    path = tmp_path / "x.jsonl"
    lines = [
        '{"ts": 1714557600000, "tags": ["a"], "label": "x", "n": 1}',
        '{"ts": 1714557600001, "tags": ["b"], "label": "", "n": 99999999999999999999}',
    ]
    path.write_text("\n".join(lines) + "\n")
    result = draft([str(path)])
    assert "tags" not in result.schema.fields
    assert result.schema.fields["n"].value == {"type": "number"}  # past int64: its text
    assert result.schema.losses == [
        "field 'tags' holds values no field type takes (unknown): not declared",
    ]
    # an empty text is no value (issue 49: declared as a missing token, as a CSV's empty cell)
    assert result.schema.missing.value == {"missing": [""]}
    assert result.schema.fields["label"].value["optional"] is True


def test_series_whose_names_hold_spaces_are_unpivoted_not_a_map(tmp_path):
    names = [f"series {i}" for i in range(12)]
    rows = [f"2024-05-0{d}," + ",".join(str(d * i) for i in range(12)) for d in (1, 2, 3)]
    result = draft([str(_csv(tmp_path / "m.csv", "day," + ",".join(names), rows))])
    assert result.schema.unpivot.value["columns"] == names


def test_records_of_one_year_are_that_years_pace_not_one_seconds(tmp_path):
    """openintro's ucla_f18: 3,950 courses, all of year 2018 — drafted at 3,950 writes/s, its
    key salted (and the salted key then unreadable by btts query)."""
    rows = [f"{i},2018,c{i % 7}" for i in range(1, 4001)]
    result = draft([str(_csv(tmp_path / "y.csv", "rownames,year,course", rows))])
    assert not any("salt" in c.value for c in result.schema.key)
    assert result.schema.advisor["events_per_second"] < 0.001


def test_a_record_id_among_a_csvs_series_leaves_the_map_for_the_key(tmp_path):
    """survival's rotterdam: 14 whole-number columns (a map of series in CSV), one of them the
    record id (rownames, shuffled) — the only field that tells the patients of a year apart."""
    ids = random.Random(5).sample(range(1, 201), 200)
    rows = [f"{i},{1980 + n % 4}," + ",".join(str((n * k) % 9) for k in range(12))
            for n, i in enumerate(ids)]  # fmt: skip
    names = ",".join(f"m{k}" for k in range(12))
    result = draft([str(_csv(tmp_path / "r.csv", f"rownames,year,{names}", rows))])
    assert not result.schema.losses
    assert {"zero_pad": "rownames", "width": 3} in [c.value for c in result.schema.key]
    assert result.schema.fields["series"].value["type"] == "map"


def test_a_persons_name_never_tells_records_apart_in_the_key(tmp_path):
    """vega_datasets' la-riots: the people of one death date are told apart by first_name alone
    (each its own), and the draft keyed on it — a draft its own advisor refused (KEY-PII). The
    key takes another field with a value of its own in every record instead, and loads."""
    rows = [
        f"{name},{smith},1992-04-{29 + n % 2},-118.{n:04d}"
        for n, (name, smith) in enumerate(
            [("Ann", "Lee"), ("Bo", "Kim"), ("Cy", "Ray"), ("Di", "Fox"), ("Ed", "Orr")]
        )
    ]
    result = draft([str(_csv(tmp_path / "r.csv", "first_name,last_name,date,longitude", rows))])
    segments = [c.value for c in result.schema.key]
    assert {"text": "first_name"} not in segments and {"text": "last_name"} not in segments
    assert not result.schema.losses
    problems, findings = review(result.text)
    assert problems is None
    assert not [f for fs in findings.values() for f in fs if f.rule == "KEY-PII"]
