"""What the schema compiler's tests feed it and what they allow it to write: hostile names, a
schema that takes every path of the generator with one of them at a chosen place, the built-in
datasets that carry an example record, and the only literals generated source may hold. Shared
by the compiler's tests, the framed builder's, the differential builder test and the schema
inputs' tests."""

from __future__ import annotations

import ast
import json

from transforms import schema as sf

HOSTILE = [
    "__import__('os').system('touch /tmp/pwned')",
    "x'); import os; ('",
    '"""',
    "\\",
    "a\nb",
    "{v0}",
    "%s%d",
    "}}{{",
    "é\u0301",
    "名前",
    "🙂",
    "v0",
    "record",
    "out",
    "_new",
    "build",
    "lambda: 1",
    "#",
    " spaced ",
]


# YAML-safe: every hostile text goes in as a JSON string (YAML is a superset of JSON).
def quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


# The only literals the generator writes: the 13-digit epoch format (text and bytes).
GENERATED_LITERALS = {"%013d", b"%013d", b"%d", "0"}  # the compiler's own templates


def literals(source: str) -> set:
    """Every str and bytes constant of the generated source."""
    return {
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))
    }


_BUILTINS = "server_metrics smart_meters market_data battery game_results garden sales devices"
BUILTIN_EXAMPLES = [n for n in (*_BUILTINS.split(), "weather_balloons") if sf.builtin(n).example]


def every_path_schema(name: str, where: str) -> str:
    """A schema whose build takes every path of the generator (optional and ordered fields, a
    cached key prefix, a JSON value, a map's entries, a salted table's general closures), with
    ``name`` at one place (``where``) and plain names elsewhere."""

    def at(place: str, plain: str) -> str:
        return quoted(name if where == place else plain)

    f = name if where == "field" else "f"
    fam = at("family", "fam")
    return f"""
dataset: {at("dataset", "d")}
event:
  time: ts
  fields:
    {quoted(f)}: {{type: text, max_length: 8}}
    {quoted(f + "_n")}: {{type: number, optional: true}}
    when: {{type: time, as: ts}}
    {quoted(f + "_later")}: {{type: time, optional: true, after: ts}}
    {quoted(f + "_m")}: map
tables:
  - name: {at("table", "T")}
    pattern: TS-COLS
    families: [{{name: {fam}, max_versions: 1}}]
    key:
      - const: {at("const", "c")}
      - {{space_pad: {quoted(f)}, width: 8}}
      - epoch_ms: ts
    columns:
      - {{family: {fam}, qualifier: {at("qualifier", "q")}, value: {quoted(f + "_n")}}}
      - {{family: {fam}, qualifier: {quoted("j")},
         value: {{json: [{quoted(f)}, {quoted(f + "_n")}]}}}}
      - {{family: {fam}, each: {quoted(f + "_m")}}}
  - name: {quoted((name if where == "table" else "T") + "S")}
    pattern: TS-COLS
    families: [{{name: {fam}, max_versions: 1}}]
    key:
      - const: {at("const", "c")}
      - {{salt: [ts], buckets: 3}}
      - epoch_ms: ts
    columns:
      - {{family: {fam}, qualifier: {at("qualifier", "q")}, value: {quoted(f)}}}
"""
