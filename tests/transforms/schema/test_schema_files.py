"""Schema files: the built-in declarations live in them, round-trip through them, and broken
files fail with the line and the fix (transforms/schema_lib.py)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
import yaml

from tests.support import REPO
from transforms import schema as sf
from transforms.schema import builtin_tables, values
from transforms.table_model import TableDecl

BUILTIN = sorted(p.stem for p in (REPO / "transforms" / "declarations").glob("*.yaml"))
DOC_SCHEMAS = sorted((REPO / "docs" / "schemas").glob("*.yaml"))
# The Python declarations as they were written by hand before they moved into schema files.
SNAPSHOT = json.loads((REPO / "tests" / "data" / "builtin_declarations.json").read_text())


def _plain(decl: TableDecl) -> dict:
    return {
        "name": decl.name,
        "pattern": decl.pattern,
        "doc": decl.doc,
        "spec": decl.spec,
        "delimiter": decl.key.delimiter,
        "families": [
            {
                "name": f.name,
                "max_versions": f.max_versions,
                "max_age_s": f.max_age.total_seconds() if f.max_age else None,
                "aggregate": f.aggregate,
                "doc": f.doc,
            }
            for f in decl.families
        ],
        "key": [
            {"kind": s.kind, "field": s.field, "width": s.width, "arg": s.arg, "of": list(s.of)}
            for s in decl.key.segments
        ],
    }


# What the hand-written modules exported beside their tables, read from the declarations now.
CONSTANTS = {
    "SALT_BUCKETS": lambda: builtin_tables.get("BATTERY_SALTED").key.segments[1].width,
    "TIME_FORMAT": lambda: builtin_tables.get("BATTERY").key.segments[-1].arg,
    "EXCHANGE_WIDTH": lambda: builtin_tables.get("QUOTE").key.segments[0].width,
    "SYMBOL_WIDTH": lambda: builtin_tables.get("QUOTE").key.segments[1].width,
    "METER_DIGITS": lambda: builtin_tables.get("SENSOR").key.segments[0].width,
    "MINUTES_PER_WEEK": lambda: builtin_tables.get("BALLOON_TB_CELL").families[0].max_versions,
}


@pytest.mark.parametrize("module", sorted(SNAPSHOT))
def test_loaded_declarations_equal_the_hand_written_ones(module):
    expected = SNAPSHOT[module]
    for name in set(expected) - {"__constants__"}:
        assert _plain(builtin_tables.get(name)) == expected[name], name
    for name, value in expected["__constants__"].items():
        assert CONSTANTS[name]() == value, name


def test_every_declared_table_comes_from_a_schema_file():
    from_files = {n for name in BUILTIN for n in sf.builtin(name).table_names}
    assert set(builtin_tables.all_tables()) <= from_files
    for name, decl in builtin_tables.all_tables().items():
        owner = next(b for b in BUILTIN if name in sf.builtin(b).table_names)
        assert sf.builtin(owner).table(name).decl is decl  # the very same object, not a copy


def test_json_schema_files_load_too(tmp_path):
    schema = sf.builtin("garden")
    path = tmp_path / "garden.json"
    path.write_text(json.dumps(yaml.safe_load(schema.text), indent=2))
    assert sf.load(path) == schema


def test_another_salt_count_is_another_table_declared_in_yaml():
    text = (REPO / "transforms" / "declarations" / "battery.yaml").read_text()
    text = text.replace(
        "advisor:",
        """  - name: BATTERY_SALTED_8
    pattern: TS-COLS
    families: *battery
    key:
      - const: BATTERY
      - {salt: [ts], buckets: 8}
      - {time: ts, format: yyyymmddhhmmssmmm}
    columns: *user_and_level
advisor:""",
        1,
    )
    schema = sf.loads(text)
    salted = {
        seg.width: name
        for name, decl in schema.decls().items()
        for seg in decl.key.segments
        if seg.kind == "salt"
    }
    assert salted == {3: "BATTERY_SALTED", 8: "BATTERY_SALTED_8"}
    assert schema.table("BATTERY_SALTED_8").decl.families == schema.table("BATTERY").decl.families


# -- broken files: every problem with its line and the fix -------------------------------------

GOOD = """\
dataset: iot
event:
  time: ts
  fields:
    device: text
    ts: time
    temp: number
tables:
  - name: T
    pattern: TS-COLS
    families:
      - {name: t, max_versions: 1}
    key:
      - text: device
      - epoch_ms: ts
    columns:
      - {family: t, qualifier: temp, value: temp}
"""


def _problems(text: str) -> list[tuple[int, str]]:
    with pytest.raises(sf.SchemaError) as err:
        sf.loads(text, "bad.yaml")
    assert str(err.value).startswith(f"{len(err.value.problems)} problem(s) in schema bad.yaml")
    for line, message in err.value.problems:
        assert f"bad.yaml:{line}: {message}" in str(err.value)
    return err.value.problems


def test_the_good_file_loads():
    schema = sf.loads(GOOD)
    assert schema.table("T").decl.key.describe() == "DEVICE#TS"


def test_unknown_pattern_names_its_line_and_the_close_match():
    (problem,) = _problems(GOOD.replace("pattern: TS-COLS", "pattern: TS-COL"))
    assert problem[0] == 10
    assert "unknown pattern 'TS-COL'" in problem[1] and "did you mean 'TS-COLS'" in problem[1]


def test_missing_event_time():
    (problem,) = _problems(GOOD.replace("  time: ts\n", ""))
    assert problem[0] == 3  # the event block's first line
    assert "missing 'time'" in problem[1] and "e.g. 'time: ts'" in problem[1]


def test_event_time_must_be_a_time_field():
    (problem,) = _problems(GOOD.replace("  time: ts\n", "  time: temp\n"))
    assert problem == (3, "event.time: field 'temp' is number, not time; give it type: time")


def test_segment_referencing_a_missing_field():
    (problem,) = _problems(GOOD.replace("- text: device", "- text: devise"))
    assert problem[0] == 14
    assert "field 'devise' is not declared (did you mean 'device'?)" in problem[1]


def test_column_reading_a_missing_field():
    (problem,) = _problems(GOOD.replace("value: temp}", "value: tmp}"))
    assert problem[0] == 17 and "reads field 'tmp', which is not declared" in problem[1]


def test_duplicate_qualifiers_name_both_lines():
    text = GOOD + "      - {family: t, qualifier: temp, value: device}\n"
    (problem,) = _problems(text)
    assert problem[0] == 18
    assert "duplicate qualifier t:temp (also on line 17)" in problem[1] and "rename" in problem[1]


@pytest.mark.parametrize(
    "family, words",
    [
        ("{name: t, max_versions: 0}", "bad GC rule: max_versions"),
        ("{name: t, max_age: forever}", "bad GC rule: max_age 'forever' is not a duration"),
        ("{name: t, aggregate: avg}", "bad GC rule: aggregate 'avg' is not supported"),
        ("{name: t}", "no GC rule"),
        ("{name: t, max_version: 1}", "did you mean 'max_versions'"),
    ],
)
def test_bad_gc_rules(family, words):
    problems = _problems(GOOD.replace("{name: t, max_versions: 1}", family))
    assert problems[0][0] == 12, problems
    assert any(words in message for _, message in problems), problems


def test_tb_cell_family_keeping_one_version_is_refused():
    text = GOOD.replace("pattern: TS-COLS", "pattern: TB-CELL")
    (problem,) = _problems(text)
    assert problem[0] == 9 and "keeps 1 version" in problem[1] and "max_versions" in problem[1]


def test_several_problems_are_reported_together_in_line_order():
    text = GOOD.replace("pattern: TS-COLS", "pattern: WIDE").replace("- text: device", "- txt: d")
    problems = _problems(text)
    assert [line for line, _ in problems] == sorted(line for line, _ in problems)
    assert {line for line, _ in problems} >= {10, 14}


def test_duplicate_keys_and_yaml_syntax_errors_have_lines():
    (problem,) = _problems(GOOD.replace("    temp: number\n", "    temp: number\n    ts: text\n"))
    assert problem[0] == 8 and "duplicate key 'ts' (first on line 6)" in problem[1]
    (problem,) = _problems(GOOD.replace("  - name: T", "  - name: [T"))
    assert problem[0] >= 9 and "not valid YAML" in problem[1]


def test_unknown_keys_and_field_types():
    problems = _problems(GOOD.replace("    temp: number", "    temp: {type: decimal}"))
    assert problems[0][0] == 7 and "unknown type 'decimal'" in problems[0][1]
    (problem,) = _problems(GOOD.replace("dataset: iot", "dataset: iot\ncolumns: []"))
    assert problem[0] == 2 and "unknown key 'columns'" in problem[1]


def test_key_segment_types_are_checked():
    (problem,) = _problems(GOOD.replace("- epoch_ms: ts", "- {zero_pad: ts, width: 5}"))
    assert problem[0] == 15 and "'ts' is time; this segment needs integer" in problem[1]


def test_a_table_without_columns_must_say_who_writes_it():
    text = GOOD.split("    columns:")[0]
    (problem,) = _problems(text)
    assert problem[0] == 9 and "written_by" in problem[1]
    assert sf.loads(text.replace("    pattern:", "    written_by: my job\n    pattern:"))


def test_durations():
    assert values.parse_duration("90d") == dt.timedelta(days=90)
    assert values.parse_duration("36h") == dt.timedelta(hours=36)
    assert values.parse_duration(120) == dt.timedelta(minutes=2)
    assert values.parse_duration("0d") is None and values.parse_duration("1y") is None


def test_reverse_ts_bucket_keys_newest_hour_first():
    schema = sf.load(Path(REPO / "docs" / "schemas" / "tb-cell-iot-temperatures.yaml"))
    key = schema.table("DEVICE_TEMP").decl.key
    ten = key.build({"device": "d", "ts": 1714558500000})  # 2024-05-01T10:15Z
    ten_b = key.build({"device": "d", "ts": 1714561199999})  # 10:59:59.999
    eleven = key.build({"device": "d", "ts": 1714561200000})
    assert ten == ten_b == b"d#%d" % (9223372036854775807 - 1714557600000)
    assert eleven < ten


# -- the input a job takes, described from its schema -------------------------------------------


@pytest.mark.parametrize("dataset", builtin_tables.builtin_datasets())
def test_every_builtin_schema_has_an_example_line_that_builds(dataset):
    from transforms.builder import builder as generic
    from transforms.text.events import parse_json_object

    schema = sf.builtin(dataset)
    written = schema.written()
    assert schema.example, f"{dataset}.yaml: give event.example, one input line"
    rows = generic.Builder(schema)(parse_json_object(schema.example))
    assert {r.table for r in rows} == {t.name for t in written}


def test_a_jobs_help_shows_its_fields_and_an_example_line(capsys):
    from pipelines import smart_meters

    with pytest.raises(SystemExit) as done:
        smart_meters.run(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "meter_id       integer (0..9999999999)" in out
    assert sf.builtin("smart_meters").example in out


def test_the_generic_jobs_help_describes_the_schema_given_with_it(capsys):
    from pipelines import generic as generic_job

    with pytest.raises(SystemExit):
        generic_job.run(["--help", "--schema", str(DOC_SCHEMAS[0])])
    out = capsys.readouterr().out
    schema = sf.load(DOC_SCHEMAS[0])
    assert all(f"  {f.name} " in out for f in schema.fields)


def test_a_rows_per_field_that_is_a_list_is_a_problem_not_a_traceback():
    text = (sf.DECLARATIONS / "weather_balloons.yaml").read_text(encoding="utf-8")
    old = "rows_per: {fields: [pressure, temperature, humidity, altitude]"
    assert old in text
    bad = text.replace(old, "rows_per: {fields: [pressure, [temperature], humidity, {a: b}]")
    with pytest.raises(sf.SchemaError) as err:
        sf.loads(bad, "b.yaml")
    assert "rows_per field ['temperature'] is not declared" in str(err.value)
    assert "rows_per field {'a': 'b'} is not declared" in str(err.value)
