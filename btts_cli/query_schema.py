"""``btts query --schema FILE …``: a query the schema file declares (``btts query --schema FILE
NAME --flags``), or a read of one of its tables by its key recipe (``--table T --field NAME=VALUE
…``), decoded into records like a declared query's (``--raw``: the cells as stored).
``btts query --schema FILE --help`` lists the file's declared queries with their flags.
"""

from __future__ import annotations

import argparse
import json
import textwrap
from collections.abc import Callable
from dataclasses import replace

from btts import config, errors
from btts.lazy import lazy_module
from btts_cli.cliparse import Parser
from btts_cli.query_output import (
    add_common,
    add_output,
    add_range,
    add_timezone,
    print_answer,
    read,
)
from transforms.text import timefmt

__all__ = ["run_schema"]

# Loaded when a query runs: `btts query --help` imports no client.
engine = lazy_module("btts.query.engine")
query_records = lazy_module("btts.query.records")
render = lazy_module("btts.query.render")


def declared_name(argv: list[str]) -> str | None:
    """The query NAME right after ``--schema FILE``, or None (the --table/--field form)."""
    at = 1 if argv[:1] and argv[0].startswith("--schema=") else 2
    name = argv[at] if len(argv) > at else ""
    return name if name and not name.startswith("-") else None


def _declared_parser(schema, spec, target_args: Callable) -> argparse.ArgumentParser:
    """The flags of one declared query (its NAME is taken off the arguments before parsing)."""
    parser = Parser(
        prog=f"btts query --schema FILE {spec.name}",
        description=spec.doc or f"the query {spec.name} of {schema.dataset} ({spec.table})",
    )
    parser.add_argument("--schema", required=True, metavar="FILE", help="the schema file")
    for name in spec.select:
        parser.add_argument(f"--{name}", required=True, help=f"the key field {name}")
    if spec.read == "time":
        add_range(parser)
    add_timezone(parser)
    add_common(parser, target_args)
    return parser


def _without_name(argv: list[str], name: str) -> list[str]:
    """The arguments of a declared query without its NAME (right after ``--schema FILE``)."""
    at = 1 if argv[:1] and argv[0].startswith("--schema=") else 2
    return [*argv[:at], *argv[at + 1 :]] if argv[at : at + 1] == [name] else argv


def run_declared(argv: list[str], target_args: Callable) -> int:
    """Run a query a schema file declares; prints like the documented queries.
    Raises ConfigError (a UserError: one line naming what to change)."""
    name = declared_name(argv)
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--schema", required=True)
    schema = config.load_schema(pre.parse_known_args(argv)[0].schema)
    try:  # (argparse reports bad flags itself: usage, exit 2)
        spec = engine.declared(schema, name)
        args = _declared_parser(schema, spec, target_args).parse_args(_without_name(argv, name))
        values = {f: getattr(args, f) for f in spec.select}
        query = engine.declared_query(
            schema, spec.name, values, getattr(args, "start", None), getattr(args, "end", None),
            args.timezone,
        )  # fmt: skip
    except ValueError as err:  # a value of the command line (an InvalidEvent too)
        raise errors.ConfigError.because(err) from err
    target, records = read(args, query)
    return print_answer(args, target, query, records)


def declared_help(schema) -> str:
    """The queries a loaded schema file declares, each with the flags it takes (``--help``)."""
    if not schema.queries:
        return f"{schema.dataset} declares no queries: read a table with --table/--field."
    lines = [f"Queries {schema.dataset} declares (btts query --schema FILE NAME --help):"]
    for spec in schema.queries:
        flags = [f"--{f} {f.upper()}" for f in spec.select]
        flags += ["--start T", "--end T"] if spec.read == "time" else []
        lines.append(f"  {spec.name} {' '.join(flags)}".rstrip())
        about = spec.doc or f"{spec.read} read of {spec.table}"
        lines += textwrap.wrap(about, 88, initial_indent=" " * 6, subsequent_indent=" " * 6)
    return "\n".join(lines)


def _table_parser(target_args: Callable, schema=None) -> argparse.ArgumentParser:
    about = (
        "Read a schema file's table with the key range its key recipe gives: one row (every key "
        "field given), a time range (--start/--end after the leading fields), or the prefix the "
        "leading fields fix (with --limit: the first N rows, e.g. the newest buckets of a "
        "reversed-time key). The rows are decoded into records as a declared query's are "
        "(--raw: the cells as stored)."
    )
    parser = Parser(
        prog="btts query --schema FILE",
        description=textwrap.fill(about, 88),
        epilog=declared_help(schema) if schema is not None else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--schema", required=True, metavar="FILE", help="the schema file")
    parser.add_argument("--table", help="which of its tables (default: its only table)")
    parser.add_argument(
        "--field", action="append", default=[], metavar="NAME=VALUE",
        help="a key field's value (repeatable), e.g. --field device=dev-1",
    )  # fmt: skip
    add_range(parser, required=False)
    parser.add_argument("--limit", type=int, help="at most N rows (in key order)")
    parser.add_argument("--latest", action="store_true", help="newest cell per column only")
    parser.add_argument(
        "--raw", action="store_true", help="the rows as stored (key, then each cell) instead "
        "of decoded records"
    )  # fmt: skip
    add_timezone(parser)
    add_output(parser)
    parser.add_argument(
        "--keys", action="store_true", help="table format: show each record's row key"
    )
    target_args(parser)
    return parser


def _schema_of(argv: list[str]):
    """The schema ``--schema FILE`` names (None without one: argparse then says it is needed)."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--schema")
    path = pre.parse_known_args(argv)[0].schema
    return config.load_schema(path) if path else None


def run_schema(argv: list[str], target_args: Callable) -> int:
    """``btts query --schema FILE …``: a query the file declares, else a read of one of its
    tables by its key recipe, decoded into records (``--raw``: printed as the rows are
    stored). Raises ConfigError (a UserError: one line naming what to change)."""
    if declared_name(argv):
        return run_declared(argv, target_args)
    schema = _schema_of(argv)
    args = _table_parser(target_args, schema).parse_args(argv)
    table = args.table or (schema.table_names[0] if len(schema.tables) == 1 else None)
    if table is None:
        raise errors.ConfigError(f"pass --table: the schema has {', '.join(schema.table_names)}")
    if args.raw and args.plot:
        raise errors.ConfigError("--plot draws decoded records: drop --raw")
    given = {}
    for item in args.field:
        name, eq, value = item.partition("=")
        if not eq or not name:
            raise errors.ConfigError(f"--field {item!r}: use NAME=VALUE")
        given[name] = value
    try:
        decl = schema.table(table).decl
        query = engine.table_query(
            schema, table, given, args.start, args.end, limit=args.limit,
            latest_only=args.latest, tz=args.timezone,
        )  # fmt: skip
    except (KeyError, ValueError) as err:  # a value of the command line (an InvalidEvent too)
        raise errors.ConfigError(str(err.args[0] if err.args else err)) from err
    if not args.raw:
        decoded = replace(
            query,
            decode=lambda scans: query_records.decode_table(schema, table, scans, args.latest),
        )
        target, records = read(args, decoded)
        return print_answer(args, target, decoded, records)
    target, rows = read(args, query)
    _print_raw(args, target, query, decl, rows)
    return 0


def _print_raw(args, target: config.Target, query: engine.Query, decl, rows: list) -> None:
    """Rows as stored: each key, then its cells (family:qualifier = value @ time)."""
    aggregate = {f.name for f in decl.families if f.aggregate}

    def text(raw: bytes) -> str:
        return raw.decode("utf-8", errors="backslashreplace")

    def cell(c) -> dict:
        value = query_records.int64(c.value) if c.family in aggregate else text(c.value)
        return {
            "family": c.family,
            "qualifier": text(c.qualifier),
            "value": value,
            "timestamp_ms": decl.event_ms(c.timestamp_us),  # the event time, in any era
        }

    records = [{"key": text(row.key), "cells": [cell(c) for c in row.cells]} for row in rows]
    if args.format == "json":
        print(json.dumps(records, indent=2, ensure_ascii=False))
        return
    if args.format == "csv":
        flat = [{"key": r["key"], **c} for r in records for c in r["cells"]]
        print(render.to_csv(flat), end="")
        return
    print(f"{query.title} — {target.describe()}")
    print(f"  read {query.describe()}\n")
    for record in records:
        print(record["key"])
        for one in record["cells"]:
            stamp = timefmt.iso(one["timestamp_ms"])
            print(f"    {one['family']}:{one['qualifier']} = {one['value']}  @ {stamp}")
    print(f"\n{len(records):,} row(s)")
