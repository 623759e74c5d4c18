"""``btts query …`` and ``btts tenant drop``: the queries the built-in schema files declare, as
commands with flags of their own, run by :mod:`btts.query.engine`, printed as a table
(default), JSON or CSV and drawn with ``--plot`` (:mod:`btts_cli.query_output`). The schema-file
forms, ``btts query --schema FILE …``, are :mod:`btts_cli.query_schema`.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Callable

from btts import config, errors
from btts.lazy import lazy_module
from btts_cli.query_output import (
    add_common,
    add_range,
    add_timezone,
    day_arg,
    month_arg,
    print_answer,
    read,
    time_arg,
)
from transforms.errors import InvalidEvent
from transforms.text import timefmt

# Loaded when a query runs (`btts query --help` imports no client, `meters-of-day` no Beam).
engine = lazy_module("btts.query.engine")

__all__ = ["BALLOON_QUERIES", "add_query_commands", "add_tenant_commands", "plan"]


def _months(first: tuple[int, int], last: tuple[int, int] | None = None, tz=dt.timezone.utc):
    return timefmt.month_bounds(*first, tz)[0], timefmt.month_bounds(*(last or first), tz)[1]


# Each subcommand adds its arguments and returns how the parsed arguments become its Query: a
# built-in schema's declared query (nothing here decodes).
def _metrics(p):
    p.add_argument("--host", required=True, help="host name, e.g. server1.bbb.com")
    add_range(p)
    return lambda a: engine.builtin_query(
        "server_metrics", "host_metrics", {"hostname": a.host}, a.start, a.end
    )


def _current(p):
    p.add_argument(
        "--host", action="append", metavar="HOST", help="only this host (repeatable); "
        "default: the whole fleet"
    )  # fmt: skip
    return lambda a: (
        engine.builtin_query("server_metrics", "latest_metrics", {"hostname": a.host})
        if a.host
        else engine.builtin_query("server_metrics", "fleet_metrics")
    )


def _recent(p):
    p.add_argument("--host", required=True)
    p.add_argument("-n", "--count", type=int, default=10, help="how many (default: 10)")
    p.add_argument("--before", type=time_arg, help="only readings before this time")

    def plan(a):
        if a.count < 1:
            raise ValueError("--count must be at least 1")
        window = (0, a.before) if a.before is not None else (None, None)
        return engine.builtin_query(
            "queries", "recent_metrics", {"hostname": a.host}, *window, limit=a.count
        )

    return plan


def _meter(p):
    p.add_argument("--meter", type=int, required=True, help="numeric meter id, e.g. 987654")
    p.add_argument("--date", type=day_arg, required=True, help="the day, YYYY-MM-DD or YYYYMMDD")
    add_timezone(p)

    def plan(a):
        window = timefmt.day_bounds(a.date, a.timezone)
        return engine.builtin_query(
            "smart_meters", "meter_day", {"meter": a.meter}, *window, a.timezone
        )

    return plan


def _meters_of_day(p):
    p.add_argument("--date", type=day_arg, required=True, help="the day, YYYY-MM-DD or YYYYMMDD")
    p.add_argument(
        "--layout",
        choices=("per_day_table", "single_table"),
        default="per_day_table",
        help="where the nightly job copied the day (default: per_day_table, SENSOR_YYYYMMDD)",
    )
    add_timezone(p)

    def plan(a):
        if a.layout == "single_table":
            window = timefmt.day_bounds(a.date, a.timezone)
            return engine.builtin_query("smart_meters", "meters_of_day", {}, *window)
        from pipelines.nightly.dates import daily_table  # Beam: only for this layout

        copy = daily_table("SENSOR", f"{a.date:%Y%m%d}")
        return engine.builtin_query("smart_meters", "meters_of_day_copy", table=copy)

    return plan


def _market(name: str):
    def add(p):
        p.add_argument("--exchange", required=True, help="e.g. NASDAQ")
        p.add_argument("--symbol", required=True, help="e.g. ZXZZT")
        add_range(p)
        return lambda a: engine.builtin_query(
            "market_data", name, {"exchange": a.exchange, "symbol": a.symbol}, a.start, a.end
        )

    return add


def _player_games(p):
    p.add_argument("--game", required=True, help="e.g. LoL")
    p.add_argument("--player", required=True, help="e.g. Corrie")
    p.add_argument("--month", type=month_arg, required=True, help="YYYY-MM")
    return lambda a: engine.builtin_query(
        "game_results", "player_games", {"game": a.game, "player": a.player}, *_months(a.month)
    )


def _games(p):
    p.add_argument("--game", required=True, help="e.g. LoL")
    p.add_argument("--month", type=month_arg, required=True, help="YYYY-MM")
    return lambda a: engine.builtin_query(
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
    add_range(p)
    return lambda a: engine.builtin_query(
        "weather_balloons",
        BALLOON_QUERIES[a.pattern],
        {"location": a.location, "balloon_id": a.balloon},
        a.start,
        a.end,
    )


def _battery(p):
    add_range(p)
    p.add_argument(
        "--user", help="one user's levels from BATTERY (promoted); default: every user's from "
        "BATTERY_SALTED, one scan per salt bucket merged in time order"
    )  # fmt: skip

    def plan(a):
        if a.user is not None:  # field promotion: one contiguous range
            return engine.builtin_query(
                "battery", "battery_levels_of_user", {"user": a.user}, a.start, a.end
            )
        return engine.builtin_query("battery", "battery_levels", {}, a.start, a.end)

    return plan


def _tenant(p):
    p.add_argument("--tenant", required=True, help="e.g. altostrat")
    return lambda a: engine.builtin_query("devices", "tenant_rows", {"tenant": a.tenant})


def _garden(p):
    p.add_argument("--garden", required=True, help="e.g. VEGGIEGARDEN")
    p.add_argument("--month", type=month_arg, help="one month as one short-wide row")
    p.add_argument("--start", type=time_arg, help="daily rows from this day (with --end)")
    p.add_argument("--end", type=time_arg, help="… to this day (exclusive)")

    def plan(a):
        """Raises ConfigError (a UserError: one line naming what to change)."""
        values = {"garden": a.garden}
        if a.month:
            return engine.builtin_query("garden", "garden_month", values, *_months(a.month))
        if a.start is None or a.end is None:
            raise errors.ConfigError("garden: pass --month, or --start and --end")
        return engine.builtin_query("garden", "garden_days", values, a.start, a.end)

    return plan


def _sales(p):
    p.add_argument("--employee", required=True)
    p.add_argument(
        "--from", dest="first", type=month_arg, required=True, help="first month YYYY-MM"
    )
    p.add_argument("--to", dest="last", type=month_arg, help="last month (default: --from)")
    add_timezone(p)

    def plan(a):
        window = _months(a.first, a.last, a.timezone)
        return engine.builtin_query(
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


def _planned(args: argparse.Namespace) -> engine.Query:
    try:
        return args.plan(args)
    except ValueError as err:  # a value of the command line (an InvalidEvent too)
        raise errors.ConfigError.because(err) from err


def plan(words: list[str]) -> engine.Query:
    """The query a ``btts query`` command line runs (without ``btts query``): what the demo
    shows is what it reads."""
    parser = argparse.ArgumentParser(prog="btts")
    add_query_commands(parser.add_subparsers(dest="command"), lambda _: None)
    return _planned(parser.parse_args(["query", *words]))


def _run_query(args: argparse.Namespace) -> int:
    query = _planned(args)
    target, records = read(args, query)
    hint = EMPTY_HINTS.get(args.query) if not records else None
    return print_answer(args, target, query, records, hint)


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
        add_common(one, target_args)


def _drop_tenant(args: argparse.Namespace) -> int:
    target = config.resolve_target(args.project, args.instance)
    try:
        if not args.yes:
            rows = engine.ask(target, "devices", "tenant_rows", {"tenant": args.tenant})
            keys = sorted({r["key"] for r in rows})
            print(f"Would drop {len(keys):,} row(s) of tenant {args.tenant} from DEVICE in "
                  f"{target.describe()}; pass --yes to drop them.")  # fmt: skip
            return 0
        dropped = engine.offboard_tenant(target, args.tenant)
    except InvalidEvent as err:  # --tenant: a value no key can hold
        raise errors.ConfigError.because(err) from err
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
