"""Weather balloons (docs/patterns.md §4): the four column patterns, pure and on the emulator, and
the
protobuf build integration the TS-BLOB pattern relies on."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from google.protobuf import __version__ as protobuf_version

import protos
from btts import admin
from btts.query import engine
from pipelines import weather_balloons as job
from protos import balloon_pb2
from tests.support import REPO
from tests.support.jobs import compiled, dump, read_dead_letters, run_job, write_lines
from transforms import mutations
from transforms.errors import InvalidEvent
from transforms.mutations import Cell, RowMutation
from transforms.schema import builtin_tables
from transforms.text import events, timefmt

BALLOON_TB_CELL = builtin_tables.get("BALLOON_TB_CELL")
BALLOON_TB_COL = builtin_tables.get("BALLOON_TB_COL")
MINUTES_PER_WEEK = 7 * 24 * 60  # one event a minute for a UTC ISO week

MS = 1614945600000  # 2021-03-05T12:00:00Z, a Friday of ISO week 2021-W09
US = MS * 1000
MINUTE = 60_000
FIELDS = {
    "location": '"us-west2"',
    "balloon_id": "3698",
    "timestamp": '"2021-03-05T12:00:00Z"',
    "pressure": "94558",
    "temperature": "9.6",
    "humidity": "61",
    "altitude": "612",
}


METRICS = ("pressure", "temperature", "humidity", "altitude")
# The compiled builder of each column pattern's table (what the job runs for --balloon_pattern).
BUILD = {pattern: compiled("weather_balloons", (table,)) for pattern, table in job.PATTERNS.items()}
build_tb_col, build_tb_cell = BUILD["TB-COL"], BUILD["TB-CELL"]
build_ts_cols, build_ts_blob = BUILD["TS-COLS"], BUILD["TS-BLOB"]


def line(**changes: str | None) -> str:
    """The guidance's event as a JSON line, fields replaced by JSON literals (``None`` drops
    one)."""
    fields = {**FIELDS, **changes}
    return "{" + ", ".join(f'"{k}": {v}' for k, v in fields.items() if v is not None) + "}"


def record(**changes: str | None) -> dict:
    return events.parse_json_object(line(**changes))


def at(ms: int) -> str:
    return str(ms)  # epoch milliseconds, as a JSON integer


# -- pure: rows of each pattern ----------------------------------------------------------------


def test_tb_col_makes_one_row_per_metric_with_the_value_as_qualifier():
    assert build_tb_col(record()) == [
        RowMutation(
            "BALLOON_TB_COL", b"us-west2#3698#pressure#2021-W09", (Cell("m", b"94558", b"", US),)
        ),
        RowMutation(
            "BALLOON_TB_COL", b"us-west2#3698#temperature#2021-W09", (Cell("m", b"9.6", b"", US),)
        ),
        RowMutation(
            "BALLOON_TB_COL", b"us-west2#3698#humidity#2021-W09", (Cell("m", b"61", b"", US),)
        ),
        RowMutation(
            "BALLOON_TB_COL", b"us-west2#3698#altitude#2021-W09", (Cell("m", b"612", b"", US),)
        ),
    ]


def test_tb_cell_makes_one_week_row_with_a_cell_per_measurement():
    assert build_tb_cell(record()) == [
        RowMutation(
            "BALLOON_TB_CELL",
            b"us-west2#3698#2021-W09",
            (
                Cell("measurements", b"pressure", b"94558", US),
                Cell("measurements", b"temperature", b"9.6", US),
                Cell("measurements", b"humidity", b"61", US),
                Cell("measurements", b"altitude", b"612", US),
            ),
        )
    ]


def test_ts_cols_makes_one_minute_row_with_a_column_per_measurement():
    assert build_ts_cols(record()) == [
        RowMutation(
            "BALLOON_TS_COLS",
            b"us-west2#3698#2021-03-05-1200",
            (
                Cell("m", b"pressure", b"94558", US),
                Cell("m", b"temperature", b"9.6", US),
                Cell("m", b"humidity", b"61", US),
                Cell("m", b"altitude", b"612", US),
            ),
        )
    ]


def test_ts_blob_is_one_protobuf_cell_that_decodes_to_the_event():
    (row,) = build_ts_blob(record())
    assert row.table == "BALLOON_TS_BLOB"
    assert row.key == b"us-west2#3698#2021-03-05-1200"
    (cell,) = row.cells
    assert (cell.family, cell.qualifier, cell.timestamp_us) == ("m", b"measurements_blob", US)
    message = balloon_pb2.BalloonMeasurement.FromString(cell.value)
    assert (message.location, message.balloon_id, message.event_time_ms) == ("us-west2", "3698", MS)
    assert (message.pressure, message.temperature, message.humidity, message.altitude) == (
        "94558",
        "9.6",
        "61",
        "612",
    )


def test_blob_keeps_the_source_decimal_text_exactly():
    # A float or double field would give 0.5, -0.0 and 1e2 back; strings give the source text.
    (row,) = build_ts_blob(
        record(temperature="-0.0", humidity="0.50", pressure="1e5", altitude="12345678901234567.01")
    )
    decoded = balloon_pb2.BalloonMeasurement.FromString(row.cells[0].value)
    assert tuple(getattr(decoded, m) for m in METRICS) == (
        "1e5",
        "-0.0",
        "0.50",
        "12345678901234567.01",
    )


def test_week_label_is_the_iso_week_across_a_year_end():
    sunday = 1609718399999  # 2021-01-03T23:59:59.999Z: still ISO week 2020-W53
    monday = sunday + 1  # 2021-01-04T00:00:00Z: 2021-W01
    keys = [build_tb_cell(record(timestamp=at(ms)))[0].key for ms in (sunday, monday)]
    assert keys == [b"us-west2#3698#2020-W53", b"us-west2#3698#2021-W01"]


def test_event_time_forms_agree_and_minute_keys_drop_seconds():
    late = record(timestamp='"2021-03-05T13:00:59.999+01:00"')  # 12:00:59.999 UTC
    (row,) = build_ts_cols(late)
    assert row.key == b"us-west2#3698#2021-03-05-1200"
    assert row.cells[0].timestamp_us == (MS + 59_999) * 1000
    assert build_ts_cols(record(timestamp=at(MS))) == build_ts_cols(record())


def test_a_text_balloon_id_is_kept_as_written():
    (row,) = build_ts_cols(record(balloon_id='"B-17"'))
    assert row.key == b"us-west2#B-17#2021-03-05-1200"


def test_csv_record_builds_the_same_rows_as_json():
    header = events.parse_csv_header(",".join(FIELDS))
    csv_record = events.parse_csv_line(
        "us-west2,3698,2021-03-05T12:00:00Z,94558,9.6,61,612", header
    )
    for builder in BUILD.values():
        assert builder(csv_record) == builder(record())


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"altitude": None}, "missing field(s): altitude"),
        ({"wind": "3"}, "unexpected field(s): wind"),
        ({"location": '"us#west2"'}, "field 'location': contains the key delimiter '#'"),
        ({"location": '""'}, "field 'location': empty"),
        ({"location": "7"}, "field 'location': expected a string, got number"),
        ({"balloon_id": "3698.5"}, "field 'balloon_id': expected a non-negative integer"),
        ({"balloon_id": "-3"}, "field 'balloon_id': expected a non-negative integer"),
        ({"balloon_id": "true"}, "field 'balloon_id': expected a string, got boolean"),
        ({"balloon_id": '"a\\tb"'}, "field 'balloon_id': contains a control"),
        ({"temperature": '"9.6"'}, "field 'temperature': expected a number, got string"),
        ({"humidity": "null"}, "field 'humidity': expected a number, got null"),
        ({"pressure": "1" * 65}, "field 'pressure': number longer than 64"),
        ({"timestamp": '"2021-03-05 12:00"'}, "field 'timestamp': time '2021-03-05 12:00' has no"),
        ({"timestamp": '"yesterday"'}, "field 'timestamp': not an RFC 3339 time"),
    ],
)
def test_bad_events_say_what_is_wrong(changes, reason):
    for builder in BUILD.values():
        with pytest.raises(InvalidEvent) as err:
            builder(record(**changes))
        assert str(err.value).startswith(reason), str(err.value)


# -- declarations and job wiring ----------------------------------------------------------------


def test_bucket_families_keep_a_whole_week_of_minute_events():
    assert MINUTES_PER_WEEK == 10_080
    for decl in (BALLOON_TB_CELL, BALLOON_TB_COL):
        (family,) = decl.families
        assert family.max_versions >= MINUTES_PER_WEEK
        assert family.max_age is None  # an age rule would delete whole past weeks


@pytest.mark.parametrize(
    ("flags", "pattern", "table"),
    [
        ([], "TS-COLS", "BALLOON_TS_COLS"),
        (["--balloon_pattern=TB-COL"], "TB-COL", "BALLOON_TB_COL"),
        (["--balloon_pattern=TB-CELL"], "TB-CELL", "BALLOON_TB_CELL"),
        (["--balloon_pattern=TS-BLOB"], "TS-BLOB", "BALLOON_TS_BLOB"),
        (["--balloon_pattern=TS-COLS"], "TS-COLS", "BALLOON_TS_COLS"),
    ],
)
def test_the_pattern_flag_chooses_the_table(flags, pattern, table):
    spec = job.job_for(PipelineOptions(["--input=x", *flags]))
    assert spec.name == "weather_balloons"
    assert tuple(spec.tables) == (table,)
    assert job.PATTERNS[pattern] == table and spec.builder.tables == [table]
    assert spec.builder(record())[0].table == table


def test_an_unknown_pattern_is_refused_before_any_work(tmp_path, capsys):
    with pytest.raises(SystemExit):
        job.run([f"--input={tmp_path / 'x.jsonl'}", "--balloon_pattern=TB-ROW"])
    assert "TB-ROW" in capsys.readouterr().err


# -- the generated protobuf code ---------------------------------------------------------------


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def test_generated_code_matches_the_pinned_generator_and_the_runtime():
    pyproject = (REPO / "pyproject.toml").read_text()
    setup_py = (REPO / "setup.py").read_text()
    (build_pin,) = re.findall(r'"(grpcio-tools==[^"]+)"', pyproject)
    assert f'GRPCIO_TOOLS = "{build_pin}"' in setup_py  # the build and the fallback agree
    header = Path(balloon_pb2.__file__).read_text().splitlines()[:8]
    (gencode,) = [h.split(":")[1] for h in header if h.startswith("# Protobuf Python Version:")]
    assert _version(gencode) <= _version(protobuf_version)
    assert _version(gencode)[0] == _version(protobuf_version)[0]


def test_generated_code_is_not_committed():
    if not (REPO / ".git").exists() or not shutil.which("git"):
        pytest.skip("not a git checkout")
    tracked = subprocess.run(
        ["git", "ls-files", "protos"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    assert not [name for name in tracked if "_pb2" in name]


def _copy_checkout(tmp_path: Path) -> Path:
    """A minimal checkout: setup.py beside protos/ with its sources and no generated code."""
    (tmp_path / "protos").mkdir()
    shutil.copy(REPO / "setup.py", tmp_path / "setup.py")
    for name in ("__init__.py", "balloon.proto"):
        shutil.copy(REPO / "protos" / name, tmp_path / "protos" / name)
    return tmp_path


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def test_importing_a_missing_module_generates_it_in_a_checkout(tmp_path):
    root = _copy_checkout(tmp_path)
    got = _python(
        "import protos.balloon_pb2 as b; print(b.__file__); "
        "print(b.BalloonMeasurement(temperature='9.60').SerializeToString().hex())",
        root,
    )
    assert got.returncode == 0, got.stderr
    path, blob = got.stdout.split()
    assert Path(path) == root / "protos" / "balloon_pb2.py"
    assert bytes.fromhex(blob) == b"*\x049.60"  # field 5, length 4, the text as given
    assert not list((root / "protos").glob(".protoc-*"))  # the temporary folder is gone


def test_without_grpc_tools_a_missing_module_fails_with_the_fix(tmp_path):
    root = _copy_checkout(tmp_path)
    got = _python("import sys; sys.modules['grpc_tools'] = None; import protos.balloon_pb2", root)
    assert got.returncode != 0
    assert "pip install -e '.[test]'" in got.stderr
    assert not (root / "protos" / "balloon_pb2.py").exists()


def test_a_stale_module_is_regenerated(tmp_path):
    root = _copy_checkout(tmp_path)
    stale = root / "protos" / "balloon_pb2.py"
    stale.write_text("raise RuntimeError('stale generated code was imported')\n")
    proto = root / "protos" / "balloon.proto"
    proto.touch()
    old = proto.stat().st_mtime - 60
    os.utime(stale, (old, old))
    got = _python(
        "import protos.balloon_pb2 as b; print(b.BalloonMeasurement.DESCRIPTOR.name)", root
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == "BalloonMeasurement"


def test_generate_writes_into_another_root(tmp_path):
    made = protos.generate(tmp_path)
    sources = sorted(protos.PACKAGE_DIR.glob("*.proto"))
    assert "balloon" in [p.stem for p in sources]
    assert made == [tmp_path / "protos" / f"{p.stem}_pb2.py" for p in sources]
    assert (tmp_path / "protos" / "balloon_pb2.pyi").is_file()


# -- on the emulator ---------------------------------------------------------------------------


def _run(target, tmp_path, pattern: str, lines: list, name: str = "input.jsonl", **kw):
    source = write_lines(tmp_path / name, lines)
    dead = tmp_path / f"dead-{pattern}" / "letters"
    result = run_job(
        "weather_balloons", target, source, dead, [f"--balloon_pattern={pattern}"], **kw
    )
    return result, read_dead_letters(dead)


def test_ts_blob_cells_read_back_decode_to_the_original_events(target, tmp_path):
    lines = [
        line(),
        line(
            balloon_id='"B-17"',
            temperature="-12.50",
            humidity="0.0",
            timestamp='"2021-03-05T12:01:30.250Z"',
        ),
    ]
    result, dead = _run(target, tmp_path, "TS-BLOB", lines)
    assert dead == []
    assert result.counters["rows_BALLOON_TS_BLOB"] == 2
    rows = engine.read_rows(target, "BALLOON_TS_BLOB")
    assert [r.key for r in rows] == [
        b"us-west2#3698#2021-03-05-1200",
        b"us-west2#B-17#2021-03-05-1201",
    ]
    for row, text in zip(rows, lines, strict=True):
        (cell,) = row.cells
        assert (cell.family, cell.qualifier) == ("m", b"measurements_blob")
        message = balloon_pb2.BalloonMeasurement.FromString(cell.value)
        original = json.loads(text, parse_float=str, parse_int=str)
        assert message.location == original["location"]
        assert message.balloon_id == original["balloon_id"]
        assert message.event_time_ms * 1000 == cell.timestamp_us
        for metric in METRICS:
            assert getattr(message, metric) == original[metric], metric
        assert message.event_time_ms == timefmt.parse_event_time(original["timestamp"])


def test_tb_cell_row_holds_one_cell_per_event_per_column(target, tmp_path):
    # Five events of one week (out of order, one on the week's last minute), one of the next.
    week = [MS + 3 * MINUTE, MS, 1615161540000, MS + MINUTE, MS - 4 * 24 * 60 * MINUTE]
    next_week = 1615161600000  # 2021-03-08T00:00:00Z, a Monday: 2021-W10
    lines = [line(timestamp=at(ms), pressure=str(90000 + i)) for i, ms in enumerate(week)]
    lines.append(line(timestamp=at(next_week)))
    for _ in range(2):  # a re-run rewrites the same cells: no extra versions
        result, dead = _run(target, tmp_path, "TB-CELL", lines)
        assert dead == []
        assert result.counters["cells_BALLOON_TB_CELL"] == 4 * len(lines)

    rows = engine.read_rows(target, "BALLOON_TB_CELL")  # every version, not latest_only
    assert [r.key for r in rows] == [b"us-west2#3698#2021-W09", b"us-west2#3698#2021-W10"]
    cells = rows[0].cells
    for metric in METRICS:
        column = [c for c in cells if c.qualifier == metric.encode()]
        assert sorted(c.timestamp_us for c in column) == sorted(ms * 1000 for ms in week), metric
        assert {c.family for c in column} == {"measurements"}
    pressure = {c.timestamp_us: c.value for c in cells if c.qualifier == b"pressure"}
    assert pressure == {ms * 1000: str(90000 + i).encode() for i, ms in enumerate(week)}
    assert len(rows[1].cells) == 4

    with admin.Admin(target) as adm:
        families = adm.get_families("BALLOON_TB_CELL")
    assert set(families) == {"measurements"}
    assert families["measurements"].gc_rule.max_num_versions == MINUTES_PER_WEEK


def test_tb_col_makes_four_rows_per_event(target, tmp_path):
    # Two events of one week with the same pressure, one of the next week.
    lines = [
        line(),
        line(timestamp=at(MS + MINUTE), temperature="9.7"),
        line(timestamp=at(1615161600000)),
    ]
    result, dead = _run(target, tmp_path, "TB-COL", lines)
    assert dead == []
    assert result.counters["rows_BALLOON_TB_COL"] == 4 * len(lines)
    rows = {r.key: r.cells for r in engine.read_rows(target, "BALLOON_TB_COL")}
    assert sorted(rows) == sorted(
        f"us-west2#3698#{metric}#{week}".encode()
        for metric in METRICS
        for week in ("2021-W09", "2021-W10")
    )
    t0, t1 = MS * 1000, (MS + MINUTE) * 1000
    # The same value twice in a week: one column, two versions (the family keeps a week's).
    assert rows[b"us-west2#3698#pressure#2021-W09"] == (
        mutations.ReadCell("m", b"94558", b"", t1),
        mutations.ReadCell("m", b"94558", b"", t0),
    )
    assert sorted(rows[b"us-west2#3698#temperature#2021-W09"]) == [
        mutations.ReadCell("m", b"9.6", b"", t0),
        mutations.ReadCell("m", b"9.7", b"", t1),
    ]
    assert rows[b"us-west2#3698#altitude#2021-W10"] == (
        mutations.ReadCell("m", b"612", b"", 1615161600000 * 1000),
    )


def test_bad_lines_are_dead_lettered_with_their_reason(target, tmp_path):
    good = [line(), line(timestamp=at(MS + MINUTE))]
    bad = {
        line(location='"us#west2"'): "field 'location': contains the key delimiter '#'",
        line(humidity='"high"'): "field 'humidity': expected a number, got string",
        line(altitude=None): "missing field(s): altitude",
        '{"location": "us-west2",': "invalid JSON",
        b"\xff\xfe": "not UTF-8",
    }
    result, dead = _run(target, tmp_path, "TS-COLS", [good[0], *bad, good[1]])
    counters = result.counters
    assert counters["lines_read"] == counters["events_valid"] + counters["dead_letters"]
    assert (counters["events_valid"], counters["dead_letters"]) == (2, len(bad))
    assert len(dead) == len(bad)
    for raw, reason in bad.items():
        text = raw.decode("utf-8", errors="backslashreplace") if isinstance(raw, bytes) else raw
        (letter,) = [d for d in dead if d["raw"] == text]
        assert letter["reason"].startswith(reason), letter
        assert letter["pipeline"] == "weather_balloons"
    keys = [r.key for r in engine.read_rows(target, "BALLOON_TS_COLS")]
    assert keys == [b"us-west2#3698#2021-03-05-1200", b"us-west2#3698#2021-03-05-1201"]


def test_csv_input_lands_the_same_cells_as_json(target, tmp_path):
    header = ",".join(FIELDS)
    csv_lines = [
        header,
        "us-west2,3698,2021-03-05T12:00:00Z,94558,9.6,61,612",
        "us-west2,3698,1614945660000,94560,9.50,60,615",
        "us-west2,3698,2021-03-05T12:02:00Z,94561,warm,60,615",
    ]
    result, dead = _run(target, tmp_path, "TB-CELL", csv_lines, name="balloons.csv")
    assert [d["reason"] for d in dead] == ["field 'temperature': expected a number, got CSV text"]
    assert result.counters["events_valid"] == 2
    got = dump(target, "BALLOON_TB_CELL")
    expected = sorted(
        (row.key, c.family, c.qualifier, c.value, c.timestamp_us)
        for rec in (
            record(),
            record(
                timestamp=at(MS + MINUTE),
                pressure="94560",
                temperature="9.50",
                humidity="60",
                altitude="615",
            ),
        )
        for row in build_tb_cell(rec)
        for c in row.cells
    )
    assert sorted(got) == expected
