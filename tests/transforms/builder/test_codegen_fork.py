"""The generated builder (transforms/builder/codegen.py) against its official counterpart, the plain
loop over the same rules (transforms/builder/interpreted.py, ``BTTS_OFFICIAL=builder``): for every
schema file of the repository and records generated from its fields (valid ones, and ones with a
field missing, unknown, or of another type or range), the same rows or the same refusal."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings

from tests.support.schema_records import SCHEMAS, ZONES, records, shaped_records
from transforms import official
from transforms import schema as sf
from transforms.bigtable.client_entries import protobuf_entry
from transforms.builder import builder as generic
from transforms.builder import codegen, interpreted
from transforms.text import events


def _outcome(build, record):
    """The rows (or framed rows and entries), or the refusal's type and text."""
    try:
        return "rows", build(record)
    except ValueError as err:  # InvalidEvent is one
        return type(err).__name__, str(err)


def _pair(path, tz, monkeypatch):
    """The fork's builder and the official one, for one schema file and zone."""
    schema = sf.loads(path) if isinstance(path, str) else sf.load(str(path))
    monkeypatch.delenv(official.ENV, raising=False)
    fork = generic.Builder(schema, tz=tz)
    monkeypatch.setenv(official.ENV, "builder")
    plain = generic.Builder(schema, tz=tz)
    monkeypatch.delenv(official.ENV)
    return schema, fork, plain


@pytest.mark.parametrize("tz", ZONES, ids=["utc", "new_york"])
@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_generated_and_plain_builders_agree_on_generated_records(name, tz, monkeypatch):
    schema, fork, plain = _pair(SCHEMAS[name], tz, monkeypatch)
    assert plain._compiler is interpreted and fork._compiler is codegen  # the switch holds
    bases = shaped_records(SCHEMAS[name]) if fork._shape is not None else []
    built = {"rows": 0}

    @settings(
        max_examples=40,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(record=records(schema, bases))
    def agree(record):
        theirs = _outcome(plain.rows, record)
        ours = _outcome(fork.rows, record)
        assert ours == theirs, record
        if theirs[0] == "rows":
            built["rows"] += 1
            rows, entries = fork.framed(record)
            assert rows == plain.framed(record)[0]
            for row, entry in zip(rows, entries, strict=True):  # the bytes the builder frames
                assert entry is None or entry == protobuf_entry(row)  # are protobuf's own

    agree()
    assert built["rows"] > 0  # the records reach the tables' rules, not only the refusals
    example = schema.example and events.parse_json_object(schema.example)
    if example:
        assert fork.rows(example) == plain.rows(example)


def test_the_switch_picks_the_plain_loop_for_rows_and_framed_rows(monkeypatch):
    schema = sf.builtin("server_metrics")
    monkeypatch.setenv(official.ENV, "builder")
    plain = generic.Builder(schema)
    monkeypatch.setenv(official.ENV, "wire")
    framed_only = generic.Builder(schema)
    record = events.parse_json_object(schema.example)
    rows, entries = plain.framed(record)
    assert entries == [None] * len(rows)  # the writer encodes every row
    assert plain.framer().__module__ == interpreted.__name__
    rows2, entries2 = framed_only.framed(record)  # generated rows, no hand-written entries
    assert rows2 == rows and entries2 == [None] * len(rows)
    assert framed_only.framer().__module__ != interpreted.__name__


def test_a_refusal_appends_nothing_on_the_plain_path():
    schema = sf.builtin("server_metrics")
    plan = generic.build_plan(schema, [t.name for t in schema.written()], dt.timezone.utc)
    build = interpreted.build_function(plan, framed=True)
    rows, entries = [], []
    with pytest.raises(ValueError):
        build({"nope": 1}, rows, entries)
    assert rows == entries == []
    assert codegen.build_function(plan)(events.parse_json_object(schema.example)) == (
        interpreted.build_function(plan)(events.parse_json_object(schema.example))
    )
