"""Loading a schema file: the document parsed with its lines, every section checked into one
:class:`~.problems.Problems`, and the :class:`~.model.Schema` when there is none."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

import yaml

from transforms.errors import SchemaError
from transforms.schema import advisor as advisor_rules
from transforms.schema import csv_section
from transforms.schema import event as event_rules
from transforms.schema import queries as query_rules
from transforms.schema import shape as shape_rules
from transforms.schema import tables as table_rules
from transforms.schema.era import stamp_problem
from transforms.schema.model import DECLARATIONS, FieldSpec, Schema, TableSpec
from transforms.schema.problems import Problems
from transforms.schema.yaml_lines import line_of, parse
from transforms.text import timefmt

__all__ = ["builtin", "load", "loads", "with_times"]

_TOP_KEYS = ("dataset", "doc", "event", "tables", "queries", "advisor", "index")
_EVENT_KEYS = ("time", "fields", "example", "extra_fields", "unpivot", "missing", "csv")


def check(problems: Problems, doc: object, proto_modules: Sequence[str] = ()) -> Schema | None:
    """The schema a parsed document declares, every problem reported into ``problems``."""
    top = problems.mapping(doc, "schema file", 1)
    if top is None:
        return None
    problems.keys(top, _TOP_KEYS, "schema file")
    dataset = problems.text(top, "dataset", "schema file", required=True)
    if dataset and not event_rules.NAME.match(dataset):
        problems.bad(line_of(top, "dataset"), f"dataset {dataset!r}: use letters, digits and _")
    fields: tuple[FieldSpec, ...] = ()
    time = example = ""
    shaping: dict = {}
    event = None
    if "event" in top:
        event = problems.mapping(top["event"], "event", line_of(top, "event"))
    if event is not None:
        problems.keys(event, _EVENT_KEYS, "event")
        fields = event_rules.fields(problems, event)
        time = event_rules.event_time(problems, event, fields)
        example = problems.text(event, "example", "event")
        shaping = {
            "extra_fields": shape_rules.extra_fields(problems, event),
            "unpivot": shape_rules.unpivot(problems, event, fields),
            "missing": shape_rules.missing_tokens(problems, event, "event") or (),
            "csv": csv_section.dialect(problems, event, fields),
        }
    tables = _tables(problems, top, fields, time, proto_modules)
    _check_across_tables(problems, tables, fields, time)
    if "event" not in top and any(not t.written_by for t in tables):
        problems.bad(
            top.line,
            "schema file: missing 'event': declare the source fields and the event time "
            "(only a file whose every table is 'written_by' another job may omit it)",
        )
    advisor = None
    if top.get("advisor") is not None:
        advisor = advisor_rules.advisor(problems, top["advisor"], line_of(top, "advisor"), tables)
    queries = ()
    if "queries" in top:
        queries = query_rules.parse(problems, top["queries"], line_of(top, "queries"), tables)
    index = table_rules.index(problems, top, tables) if "index" in top else None
    return Schema(
        index=index,
        queries=queries,
        dataset=dataset,
        time=time,
        fields=fields,
        tables=tuple(tables),
        doc=problems.text(top, "doc", "schema file"),
        advisor=advisor,
        example=example,
        proto_modules=tuple(proto_modules),
        **shaping,
    )


def _tables(
    problems: Problems,
    top,
    fields: tuple[FieldSpec, ...],
    time: str,
    proto_modules: Sequence[str],
) -> list[TableSpec]:
    """Each entry of ``tables:`` checked on its own against the event's fields."""
    tables_node = problems.sequence(top.get("tables"), "tables", line_of(top, "tables", top.line))
    tables: list[TableSpec] = []
    if tables_node is not None:
        if not tables_node:
            problems.bad(tables_node.line, "tables: empty; declare at least one table")
        for index, item in enumerate(tables_node):
            line = line_of(tables_node, index)
            spec = table_rules.table(problems, item, line, fields, time, proto_modules)
            if spec is not None:
                tables.append(spec)
    return tables


def _check_across_tables(
    problems: Problems, tables: list[TableSpec], fields: tuple[FieldSpec, ...], time: str
) -> None:
    """What no table can check alone: a rollup's source and its stamps, duplicate names."""
    names = [t.name for t in tables]
    refs = {f.ref: f for f in fields}
    for spec in tables:
        if spec.rollup is not None:
            table_rules.rollup_source(problems, spec, {t.name: t for t in tables})
            source = next((t for t in tables if t.name == spec.rollup.source), None)
            if source is not None:  # a rollup's cells are stamped with its source's times
                stamping = (refs.get(source.time or time), refs.get(source.time_else))
                why = stamp_problem(f"table {spec.name}", spec.decl.cell_timestamp, stamping)
                if why:
                    problems.bad(spec.line, why)
        if names.count(spec.name) > 1:
            problems.bad(spec.line, f"table {spec.name}: declared more than once in this file")


def loads(text: str, source: str = "<schema>", proto_modules: Sequence[str] = ()) -> Schema:
    """A :class:`Schema` from YAML or JSON text; :class:`SchemaError` lists every problem with
    its line and the fix. ``proto_modules``: modules besides ``protos`` its protobuf messages
    may come from (the user names them, never the file)."""
    document = parse(text, source)
    problems = Problems(source)
    schema = check(problems, document, proto_modules)
    if problems.found or schema is None:
        raise SchemaError(source, sorted(problems.found, key=lambda p: p[0]))
    return dataclasses.replace(schema, source=source, text=text)


def with_times(
    schema: Schema,
    formats: Mapping[str, str] | None = None,
    zone: str = "",
    ambiguous: str = "",
) -> Schema:
    """``schema`` with its time fields read another way (a job's --time_format,
    --input_timezone, --ambiguous_times): ``formats`` by source field name, ``zone`` for every
    time field whose format carries no offset. Validated like the file itself; the result's
    text is the changed schema, so a builder pickled from it keeps the change.
    Raises SchemaError (a UserError naming the file's lines)."""
    formats = dict(formats or {})
    times = {f.name for f in schema.fields if f.type == "time"}
    unknown = sorted(set(formats) - times)
    if unknown:
        raise SchemaError(
            schema.source,
            [(0, f"--time_format: {', '.join(unknown)} is not a time field; the time fields "
              f"are {', '.join(sorted(times)) or 'none'}")],
        )  # fmt: skip
    doc = yaml.safe_load(schema.text)  # the file's own data: only the time fields change
    fields = doc["event"]["fields"]
    for spec in schema.fields:
        if spec.type != "time":
            continue
        entry = fields[spec.name]
        if not isinstance(entry, dict):  # the shorthand "name: time"
            entry = fields[spec.name] = {"type": entry}
        fmt = entry["format"] = formats.get(spec.name, spec.format)
        if zone and not (timefmt.has_offset(fmt) and fmt != "auto"):
            entry["timezone"] = zone
        if ambiguous == "error":  # the default, which a file without a zone may not name
            entry.pop("ambiguous", None)
        elif ambiguous:
            entry["ambiguous"] = ambiguous
    # YAML dates (a field's earliest) as their text, which the checker reads the same
    text = json.dumps(doc, indent=1, default=_date_text)
    return loads(text, schema.source, schema.proto_modules)


def _date_text(value: object) -> str:
    if isinstance(value, dt.date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def load(path: str | Path, proto_modules: Sequence[str] = ()) -> Schema:
    """A schema file: a local path, or any path Beam's file systems read (``gs://…``)."""
    name = str(path)
    if "://" in name:
        from apache_beam.io.filesystems import FileSystems

        with FileSystems.open(name) as handle:
            return loads(handle.read().decode("utf-8"), name, proto_modules)
    return loads(Path(name).read_text(encoding="utf-8"), name, proto_modules)


@cache
def builtin(name: str) -> Schema:
    """The built-in dataset ``name``'s schema (``transforms/declarations/<name>.yaml``)."""
    return load(DECLARATIONS / f"{name}.yaml")
