"""Battery levels (docs/patterns.md §5.4): promoted, salted and time-first keys; the salt's
stability and
its fixed bucket count; salted time-range reads fanned out and merged."""

from __future__ import annotations

import functools
import json
import os
import random
import subprocess
import sys

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from btts import admin, errors
from btts.query import engine
from btts_cli import main as cli
from pipelines import battery as job
from tests.support import REPO
from tests.support.jobs import compiled, read_dead_letters, run_job, write_lines
from transforms import schema as schema_lib
from transforms.errors import InvalidEvent
from transforms.mutations import Cell, RowMutation
from transforms.scans import key_ranges, salted_reads
from transforms.schema import builtin_tables
from transforms.text import keys
from transforms.text.events import parse_json_object
from transforms.text.timefmt import iso, parse_compact_time

BATTERY = builtin_tables.get("BATTERY")
BATTERY_SALTED = builtin_tables.get("BATTERY_SALTED")
BATTERY_TS_FIRST = builtin_tables.get("BATTERY_TS_FIRST")

CORRIE = '{"user": "Corrie", "timestamp": "2015-03-01T12:45:01.001Z", "percentage": 98}'
TS_US = 1425213901001000


def _line(user: str, ms: int, pct: object) -> str:
    return json.dumps({"user": user, "timestamp": ms, "percentage": pct})


# -- pure ------------------------------------------------------------------------------------


def test_promoted_row_is_user_then_time_with_percentage_only():
    assert compiled("battery", ("BATTERY",))(parse_json_object(CORRIE)) == [
        RowMutation(
            "BATTERY",
            b"BATTERY#Corrie#20150301124501001",
            (Cell("METRIC", b"PERCENTAGE", b"98", TS_US),),
        )
    ]
    # the job's default layout is field promotion
    assert job.JOB.builder(parse_json_object(CORRIE)) == compiled("battery", ("BATTERY",))(
        parse_json_object(CORRIE)
    )


def test_time_first_and_salted_rows_keep_the_user_as_a_column():
    cells = (Cell("METRIC", b"USER", b"Corrie", TS_US), Cell("METRIC", b"PERCENTAGE", b"98", TS_US))
    record = parse_json_object(CORRIE)
    assert compiled("battery", ("BATTERY_TS_FIRST",))(record) == [
        RowMutation("BATTERY_TS_FIRST", b"BATTERY#20150301124501001", cells)
    ]
    # The salt is pinned: blake2b-8 of the time text, modulo 3. A change here would scatter
    # existing rows, so it must be deliberate.
    assert keys.salt("20150301124501001", 3) == "1"
    assert compiled("battery", ("BATTERY_SALTED",))(record) == [
        RowMutation("BATTERY_SALTED", b"BATTERY#1#20150301124501001", cells)
    ]


def test_the_docs_compact_time_and_epoch_ms_give_the_same_row():
    compact = parse_json_object(
        '{"user": "Corrie", "timestamp": "20150301124501001", "percentage": 98}'
    )
    epoch = parse_json_object('{"user": "Corrie", "timestamp": 1425213901001, "percentage": 98}')
    assert (
        compiled("battery", ("BATTERY",))(compact)
        == compiled("battery", ("BATTERY",))(epoch)
        == compiled("battery", ("BATTERY",))(parse_json_object(CORRIE))
    )


def test_percentage_keeps_its_source_text():
    line = '{"user": "a", "timestamp": 1425213901001, "percentage": 7.50}'
    (row,) = compiled("battery", ("BATTERY",))(parse_json_object(line))
    assert row.cells[0].value == b"7.50"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"user": "Corrie", "timestamp": 1425243600001}', "missing field(s): percentage"),
        (
            '{"user": "C", "timestamp": 1425243600001, "percentage": 1, "level": 2}',
            (
                "unexpected field(s): level (declared: percentage, timestamp, user; "
                "event.extra_fields: ignore drops the others)"
            ),
        ),
        (
            '{"user": "Co#rrie", "timestamp": 1425243600001, "percentage": 1}',
            "field 'user': contains the key delimiter '#'",
        ),
        ('{"user": "", "timestamp": 1425243600001, "percentage": 1}', "field 'user': empty"),
        (
            '{"user": 7, "timestamp": 1425243600001, "percentage": 1}',
            "field 'user': expected a string, got number",
        ),
        (
            '{"user": "C", "timestamp": 1425243600001, "percentage": 101}',
            "field 'percentage': 101 is above its maximum 100",
        ),
        (
            '{"user": "C", "timestamp": 1425243600001, "percentage": -1}',
            "field 'percentage': -1 is below its minimum 0",
        ),
        (
            '{"user": "C", "timestamp": 1425243600001, "percentage": "98"}',
            "field 'percentage': expected a number, got string",
        ),
        (
            '{"user": "C", "timestamp": "20151301124501001", "percentage": 1}',
            "field 'timestamp': '20151301124501001' is not a valid YYYYMMDDHHMMSSmmm time",
        ),
        (
            '{"user": "C", "timestamp": "2015-03-01 12:45", "percentage": 1}',
            "field 'timestamp': time '2015-03-01 12:45' has no UTC offset (add 'Z')",
        ),
    ],
)
def test_bad_events_have_precise_reasons(line, reason):
    with pytest.raises(InvalidEvent) as err:
        compiled("battery", ("BATTERY",))(parse_json_object(line))
    assert str(err.value) == reason


def test_salt_is_stable_across_processes_and_hash_seeds():
    times = [f"2015030112450{i:04d}" for i in range(50)]
    here = [BATTERY_SALTED.key.build({"ts": parse_compact_time(t)}).decode() for t in times]
    code = (
        "import json, sys\n"
        "from transforms.text.timefmt import iso, parse_compact_time\n"
        "from transforms.schema.builtin_tables import get\n"
        "BATTERY_SALTED = get('BATTERY_SALTED')\n"
        "times = json.loads(sys.argv[1])\n"
        "print(json.dumps([BATTERY_SALTED.key.build({'ts': parse_compact_time(t)}).decode() "
        "for t in times]))\n"
    )
    for seed in ("1", "4242"):
        out = subprocess.run(
            [sys.executable, "-c", code, json.dumps(times)],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
            env={**os.environ, "PYTHONHASHSEED": seed},
            timeout=60,
        ).stdout
        assert json.loads(out) == here
    # and the salt is not Python's per-process hash(): all three buckets are used
    assert {k.split("#")[1] for k in here} == {"0", "1", "2"}


def test_salt_spreads_one_second_of_events_over_every_bucket():
    base = 1425213901000
    counts = {b: 0 for b in keys.salt_buckets(3)}
    for ms in range(base, base + 1000):
        counts[BATTERY_SALTED.key.build({"ts": ms}).split(b"#")[1].decode()] += 1
    assert all(200 < n < 466 for n in counts.values()), counts


def test_salted_time_ranges_are_one_range_per_bucket():
    assert key_ranges.salted_time_ranges(
        BATTERY_SALTED, key_ranges.Window(1425213901001, 1425213902000)
    ) == [
        (b"BATTERY#0#20150301124501001", b"BATTERY#0#20150301124502000"),
        (b"BATTERY#1#20150301124501001", b"BATTERY#1#20150301124502000"),
        (b"BATTERY#2#20150301124501001", b"BATTERY#2#20150301124502000"),
    ]
    with pytest.raises(ValueError, match="no salt segment"):
        key_ranges.salted_time_ranges(BATTERY, key_ranges.Window(0, 1))
    with pytest.raises(ValueError, match="ends"):
        key_ranges.salted_time_ranges(BATTERY_SALTED, key_ranges.Window(2, 1))


def test_merge_in_time_order_ignores_the_salt():
    rows = [
        compiled("battery", ("BATTERY_SALTED",))(parse_json_object(_line("u", ms, 1)))[0]
        for ms in range(1425213901000, 1425213901040)
    ]
    scans = [
        sorted((r for r in rows if r.key.split(b"#")[1] == s.encode()), key=lambda r: r.key)
        for s in keys.salt_buckets(3)
    ]
    merged = salted_reads.merge_in_time_order(BATTERY_SALTED, scans)
    assert [key_ranges.split_key(BATTERY_SALTED, r.key)["ts"] for r in merged] == [
        f"201503011245010{i:02d}" for i in range(40)
    ]


def test_the_salt_count_is_part_of_the_declaration():
    assert job.salted_tables() == {3: BATTERY_SALTED.name}
    assert job.salt_count(BATTERY_SALTED.name) == 3
    assert job.salt_count(BATTERY.name) is None
    assert job.salt_count(BATTERY_TS_FIRST.name) is None


@pytest.mark.parametrize(
    ("flags", "table"),
    [
        ([], "BATTERY"),
        (["--battery_layout=promoted"], "BATTERY"),
        (["--battery_layout=salted"], "BATTERY_SALTED"),
        (["--battery_layout=salted", "--salt_buckets=3"], "BATTERY_SALTED"),
        (["--battery_layout=timestamp_first"], "BATTERY_TS_FIRST"),
    ],
)
def test_job_for_picks_the_table_of_the_layout(flags, table):
    spec = job.job_for(PipelineOptions(flags))
    assert spec.tables == (table,)
    assert spec.builder(parse_json_object(CORRIE))[0].table == table


def test_a_salt_count_no_table_declares_is_refused_with_the_reason():
    with pytest.raises(errors.ConfigError) as err:
        job.job_for(PipelineOptions(["--battery_layout=salted", "--salt_buckets=4"]))
    message = str(err.value)
    assert "--salt_buckets=4 matches no declared salted battery table" in message
    assert "BATTERY_SALTED (3 buckets)" in message
    assert "miss rows" in message and "battery.yaml" in message
    assert "BATTERY_SALTED_4 whose salt segment says 'buckets: 4'" in message
    with pytest.raises(errors.ConfigError, match="only applies to --battery_layout=salted"):
        job.job_for(PipelineOptions(["--salt_buckets=3"]))


# -- on the emulator ---------------------------------------------------------------------------


def test_a_changed_salt_count_stops_the_job_before_any_table_or_data(target, tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [CORRIE])
    with pytest.raises(SystemExit, match="--salt_buckets=4 matches no declared"):
        run_job(
            "battery",
            target,
            source,
            tmp_path / "d",
            ["--battery_layout=salted", "--salt_buckets=4"],
        )
    with admin.Admin(target) as client:
        assert client.list_tables() == []
    assert not list(tmp_path.glob("d*"))


def test_good_and_bad_lines_reconcile(target, tmp_path):
    good = [_line(f"user{i % 4}", 1425213901000 + i * 61_000, i % 101) for i in range(20)]
    bad = {
        "{not json": "invalid JSON: Expecting property name enclosed in double quotes at column 2",
        '{"user": "a#b", "timestamp": 1425243600001, "percentage": 5}': (
            "field 'user': contains the key delimiter '#'"
        ),
        '{"user": "a", "timestamp": 1425243600001, "percentage": 500}': (
            "field 'percentage': 500 is above its maximum 100"
        ),
        '{"user": "a", "percentage": 5}': "missing field(s): timestamp",
    }
    lines = good[:10] + list(bad) + good[10:]
    source = write_lines(tmp_path / "in.jsonl", lines)
    dead = tmp_path / "dead" / "battery"

    result = run_job("battery", target, source, dead)

    expected = {compiled("battery", ("BATTERY",))(parse_json_object(g))[0].key for g in good}
    assert {r.key for r in engine.read_rows(target, "BATTERY")} == expected
    letters = read_dead_letters(dead)
    assert {d["raw"]: d["reason"] for d in letters} == bad
    assert all(d["pipeline"] == "battery" for d in letters)
    c = result.counters
    assert c["lines_read"] == len(lines) == c["events_valid"] + c["dead_letters"]
    assert c["events_valid"] == len(good) and c["dead_letters"] == len(bad)
    assert c["rows_BATTERY"] == len(good) and c["cells_BATTERY"] == len(good)


def test_csv_input_salted(target, tmp_path):
    source = write_lines(
        tmp_path / "battery.csv",
        ["timestamp,user,percentage", "20150301124501001,Corrie,98", "2015-03-01T12:45:02Z,Jo,7.5"],
    )
    run_job("battery", target, source, tmp_path / "d", ["--battery_layout=salted"])
    rows = {r.key: r.latest() for r in engine.read_rows(target, "BATTERY_SALTED")}
    want_second = BATTERY_SALTED.key.build({"ts": 1425213902000})
    assert rows == {
        b"BATTERY#1#20150301124501001": {
            ("METRIC", b"USER"): b"Corrie",
            ("METRIC", b"PERCENTAGE"): b"98",
        },
        want_second: {("METRIC", b"USER"): b"Jo", ("METRIC", b"PERCENTAGE"): b"7.5"},
    }


def _events_from_promoted(rows) -> list[tuple[str, int, bytes]]:
    out = []
    for row in rows:
        _, user, stamp = row.key.decode().split("#")
        out.append((user, parse_compact_time(stamp), row.latest()[("METRIC", b"PERCENTAGE")]))
    return out


def _events_from_salted(rows) -> list[tuple[str, int, bytes]]:
    out = []
    for row in rows:
        stamp = key_ranges.split_key(BATTERY_SALTED, row.key)["ts"]
        cells = row.latest()
        out.append(
            (
                cells[("METRIC", b"USER")].decode(),
                parse_compact_time(stamp),
                cells[("METRIC", b"PERCENTAGE")],
            )
        )
    return out


def test_salted_time_range_read_equals_the_promoted_layout(target, tmp_path, capsys):
    rng = random.Random(5)
    base = 1425213900000
    stamps = rng.sample(range(base, base + 600_000), 120)  # distinct times, random order
    lines = [_line(f"user{rng.randrange(6)}", ms, rng.randrange(101)) for ms in stamps]
    source = write_lines(tmp_path / "in.jsonl", lines)
    run_job("battery", target, source, tmp_path / "d1", ["--battery_layout=promoted"])
    run_job(
        "battery", target, source, tmp_path / "d2", ["--battery_layout=salted", "--salt_buckets=3"]
    )
    start, end = base + 100_000, base + 400_000

    # the engine's plan of the declared salted read: one scan per bucket, merged by time
    schema = schema_lib.builtin("battery")
    scans = engine.plan_declared(schema, engine.declared(schema, "battery_levels"), {}, start, end)
    merge = functools.partial(salted_reads.merge_in_time_order, BATTERY_SALTED)
    salted = engine.run(target, engine.Query("battery_levels", scans, merge))
    promoted = sorted(
        (
            e
            for e in _events_from_promoted(engine.read_rows(target, "BATTERY", latest_only=True))
            if start <= e[1] < end
        ),
        key=lambda e: e[1],
    )
    got = _events_from_salted(salted)
    assert got == promoted
    assert [e[1] for e in got] == sorted(e[1] for e in got)  # time order, across buckets
    assert len(got) == sum(start <= ms < end for ms in stamps) > 30
    # the range really fans out: rows of the answer come from every bucket
    assert {r.key.split(b"#")[1] for r in salted} == {b"0", b"1", b"2"}
    # the raw read of any table by its key recipe does the same (`btts query --schema --table`)
    declarations = str(REPO / "transforms" / "declarations" / "battery.yaml")
    window = ["--start", iso(start), "--end", iso(end), "--format", "json"]
    where = ["--project", target.project, "--instance", target.instance]
    argv = ["query", "--schema", declarations, "--table", "BATTERY_SALTED", "--raw", *window]
    argv += where
    capsys.readouterr()  # the jobs' summaries
    assert cli.main(argv) == 0
    assert [r["key"] for r in json.loads(capsys.readouterr().out)] == [
        r.key.decode() for r in salted
    ]


def test_help_lists_the_layout_flags(capsys):
    with pytest.raises(SystemExit) as done:
        job.run(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--battery_layout", "--salt_buckets", "--input", "--bigtable_instance"):
        assert flag in out
