"""The schema builder and the generic pipeline: the built-in schema files give the worked
examples' rows; a dataset written only from the user guide ingests, queries and lints."""

from __future__ import annotations

import json
import pickle

import pytest

from btts import admin
from btts.query import engine
from btts_cli import main as cli
from pipelines import generic as generic_job
from tests.support import REPO
from tests.support.golden_runs import RUNS, check_row, table_of
from tests.support.jobs import read_dead_letters, run_job, write_lines
from tests.support.worked_examples import load_golden_ids
from transforms import schema as sf
from transforms.builder import builder as generic
from transforms.text.events import parse_json_object

IOT = REPO / "docs" / "schemas" / "tb-cell-iot-temperatures.yaml"
LONG_MAX = 9223372036854775807

# Golden case → the built-in dataset whose schema file describes its events.
DATASETS = {
    "market": "market_data",
    "server": "server_metrics",
    "current": "server_metrics",
    "smart": "smart_meters",
    "balloon": "weather_balloons",
    "battery": "battery",
    "game": "game_results",
    "veggie": "garden",
}
GOLDEN_RUNS = [c for c in load_golden_ids() if c.split("-")[0] in DATASETS]


@pytest.mark.parametrize("case_id", GOLDEN_RUNS)
def test_the_compiled_builder_makes_the_worked_examples_rows(case_id, golden_cases):
    """Without Bigtable: every row of the worked example, key and cells byte for byte, comes
    out of the compiled schema builder (the emulator tests check what lands)."""
    case = golden_cases[case_id]
    build = generic.Builder(sf.builtin(DATASETS[case_id.split("-")[0]]))
    built = [row for line in case["input_lines"] for row in build(parse_json_object(line))]
    by_key = {}
    for row in built:
        by_key.setdefault(row.key, []).extend(row.cells)
    for expected in case.get("expected_rows", []):
        key = expected["row_key"].encode("utf-8")
        assert key in by_key, f"no row {expected['row_key']!r} among {sorted(by_key)}"
        cells = {(c.qualifier, getattr(c, "value", None)): c for c in by_key[key]}
        for cell in expected.get("cells", []):
            pair = (cell["qualifier"].encode("utf-8"), cell["value"].encode("utf-8"))
            assert pair in cells, (key, pair)
            if cell.get("family"):
                assert cells[pair].family == cell["family"]
            if "timestamp_ms" in cell:
                assert cells[pair].timestamp_us == cell["timestamp_ms"] * 1000


def test_builder_pickles_as_its_schema_text():
    build = generic.Builder(sf.builtin("weather_balloons"), ["BALLOON_TS_BLOB"])
    again = pickle.loads(pickle.dumps(build))
    assert again.tables == ["BALLOON_TS_BLOB"] and again.schema == build.schema
    # each step of a job unpickles its own copy: the schema is parsed once per process
    assert pickle.loads(pickle.dumps(build)).schema is again.schema


@pytest.mark.parametrize("case_id", GOLDEN_RUNS)
def test_golden_cases_through_the_generic_pipeline(case_id, golden_cases, target, tmp_path):
    """The golden harness's own checks, on what the generic job wrote from the schema file."""
    case = golden_cases[case_id]
    dataset = DATASETS[case_id.split("-")[0]]
    _, _, table_map = RUNS[case_id]
    source = write_lines(tmp_path / "in.jsonl", case["input_lines"])
    schema = REPO / "transforms" / "declarations" / f"{dataset}.yaml"
    tables = {table_of(e, table_map) for e in case.get("expected_rows", [])}
    tables |= {table_of(e, table_map) for e in case.get("expected_latest", [])}
    if "expected_row_key_regex" in case:
        tables.add(table_map[None])
    flags = [f"--schema={schema}", *(f"--schema_table={t}" for t in sorted(tables))]
    result = run_job("generic", target, source, tmp_path / "dead", flags)
    assert read_dead_letters(tmp_path / "dead") == []
    assert result.counters["events_valid"] == len(case["input_lines"])
    for expected in case.get("expected_rows", []):
        check_row(target, table_of(expected, table_map), expected)
    for expected in case.get("expected_latest", []):
        table = table_of(expected, table_map)
        key = expected["row_key"].encode()
        (row,) = engine.read_rows(target, table, start=key, end=key + b"\x00", latest_only=True)
        qualifier = expected["qualifier"].encode()
        assert row.latest()[(expected["family"], qualifier)] == expected["value"].encode()
    if "expected_row_key_regex" in case:
        import re

        (found,) = [r.key.decode() for r in engine.read_rows(target, table_map[None])]
        assert re.match(case["expected_row_key_regex"], found)


# -- a dataset written only from the user guide: IoT device temperatures ------------------------

HOUR = 1714557600000  # 2024-05-01T10:00:00Z
IOT_LINES = [
    '{"device": "dev-1", "ts": "2024-05-01T10:15:00Z", "temperature_c": 21.50, "humidity": 40}',
    '{"device": "dev-1", "ts": "2024-05-01T10:45:00.250Z", "temperature_c": 22.0}',
    '{"device": "dev-1", "ts": "2024-05-01T11:05:00Z", "temperature_c": 23.25, "humidity": 41}',
    '{"device": "dev-2", "ts": 1714557600000, "temperature_c": -3.5}',
    '{"device": "dev-1", "ts": "2024-05-01T10:15:00Z", "temperature_c": "hot"}',
    '{"device": "dev 3", "ts": "2024-05-01T10:15:00Z", "temperature_c": 20}',
    '{"device": "dev-1", "temperature_c": 20}',
    '{"device": "dev-1", "ts": "2024-05-01T10:15:00Z", "temperature_c": 20, "color": "red"}',
    '{"device": "dev-1", "ts": "2024-05-01T10:15:00Z", "temperature_c": 999}',
    "not json",
]


def _reversed(ms: int) -> bytes:
    return str(LONG_MAX - ms).zfill(19).encode()


def test_iot_schema_from_the_guide_ingests_with_dead_letters(target, tmp_path):
    source = write_lines(tmp_path / "iot.jsonl", IOT_LINES)
    result = run_job("generic", target, source, tmp_path / "dead", [f"--schema={IOT}"])
    dead = read_dead_letters(tmp_path / "dead")
    counters = result.counters
    assert counters["lines_read"] == len(IOT_LINES) == counters["events_valid"] + len(dead)
    assert counters["events_valid"] == 4 and counters["rows_DEVICE_TEMP"] == 4
    reasons = sorted(d["reason"] for d in dead)
    assert any("'temperature_c': expected a number" in r for r in reasons)
    assert any("'device'" in r and "whitespace" in r for r in reasons)
    assert any("missing field(s): ts" in r for r in reasons)
    assert any("unexpected field(s): color" in r for r in reasons)
    assert any("999 is above its maximum 200" in r for r in reasons)
    assert {d["pipeline"] for d in dead} == {"iot_temperatures"}

    rows = {r.key: r for r in engine.read_rows(target, "DEVICE_TEMP")}
    # newest hour first within a device; one row per device and hour (TB-CELL)
    assert list(rows) == [
        b"dev-1#" + _reversed(HOUR + 3_600_000),
        b"dev-1#" + _reversed(HOUR),
        b"dev-2#" + _reversed(HOUR),
    ]
    ten = rows[b"dev-1#" + _reversed(HOUR)]
    cells = sorted((c.qualifier, c.value, c.timestamp_us) for c in ten.cells)
    assert cells == [
        (b"rh", b"40", (HOUR + 900_000) * 1000),
        (b"temp", b"21.50", (HOUR + 900_000) * 1000),
        (b"temp", b"22.0", (HOUR + 2_700_250) * 1000),
    ]
    families = admin.Admin(target).get_families("DEVICE_TEMP")
    assert families["t"].gc_rule is not None

    # idempotent: the same input again leaves the same cells
    before = sorted((r.key, c) for r in engine.read_rows(target, "DEVICE_TEMP") for c in r.cells)
    run_job("generic", target, source, tmp_path / "dead2", [f"--schema={IOT}"])
    after = sorted((r.key, c) for r in engine.read_rows(target, "DEVICE_TEMP") for c in r.cells)
    assert after == before


def test_iot_csv_input(target, tmp_path):
    source = write_lines(
        tmp_path / "iot.csv",
        [
            "device,ts,temperature_c,humidity",
            "dev-9,2024-05-01T10:15:00Z,19.75,",
            "dev-9,2024-05-01T10:16:00Z,x,3",
        ],
    )
    result = run_job("generic", target, source, tmp_path / "dead", [f"--schema={IOT}"])
    assert result.counters["events_valid"] == 1
    assert len(read_dead_letters(tmp_path / "dead")) == 1
    (row,) = engine.read_rows(target, "DEVICE_TEMP")
    assert [(c.qualifier, c.value) for c in row.cells] == [(b"temp", b"19.75")]


def _cli(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    return code, capsys.readouterr().out


def test_iot_through_the_cli_ingest_query_and_lint(target, tmp_path, capsys):
    source = write_lines(tmp_path / "iot.jsonl", IOT_LINES[:4])
    where = ["--project", target.project, "--instance", target.instance]
    code, out = _cli(capsys, "tables", "create", "--schema", str(IOT), *where)
    assert code == 0 and "DEVICE_TEMP" in out
    code, _ = _cli(
        capsys, "ingest", "--schema", str(IOT), f"--input={source}",
        f"--dead_letter={tmp_path / 'dead'}", *where,
    )  # fmt: skip
    assert code == 0

    # the latest hour of dev-1: the first row of its prefix
    code, out = _cli(
        capsys, "query", "--schema", str(IOT), "--field", "device=dev-1", "--limit", "1",
        "--raw", "--format", "json", *where,
    )  # fmt: skip
    assert code == 0
    (latest,) = json.loads(out)
    assert latest["key"] == "dev-1#" + _reversed(HOUR + 3_600_000).decode()
    assert {(c["qualifier"], c["value"]) for c in latest["cells"]} == {
        ("temp", "23.25"),
        ("rh", "41"),
    }

    # dev-1 between 10:30 and 11:00: the 10:00 bucket row, only the 10:45 cell
    code, out = _cli(
        capsys, "query", "--schema", str(IOT), "--field", "device=dev-1", "--raw",
        "--start", "2024-05-01T10:30:00Z", "--end", "2024-05-01T11:00:00Z", "--format", "json",
        *where,
    )  # fmt: skip
    assert code == 0
    (row,) = json.loads(out)
    assert row["key"] == "dev-1#" + _reversed(HOUR).decode()
    assert [(c["qualifier"], c["value"]) for c in row["cells"]] == [("temp", "22.0")]

    code, out = _cli(capsys, "query", "--schema", str(IOT), "--field", "dev=x", *where)
    assert code == 2

    code, out = _cli(capsys, "advise", "lint", "--schema", str(IOT))
    assert code == 0 and "ok    DEVICE_TEMP" in out and "→ pass" in out


def test_lint_of_a_schema_file_finds_a_time_first_key(tmp_path, capsys):
    text = (
        IOT.read_text()
        .replace(
            "      - text: device\n      - {reverse_ts: ts, bucket: hour}",
            "      - epoch_ms: ts\n      - text: device",
        )
        .replace("pattern: TB-CELL", "pattern: TS-COLS")
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    code, out = _cli(capsys, "advise", "lint", "--schema", str(bad))
    assert code == 1 and "HOT-TIME-FIRST" in out


def test_aggregate_schema_adds_with_add_to_cell(target, tmp_path):
    lines = [
        '{"employee": "Corrie", "timestamp": "2015-03-16T19:53:32.045Z", "amount_cents": 1999}',
        '{"employee": "Corrie", "timestamp": "2015-03-02T08:00:00Z", "amount_cents": 1}',
    ]
    source = write_lines(tmp_path / "sales.jsonl", lines)
    schema = REPO / "transforms" / "declarations" / "sales.yaml"
    run_job("generic", target, source, tmp_path / "dead", [f"--schema={schema}"])
    (row,) = engine.read_rows(target, "SALES_MONTHLY")
    assert row.key == b"Corrie#201503"
    sums = {c.qualifier: int.from_bytes(c.value, "big", signed=True) for c in row.cells}
    assert sums == {b"AMOUNT": 2000, b"COUNT": 2}


def test_a_broken_schema_stops_the_job_before_any_data_is_read(target, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(IOT.read_text().replace("pattern: TB-CELL", "pattern: TB-CELLS"))
    with pytest.raises(SystemExit) as stop:
        run_job(
            "generic", target, tmp_path / "missing.jsonl", tmp_path / "dead", [f"--schema={bad}"]
        )
    message = str(stop.value)
    line = bad.read_text().splitlines().index("    pattern: TB-CELLS") + 1
    assert f"{bad}:{line}: table DEVICE_TEMP: unknown pattern 'TB-CELLS'" in message
    assert "did you mean 'TB-CELL'" in message
    with admin.Admin(target) as api:
        assert api.list_tables() == []  # nothing created, nothing read


def test_a_missing_table_is_reported_with_the_schema_create_command(target, tmp_path):
    source = write_lines(tmp_path / "x.jsonl", [])  # the inputs are checked before the tables
    with pytest.raises(SystemExit) as stop:
        generic_job.run(
            [f"--schema={IOT}", f"--input={source}",
             f"--bigtable_project={target.project}", f"--bigtable_instance={target.instance}"]
        )  # fmt: skip
    assert f"btts tables create --schema {IOT}" in str(stop.value)


def _job_line(argv: list[str]) -> list[str]:
    """The command, the job and the job's flags that a ``btts`` command line runs."""
    args = cli.parser().parse_args(argv)
    return [args.command, args.job, *args.args]


def _schema_query_args(argv: list[str]) -> list[str] | None:
    """The arguments of the ``btts query --schema FILE …`` form, or None for another query."""
    args = cli.parser().parse_args(argv)
    return getattr(args, "args", None)


def test_btts_ingest_job_is_unchanged_and_schema_means_the_generic_job():
    assert _job_line(["ingest", "--schema", "f.yaml", "--input=x"]) == [
        "ingest", "generic", "--schema", "f.yaml", "--input=x",
    ]  # fmt: skip
    assert _job_line(["-q", "ingest", "--schema=f.yaml"])[1] == "generic"
    assert _job_line(["ingest", "battery", "--input=x"]) == [
        "ingest", "battery", "--input=x",
    ]  # fmt: skip
    assert _schema_query_args(["query", "--schema", "f"]) == ["--schema", "f"]
    when = ["--start", "2015-03-16T00:00:00Z", "--end", "2015-03-17T00:00:00Z"]
    assert _schema_query_args(["query", "metrics", "--host", "h", *when]) is None


def test_every_documented_schema_file_loads_and_passes_the_advisor():
    from btts.advisor import findings, lint

    files = sorted((REPO / "docs" / "schemas").glob("*.yaml"))
    patterns = set()
    for path in files:
        schema = sf.load(path)
        generic.Builder(schema)  # writes at least one table from events
        patterns |= {t.decl.pattern for t in schema.tables}
        results = lint.lint_schema(schema)
        assert findings.failing([f for fs in results.values() for f in fs]) == [], path
    assert patterns >= {"TS-COLS", "TS-BLOB", "TB-COL", "TB-CELL", "SHORT-WIDE", "AGGREGATE"}


_SUBSCRIPTION = "--input_subscription=projects/test-project/subscriptions/s"
_TOPIC = "--dead_letter_topic=projects/test-project/topics/t"


@pytest.mark.parametrize(
    ("flags", "step"),
    [
        (["--input={tmp}/in.jsonl", "--dead_letter=dead/x"], "WriteDeadLetters"),
        ([_SUBSCRIPTION, "--dead_letter=dead/x"], "DeadLetterFiles"),
        ([_SUBSCRIPTION, _TOPIC], "DeadLettersToPubSub"),
    ],
)
def test_dead_letters_go_where_every_ingest_job_sends_them(flags, step, tmp_path):
    """Streaming with a --dead_letter path gets the per-bundle file writer, as the built-in
    jobs do: Beam's sharded text sink cannot take an unbounded input."""
    import apache_beam as beam

    from pipelines import common

    write_lines(tmp_path / "in.jsonl", [])
    flags = [flag.format(tmp=tmp_path) for flag in flags]
    argv = [f"--schema={IOT}", "--bigtable_project=p", "--bigtable_instance=i", *flags]
    options = common.parse_args(argv, "generic", "", generic_job.OPTION_CLASSES)
    job = generic_job.job_for(options)
    pipeline = beam.Pipeline(options=options)
    generic_job.build(pipeline, options)

    def steps(node):  # every step's own label, those inside the Ingest transform included
        yield node.full_label.rsplit("/", 1)[-1]
        for part in node.parts:
            yield from steps(part)

    labels = set(steps(pipeline.transforms_stack[0]))
    assert step in labels
    assert not {"WriteDeadLetters", "DeadLetterFiles", "DeadLettersToPubSub"} - {step} & labels
    assert job.decls is not None and set(job.decls) == set(job.tables)
