"""``btts``: the bigtable-timeseries command line."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from btts import __version__, admin, emulator
from pipelines import job_modules, load


def _target_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--project",
        help="Google Cloud project of the Bigtable instance (default on the emulator: "
        f"{emulator.EMULATOR_PROJECT})",
    )
    parser.add_argument(
        "--instance",
        help=f"Bigtable instance ID (default on the emulator: {emulator.EMULATOR_INSTANCE})",
    )


def _tables_create(args: argparse.Namespace) -> int:
    from transforms import tables

    target = admin.resolve_target(args.project, args.instance)
    names = args.table or sorted(tables.all_tables())
    decls = [tables.get(n) for n in names]
    print(f"Tables in {target.describe()}:")
    with admin.Admin(target) as api:
        for decl in decls:
            done = api.ensure(decl)
            for line in done or [f"{decl.name}: already as declared"]:
                print(f"  {line}")
    return 0


def _tables_list(args: argparse.Namespace) -> int:
    from transforms import tables

    target = admin.resolve_target(args.project, args.instance)
    with admin.Admin(target) as api:
        present = api.list_tables()
    print(f"Tables in {target.describe()}:")
    for name in present:
        note = "declared" if name in tables.all_tables() else "not declared here"
        print(f"  {name:<24} {note}")
    if not present:
        print("  (none; `btts tables create` makes the declared ones)")
    print(f"{len(present)} of at most {admin.MAX_TABLES_PER_INSTANCE} tables per instance")
    return 0


def _tables_show(args: argparse.Namespace) -> int:
    from transforms import tables

    for name in args.table or sorted(tables.all_tables()):
        decl = tables.get(name)
        print(f"{decl.name}  [{decl.pattern}]  key {decl.key.describe()}  (SPEC §{decl.spec})")
        for fam in decl.families:
            print(f"    family {fam.name}: {fam.gc_description()}")
        print(f"    {decl.doc}")
    return 0


def _emulator_start(args: argparse.Namespace) -> int:
    state = emulator.start_detached(port=args.port)
    print(f"Bigtable emulator running (pid {state['pid']}). Use it with:")
    print(f"  export {emulator.ENV_HOST}={state['endpoint']}")
    return 0


def _emulator_stop(args: argparse.Namespace) -> int:
    state = emulator.stop_detached()
    print(f"stopped emulator pid {state['pid']}" if state else "no emulator started by btts here")
    return 0


def _ingest(args: argparse.Namespace) -> int:
    load(args.job).run(_instance_flag(args.args))
    return 0


def _nightly(args: argparse.Namespace) -> int:
    from pipelines import nightly

    nightly.run(_instance_flag(args.args))
    return 0


def _instance_flag(argv: Sequence[str]) -> list[str]:
    """The CLI's ``--instance X``/``--project X`` → the pipelines' ``--bigtable_instance=X`` and
    ``--bigtable_project=X``, so every command takes the same spelling."""
    names = {"--instance": "--bigtable_instance", "--project": "--bigtable_project"}
    out, rest = [], list(argv)
    while rest:
        arg = rest.pop(0)
        flag, eq, value = arg.partition("=")
        if flag in names and (eq or rest):
            out.append(f"{names[flag]}={value if eq else rest.pop(0)}")
        else:
            out.append(arg)
    return out


# Commands whose every argument goes to a job untouched (argparse's REMAINDER cannot take a
# leading --flag when it is the subcommand's only positional).
PASSTHROUGH = ("nightly", "demo")


def _split_passthrough(argv: list[str]) -> tuple[list[str], list[str] | None]:
    for index, token in enumerate(argv):
        if not token.startswith("-"):
            if token in PASSTHROUGH:
                return argv[: index + 1], argv[index + 1 :]
            break
    return argv, None


def _demo(args: argparse.Namespace) -> int:
    from pipelines import demo

    demo.run(args.args)
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="btts",
        description="Land time-series events in Cloud Bigtable with the schema patterns of "
        "Google's time-series guidance: create the tables, run the ingest pipelines, and try "
        "it all locally on the Bigtable emulator.",
        epilog="Against the emulator set BIGTABLE_EMULATOR_HOST (`btts emulator start` prints "
        "it); against Cloud Bigtable pass --project and --instance.",
    )
    top.add_argument("--version", action="version", version=f"btts {__version__}")
    top.add_argument("-v", "--verbose", action="store_true", help="log more (INFO level)")
    sub = top.add_subparsers(dest="command", metavar="COMMAND", required=True)

    tables = sub.add_parser("tables", help="create, list or show the declared tables")
    tsub = tables.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = tsub.add_parser(
        "create",
        help="create missing tables and families from the declarations",
        description="Create every declared table (or the ones named with --table) that is "
        "missing, and add missing column families with their GC rules. Idempotent: tables "
        "already as declared are left alone; a family whose GC rule differs is reported, never "
        "changed.",
    )
    _target_args(create)
    create.add_argument(
        "--table", action="append", metavar="NAME", help="only this table (repeatable)"
    )
    create.set_defaults(func=_tables_create)
    listing = tsub.add_parser("list", help="list the tables of the instance")
    _target_args(listing)
    listing.set_defaults(func=_tables_list)
    show = tsub.add_parser("show", help="print the declarations: key recipe, families, GC rules")
    show.add_argument("--table", action="append", metavar="NAME", help="only this table")
    show.set_defaults(func=_tables_show)

    emu = sub.add_parser("emulator", help="start or stop a local Bigtable emulator")
    esub = emu.add_subparsers(dest="action", metavar="ACTION", required=True)
    start = esub.add_parser("start", help="start cbtemulator in the background on a free port")
    start.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    start.set_defaults(func=_emulator_start)
    stop = esub.add_parser("stop", help="stop the emulator `btts emulator start` started")
    stop.set_defaults(func=_emulator_stop)

    ingest = sub.add_parser(
        "ingest",
        help="run an ingest pipeline (flags after the job name go to the pipeline)",
        description="Run an ingest job. Everything after the job name is passed to it: see "
        "`btts ingest JOB --help`.",
    )
    ingest.add_argument("job", choices=sorted(job_modules()), help="which dataset")
    ingest.add_argument("args", nargs=argparse.REMAINDER, help="the job's own flags")
    ingest.set_defaults(func=_ingest)

    demo = sub.add_parser(
        "demo",
        help="the main job: emulator, sample data, pipeline, what landed",
        description="Start an emulator, generate sample data, run the pipelines, print what "
        "landed, and stop the emulator.",
    )
    demo.add_argument("args", nargs=argparse.REMAINDER, help="flags for the demo job")
    demo.set_defaults(func=_demo)

    nightly = sub.add_parser(
        "nightly",
        add_help=False,  # --help goes to the job, which lists its own flags
        help="copy one day of SENSOR into SENSOR_YYYYMMDD, with retention and verification "
        "(flags go to the job: `btts nightly --help`)",
        description="Run the nightly job (SPEC 5.3). Everything after `nightly` is passed to it.",
    )
    nightly.add_argument("args", nargs=argparse.REMAINDER, help="the job's own flags")
    nightly.set_defaults(func=_nightly)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    top = parser()
    head, passthrough = _split_passthrough(argv)
    args = top.parse_args(head)
    if passthrough is not None:
        args.args = passthrough
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return args.func(args)
    except (admin.ConfigError, emulator.EmulatorError) as err:
        print(f"btts: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
