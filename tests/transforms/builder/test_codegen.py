"""The schema compiler (transforms/builder/codegen.py): schema files come from users, so no text of
theirs may ever become code. Hostile names compile, build exactly the bytes the schema says,
and never run anything; the generated source holds none of their text."""

from __future__ import annotations

import ast
import json
import pickle
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.codegen_inputs import (
    BUILTIN_EXAMPLES,
    GENERATED_LITERALS,
    HOSTILE,
    every_path_schema,
    literals,
    quoted,
)
from transforms import schema as sf
from transforms.builder import builder as generic
from transforms.builder import fields
from transforms.mutations import AddCell, Cell
from transforms.text.events import parse_json_object


def test_text_yaml_cannot_encode_is_refused_with_its_line():
    with pytest.raises(sf.SchemaError, match=r":3: .*lone surrogate"):
        sf.loads('dataset: x\ndoc: ok\nevent: {time: "\\ud83d"}\n')


def _schema(field: str, qualifier: str, const: str, family: str = "f", table: str = "T") -> str:
    return f"""
dataset: hostile
doc: {quoted("docs are text: " + field + qualifier)}
event:
  time: ts
  fields:
    {quoted(field)}: {{type: text, doc: {quoted(const)}}}
    {quoted(field + "_n")}: number
    when: {{type: time, as: ts}}
tables:
  - name: {table}
    pattern: TS-COLS
    doc: {quoted(const)}
    families:
      - {{name: {quoted(family)}, max_versions: 1}}
    key:
      - const: {quoted(const)}
      - epoch_ms: ts
    columns:
      - {{family: {quoted(family)}, qualifier: {quoted(qualifier)}, value: {quoted(field)}}}
      - {{family: {quoted(family)}, qualifier: {quoted(qualifier + "2")},
         value: {quoted(field + "_n")}}}
"""


def _build_one(field: str, qualifier: str, const: str):
    schema = sf.loads(_schema(field, qualifier, const))
    builder = generic.Builder(schema)
    record = {field: "value", field + "_n": "1.50", "when": "2015-03-16T19:53:32.045Z"}
    record = parse_json_object(json.dumps(record).replace('"1.50"', "1.50"))
    return builder, builder(record)


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_compile_and_build_exactly_what_the_schema_says(name, tmp_path):
    const = name.replace("#", "").strip() or "c"
    if not const.isprintable():
        const = "c"
    builder, rows = _build_one(name, name, const)
    (row,) = rows
    assert row.key == f"{const}#1426535612045".encode()
    assert row.cells == (
        Cell("f", name.encode(), b"value", 1426535612045000),
        Cell("f", (name + "2").encode(), b"1.50", 1426535612045000),
    )
    assert literals(builder._call.source) <= GENERATED_LITERALS
    assert not (tmp_path / "pwned").exists()


def test_the_generated_source_is_made_of_generated_names_only():
    builder, _ = _build_one("secret_field_name", "SECRET_QUALIFIER", "SECRET_CONST")
    source = builder._call.source
    assert "secret" not in source.lower()
    assert "def build(record):" in source
    for name in ("server_metrics", "smart_meters", "market_data", "weather_balloons", "battery"):
        assert literals(generic.Builder(sf.builtin(name))._call.source) <= GENERATED_LITERALS


_text = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field=_text, qualifier=_text)
def test_any_printable_names_build_the_declared_bytes(field, qualifier):
    if field in ("when", field + "_n") or field.endswith("_n") or field == "ts":
        return
    builder, rows = _build_one(field, qualifier, "c")
    assert rows[0].cells[0] == Cell("f", qualifier.encode(), b"value", 1426535612045000)
    assert pickle.loads(pickle.dumps(builder))(
        parse_json_object(json.dumps({field: "v", field + "_n": 2, "when": 1426535612045}))
    )[0].cells[1] == Cell("f", (qualifier + "2").encode(), b"2", 1426535612045000)


def test_every_builtin_schema_compiles_to_a_fast_build_for_its_main_tables():
    """The built-in jobs' tables take the written-out path (no general fallback call)."""
    for name in ("server_metrics", "smart_meters", "market_data", "game_results", "garden"):
        source = generic.Builder(sf.builtin(name))._call.source
        assert "values = {" not in source, name  # the general path builds a values dict


def _field_parser(builder: generic.Builder, name: str):
    """The general parser of one field (what the generated fast path must agree with)."""
    spec = builder.schema.field_by_ref()[name]
    return fields.field_parser(spec, builder.key_delimiters.get(name, ""))


_EDGES = ["ABC", "abc", " a", "a ", "a b", "a\u00a0b", "a\tb", "ǅ", "ß", "İ", "a#b", "", "x" * 40]
_ANY_TEXT = st.text(max_size=8) | st.sampled_from(_EDGES)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=_ANY_TEXT,
    whitespace=st.sampled_from(["allow", "trimmed", "none"]),
    case=st.sampled_from(["as_is", "upper", "lower"]),
)
def test_the_inlined_text_check_agrees_with_the_field_parser(value, whitespace, case):
    """The generated fast path for text fields must accept, reject and rewrite exactly as the
    field's parser does, whatever its whitespace and case rules."""
    text = (
        "dataset: t\nevent:\n  time: when\n  fields:\n"
        f"    name: {{type: text, max_length: 20, whitespace: {whitespace}, case: {case}}}\n"
        "    when: {type: time, format: epoch_ms}\n"
        "tables:\n  - name: T\n    pattern: TS-COLS\n    families: [{name: f, max_versions: 1}]\n"
        "    key: [{text: name}, {epoch_ms: when}]\n"
        "    columns: [{family: f, qualifier: n, value: name}]\n"
    )
    builder = generic.Builder(sf.loads(text))
    record = {"name": value, "when": parse_json_object('{"w": 1426535612045}')["w"]}
    try:
        expected = _field_parser(builder, "name")(record["name"])
    except ValueError as err:
        with pytest.raises(type(err), match="name"):
            builder(record)
        return
    (row,) = builder(record)
    assert row.cells[0].value == expected.encode()
    assert row.key.startswith(expected.encode() + b"#")


@pytest.mark.parametrize("name", BUILTIN_EXAMPLES)
def test_the_hot_path_builds_plain_tuples_equal_to_the_named_rows(name):
    """Jobs run ``Builder.rows`` (plain tuples: cheaper, untracked by the garbage collector);
    readers get named tuples. Both must be the same rows, in the same order."""
    schema = sf.builtin(name)
    builder = generic.Builder(schema)
    record = parse_json_object(schema.example)
    plain = builder.rows(record)
    named = builder(record)
    assert plain == named and plain
    for row in plain:
        assert type(row) is tuple
        assert all(type(c) is tuple or type(c) is AddCell for c in row[2])
    assert all(type(c) in (Cell, AddCell) for row in named for c in row.cells)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=st.integers(min_value=-(10**20), max_value=10**20).map(str)
    | st.sampled_from(["0", "-0", "007", "1e3", "1.0", "", " 1", "9" * 19, "9" * 18]),
    source=st.sampled_from(["json", "csv", "python"]),
)
def test_an_integer_kept_as_digits_writes_what_the_parser_gives(value, source):
    """An integer only written as a cell keeps its JSON digits on the fast path; the cell must
    be byte for byte the parser's int, and every refusal the parser's."""
    from transforms.text.events import CsvText, Num

    text = (
        "dataset: t\nevent:\n  time: when\n  fields:\n"
        "    n: {type: integer, min: -100000000000000000000}\n"
        "    when: {type: time, format: epoch_ms}\n"
        "tables:\n  - name: T\n    pattern: TS-COLS\n    families: [{name: f, max_versions: 1}]\n"
        "    key: [{epoch_ms: when}]\n"
        "    columns: [{family: f, qualifier: n, value: n}]\n"
    )
    builder = generic.Builder(sf.loads(text))
    raw = {
        "json": Num,
        "csv": CsvText,
        "python": lambda v: int(v) if v.lstrip("-").isdigit() else v,
    }
    record = {"n": raw[source](value), "when": parse_json_object('{"w": 1426535612045}')["w"]}
    try:
        expected = _field_parser(builder, "n")(record["n"])
    except ValueError as err:
        with pytest.raises(type(err), match="'n'"):
            builder.rows(record)
        return
    ((_table, _key, (cell,)),) = builder.rows(record)
    assert cell[2] == b"%d" % expected


_IDENTIFIER_LIKE = ["v0", "record", "out", "_new", "build"]  # what names of tables may be
_PLACES = [
    *(("field", n) for n in HOSTILE),
    *(("qualifier", n) for n in HOSTILE),
    *(("const", n) for n in HOSTILE if n.isprintable() and n != "#"),
    *((place, n) for place in ("dataset", "table", "family") for n in _IDENTIFIER_LIKE),
]


@pytest.mark.parametrize(("where", "name"), _PLACES)
def test_hostile_names_on_every_generated_path(where, name, tmp_path):
    builder = generic.Builder(sf.loads(every_path_schema(name, where)))
    f = name if where == "field" else "f"
    table = name if where == "table" else "T"
    family = name if where == "family" else "fam"
    qualifier = (name if where == "qualifier" else "q").encode()
    const = name if where == "const" else "c"
    when, later = "2015-03-16T19:53:32.045Z", "2015-03-16T19:53:33Z"
    record = {f: "abc", f + "_n": 1.5, "when": when, f + "_later": later, f + "_m": {"cpu": 2}}
    rows = builder(parse_json_object(json.dumps(record)))
    assert [row.table for row in rows] == [table, table + "S"]
    us = 1426535612045000
    assert rows[0].key == f"{const}#abc     #1426535612045".encode()
    assert rows[0].cells == (
        Cell(family, qualifier, b"1.5", us),
        Cell(family, b"j", f'{{{json.dumps(f)}:"abc",{json.dumps(f + "_n")}:1.5}}'.encode(), us),
        Cell(family, b"CPU", b"2", us),  # a map's entry names are upper-cased by default
    )
    assert rows[1].key.startswith(f"{const}#".encode())
    assert rows[1].cells == (Cell(family, qualifier, b"abc", us),)
    with pytest.raises(ValueError, match="is not after field"):
        builder(parse_json_object(json.dumps({**record, f + "_later": "2015-03-16T19:53:32Z"})))
    assert literals(builder._call.source) <= GENERATED_LITERALS
    assert not (tmp_path / "pwned").exists()


def test_code_generation_runs_one_way_from_a_plain_plan():
    """The builder hands a frozen BuildPlan to transforms.builder.codegen and gets a function back;
    codegen knows nothing of the builder (it does not import transforms.builder.builder)."""
    import dataclasses

    from transforms.builder import codegen
    from transforms.text import timefmt

    schema = sf.builtin("server_metrics")
    plan = generic.build_plan(schema, [t.name for t in schema.written()], timefmt.UTC)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.tz = None  # type: ignore[misc]
    build = codegen.build_function(plan)
    record = parse_json_object(schema.example)
    assert build(record) == generic.Builder(schema).rows(record)
    assert build.source == generic.Builder(schema)._call.source
    tree = ast.parse(Path(codegen.__file__).read_text(encoding="utf-8"))
    imported = {
        alias.name if isinstance(node, ast.Import) else f"{node.module}.{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert not any("generic" in name for name in imported), imported
