"""The schema linter (docs/patterns.md §3): the shipped declarations pass, the documented
anti-pattern is
flagged, SENSOR_DAILY's date-first key is acknowledged with its reason, and every rule fires on a
purpose-built bad declaration (and not on its good twin)."""

from __future__ import annotations

import argparse
import datetime as dt
import json

import pytest

from btts.advisor import findings, lint, naming
from btts.advisor.workload import DerivedTables, FamilyLoad, FieldModel, Hints, Workload, hints_for
from btts_cli import advise_command
from transforms.schema import builtin_tables
from transforms.table_model import Family, KeyRecipe, Segment, TableDecl

ONE = Family("F", max_versions=1)


# Shorthand for the key segments these tests declare (a schema file's `key:` entries).
def const(text: str) -> Segment:
    return Segment("const", arg=text)


def text(name: str) -> Segment:
    return Segment("text", name)


def epoch_ms(name: str) -> Segment:
    return Segment("epoch_ms", name)


def reverse_ts(name: str) -> Segment:
    return Segment("reverse_ts", name)


def reverse_id(name: str) -> Segment:
    return Segment("reverse_id", name)


def zero_padded(name: str, width: int) -> Segment:
    return Segment("zero_pad", name, width)


def time_label(name: str, fmt: str) -> Segment:
    return Segment("time", name, arg=fmt)


def salted(buckets: int, *of: str) -> Segment:
    return Segment("salt", width=buckets, of=of)


def _decl(key, families=(ONE,), pattern="TS-COLS", name="T", delimiter="#"):
    return TableDecl(name, tuple(families), KeyRecipe(tuple(key), delimiter), pattern)


def _rules(decl, workload: Workload | None = None, **hints) -> dict[str, findings.Finding]:
    found = lint.lint(decl, Hints(workload or Workload(), **hints), declared_tables=20)
    return {f.rule: f for f in found}


# -- the shipped declarations -------------------------------------------------------------------


def test_shipped_declarations_pass_except_the_documented_anti_pattern():
    results = lint.lint_all()
    assert set(results) == set(builtin_tables.all_tables())
    open_findings = {(name, f.rule) for name, fs in results.items() for f in fs if f.is_open}
    assert open_findings == set()

    (flagged,) = results["BATTERY_TS_FIRST"]
    assert (flagged.rule, flagged.severity, flagged.spec) == ("HOT-TIME-FIRST", "error", "3.5")
    assert flagged.status == "anti-pattern" and "docs/patterns.md §5.4" in flagged.reason
    assert "BATTERY#TS" in flagged.message


def test_sensor_daily_date_first_is_acknowledged_with_its_reason_and_only_that():
    (finding,) = lint.lint(builtin_tables.get("SENSOR_DAILY"))
    assert (finding.rule, finding.severity, finding.status) == (
        "HOT-TIME-FIRST",
        "error",
        "acknowledged",
    )
    assert "nightly batch copy" in finding.reason
    assert not findings.failing([finding], "info")
    # The acknowledgement covers that rule only: another finding on the table stays open.
    hints = hints_for("SENSOR_DAILY")
    huge = Workload(
        events_per_s=1e9,
        fields={"meter": FieldModel(1)},
        families={"METER": FamilyLoad(columns=None, cells_per_event=10)},
    )
    found = lint.lint(builtin_tables.get("SENSOR_DAILY"), Hints(huge, hints.acknowledged), 20)
    statuses = {f.rule: f.status for f in found}
    assert statuses["HOT-TIME-FIRST"] == "acknowledged"
    assert statuses["ROW-TOO-BIG"] == "open"


def test_no_acknowledgement_or_anti_pattern_is_stale():
    # An acknowledgement must still match a finding (a changed key would leave it behind), and
    # a documented anti-pattern must still be flagged.
    for name, decl in builtin_tables.all_tables().items():
        hints = hints_for(name)
        rules = {f.rule for f in lint.lint(decl)}
        assert set(hints.acknowledged) <= rules, name
        if hints.anti_pattern:
            assert rules, name


def test_the_same_key_without_the_acknowledgement_fails():
    found = lint.lint(builtin_tables.get("SENSOR_DAILY"), Hints(hints_for("SENSOR").workload), 20)
    assert [(f.rule, f.status) for f in found] == [("HOT-TIME-FIRST", "open")]
    assert findings.failing(found, "error")


def test_every_rule_has_a_spec_section_and_findings_carry_it():
    assert all(r.spec and r.title for r in findings.rules_table())
    found = _rules(_decl([epoch_ms("ts")]))
    assert found["HOT-TIME-FIRST"].spec == findings.RULES["HOT-TIME-FIRST"].spec


# -- each anti-pattern on a purpose-built bad declaration ----------------------------------------


def test_timestamp_first():
    assert _rules(_decl([const("EV"), epoch_ms("ts")]))["HOT-TIME-FIRST"].severity == "error"
    assert "HOT-TIME-FIRST" in _rules(_decl([time_label("ts", "hour"), text("host")]))
    reverse = _rules(_decl([reverse_ts("ts"), text("host")]))["HOT-TIME-FIRST"]
    assert "start of the key space" in reverse.message
    # Another increasing value: by its name, or by its modelled kind.
    assert "HOT-TIME-FIRST" in _rules(_decl([text("version"), text("doc")]))
    seq = Workload(fields={"tick": FieldModel(10, "monotonic")})
    assert "HOT-TIME-FIRST" in _rules(_decl([text("tick"), text("host")]), seq)
    # Promotion is the fix.
    assert _rules(_decl([const("EV"), text("host"), epoch_ms("ts")])) == {}


def test_sequential_numeric_id_first():
    guessed = _rules(_decl([zero_padded("order_id", 12), epoch_ms("ts")]))["HOT-SEQUENTIAL-ID"]
    assert guessed.severity == "warning" and "guessed from its name" in guessed.message
    modelled = Workload(fields={"order": FieldModel(10**6, "sequential")})
    found = _rules(_decl([zero_padded("order", 12), epoch_ms("ts")]), modelled)
    assert found["HOT-SEQUENTIAL-ID"].severity == "error"
    # Reversed (12345 → 54321), or modelled as a plain label: fine.
    assert _rules(_decl([reverse_id("order_id"), epoch_ms("ts")])) == {}
    label = Workload(fields={"order_id": FieldModel(10**6, "label")})
    assert _rules(_decl([zero_padded("order_id", 12), epoch_ms("ts")]), label) == {}


def test_too_few_prefixes_in_front_of_the_time():
    busy = Workload(100_000, fields={"region": FieldModel(3)})
    found = _rules(_decl([text("region"), epoch_ms("ts")]), busy)
    assert "3 REGION = 3 distinct prefixes" in found["HOT-NARROW-PREFIX"].message
    spread = Workload(100_000, fields={"region": FieldModel(3), "host": FieldModel(10_000)})
    assert _rules(_decl([text("region"), text("host"), epoch_ms("ts")]), spread) == {}
    # Salt buckets count as prefixes: 3 buckets carry the battery rate under a node's capacity.
    assert _rules(builtin_tables.get("BATTERY_SALTED"), hints_for("BATTERY_SALTED").workload) == {}


def test_unpadded_integers():
    found = _rules(_decl([text("host"), text("port_number"), epoch_ms("ts")]))
    assert "'10' sorts before '9'" in found["KEY-UNPADDED-INT"].message
    meter = Workload(fields={"meter": FieldModel(10**7, "integer")})
    assert "KEY-UNPADDED-INT" in _rules(_decl([text("meter"), epoch_ms("ts")]), meter)
    assert _rules(_decl([zero_padded("meter", 10), epoch_ms("ts")]), meter) == {}


def test_hashed_whole_keys():
    found = _rules(_decl([text("row_hash")]))
    assert found["KEY-HASHED"].severity == "error" and "no range" in found["KEY-HASHED"].message
    wide_salt = _rules(_decl([salted(1000, "host"), text("host"), epoch_ms("ts")]))
    assert wide_salt["KEY-HASHED"].severity == "error"
    later = _rules(_decl([text("host"), text("sha256"), epoch_ms("ts")]))
    assert later["KEY-HASHED"].severity == "warning"
    assert "KEY-HASHED" not in _rules(builtin_tables.get("BATTERY_SALTED"))


def test_raw_bytes_in_keys():
    assert "KEY-RAW-BYTES" in _rules(_decl([text("host"), epoch_ms("ts")], delimiter="\x00"))
    assert "KEY-RAW-BYTES" in _rules(_decl([text("payload_bytes"), epoch_ms("ts")]))
    blob = Workload(fields={"device": FieldModel(100, "bytes")})
    assert "KEY-RAW-BYTES" in _rules(_decl([text("device"), epoch_ms("ts")]), blob)


@pytest.mark.parametrize("name", ["email", "user_email", "phoneNumber", "user_name", "ssn"])
def test_personal_data_in_keys(name):
    found = _rules(_decl([text(name), epoch_ms("ts")]))
    assert found["KEY-PII"].severity == "error"


def test_personal_data_in_family_and_qualifier_names():
    fam = Family("jose@example.com", max_versions=1)
    found = _rules(_decl([text("host"), epoch_ms("ts")], families=[fam]))
    assert "family 'jose@example.com' is personal data" in found["KEY-PII"].message
    quals = Workload(families={"F": FamilyLoad(qualifiers=("+1 650-555-0100",))})
    found = _rules(_decl([text("host"), epoch_ms("ts")]), quals)
    assert "qualifier '+1 650-555-0100'" in found["KEY-PII"].message
    # A column named for what it holds is not personal data itself.
    assert not lint.looks_like_personal_data("EMAIL")
    assert not lint.looks_like_personal_data("CPU/CPU1_USR")
    # Names that merely contain "name" are not persons.
    for ok in ("hostname", "metric_name", "domain"):
        assert lint.guess_kind(ok) != "pii"


def test_long_family_and_qualifier_names():
    short = _decl([text("host"), epoch_ms("ts")], families=[Family("CELL", max_versions=1)])
    assert _rules(short) == {}
    longer = Family("CELLPHONE_NUMBER", max_versions=1)
    found = _rules(_decl([text("host"), epoch_ms("ts")], families=[longer]))
    assert "CELL, not CELLPHONE_NUMBER" in found["NAME-LONG"].message
    quals = Workload(families={"m": FamilyLoad(qualifiers=("temperature_celsius",))})
    m = Family("m", max_versions=1)
    assert "NAME-LONG" in _rules(_decl([text("host"), epoch_ms("ts")], families=[m]), quals)
    # A long name next to a big value is not worth flagging (the TS-BLOB measurements_blob).
    blob = Workload(families={"m": FamilyLoad(qualifiers=("measurements_blob",), value_bytes=400)})
    assert _rules(_decl([text("host"), epoch_ms("ts")], families=[m]), blob) == {}


def test_more_than_a_hundred_families():
    many = [Family(f"f{i}", max_versions=1) for i in range(101)]
    assert "FAMILIES-TOO-MANY" in _rules(_decl([text("host"), epoch_ms("ts")], families=many))
    assert _rules(_decl([text("host"), epoch_ms("ts")], families=many[:100])) == {}


def test_rows_that_outgrow_100_mb():
    key = [text("sensor"), time_label("ts", "month")]
    fam = [Family("m", max_age=dt.timedelta(days=400))]
    heavy = Workload(
        10_000,
        fields={"sensor": FieldModel(100)},
        families={"m": FamilyLoad(cells_per_event=4, columns=4, value_bytes=8)},
    )
    found = _rules(_decl(key, families=fam, pattern="TB-CELL"), heavy)
    assert found["ROW-TOO-BIG"].severity == "error"
    assert "past the 256 MB hard limit" in found["ROW-TOO-BIG"].message
    # Between the advised and the hard limit: a warning. Each cell is 1 + 8 + 8 + 8 = 25 bytes,
    # so a row takes 60 / 100 × 4 × 25 = 60 bytes a second: 153 MiB in 31 days.
    medium = Workload(
        60,
        fields={"sensor": FieldModel(100)},
        families={"m": FamilyLoad(cells_per_event=4, columns=4, value_bytes=8)},
    )
    assert (
        _rules(_decl(key, families=fam, pattern="TB-CELL"), medium)["ROW-TOO-BIG"].severity
        == "warning"
    )
    # A GC rule that keeps one week bounds the same month row; so does a daily bucket.
    week = [Family("m", max_age=dt.timedelta(days=7))]
    assert "ROW-TOO-BIG" not in _rules(_decl(key, families=week, pattern="TB-CELL"), medium)
    daily = [text("sensor"), time_label("ts", "day")]
    assert "ROW-TOO-BIG" not in _rules(_decl(daily, families=fam, pattern="TB-CELL"), medium)


def test_row_estimate_of_a_shipped_table():
    est = lint.estimate_row(builtin_tables.get("SENSOR"), hints_for("SENSOR").workload)
    assert est.events == pytest.approx(96)  # a reading every 15 minutes for a day
    assert est.cells == 97  # 96 HHMM columns and ID, one version each
    unbounded = lint.estimate_row(
        _decl([text("host")], families=[Family("F")], pattern="LATEST"), Workload()
    )
    assert unbounded.bytes == float("inf")


def test_column_versions_for_new_events():
    no_time = _rules(_decl([text("host")], families=[Family("F", max_versions=1000)]))
    assert no_time["VERSIONS-FOR-EVENTS"].severity == "error"
    daily = _decl([text("host"), time_label("ts", "day")], families=[Family("F", max_versions=5)])
    assert _rules(daily)["VERSIONS-FOR-EVENTS"].severity == "warning"
    # Versions for corrections of one value (VERSIONED, STOCK_PRICE) are the documented use.
    assert _rules(builtin_tables.get("STOCK_PRICE"), hints_for("STOCK_PRICE").workload) == {}


def test_gc_rule_missing_where_cells_accumulate():
    latest = _rules(_decl([text("host")], families=[Family("F")], pattern="LATEST"))
    assert latest["GC-MISSING"].severity == "error"
    bucket = _decl(
        [text("host"), time_label("ts", "day")], families=[Family("F")], pattern="TB-CELL"
    )
    found = _rules(bucket)["GC-MISSING"]
    assert found.severity == "warning" and "docs/patterns.md §4" in found.message
    # One event per row: nothing accumulates, no GC rule needed; aggregates merge.
    assert _rules(_decl([text("host"), epoch_ms("ts")], families=[Family("F")])) == {}
    sums = [Family("sum", aggregate="sum")]
    assert _rules(_decl([text("host"), time_label("ts", "hour")], sums, "AGGREGATE")) == {}


def test_tables_per_period_toward_the_limit():
    assert "TABLES-GROWTH" in _rules(_decl([text("host"), epoch_ms("ts")], name="EVENTS_20150301"))
    forever = Workload(derived=(DerivedTables("X_YYYYMMDD", per_year=365, keep=None, guard=None),))
    err = _rules(_decl([text("host"), epoch_ms("ts")]), forever)["TABLES-GROWTH"]
    assert err.severity == "error" and "2.7 years" in err.message
    guarded = Workload(derived=(DerivedTables("X_YYYYMMDD", per_year=365, keep=None, guard=990),))
    assert (
        "refuses" in _rules(_decl([text("host"), epoch_ms("ts")]), guarded)["TABLES-GROWTH"].message
    )
    too_many = Workload(derived=(DerivedTables("X_YYYYMMDD", per_year=365, keep=990, guard=None),))
    assert (
        _rules(_decl([text("host"), epoch_ms("ts")]), too_many)["TABLES-GROWTH"].severity == "error"
    )
    # SENSOR's nightly copies, kept 30 days as scheduled: far from the limit.
    assert _rules(builtin_tables.get("SENSOR"), hints_for("SENSOR").workload) == {}


def test_salting_where_promotion_would_do():
    key = [const("B"), salted(3, "ts"), text("user"), time_label("ts", "yyyymmddhhmmssmmm")]
    users = Workload(fields={"user": FieldModel(10**6)})
    found = _rules(_decl(key), users)["SALT-PROMOTABLE"]
    assert "USER (1,000,000 values)" in found.message
    # The shipped salted table: queries know no user, so salting is the remedy left.
    salted_decl = builtin_tables.get("BATTERY_SALTED")
    assert _rules(salted_decl, hints_for("BATTERY_SALTED").workload) == {}
    knows_user = Workload(fields={"user": FieldModel(10**6)}, query_fields=("user",))
    assert "SALT-PROMOTABLE" in _rules(salted_decl, knows_user)


def test_field_kinds_guessed_from_names():
    assert naming.name_tokens("userEmailAddress") == ["user", "email", "address"]
    assert lint.guess_kind("order_id") == "sequential"
    assert lint.guess_kind("port_number") == "integer"
    assert lint.guess_kind("key_hash") == "hash"
    assert lint.guess_kind("created_ts") == "monotonic"
    assert lint.guess_kind("hostname") is None


def test_fail_on_levels():
    warn = findings.Finding("T", "GC-MISSING", "warning", "m", "4")
    acked = findings.Finding("T", "HOT-TIME-FIRST", "error", "m", "3.5", "acknowledged", "why")
    assert findings.failing([warn, acked], "warning") == [warn]
    assert findings.failing([warn, acked], "error") == []
    assert findings.failing([warn], "never") == []


# -- the command --------------------------------------------------------------------------------


def test_lint_command_shows_flags_acknowledgements_and_exit_status(capsys):
    argv = ["lint", "--table", "BATTERY_TS_FIRST", "--table", "SENSOR_DAILY", "--table", "METRIC"]
    assert advise_command.main(argv) == 0
    out = capsys.readouterr().out
    assert "ERROR   HOT-TIME-FIRST (docs/patterns.md §3.5): key BATTERY#TS" in out
    assert "[anti-pattern]" in out and "[acknowledged] date first on purpose" in out
    assert "ok    METRIC" in out and "→ pass" in out

    assert advise_command.main(["lint"]) == 0
    capsys.readouterr()
    assert advise_command.main(["lint", "--fail_on", "error"]) == 0
    capsys.readouterr()
    assert advise_command.main(["lint", "--json", "--table", "BATTERY_TS_FIRST"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["BATTERY_TS_FIRST"][0]["rule"] == "HOT-TIME-FIRST"
    assert advise_command.main(["lint", "--table", "NOPE"]) == 2
    assert "no table declaration named 'NOPE'" in capsys.readouterr().err


def test_register_adds_the_advise_group_to_a_command_parser(capsys, tmp_path):
    top = argparse.ArgumentParser(prog="btts")
    advise_command.register(top.add_subparsers(dest="command", required=True))
    args = top.parse_args(["advise", "lint", "--table", "METRIC"])
    assert args.func(args) == 0
    assert "ok    METRIC" in capsys.readouterr().out
    args = top.parse_args(["advise", "hotspots", "BATTERY", "--slices", "3"])
    assert args.func(args) == 0 and "BATTERY  key BATTERY#USER#TS" in capsys.readouterr().out
    args = top.parse_args(["advise", "table", "METRIC", "--limit", "5"])
    assert (args.table, args.limit, args.project) == ("METRIC", 5, None)
