"""``btts query …`` and ``btts tenant drop``: the query functions of :mod:`btts.query_engine` as
commands, printing a table (default) or JSON.

Table output starts with what was read (table, key range or rows, cell-time window), so the
answer can be checked with ``cbt read`` on the same range; ``--format json`` prints only the
records, for scripts.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import zoneinfo
from collections.abc import Callable

from btts import admin, render
from btts import query_engine as q
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
    if name.upper() == "UTC":
        return dt.timezone.utc
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise argparse.ArgumentTypeError(f"unknown time zone {name!r} (use an IANA name)") from None


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


def _range(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--start", type=_time, required=True, help="from this time (inclusive)")
    parser.add_argument("--end", type=_time, required=True, help="to this time (exclusive)")


def _tz(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timezone",
        type=_zone,
        default=dt.timezone.utc,
        help="zone of the day/month boundaries the rows were written with (default: UTC)",
    )


# Each subcommand: (name, help, add its arguments, build the Query from the parsed arguments).
def _metrics(p):
    p.add_argument("--host", required=True, help="host name, e.g. server1.bbb.com")
    _range(p)


def _current(p):
    p.add_argument(
        "--host", action="append", metavar="HOST", help="only this host (repeatable); "
        "default: the whole fleet"
    )  # fmt: skip


def _recent(p):
    p.add_argument("--host", required=True)
    p.add_argument("-n", "--count", type=int, default=10, help="how many (default: 10)")
    p.add_argument("--before", type=_time, help="only readings before this time")


def _meter(p):
    p.add_argument("--meter", type=int, required=True, help="numeric meter id, e.g. 987654")
    p.add_argument("--date", type=_day, required=True, help="the day, YYYY-MM-DD or YYYYMMDD")
    _tz(p)


def _meters_of_day(p):
    p.add_argument("--date", type=_day, required=True, help="the day, YYYY-MM-DD or YYYYMMDD")
    p.add_argument(
        "--layout",
        choices=("per_day_table", "single_table"),
        default="per_day_table",
        help="where the nightly job copied the day (default: per_day_table, SENSOR_YYYYMMDD)",
    )
    _tz(p)


def _market(p):
    p.add_argument("--exchange", required=True, help="e.g. NASDAQ")
    p.add_argument("--symbol", required=True, help="e.g. ZXZZT")
    _range(p)


def _player_games(p):
    p.add_argument("--game", required=True, help="e.g. LoL")
    p.add_argument("--player", required=True, help="e.g. Corrie")
    p.add_argument("--month", type=_month, required=True, help="YYYY-MM")


def _games(p):
    p.add_argument("--game", required=True, help="e.g. LoL")
    p.add_argument("--month", type=_month, required=True, help="YYYY-MM")


def _balloon(p):
    p.add_argument(
        "--pattern",
        choices=tuple(q.BALLOON_TABLES),
        default="TS-COLS",
        help="which layout's table to read (default: TS-COLS)",
    )
    p.add_argument("--location", required=True, help="e.g. us-west2")
    p.add_argument("--balloon", required=True, help="balloon id, e.g. 3698")
    _range(p)


def _battery(p):
    _range(p)
    p.add_argument(
        "--user", help="one user's levels from BATTERY (promoted); default: every user's from "
        "BATTERY_SALTED, one scan per salt bucket merged in time order"
    )  # fmt: skip
    p.add_argument("--buckets", type=int, help="salt bucket count of the salted table to read")


def _tenant(p):
    p.add_argument("--tenant", required=True, help="e.g. altostrat")


def _garden(p):
    p.add_argument("--garden", required=True, help="e.g. VEGGIEGARDEN")
    p.add_argument("--month", type=_month, help="one month as one short-wide row")
    p.add_argument("--start", type=_time, help="daily rows from this day (with --end)")
    p.add_argument("--end", type=_time, help="… to this day (exclusive)")


def _sales(p):
    p.add_argument("--employee", required=True)
    p.add_argument("--from", dest="first", type=_month, required=True, help="first month YYYY-MM")
    p.add_argument("--to", dest="last", type=_month, help="last month (default: --from)")
    _tz(p)


def _garden_query(a):
    if a.month:
        return q.garden_month_query(a.garden, *a.month)
    if a.start is None or a.end is None:
        raise admin.ConfigError("garden: pass --month, or --start and --end")
    return q.garden_days_query(a.garden, a.start, a.end)


SUBCOMMANDS: dict[str, tuple[str, Callable, Callable]] = {
    "metrics": (
        "one host's metrics between two times (METRIC range)",
        _metrics,
        lambda a: q.host_metrics_query(a.host, a.start, a.end),
    ),
    "current": (
        "latest metrics of the fleet or of chosen hosts (CURRENT_METRIC)",
        _current,
        lambda a: q.latest_metrics_query(a.host),
    ),
    "recent": (
        "a host's latest N readings, newest first (METRIC_RECENT, reversed timestamps)",
        _recent,
        lambda a: q.recent_metrics_query(a.host, a.count, a.before),
    ),
    "meter": (
        "one meter's readings of one day (a single SENSOR row)",
        _meter,
        lambda a: q.meter_day_query(a.meter, a.date, a.timezone),
    ),
    "meters-of-day": (
        "every meter's readings of one day (the nightly SENSOR_YYYYMMDD table)",
        _meters_of_day,
        lambda a: q.meters_of_day_query(a.date, a.layout, a.timezone),
    ),
    "quotes": (
        "quotes of one exchange + symbol between two times (QUOTE range)",
        _market,
        lambda a: q.quotes_query(a.exchange, a.symbol, a.start, a.end),
    ),
    "trades": (
        "trades of one exchange + symbol between two times (TRADE range)",
        _market,
        lambda a: q.trades_query(a.exchange, a.symbol, a.start, a.end),
    ),
    "player-games": (
        "one player's results of one game in a month (GAME_BY_PLAYER range)",
        _player_games,
        lambda a: q.player_games_query(a.game, a.player, *a.month),
    ),
    "games": (
        "every result of one game in a month (GAME_BY_DATE range)",
        _games,
        lambda a: q.games_of_month_query(a.game, *a.month),
    ),
    "balloon": (
        "one balloon's measurements between two times, from one of the four layouts",
        _balloon,
        lambda a: q.balloon_measurements_query(a.pattern, a.location, a.balloon, a.start, a.end),
    ),
    "battery": (
        "battery levels between two times (salted: merged buckets; --user: promoted)",
        _battery,
        lambda a: q.battery_levels_query(a.start, a.end, a.user, a.buckets),
    ),
    "tenant": (
        "every device reading of one tenant (DEVICE prefix TENANT#)",
        _tenant,
        lambda a: q.tenant_rows_query(a.tenant),
    ),
    "garden": (
        "a garden's days (GARDEN_DAILY range) or month (GARDEN_MONTHLY row)",
        _garden,
        _garden_query,
    ),
    "sales": (
        "an employee's monthly sales totals (SALES_MONTHLY aggregates)",
        _sales,
        lambda a: q.monthly_sales_query(a.employee, a.first, a.last or a.first, a.timezone),
    ),
}


# Why a query can come back empty on a fresh instance, when its table has a job of its own.
EMPTY_HINTS = {
    "recent": "METRIC_RECENT is empty: `btts ingest server_metrics` does not write it. It is the "
    "newest-first copy of the same server-metric events, written by its own job: "
    "`btts ingest --schema transforms/declarations/key_ranges.yaml --input FILES --create_tables` "
    "(`btts demo` runs it).",
}


def _run_query(args: argparse.Namespace) -> int:
    _, _, plan = SUBCOMMANDS[args.query]
    try:
        query = plan(args)
    except (ValueError, InvalidEvent) as err:
        raise admin.ConfigError(str(err)) from None
    target = admin.resolve_target(args.project, args.instance)
    try:
        records = q.run(target, query)
    except q.MissingTable as err:
        raise admin.ConfigError(str(err)) from None
    hint = EMPTY_HINTS.get(args.query) if not records else None
    if args.format == "json":
        print(render.to_json(records))
        if hint:
            print(hint, file=sys.stderr)
        return 0
    print(f"{query.title} — {target.describe()}")
    for scan in query.scans:
        print(f"  read {scan.describe()}")
    print()
    print(render.to_table(records, show_keys=args.keys))
    if len(records) == 1:
        for value in records[0]:
            if isinstance(value, dict) and len(value) > render.MAX_DICT_COLUMNS:
                print()
                print(render.dict_grid(value))
    print(f"\n{len(records):,} record(s)")
    if hint:
        print(f"\n{hint}")
    return 0


def add_query_commands(sub: argparse._SubParsersAction, target_args: Callable) -> None:
    """``btts query <what> …``: one subcommand per documented query."""
    parser = sub.add_parser(
        "query",
        help="run one of the documented queries and print the answer (table or JSON)",
        description="The reads each schema was designed for. Keys and ranges come from the "
        "table declarations; values are decoded. Times: RFC 3339 (2015-03-16T19:53:32Z), epoch "
        "milliseconds, or a day (midnight UTC).",
    )
    qsub = parser.add_subparsers(dest="query", metavar="QUERY", required=True)
    for name, (text, add_args, _) in SUBCOMMANDS.items():
        one = qsub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        add_args(one)
        _common(one, target_args)
        one.set_defaults(func=_run_query)


def _drop_tenant(args: argparse.Namespace) -> int:
    target = admin.resolve_target(args.project, args.instance)
    try:
        return _drop(args, target)
    except (q.MissingTable, InvalidEvent) as err:
        raise admin.ConfigError(str(err)) from None


def _drop(args: argparse.Namespace, target: admin.Target) -> int:
    if not args.yes:
        rows = q.run(target, q.tenant_rows_query(args.tenant))
        keys = sorted({r.key for r in rows})
        print(f"Would drop {len(keys):,} row(s) of tenant {args.tenant} from DEVICE in "
              f"{target.describe()}; pass --yes to drop them.")  # fmt: skip
        return 0
    dropped = q.drop_tenant(target, args.tenant)
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


# -- declared queries: ``btts query --schema FILE NAME --FIELD VALUE … [--start T --end T]`` ----


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


def run_declared(argv: list[str], target_args: Callable, load: Callable) -> int:
    """Run a query a schema file declares; prints like the documented queries."""
    name = declared_name(argv)
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--schema", required=True)
    schema = load(pre.parse_known_args(argv)[0].schema)
    try:
        spec = q.declared(schema, name)
    except ValueError as err:
        raise admin.ConfigError(str(err)) from None
    args = _declared_parser(schema, spec, target_args).parse_args(argv)
    values = {f: getattr(args, f) for f in spec.select}
    try:
        query = q.declared_query(
            schema, spec.name, values, getattr(args, "start", None), getattr(args, "end", None),
            args.timezone,
        )  # fmt: skip
    except (ValueError, InvalidEvent) as err:
        raise admin.ConfigError(str(err)) from None
    target = admin.resolve_target(args.project, args.instance)
    try:
        records = q.run(target, query)
    except q.MissingTable as err:
        raise admin.ConfigError(str(err)) from None
    if args.format == "json":
        print(json.dumps(records, indent=2, default=str, ensure_ascii=False))
        return 0
    print(f"{query.title} — {target.describe()}")
    for scan in query.scans:
        print(f"  read {scan.describe()}")
    print()
    for record in records:
        print("  ".join(f"{k}={v}" for k, v in record.items()))
    print(f"\n{len(records):,} record(s)")
    return 0
