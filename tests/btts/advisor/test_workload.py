"""The advisor's workload comes from the schema file's ``advisor:`` section, for the built-in
declarations and users' files alike: file-wide values with per-table overrides, rates as numbers
or 'N per DURATION', every mistake reported with its line. A time-first key is judged against
that rate: a daily single writer is information, hundreds of writes a second an error."""

from __future__ import annotations

import pytest

from btts.advisor import findings, lint, workload
from btts.advisor.workload import NODE_WRITES_PER_S, FieldModel, Hints, Workload, hints_for
from tests.support import REPO
from transforms import schema as schema_lib
from transforms.schema import builtin_tables, values
from transforms.table_model import Family, KeyRecipe, Segment, TableDecl

# One writer, a row a day, under a time-first key (a daily export's log, say).
DAILY_LOG = """\
dataset: daily_log
event:
  time: day
  fields:
    day: {type: time, format: date}
    total: integer
tables:
  - name: DAILY_TOTAL
    pattern: TS-COLS
    families:
      - {name: d, max_versions: 1}
    key:
      - const: TOTAL
      - {time: day, format: yyyymmdd}
    columns:
      - {family: d, qualifier: total, value: total}
advisor:
  events_per_second: RATE
"""


def _daily(rate: str) -> schema_lib.Schema:
    return schema_lib.loads(DAILY_LOG.replace("RATE", rate), "daily.yaml")


def _time_first(rate: float) -> findings.Finding:
    key = KeyRecipe((Segment("const", arg="EV"), Segment("epoch_ms", "ts")))
    decl = TableDecl("T", (Family("F", 1),), key, "TS-COLS")
    found = {f.rule: f for f in lint.lint(decl, Hints(Workload(rate)), declared_tables=20)}
    return found["HOT-TIME-FIRST"]


# -- severity from the workload ------------------------------------------------------------------


def test_a_single_daily_writer_with_a_time_first_key_is_information():
    results = lint.lint_schema(_daily("0.0000116"))
    (finding,) = results["DAILY_TOTAL"]
    assert (finding.rule, finding.severity, finding.status) == ("HOT-TIME-FIRST", "info", "open")
    assert "harmless at this rate" in finding.message
    assert findings.failing([finding], "warning") == []


def test_five_hundred_writes_a_second_on_one_prefix_stays_an_error():
    (finding,) = lint.lint_schema(_daily("500"))["DAILY_TOTAL"]
    assert finding.severity == "error"
    assert "500 events/s" in finding.message and "3.57% of one node's 14,000" in finding.message
    assert findings.failing([finding], "error") == [finding]
    # The same rate said as the workload says it.
    (per_minute,) = lint.lint_schema(_daily("30000 per 1m"))["DAILY_TOTAL"]
    assert per_minute.severity == "error"


@pytest.mark.parametrize(
    ("rate", "severity"),
    [
        (NODE_WRITES_PER_S, "error"),
        (lint.HOT_ERROR_WRITES_PER_S, "error"),  # the boundary belongs to the error
        (lint.HOT_ERROR_WRITES_PER_S * 0.999, "warning"),
        (lint.HOT_WARNING_WRITES_PER_S, "warning"),
        (lint.HOT_WARNING_WRITES_PER_S * 0.999, "info"),
    ],
)
def test_severity_boundaries_are_shares_of_one_node(rate, severity):
    assert lint.hot_prefix_severity(rate) == severity
    assert _time_first(rate).severity == severity


def test_the_thresholds_are_140_and_1_4_writes_a_second():
    assert lint.hot_prefix_severity(140) == "error"
    assert lint.hot_prefix_severity(139.9) == "warning"
    assert lint.hot_prefix_severity(1.4) == "warning"
    assert lint.hot_prefix_severity(1.39) == "info"


def test_a_sequential_id_first_is_judged_by_the_rate_too():
    key = KeyRecipe((Segment("zero_pad", "order", 12), Segment("epoch_ms", "ts")))
    decl = TableDecl("T", (Family("F", 1),), key, "TS-COLS")
    fields = {"order": FieldModel(10**6, "sequential")}
    for rate, severity in ((5000, "error"), (10, "warning"), (0.001, "info")):
        found = lint.lint(decl, Hints(Workload(rate, fields)), declared_tables=20)
        assert [(f.rule, f.severity) for f in found] == [("HOT-SEQUENTIAL-ID", severity)]
    # A kind guessed from the name stays at most a warning, however busy.
    key = KeyRecipe((Segment("zero_pad", "order_id", 12), Segment("epoch_ms", "ts")))
    guessed = TableDecl("T", (Family("F", 1),), key, "TS-COLS")
    (finding,) = lint.lint(guessed, Hints(Workload(5000)), declared_tables=20)
    assert finding.severity == "warning"


# -- the built-in declarations' sections ---------------------------------------------------------


def test_builtin_workloads_come_from_the_declaration_files():
    battery = hints_for("BATTERY").workload
    assert battery.events_per_s == 1_000_000 / 60  # "1000000 per 1m"
    assert battery.fields["user"] == FieldModel(1_000_000, "label", "assumed: a million phones")
    assert "docs/patterns.md §5.4" in hints_for("BATTERY_TS_FIRST").anti_pattern
    (ts_first,) = lint.lint(builtin_tables.get("BATTERY_TS_FIRST"))
    assert "16,667 events/s" in ts_first.message and "more than one node" in ts_first.message
    assert not hints_for("BATTERY").anti_pattern  # a per-table value stays with its table
    daily = hints_for("SENSOR_DAILY")
    assert set(daily.acknowledged) == {"HOT-TIME-FIRST"}
    assert daily.workload.families["METER"].cells_per_event == 97
    # The file-wide field model, overridden per table where the key holds the id as text.
    assert hints_for("SENSOR").workload.fields["meter"].kind == "integer"
    assert hints_for("SENSOR_HOURLY").workload.fields["meter"].kind == "label"
    (derived,) = hints_for("SENSOR").workload.derived
    assert (derived.name, derived.keep, derived.guard) == ("SENSOR_YYYYMMDD", 30, 990)
    assert hints_for("BALLOON_TB_COL").workload.families["m"].columns is None  # unbounded


def test_every_builtin_table_has_a_declared_workload():
    for name in builtin_tables.all_tables():
        assert hints_for(name).workload.source.startswith(
            ("docs/patterns.md", "assumed", "the ")
        ), name
    assert hints_for("NO_SUCH_TABLE") == Hints()


# -- validation with line numbers ----------------------------------------------------------------

BAD_SECTIONS = [
    ("events_per_second: fast", 18, "events_per_second is a positive number or 'N per DURATION'"),
    ("events_per_second: 10 per fortnight", 18, "'N per DURATION'"),
    ("events_per_second: -3", 18, "positive number"),
    ("tables: {DAILY_TOTL: {events_per_second: 1}}", 18, "no table 'DAILY_TOTL'"),
    ("fields: {day: {kind: clock}}", 18, "kind 'clock'"),
    ("fields: {day: {kind: [label, 1]}}", 18, "kind ['label', 1]"),  # not text: no crash
    ("fields: {day: {cardinality: 0}}", 18, "'cardinality' must be a whole number ≥ 1"),
    ("families: {e: {columns: 3}}", 18, "no family 'e' here"),
    ("families: {d: {columns: lots}}", 18, "'columns' must be a whole number"),
    ("families: {d: {cells_per_event: 0}}", 18, "cells_per_event is a number > 0"),
    ("acknowledge: {HOT-TIME-FIRST: ''}", 18, "give the reason"),
    ("acknowledge: {'hot time': because}", 18, "is not a rule id"),
    ("derived: [{name: X_YYYY, keep: 3}]", 18, "per_year"),
    ("query_fields: day", 18, "query_fields is a list of names"),
    ("tables: {DAILY_TOTAL: {colour: blue}}", 18, "advisor.tables.DAILY_TOTAL: unknown key"),
]


@pytest.mark.parametrize(("section", "line", "message"), BAD_SECTIONS)
def test_a_bad_advisor_section_is_reported_with_its_line(section, line, message):
    text = DAILY_LOG.replace("  events_per_second: RATE\n", f"  {section}\n")
    with pytest.raises(schema_lib.SchemaError) as err:
        schema_lib.loads(text, "bad.yaml")
    assert any(message in m for _, m in err.value.problems), err.value.problems
    assert all(at == line for at, _ in err.value.problems), err.value.problems


def test_a_full_section_loads_and_per_table_values_win():
    text = DAILY_LOG.replace(
        "  events_per_second: RATE\n",
        """\
  events_per_second: 1000 per 1d
  source: a nightly export
  families:
    d: {cells_per_event: 1, columns: unbounded, qualifier_bytes: 5, value_bytes: 4}
  tables:
    DAILY_TOTAL:
      events_per_second: 2
      acknowledge: {HOT-TIME-FIRST: "one writer, a row a day"}
      derived: [{name: TOTAL_YYYY, per_year: 1, keep: null, guard: 990, note: yearly}]
""",
    )
    schema = schema_lib.loads(text, "ok.yaml")
    hints = workload.hints_from_advisor(schema.advisor, "DAILY_TOTAL")
    assert hints.workload.events_per_s == 2.0
    assert hints.workload.source == "a nightly export"
    assert hints.workload.families["d"].columns is None
    assert hints.acknowledged == {"HOT-TIME-FIRST": "one writer, a row a day"}
    assert hints.workload.derived[0].guard == 990
    (finding,) = [f for f in lint.lint_schema(schema)["DAILY_TOTAL"] if f.rule == "HOT-TIME-FIRST"]
    assert finding.status == "acknowledged"


def test_a_rate_reads_as_the_workload_says_it():
    assert values.advisor_rate("100000 per 5s") == 20_000
    assert values.advisor_rate("10000000 per 15m") == 10_000_000 / 900
    assert values.advisor_rate(0.5) == 0.5
    for bad in ("fast", "10 per", "per 5s", True, 0, "0 per 1s", "1 per 0s"):
        assert values.advisor_rate(bad) is None, bad


def test_a_schema_without_a_section_gets_the_defaults():
    assert workload.hints_from_advisor(None, "T") == Hints()
    assert workload.hints_from_advisor({}, "T") == Hints()


def test_the_user_guide_example_section_loads():
    # The guide documents the section on server_metrics' tables: it must stay a valid section.
    guide = (REPO / "docs" / "user-guide.md").read_text(encoding="utf-8")
    example = next(
        block.split("```", 1)[0]
        for block in guide.split("```yaml\n")[1:]
        if block.startswith("advisor:")
    )
    declarations = (REPO / "transforms" / "declarations" / "server_metrics.yaml").read_text()
    schema = schema_lib.loads(declarations.split("\nadvisor:")[0] + "\n" + example, "guide")
    hourly = workload.hints_from_advisor(schema.advisor, "METRIC_HOURLY").workload
    assert hourly.events_per_s == 100_000 / 3600
    assert workload.hints_from_advisor(schema.advisor, "METRIC").workload.events_per_s == 20_000
