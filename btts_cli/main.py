"""``btts``: the bigtable-timeseries command line."""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import logging
import os
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from btts import __version__, config, emulator, errors, exits
from btts.lazy import lazy_module
from btts_cli.cliparse import Commands, Parser
from pipelines import flags, job_modules
from transforms import limits, official
from transforms.errors import RunFailed

__all__ = ["main"]  # fmt: skip

# Loaded when a command uses them: `btts --help` and argument errors import nothing heavy.
admin = lazy_module("btts.admin")
query_command = lazy_module("btts_cli.query_command")
query_schema = lazy_module("btts_cli.query_schema")


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


def _decls(args: argparse.Namespace) -> list:
    """The declarations of ``--schema FILE`` (all, or those ``--table`` names; a bad file is a
    SchemaError, an unknown --table an Undeclared listing the known ones), else the built-in
    ones."""
    from transforms.schema import builtin_tables

    names = args.table
    if not args.schema:
        every = [*builtin_tables.all_tables(), *builtin_tables.index_tables()]
        return [builtin_tables.get(n) for n in names or sorted(every)]
    schema = config.load_schema(args.schema)
    index = {schema.index.table: schema.index.decl()} if schema.index else {}
    declared = {**schema.decls(), **index}
    return [declared.get(n) or schema.table(n).decl for n in names or declared]


def _tables_create(args: argparse.Namespace) -> int:
    target = config.resolve_target(args.project, args.instance)
    decls = _decls(args)
    print(f"Tables in {target.describe()}:")
    with admin.Admin(target) as api:
        for decl in decls:
            done = api.ensure(decl)
            for line in done or [f"{decl.name}: already as declared"]:
                print(f"  {line}")
    return 0


def _tables_list(args: argparse.Namespace) -> int:
    from transforms.schema import builtin_tables

    target = config.resolve_target(args.project, args.instance)
    with admin.Admin(target) as api:
        present = api.list_tables()
    schema = config.load_schema(args.schema) if args.schema else None
    mine = set(schema.decls()) if schema is not None else set()
    if schema is not None and schema.index is not None:
        mine.add(schema.index.table)
    print(f"Tables in {target.describe()}:")
    for name in present:
        known = {*builtin_tables.all_tables(), *builtin_tables.index_tables()}
        builtin = "built-in" if name in known else "not declared"
        print(f"  {name:<24} {f'declared in {args.schema}' if name in mine else builtin}")
    if not present:
        print("  (none; `btts tables create` makes the declared ones)")
    print(f"{len(present)} of at most {limits.MAX_TABLES_PER_INSTANCE} tables per instance")
    return 0


def _tables_show(args: argparse.Namespace) -> int:
    for decl in _decls(args):
        section = f"  (docs/patterns.md §{decl.spec})" if decl.spec else ""
        print(f"{decl.name}  [{decl.pattern}]  key {decl.key.describe()}{section}")
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


def _run_job(args: argparse.Namespace) -> int:
    """``btts ingest|check JOB …`` and ``btts nightly …``: the job module's ``run``; ``check``
    is ``ingest`` with ``--validate_only``."""
    argv = _instance_flag(args.args)
    if flags.wants_help(argv):  # the job's flags, from pipelines.flags: no Beam imported
        prog = "btts nightly" if args.job == "nightly" else f"btts {args.command} {args.job}"
        flags.print_help(args.job, argv, prog)
        raise SystemExit(0)  # as argparse's --help
    if args.command == "check":
        argv.append("--validate_only")
    job = "--schema FILE" if args.job == "generic" else args.job
    command = "btts nightly" if args.job == "nightly" else f"btts {args.command} {job}"
    importlib.import_module(f"pipelines.{args.job}").run(argv, command)  # its errors name it
    return 0


def _instance_flag(argv: Sequence[str]) -> list[str]:
    """The CLI's ``--instance X``/``--project X`` → the pipelines' ``--bigtable_instance=X`` and
    ``--bigtable_project=X``, so every command takes the same spelling. ``--project`` also
    stays: on Dataflow it is the job's project (as with ``python -m pipelines.JOB``)."""
    names = {"--instance": "--bigtable_instance", "--project": "--bigtable_project"}
    out, rest = [], list(argv)
    while rest:
        arg = rest.pop(0)
        flag, eq, value = arg.partition("=")
        if flag in names and (eq or rest):
            value = value if eq else rest.pop(0)
            out.append(f"{names[flag]}={value}")
            if flag == "--project":
                out.append(f"--project={value}")
        else:
            out.append(arg)
    return out


def _is_schema(arg: str) -> bool:
    return arg.split("=", 1)[0] == "--schema"


def _job_args(parser: argparse.ArgumentParser, args: list[str]) -> dict | None:
    """``btts ingest|check JOB FLAGS…``, or ``--schema FILE FLAGS…`` (the generic job): every
    flag goes to the job, ``--help`` too. None: the command's own ``--help`` (or a bad JOB)."""
    jobs = sorted(job_modules())
    if args[:1] and args[0] in jobs:
        return {"func": _run_job, "job": args[0], "args": args[1:]}
    if any(_is_schema(a) for a in args):
        return {"func": _run_job, "job": "generic", "args": args}
    if not args or (args[0].startswith("-") and args[0] not in ("-h", "--help")):
        parser.error(f"name a job ({', '.join(jobs)}) or pass --schema FILE for your own data")
    return None


def _schema_query(parser: argparse.ArgumentParser, args: list[str]) -> dict | None:
    """``btts query --schema FILE …`` (a query the file declares, or a read of one of its
    tables); None: one of the documented queries."""
    if args[:1] and _is_schema(args[0]):
        return {"func": lambda a: query_schema.run_schema(a.args, _target_args), "args": args}
    return None


def _demo(args: argparse.Namespace) -> int:
    from btts_cli import demo_options

    opts = demo_options.options(args.args)  # --help and bad flags: before the demo's imports
    from btts_cli import demo

    demo.run_with(opts)
    return 0


def _add_tables(sub: Commands) -> None:
    tables = sub.add_parser("tables", help=COMMANDS["tables"][1])
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
    create.add_argument("--schema", metavar="FILE", help="the tables of this schema file instead")
    create.set_defaults(func=_tables_create)
    listing = tsub.add_parser("list", help="list the tables of the instance")
    _target_args(listing)
    listing.add_argument(
        "--schema", metavar="FILE", help="also say which tables this file declares"
    )
    listing.set_defaults(func=_tables_list)
    show = tsub.add_parser("show", help="print the declarations: key recipe, families, GC rules")
    show.add_argument("--table", action="append", metavar="NAME", help="only this table")
    show.add_argument("--schema", metavar="FILE", help="the tables of this schema file instead")
    show.set_defaults(func=_tables_show)


def _add_emulator(sub: Commands) -> None:
    emu = sub.add_parser("emulator", help=COMMANDS["emulator"][1])
    esub = emu.add_subparsers(dest="action", metavar="ACTION", required=True)
    start = esub.add_parser(
        "start",
        help="start cbtemulator in the background on a free port",
        description="Start cbtemulator in the background. Until `btts emulator stop`, btts "
        "commands run in this directory use it without BIGTABLE_EMULATOR_HOST (unless given "
        "--project/--instance).",
    )
    start.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    start.set_defaults(func=_emulator_start)
    stop = esub.add_parser("stop", help="stop the emulator `btts emulator start` started")
    stop.set_defaults(func=_emulator_stop)


def _add_ingest(sub: Commands) -> None:
    ingest = sub.add_parser(
        "ingest",
        help=COMMANDS["ingest"][1],
        description="Run an ingest job. Everything after the job name is passed to it: see "
        "`btts ingest JOB --help`. It logs its progress (lines processed, rate) while it runs "
        "and prints a summary at the end. Your own dataset: `btts ingest --schema FILE "
        "--input ...` (the generic job; see docs/user-guide.md).",
    )
    check = sub.add_parser(
        "check",
        help=COMMANDS["check"][1],
        description="`btts check JOB --input FILE` (or `btts check --schema FILE --input "
        "FILE`) reads and validates the whole input as `btts ingest` would and prints the same "
        "summary, writing nothing, with each top reason's first offending line; it exits "
        "non-zero when no record is valid or dead letters pass --max_bad_records (default "
        "10%%). Same as `btts ingest ... --validate_only`.",
    )
    for command in (ingest, check):
        command.add_argument("job", choices=sorted(job_modules()), help="which dataset")
        command.add_argument("args", nargs=argparse.REMAINDER, help="the job's own flags")
        command.rest = _job_args


def _add_nightly(sub: Commands) -> None:
    nightly = sub.add_parser(
        "nightly",
        add_help=False,  # --help goes to the job, which lists its own flags
        help=COMMANDS["nightly"][1],
        description="Run the nightly job (docs/patterns.md §5.3). Everything after `nightly` "
        "is passed to it.",
    )
    nightly.add_argument("args", nargs=argparse.REMAINDER, help="the job's own flags")
    nightly.rest = lambda _, args: {"func": _run_job, "job": "nightly", "args": args}


def _add_query(sub: Commands) -> None:
    query_command.add_query_commands(sub, _target_args)
    sub.choices["query"].rest = _schema_query
    query_command.add_tenant_commands(sub, _target_args)


def _add_demo(sub: Commands) -> None:
    demo_cmd = sub.add_parser(
        "demo",
        help=COMMANDS["demo"][1],
        description="Start an emulator, generate sample data for every dataset, run every "
        "batch pipeline and the nightly job, print each documented query's answer and a "
        "summary, and stop the emulator. Flags: `btts demo --help`.",
    )
    demo_cmd.add_argument("args", nargs=argparse.REMAINDER, help="flags for the demo job")
    demo_cmd.rest = lambda _, args: {"func": _demo, "args": args}  # --help too: the demo's flags


# Every command, in --help order: the function that adds it (with its group: `query` adds
# `tenant` too), here or as "module:function" imported only when that command runs, and its line
# in `btts --help`. A new command is one more entry. A group function gets the subparsers
# (cliparse.Commands), adds its commands with `add_parser` (with the same help line) and sets
# each one's `func` (args -> exit status) with `set_defaults`; a user error it raises as
# ConfigError.
COMMANDS: dict[str, tuple[Callable[[Commands], object] | str, str]] = {
    "init": (
        "btts_cli.init_command:register",
        "draft a schema file from a data file (CSV, JSON lines or array, Parquet, gzip)",
    ),
    "tables": (_add_tables, "create, list or show the declared tables"),
    "emulator": (_add_emulator, "start or stop a local Bigtable emulator"),
    "ingest": (_add_ingest, "run an ingest pipeline (flags after the job name go to the pipeline)"),
    "check": (_add_ingest, "validate an input without writing: counts and top dead-letter reasons"),
    "nightly": (
        _add_nightly,
        "copy one day of SENSOR into SENSOR_YYYYMMDD, with retention and verification (flags "
        "go to the job: `btts nightly --help`)",
    ),
    "query": (_add_query, "run one of the documented queries and print the answer (table or JSON)"),
    "tenant": (_add_query, "offboard a tenant (drop its row range)"),
    "advise": (
        "btts_cli.advise_command:register",
        "schema advisor: lint the declarations, simulate hotspots, report on a table",
    ),
    "templates": (
        "btts_cli.templates:register",
        "Dataflow flex templates: regenerate, check, print the gcloud build commands",
    ),
    "index": (
        "btts_cli.index_command:register",
        "rebuild a schema's series index (what btts serve lists series from)",
    ),
    "serve": (
        "btts_cli.serve_command:register",
        "read-only OpenTSDB-compatible HTTP API (Grafana) and a chart page",
    ),
    "demo": (
        _add_demo,
        "the main job: emulator, sample data for every dataset, every pipeline, the nightly job, "
        "every query's answer",
    ),
}


def _group(where: Callable[[Commands], object] | str) -> Callable[[Commands], object]:
    if callable(where):
        return where
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(module), name)


def command_named(argv: Sequence[str]) -> str | None:
    """The command an argument list runs: its first word that is not a flag (btts's own flags
    take no value), when it is one of :data:`COMMANDS`."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in COMMANDS else None


def parser(command: str | None = "*") -> Parser:
    """The ``btts`` command line; every command's parser is a :class:`Parser`. ``command``:
    only that command is made in full (its module imported), every other one is its help line;
    None: none of them; ``*`` (default): all of them."""
    top = Parser(
        top=True,
        prog="btts",
        description="Land time-series events in Cloud Bigtable with the schema patterns of "
        "Google's time-series guidance: create the tables, run the ingest pipelines, query "
        "them, and try it all locally on the Bigtable emulator.",
        epilog="Against the emulator set BIGTABLE_EMULATOR_HOST (`btts emulator start` prints "
        "it, and btts commands in the same directory find it by themselves); against Cloud "
        "Bigtable pass --project and --instance.",
    )
    top.add_argument("--version", action="version", version=f"btts {__version__}")
    top.add_argument(
        "-v", "--verbose", action="store_true", help="log more (INFO level, Beam's too)"
    )
    top.add_argument(
        "-q", "--quiet", action="store_true", help="warnings and errors only (no job progress)"
    )
    sub = top.add_subparsers(dest="command", metavar="COMMAND", required=True)
    wanted = COMMANDS[command][0] if command in COMMANDS else None
    for name, (where, text) in COMMANDS.items():
        if name in sub.choices:  # added with its group
            continue
        if command == "*" or where == wanted:
            _group(where)(sub)
        else:
            sub.add_parser(name, help=text, add_help=False)
    return top


# Loggers of our own code: their INFO lines (job progress, preflight actions) show by default,
# while Beam's and the clients' INFO chatter stays hidden unless --verbose.
OWN_LOGGERS = ("btts", "pipelines", "transforms")


def _configure_logging(verbose: bool, quiet: bool) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    for name in OWN_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING if quiet else logging.INFO)


def _explicit_target(args: argparse.Namespace) -> bool:
    if getattr(args, "project", None) or getattr(args, "instance", None):
        return True
    passed = getattr(args, "args", None) or []
    prefixes = ("--project", "--bigtable_project", "--instance", "--bigtable_instance")
    return any(a.startswith(prefixes) for a in passed)


def use_started_emulator(args: argparse.Namespace, state_file: Path | None = None) -> str | None:
    """The emulator of `btts emulator start` (this directory), when no other target is given:
    sets BIGTABLE_EMULATOR_HOST for this command and returns its endpoint."""
    if os.environ.get(emulator.ENV_HOST) or _explicit_target(args):
        return None
    state_file = state_file or emulator.STATE_FILE
    try:
        state = json.loads(state_file.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or not emulator.alive(int(state.get("pid", 0)) or -1):
        return None
    os.environ[emulator.ENV_HOST] = state["endpoint"]
    return state["endpoint"]


def main(argv: Sequence[str] | None = None) -> int:
    """The ``btts`` command; a reader that closes the pipe (``btts query … | head``) ends it
    quietly, as any Unix filter. As the process's own command (``argv`` None: the console
    script, ``python -m btts_cli.main``) it also ends the process lightly (:func:`exit_lightly`).
    """
    try:
        return _main(argv)
    except BrokenPipeError:
        # Python would print a traceback flushing stdout at exit: point it at /dev/null.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    finally:
        if argv is None:
            exit_lightly()


def exit_lightly() -> None:
    """For a process about to end: spare its exit the garbage collector's passes over every
    object of Beam and the clients. After a 100-row job those passes cost about 0.6 s of CPU
    (a quarter of the whole command on a 2-core machine) to free memory the OS takes back
    anyway. Frozen objects are left to the OS; atexit handlers, flushes and closes still run."""
    gc.disable()
    gc.freeze()


# Job flags with which a job reads no table (a check, a translation for Dataflow, its help).
NO_TABLES = ("--validate_only", "--dry_run", "--dry_run=True", "--dry_run=true")


def reaches_bigtable(args: argparse.Namespace) -> bool:
    """Whether the command reads or writes tables (so an emulator that is not there deserves
    a quick clear error rather than a minute of retries)."""
    passed = getattr(args, "args", None) or []  # a job's flags, or `query --schema`'s
    if "-h" in passed or "--help" in passed:
        return False
    if args.command in ("query", "tenant"):
        return True
    if args.command in ("ingest", "nightly"):
        return not any(a in NO_TABLES for a in passed)
    actions = {"tables": ("create", "list"), "advise": ("table",)}.get(args.command, ())
    return (getattr(args, "action", None) or getattr(args, "advise_action", None)) in actions


def check_emulator(timeout: float = 2.0) -> None:
    """An EmulatorError when ``BIGTABLE_EMULATOR_HOST`` names an endpoint nothing listens on."""
    endpoint = os.environ.get(emulator.ENV_HOST)
    if not endpoint:
        return
    host, _, port = endpoint.rpartition(":")
    try:
        socket.create_connection((host.strip("[]") or "localhost", int(port)), timeout).close()
    except (OSError, ValueError):
        raise errors.EmulatorError(
            f"no Bigtable emulator answers at {endpoint} ({emulator.ENV_HOST}): start one "
            f"(`btts emulator start`), or unset {emulator.ENV_HOST} and pass --project and "
            "--instance for Cloud Bigtable"
        ) from None


def _main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser(command_named(argv)).parse_args(argv)
    _configure_logging(args.verbose, args.quiet)
    if args.command not in ("emulator", "demo"):
        use_started_emulator(args)
    try:
        official.components()  # BTTS_OFFICIAL read first: a typo is one line, before any work
        if reaches_bigtable(args):
            check_emulator()
        return args.func(args)
    except Exception as err:  # a user's mistake or a failed job: its line and status (btts.exits)
        ended = exits.ending(err)
        if ended is None or (args.verbose and not isinstance(err, RunFailed)):
            raise  # a bug, or -v: the traceback
        print(ended[1], file=sys.stderr)
        return ended[0]


if __name__ == "__main__":
    sys.exit(main())
