"""What every ``btts query`` form shares: how times, days, months and zones are read from the
command line, the output flags (``--format table|json|csv``, ``--plot FILE.png|FILE.svg``), and
how an answer is printed and drawn.

Table output starts with what was read (table, key range or rows, cell-time window), so the
answer can be checked with ``cbt read`` on the same range; ``--format json|csv`` prints only
the records, for scripts. ``--plot`` draws one line per series (:mod:`btts.query.plot`); an answer
with nothing to draw says so in one line on stderr, writes no file and exits
:data:`NOTHING_TO_PLOT_EXIT` (1), after the answer was printed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from collections.abc import Callable
from pathlib import Path

from btts import config, errors
from btts.lazy import lazy_module
from transforms.errors import InvalidEvent
from transforms.text import timefmt

# Loaded when an answer is read, printed or drawn (matplotlib only for --plot).
plot = lazy_module("btts.query.plot")
engine = lazy_module("btts.query.engine")
render = lazy_module("btts.query.render")

__all__ = [
    "add_common",
    "add_output",
    "add_range",
    "add_timezone",
    "day_arg",
    "month_arg",
    "print_answer",
    "read",
    "time_arg",
]

FORMATS = ("table", "json", "csv")


NOTHING_TO_PLOT_EXIT = 1  # the answer was printed, but the chart asked for was not written


_YEAR_OR_MONTH = re.compile(r"([0-9]{4})(?:-([0-9]{2}))?\Z")


def time_arg(text: str) -> int:
    """RFC 3339 (``2015-03-16T19:53:32Z``), epoch milliseconds, or a day (midnight UTC); any
    era (a table declaring times before 1970 is read with them)."""
    year = _YEAR_OR_MONTH.match(text.strip())
    if year:  # 1958, 1958-04: the start of that year or month (a window over yearly data)
        return timefmt.day_bounds(dt.date(int(year[1]), int(year[2] or 1), 1))[0]
    try:
        return timefmt.parse_event_time(text, "time", timefmt.MIN_EPOCH_MS)
    except InvalidEvent:
        try:
            return timefmt.day_bounds(timefmt.parse_day(text.strip()))[0]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a time: give RFC 3339 (2015-03-16T19:53:32Z), epoch "
                "milliseconds, a day (2015-03-16), a month (2015-03) or a year (1958)"
            ) from None


def day_arg(text: str) -> dt.date:
    try:
        return timefmt.parse_day(text.strip())
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def month_arg(text: str) -> tuple[int, int]:
    try:
        return timefmt.parse_month(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def zone_arg(name: str) -> dt.tzinfo:
    found = timefmt.zone(name)
    if found is None:
        raise argparse.ArgumentTypeError(f"unknown time zone {name!r} (use an IANA name)")
    return found


def plot_file(text: str) -> Path:
    path = Path(text)
    if path.suffix.lower() not in plot.FORMATS:
        raise argparse.ArgumentTypeError(f"{text!r}: the chart file must end in .png or .svg")
    return path


def add_output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="table (default): what was read, then one line per record; json or csv: the "
        "records only (csv: one column per field, dict fields spread into FIELD.ENTRY columns)",
    )
    parser.add_argument(
        "--plot",
        type=plot_file,
        metavar="FILE.png|FILE.svg",
        help="also draw the answer: one line per series (entity and numeric field), the time "
        "axis in --timezone (UTC if the query has none); nothing to draw: a message on stderr, "
        f"no file, exit {NOTHING_TO_PLOT_EXIT}",
    )
    parser.add_argument(
        "--plot_field",
        action="append",
        metavar="FIELD",
        help="with --plot: draw only this field (a map field: all its entries, or FIELD.ENTRY "
        "for one); repeatable, e.g. --plot_field temp --plot_field metrics.CPU",
    )


def add_common(parser: argparse.ArgumentParser, target_args: Callable) -> None:
    target_args(parser)
    add_output(parser)
    parser.add_argument(
        "--keys", action="store_true", help="table format: show each record's row key"
    )


def add_range(parser: argparse.ArgumentParser, required: bool = True) -> None:
    parser.add_argument(
        "--start", type=time_arg, required=required, help="from this time (inclusive)"
    )
    parser.add_argument("--end", type=time_arg, required=required, help="to this time (exclusive)")


def add_timezone(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timezone",
        type=zone_arg,
        default=dt.timezone.utc,
        help="zone of the calendar labels the rows were written with (default: UTC)",
    )


def read(args: argparse.Namespace, query: engine.Query) -> tuple[config.Target, list]:
    """Run a query on the instance the flags name (a missing table: MissingTable)."""
    target = config.resolve_target(args.project, args.instance)
    return target, engine.run(target, query)


def print_answer(
    args, target: config.Target, query: engine.Query, records: list, hint: str | None = None
) -> int:
    """The answer: JSON or CSV records only, or what was read then a table (every column of a
    lone wide record); then the chart of ``--plot``. The exit code."""
    if args.format in ("json", "csv"):
        text = render.to_json(records) + "\n" if args.format == "json" else render.to_csv(records)
        print(text, end="")
        if hint:
            print(hint, file=sys.stderr)
        return _plot(args, query, records, sys.stderr)
    print(f"{query.title} — {target.describe()}")
    for scan in query.scans:
        print(f"  read {scan.describe()}")
    print()
    print(render.to_table(records, show_keys=getattr(args, "keys", False)))
    for grid in render.wide_grids(records):
        print(f"\n{grid}")
    print(f"\n{len(records):,} record(s)")
    if hint:
        print(f"\n{hint}")
    return _plot(args, query, records, sys.stdout)


def _plot(args, query: engine.Query, records: list, out) -> int:
    """``--plot FILE``: draw the records; one line on ``out`` saying what was drawn, or on
    stderr why nothing was (exit :data:`NOTHING_TO_PLOT_EXIT`)."""
    path = getattr(args, "plot", None)
    if path is None:
        return 0
    tz = getattr(args, "timezone", dt.timezone.utc)
    try:
        fields = getattr(args, "plot_field", None) or ()
        drawn = plot.save(
            records, path, entity=query.entity, tz=tz, title=query.title, fields=fields
        )
    except plot.NothingToPlot as err:
        print(f"btts: nothing to plot: {err}; {path} not written", file=sys.stderr)
        return NOTHING_TO_PLOT_EXIT
    except OSError as err:
        raise errors.ConfigError(f"--plot {path}: {err.strerror or err}") from None
    print(f"plotted {len(drawn)} series to {path}", file=out)
    return 0
