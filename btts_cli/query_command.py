"""``btts query …`` and ``btts tenant drop``: the queries the built-in schema files declare, as
commands with flags of their own, run by :mod:`btts.query_engine` and printed as a table
(default) or JSON.

Table output starts with what was read (table, key range or rows, cell-time window), so the
answer can be checked with ``cbt read`` on the same range; ``--format json`` prints only the
records, for scripts.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Callable

from btts import admin, render
from btts import query_engine as q
from pipelines import nightly
from transforms import key_ranges, timefmt
from transforms.errors import InvalidEvent


def _time(text: str) -> int:
    """RFC 3339 (``2015-03-16T19:53:32Z``), epoch milliseconds, or a day (midnight UTC)."""
    try:
        return timefmt.parse_event_time(text, "time")
    except InvalidEvent as err:
        try:
            return key_ranges.day_bounds(key_ranges.parse_day(text))[0]
        except ValueError:
            raise argparse.ArgumentTypeError(str(err).replace("field 'time': ", "")) from None


def _day(text: str) -> dt.date:
    try:
        return key_ranges.parse_day(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _month(text: str) -> tuple[int, int]:
    try:
        return key_ranges.parse_month(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _zone(name: str) -> dt.tzinfo:
    found = timefmt.zone(name)
    if found is None:
        raise argparse.ArgumentTypeError(f"unknown time zone {name!r} (use an IANA name)")
    return found


def _common(parser: argparse.ArgumentParser, target_args: Callable) -> None:
    target_args(parser)
    parser.add_argument(
        "--format",
        choices=("table", "json"),
        default="table",
        help="table (default): what was read, then one line per record; json: the records only",
    )
    parser.add_argument(
        "--keys", action="store_true", help="table format: show each record's row key"
    )


def _range(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument("--start", type=_time, required=required, help="from this time (inclusive)")
    parser.add_argument("--end", type=_time, required=required, help="to this time (exclusive)")


def _tz(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timezone",
        type=_zone,
        default=dt.timezone.utc,
        help="zone of the calendar labels the rows were written with (default: UTC)",
    )


def _months(first: tuple[int, int], last: tuple[int, int] | None = None, tz=dt.timezone.utc):
    return key_ranges.month_bounds(*first, tz)[0], key_ranges.month_bounds(*(last or first), tz)[1]


# Each subcommand adds its arguments and returns how the parsed arguments become its Query: a
# built-in schema's declared query (nothing here decodes).
def _metrics(p):
    p.add_argument("--host", required=True, help="host name, e.g. server1.bbb.com")
    _range(p)
    return lambda a: q.builtin_query(
        "server_metrics", "host_metrics", {"hostname": a.host}, a.start, a.end
    )


def _current(p):
    p.add_argument(
        "--host", action="append", metavar="HOST", help="only this host (repeatable); "
        "default: the whole fleet"
    )  # fmt: skip
    return lambda a: (
        q.builtin_query("server_metrics", "latest_metrics", {"hostname": a.host})
        if a.host
        else q.builtin_query("server_metrics", "fleet_metrics")
    )


def _recent(p):
    p.add_argument("--host", required=True)
    p.add_argument("-n", "--count", type=int, default=10, help="how many (default: 10)")
    p.add_argument("--before", type=_time, help="only readings before this time")

    def plan(a):
        if a.count < 1:
            raise ValueError("--count must be at least 1")
        window = (0, a.before) if a.before is not None else (None, None)
        return q.builtin_query(
            "queries", "recent_metrics", {"hostname": a.host}, *window, limit=a.count
        )

    return plan


def _meter(p):
    p.add_argument("--meter", type=int, required=True, help="numeric meter id, e.g. 987654")
    p.add_argument("--date", type=_day, required=True, help="the day, YYYY-MM-DD or YYYYMMDD")
    _tz(p)

    def plan(a):
        window = key_ranges.day_bounds(a.date, a.timezone)
        return q.builtin_query("smart_meters", "meter_day", {"meter": a.meter}, *window, a.timezone)

    return plan


def _meters_of_day(p):
    p.add_argument("--date", type=_day, required=True, help="the day, YYYY-MM-DD or YYYYMMDD")
    p.add_argument(
        "--layout",
        choices=("per_day_table", "single_table"),
        default="per_day_table",
        help="where the nightly job copied the day (default: per_day_table, SENSOR_YYYYMMDD)",
    )
    _tz(p)

    def plan(a):
        if a.layout == "single_table":
            window = key_ranges.day_bounds(a.date, a.timezone)
            return q.builtin_query("smart_meters", "meters_of_day", {}, *window)
        copy = nightly.daily_table("SENSOR", f"{a.date:%Y%m%d}")
        return q.builtin_query("smart_meters", "meters_of_day_copy", table=copy)

    return plan


def _market(name: str):
    def add(p):
        p.add_argument("--exchange", required=True, help="e.g. NASDAQ")
        p.add_argument("--symbol", required=True, help="e.g. ZXZZT")
        _range(p)
        return lambda a: q.builtin_query(
            "market_data", name, {"exchange": a.exchange, "symbol": a.symbol}, a.start, a.end
        )

    return add


def _player_games(p):
    p.add_argument("--game", required=True, help="e.g. LoL")
    p.add_argument("--player", required=True, help="e.g. Corrie")
    p.add_argument("--month", type=_month, required=True, help="YYYY-MM")
    return lambda a: q.builtin_query(
        "game_results", "player_games", {"game": a.game, "player": a.player}, *_months(a.month)
    )


def _games(p):
    p.add_argument("--game", required=True, help="e.g. LoL")
    p.add_argument("--month", type=_month, required=True, help="YYYY-MM")
    return lambda a: q.builtin_query(
        "game_results", "games_of_month", {"game": a.game}, *_months(a.month)
    )


BALLOON_QUERIES = {  # --pattern → the weather_balloons query reading that layout's table
    "TS-COLS": "balloon_ts_cols",
    "TS-BLOB": "balloon_ts_blob",
    "TB-CELL": "balloon_tb_cell",
    "TB-COL": "balloon_tb_col",
}


def _balloon(p):
    p.add_argument(
        "--pattern",
        choices=tuple(BALLOON_QUERIES),
        default="TS-COLS",
        help="which layout's table to read (default: TS-COLS)",
    )
    p.add_argument("--location", required=True, help="e.g. us-west2")
    p.add_argument("--balloon", required=True, help="balloon id, e.g. 3698")
    _range(p)
    return lambda a: q.builtin_query(
        "weather_balloons",
        BALLOON_QUERIES[a.pattern],
        {"location": a.location, "balloon_id": a.balloon},
        a.start,
        a.end,
    )


def _battery(p):
    _range(p)
    p.add_argument(
        "--user", help="one user's levels from BATTERY (promoted); default: every user's from "
        "BATTERY_SALTED, one scan per salt bucket merged in time order"
    )  # fmt: skip

    def plan(a):
        if a.user is not None:  # field promotion: one contiguous range
            return q.builtin_query(
                "battery", "battery_levels_of_user", {"user": a.user}, a.start, a.end
            )
        return q.builtin_query("battery", "battery_levels", {}, a.start, a.end)

    return plan


def _tenant(p):
    p.add_argument("--tenant", required=True, help="e.g. altostrat")
    return lambda a: q.builtin_query("devices", "tenant_rows", {"tenant": a.tenant})


def _garden(p):
    p.add_argument("--garden", required=True, help="e.g. VEGGIEGARDEN")
    p.add_argument("--month", type=_month, help="one month as one short-wide row")
    p.add_argument("--start", type=_time, help="daily rows from this day (with --end)")
    p.add_argument("--end", type=_time, help="… to this day (exclusive)")

    def plan(a):
        values = {"garden": a.garden}
        if a.month:
            return q.builtin_query("garden", "garden_month", values, *_months(a.month))
        if a.start is None or a.end is None:
            raise admin.ConfigError("garden: pass --month, or --start and --end")
        return q.builtin_query("garden", "garden_days", values, a.start, a.end)

    return plan


def _sales(p):
    p.add_argument("--employee", required=True)
    p.add_argument("--from", dest="first", type=_month, required=True, help="first month YYYY-MM")
    p.add_argument("--to", dest="last", type=_month, help="last month (default: --from)")
    _tz(p)

    def plan(a):
        window = _months(a.first, a.last, a.timezone)
        return q.builtin_query(
            "sales", "monthly_sales", {"employee": a.employee}, *window, a.timezone
        )

    return plan


SUBCOMMANDS: dict[str, tuple[str, Callable]] = {  # name → (help, add its arguments)
    "metrics": ("one host's metrics between two times (METRIC range)", _metrics),
    "current": ("latest metrics of the fleet or of chosen hosts (CURRENT_METRIC)", _current),
    "recent": (
        "a host's latest N readings, newest first (METRIC_RECENT, reversed timestamps)",
        _recent,
    ),
    "meter": ("one meter's readings of one day (a single SENSOR row)", _meter),
    "meters-of-day": (
        "every meter's readings of one day (the nightly SENSOR_YYYYMMDD table)",
        _meters_of_day,
    ),
    "quotes": (
        "quotes of one exchange + symbol between two times (QUOTE range)",
        _market("quotes"),
    ),
    "trades": (
        "trades of one exchange + symbol between two times (TRADE range)",
        _market("trades"),
    ),
    "player-games": (
        "one player's results of one game in a month (GAME_BY_PLAYER range)",
        _player_games,
    ),
    "games": ("every result of one game in a month (GAME_BY_DATE range)", _games),
    "balloon": (
        "one balloon's measurements between two times, from one of the four layouts",
        _balloon,
    ),
    "battery": (
        "battery levels between two times (salted: merged buckets; --user: promoted)",
        _battery,
    ),
    "tenant": ("every device reading of one tenant (DEVICE prefix TENANT#)", _tenant),
    "garden": ("a garden's days (GARDEN_DAILY range) or month (GARDEN_MONTHLY row)", _garden),
    "sales": ("an employee's monthly sales totals (SALES_MONTHLY aggregates)", _sales),
}


# Why a query can come back empty on a fresh instance, when its table has a job of its own.
EMPTY_HINTS = {
    "recent": "METRIC_RECENT is empty: `btts ingest server_metrics` does not write it. It is the "
    "newest-first copy of the same server-metric events, written by its own job: "
    "`btts ingest --schema transforms/declarations/queries.yaml --input FILES --create_tables` "
    "(`btts demo` runs it).",
}


def _planned(args: argparse.Namespace) -> q.Query:
    try:
        return args.plan(args)
    except (ValueError, InvalidEvent) as err:
        raise admin.ConfigError(str(err)) from None


def plan(words: list[str]) -> q.Query:
    """The query a ``btts query`` command line runs (without ``btts query``): what the demo
    shows is what it reads."""
    parser = argparse.ArgumentParser(prog="btts")
    add_query_commands(parser.add_subparsers(dest="command"), lambda _: None)
    return _planned(parser.parse_args(["query", *words]))


def read(args: argparse.Namespace, query: q.Query) -> tuple[admin.Target, list]:
    """Run a query on the instance the flags name; a missing table is a ConfigError."""
    target = admin.resolve_target(args.project, args.instance)
    try:
        return target, q.run(target, query)
    except q.MissingTable as err:
        raise admin.ConfigError(str(err)) from None


def _run_query(args: argparse.Namespace) -> int:
    query = _planned(args)
    target, records = read(args, query)
    _print(args, target, query, records, EMPTY_HINTS.get(args.query) if not records else None)
    return 0


def _print(args, target: admin.Target, query: q.Query, records: list, hint: str | None = None):
    """The answer: JSON records only, or what was read then a table (every column of a lone
    wide record)."""
    if args.format == "json":
        print(render.to_json(records))
        if hint:
            print(hint, file=sys.stderr)
        return
    print(f"{query.title} — {target.describe()}")
    for scan in query.scans:
        print(f"  read {scan.describe()}")
    print()
    print(render.to_table(records, show_keys=args.keys))
    for grid in render.wide_grids(records):
        print(f"\n{grid}")
    print(f"\n{len(records):,} record(s)")
    if hint:
        print(f"\n{hint}")


def add_query_commands(sub: argparse._SubParsersAction, target_args: Callable) -> None:
    """``btts query <what> …``: one subcommand per documented query."""
    parser = sub.add_parser(
        "query",
        help="run one of the documented queries and print the answer (table or JSON)",
        description="The reads each schema was designed for. Keys and ranges come from the "
        "table declarations; values are decoded. Times: RFC 3339 (2015-03-16T19:53:32Z), "
        "epoch milliseconds, or a day (midnight UTC).",
        epilog="Your own dataset: `btts query --schema FILE --table T --field NAME=VALUE ... "
        "[--start T --end T] [--limit N]` reads the key range the schema's key recipe gives "
        "(`btts query --schema FILE --help`).",
    )
    qsub = parser.add_subparsers(dest="query", metavar="QUERY", required=True)
    for name, (text, add_args) in SUBCOMMANDS.items():
        one = qsub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        one.set_defaults(func=_run_query, query=name, plan=add_args(one))
        _common(one, target_args)


def _drop_tenant(args: argparse.Namespace) -> int:
    target = admin.resolve_target(args.project, args.instance)
    try:
        if not args.yes:
            rows = q.ask(target, "devices", "tenant_rows", {"tenant": args.tenant})
            keys = sorted({r["key"] for r in rows})
            print(f"Would drop {len(keys):,} row(s) of tenant {args.tenant} from DEVICE in "
                  f"{target.describe()}; pass --yes to drop them.")  # fmt: skip
            return 0
        dropped = q.drop_tenant(target, args.tenant)
    except (q.MissingTable, InvalidEvent) as err:
        raise admin.ConfigError(str(err)) from None
    print(f"Dropped tenant {args.tenant}: {dropped:,} row(s) of DEVICE (prefix {args.tenant}#)")
    return 0


def add_tenant_commands(sub: argparse._SubParsersAction, target_args: Callable) -> None:
    """``btts tenant drop``: offboard a tenant by dropping its row range."""
    parser = sub.add_parser("tenant", help="offboard a tenant (drop its row range)")
    tsub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    drop = tsub.add_parser(
        "drop",
        help="drop every DEVICE row of a tenant (the row range of its prefix TENANT#)",
        description="Offboard a tenant: one admin call drops the row range of its prefix "
        "(acme# never touches acme2#). Without --yes, only says how many rows would go.",
    )
    drop.add_argument("--tenant", required=True)
    drop.add_argument("--yes", action="store_true", help="really drop them")
    target_args(drop)
    drop.set_defaults(func=_drop_tenant)


# -- schema files: ``btts query --schema FILE`` with a query it declares, or with --table T ------


def declared_name(argv: list[str]) -> str | None:
    """The query NAME right after ``--schema FILE``, or None (the --table/--field form)."""
    at = 1 if argv[:1] and argv[0].startswith("--schema=") else 2
    name = argv[at] if len(argv) > at else ""
    return name if name and not name.startswith("-") else None


def _declared_parser(schema, spec, target_args: Callable) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"btts query --schema FILE {spec.name}",
        description=spec.doc or f"the query {spec.name} of {schema.dataset} ({spec.table})",
    )
    parser.add_argument("--schema", required=True, metavar="FILE", help="the schema file")
    parser.add_argument("name", help="the query's name in the file's queries: section")
    for name in spec.select:
        parser.add_argument(f"--{name}", required=True, help=f"the key field {name}")
    if spec.read == "time":
        _range(parser)
    _tz(parser)
    _common(parser, target_args)
    return parser


def run_declared(argv: list[str], target_args: Callable) -> int:
    """Run a query a schema file declares; prints like the documented queries."""
    name = declared_name(argv)
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--schema", required=True)
    schema = admin.load_schema(pre.parse_known_args(argv)[0].schema)
    try:  # (argparse reports bad flags itself: usage, exit 2)
        spec = q.declared(schema, name)
        args = _declared_parser(schema, spec, target_args).parse_args(argv)
        values = {f: getattr(args, f) for f in spec.select}
        query = q.declared_query(
            schema, spec.name, values, getattr(args, "start", None), getattr(args, "end", None),
            args.timezone,
        )  # fmt: skip
    except (ValueError, InvalidEvent) as err:
        raise admin.ConfigError(str(err)) from None
    target, records = read(args, query)
    _print(args, target, query, records)
    return 0


def _table_parser(target_args: Callable) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="btts query --schema FILE",
        description="Read a schema file's table with the key range its key recipe gives: one "
        "row (every key field given), a time range (--start/--end after the leading fields), or "
        "the prefix the leading fields fix (with --limit: the first N rows, e.g. the newest "
        "buckets of a reversed-time key).",
    )
    parser.add_argument("--schema", required=True, metavar="FILE", help="the schema file")
    parser.add_argument("--table", help="which of its tables (default: its only table)")
    parser.add_argument(
        "--field", action="append", default=[], metavar="NAME=VALUE",
        help="a key field's value (repeatable), e.g. --field device=dev-1",
    )  # fmt: skip
    _range(parser, required=False)
    parser.add_argument("--limit", type=int, help="at most N rows (in key order)")
    parser.add_argument("--latest", action="store_true", help="newest cell per column only")
    _tz(parser)
    parser.add_argument("--format", choices=("table", "json"), default="table")
    target_args(parser)
    return parser


def run_schema(argv: list[str], target_args: Callable) -> int:
    """``btts query --schema FILE …``: a query the file declares, else a read of one of its
    tables by its key recipe, printed as the rows are stored."""
    if declared_name(argv):
        return run_declared(argv, target_args)
    args = _table_parser(target_args).parse_args(argv)
    schema = admin.load_schema(args.schema)
    table = args.table or (schema.table_names[0] if len(schema.tables) == 1 else None)
    if table is None:
        raise admin.ConfigError(f"pass --table: the schema has {', '.join(schema.table_names)}")
    given = {}
    for item in args.field:
        name, eq, value = item.partition("=")
        if not eq or not name:
            raise admin.ConfigError(f"--field {item!r}: use NAME=VALUE")
        given[name] = value
    try:
        decl = schema.table(table).decl
        query = q.table_query(
            schema, table, given, args.start, args.end, limit=args.limit,
            latest_only=args.latest, tz=args.timezone,
        )  # fmt: skip
    except (KeyError, ValueError, InvalidEvent) as err:
        raise admin.ConfigError(str(err.args[0] if err.args else err)) from None
    target, rows = read(args, query)
    aggregate = {f.name for f in decl.families if f.aggregate}

    def text(raw: bytes) -> str:
        return raw.decode("utf-8", errors="backslashreplace")

    def cell(c) -> dict:
        value = q.int64(c.value) if c.family in aggregate else text(c.value)
        return {
            "family": c.family,
            "qualifier": text(c.qualifier),
            "value": value,
            "timestamp_ms": c.timestamp_us // 1000,
        }

    records = [{"key": text(row.key), "cells": [cell(c) for c in row.cells]} for row in rows]
    if args.format == "json":
        print(json.dumps(records, indent=2, ensure_ascii=False))
        return 0
    print(f"{query.title} — {target.describe()}")
    print(f"  read {query.describe()}\n")
    for record in records:
        print(record["key"])
        for cell in record["cells"]:
            stamp = timefmt.iso(cell["timestamp_ms"])
            print(f"    {cell['family']}:{cell['qualifier']} = {cell['value']}  @ {stamp}")
    print(f"\n{len(records):,} row(s)")
    return 0
