"""``btts advise``: lint the declarations, simulate hotspots, report on a real table.

Every command takes ``--schema FILE``: the tables (and the ``advisor:`` workload) of a user's
schema file instead of the built-in declarations. Hooked into ``btts`` by :func:`register`;
also runs alone: ``python -m btts_cli.advise_command lint``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from btts import config, errors, exits
from btts.advisor import findings
from btts.advisor.findings import SEVERITIES
from btts.lazy import lazy_module
from transforms.errors import UserError

# Loaded when a command runs (`btts advise --help` reads no schema; only `advise table` needs
# the clients).
lint = lazy_module("btts.advisor.lint")

__all__ = ["main"]

DOCS_DIR = Path(__file__).resolve().parents[1] / "docs" / "advisor"


def _lint(args: argparse.Namespace) -> int:
    if args.rules:
        for rule in findings.rules_table():
            print(f"{rule.id:<20} docs/patterns.md §{rule.spec:<10} {rule.title}")
        return 0
    if args.schema:  # a user's file, judged against its own advisor: workload
        schema = config.load_schema(args.schema)
        declared = schema.decls()
        results = lint.lint_schema(schema, args.table)
    else:
        from transforms.schema import builtin_tables

        declared = builtin_tables.all_tables()
        decls = [builtin_tables.get(n) for n in args.table] if args.table else declared.values()
        results = lint.lint_all(list(decls))
    bad = findings.failing([f for fs in results.values() for f in fs], args.fail_on)
    if args.json:
        print(json.dumps({n: [asdict(f) for f in fs] for n, fs in results.items()}, indent=2))
    else:
        print(findings.format_report(results, declared, args.fail_on))
    return 1 if bad else 0


def _hotspots(args: argparse.Namespace) -> int:
    from btts.advisor import hotspots, workload

    if args.documented:
        if args.schema:
            raise errors.ConfigError("--documented runs the built-in cases: drop --schema")
        out = Path(args.out) if args.out else DOCS_DIR
        for name, (result, path) in hotspots.write_documented(out).items():
            print(f"[{name}] → {path}")
            print(result.summary())
        return 0
    if not args.table:
        raise errors.ConfigError("name a TABLE, or pass --documented for the documented cases")
    schema = config.load_schema(args.schema) if args.schema else None
    from transforms.schema import builtin_tables

    decl = schema.table(args.table).decl if schema else builtin_tables.get(args.table)
    sim = hotspots.SimConfig(
        nodes=args.nodes,
        start_ms=hotspots.parse_start(args.start) if args.start else hotspots.SimConfig.start_ms,
        span_s=hotspots.parse_span(args.span),
        slices=args.slices,
        history_slices=args.history_slices,
        samples_per_slice=args.samples,
        tablets_per_node=args.tablets_per_node,
        assign=args.assign,
        seed=args.seed,
    )
    of = args.workload_of or decl.name
    if schema:  # the workload of the file's own advisor: section
        schema.table(of)  # (an Undeclared naming the file's tables)
        model = workload.hints_from_advisor(schema.advisor, of).workload
    else:
        model = workload.hints_for(of).workload
    cards = {}
    for item in args.cardinality or ():
        name, eq, value = item.partition("=")
        if not eq or not value.isdigit():
            raise errors.ConfigError(f"--cardinality {item!r}: use FIELD=N")
        cards[name] = int(value)
    result = hotspots.simulate(decl, model, sim, events_per_s=args.rate, cardinality=cards)
    print(result.summary())
    if args.png:
        print(f"heatmap → {hotspots.draw(result, args.png)}")
    return 0


def _table(args: argparse.Namespace) -> int:
    from btts.advisor import table_report

    delimiter = args.delimiter
    if args.schema:  # a table the file declares: its key's delimiter unless --delimiter says
        decl = config.load_schema(args.schema).table(args.table).decl
        delimiter = delimiter or decl.key.delimiter
    target = config.resolve_target(args.project, args.instance)
    rep = table_report.report(
        target, args.table, limit=args.limit, top=args.top, delimiter=(delimiter or "#").encode()
    )
    if args.json:
        print(json.dumps(table_report.as_dict(rep), indent=2))
    else:
        print(table_report.format_report(rep))
    return 0


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``advise`` (with ``lint``, ``hotspots``, ``table``) to a ``btts`` subparser set."""
    advise = subparsers.add_parser(
        "advise",
        help="schema advisor: lint the declarations, simulate hotspots, report on a table",
        description="Check table designs against the guidance before writing a byte (lint, "
        "hotspots) and look at what a real table holds (table).",
    )
    _add_actions(advise)
    return advise


def _add_actions(advise: argparse.ArgumentParser) -> None:
    sub = advise.add_subparsers(dest="advise_action", metavar="ACTION", required=True)
    _add_lint(sub)
    _add_hotspots(sub)
    _add_table(sub)


def _add_lint(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "lint",
        help="check every table declaration against docs/patterns.md §3",
        description="Check the table declarations (all, or those named with --table) against "
        "the guidance of docs/patterns.md §3: each finding has a rule id, a severity, a message "
        "and the section of docs/patterns.md. Acknowledged findings (a deliberate design, with "
        "its reason) and findings on documented anti-patterns are shown but do not fail. Exit "
        "status 1 when an open finding reaches --fail_on.",
    )
    parser.add_argument("--table", action="append", metavar="NAME", help="only this table")
    parser.add_argument(
        "--fail_on",
        choices=(*SEVERITIES, "never"),
        default="warning",
        help="lowest severity of an open finding that fails the run (default: warning)",
    )
    parser.add_argument("--json", action="store_true", help="findings as JSON")
    parser.add_argument("--rules", action="store_true", help="list the rules and exit")
    parser.add_argument(
        "--schema",
        metavar="FILE",
        help="lint the tables of this schema file (with its advisor: workload) instead",
    )
    parser.set_defaults(func=_guarded(_lint))


def _add_hotspots(sub: argparse._SubParsersAction) -> None:
    hot = sub.add_parser(
        "hotspots",
        help="simulate where a table's writes land over time, with a heatmap PNG",
        description="Replay a workload's keys over time onto range-partitioned tablets spread "
        "over N nodes: per-node load (max/mean per time slice), the hottest node against "
        "14,000 writes/s per SSD node, and a Key-Visualizer-like heatmap (key space × time). "
        "The workload (events/s, cardinality of each key field) comes from the "
        "advisor: section of the table's schema file unless overridden.",
    )
    hot.add_argument("table", nargs="?", help="declared table to simulate")
    hot.add_argument(
        "--documented",
        action="store_true",
        help="run the documented cases (battery time-first/promoted/salted, sensor date- vs "
        "meter-first at midnight) and write their PNGs to --out",
    )
    hot.add_argument("--out", help=f"directory for --documented (default {DOCS_DIR})")
    hot.add_argument("--png", help="write the heatmap to this file")
    hot.add_argument("--nodes", type=int, default=3, help="nodes (default 3)")
    hot.add_argument("--rate", type=float, help="events per second (default: the workload's)")
    hot.add_argument("--span", default="1h", help="simulated time, e.g. 30m, 4h (default 1h)")
    hot.add_argument("--start", help="start time, ISO or epoch ms (default 2015-03-01T12:00Z)")
    hot.add_argument("--slices", type=int, default=30, help="time slices (default 30)")
    hot.add_argument(
        "--history_slices",
        type=int,
        default=8,
        help="slices simulated before the span so the table has keys and splits (default 8)",
    )
    hot.add_argument("--samples", type=int, default=1000, help="events sampled per slice")
    hot.add_argument("--tablets_per_node", type=int, default=4, help="splits per node (4)")
    hot.add_argument("--assign", choices=("balanced", "round_robin"), default="balanced")
    hot.add_argument(
        "--cardinality", action="append", metavar="FIELD=N", help="override a key field's values"
    )
    hot.add_argument("--workload_of", metavar="TABLE", help="use another table's workload")
    hot.add_argument("--seed", type=int, default=0)
    hot.add_argument(
        "--schema",
        metavar="FILE",
        help="a table of this schema file, with the workload of its advisor: section",
    )
    hot.set_defaults(func=_guarded(_hotspots))


def _add_table(sub: argparse._SubParsersAction) -> None:
    table = sub.add_parser(
        "table",
        help="key/row size distribution, limits and monotonic prefixes of a real table",
        description="Read a table (Cloud Bigtable with --project/--instance, or the emulator "
        "of BIGTABLE_EMULATOR_HOST) and report key lengths, row sizes, the largest rows against "
        "the limits (row 100 MB advised / 256 MB hard, cell 10 MB, key 4 KiB) and whether keys "
        "start with a timestamp-like or sequential prefix.",
    )
    table.add_argument("table", help="table to read")
    table.add_argument("--project", help="Google Cloud project (default on the emulator)")
    table.add_argument("--instance", help="Bigtable instance (default on the emulator)")
    table.add_argument("--limit", type=int, help="read only the first N rows")
    table.add_argument("--top", type=int, default=5, help="largest rows to list (5)")
    table.add_argument(
        "--delimiter", help="key segment delimiter (default: the declared key's with --schema, "
        "else #)"
    )  # fmt: skip
    table.add_argument(
        "--schema", metavar="FILE", help="the table is one this schema file declares: its key's "
        "delimiter, and a clear error when the file has no such table"
    )  # fmt: skip
    table.add_argument("--json", action="store_true", help="the report as JSON")
    table.set_defaults(func=_guarded(_table))


def _guarded(action: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """The action, with bad input (unknown table, bad flag value, missing instance) turned into
    a one-line message and exit status 2 (:mod:`btts.exits`), however ``btts`` dispatches it.
    The advisor checks its input with plain ValueError and KeyError: here they are the user's."""

    def run(args: argparse.Namespace) -> int:
        """Raises ConfigError (a UserError: one line naming what to change)."""
        try:
            try:
                return action(args)
            except UserError:
                raise
            except (KeyError, ValueError) as err:  # the advisor's checks of its input
                message = err.args[0] if isinstance(err, KeyError) and err.args else err
                raise errors.ConfigError(str(message)) from err
        except Exception as err:
            ended = exits.ending(err, "btts advise")
            if ended is None:
                raise
            print(ended[1], file=sys.stderr)
            return ended[0]

    return run


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="btts advise", description="The schema advisor (see `btts advise --help`)."
    )
    _add_actions(parser)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
