"""``btts index rebuild``: a schema's series index (``index:``) made again from its tables,
for data landed before the index was declared, or after data went away
(:mod:`btts.query.index_rebuild`)."""

from __future__ import annotations

import argparse

from btts import config, errors
from btts.lazy import lazy_module

# Loaded when the command runs: `btts index --help` imports no client.
index_rebuild = lazy_module("btts.query.index_rebuild")
admin = lazy_module("btts.admin")

__all__ = []


def _schemas(args: argparse.Namespace, target: config.Target) -> list:
    """The schemas to rebuild: ``--schema``'s, else every built-in one with an index whose
    tables the instance holds."""
    from transforms import schema as schema_lib
    from transforms.scans import series_index
    from transforms.schema import builtin_tables

    if args.schema:
        schema = config.load_schema(args.schema)
        if schema.index is None:
            raise errors.ConfigError(
                f"{args.schema} declares no series index: add 'index: {{table: "
                f"{schema.dataset.upper()}_SERIES}}' to it, then rebuild"
            )
        return [schema]
    with admin.Admin(target) as api:
        present = set(api.list_tables())
    out = []
    for dataset in builtin_tables.builtin_datasets():
        schema = schema_lib.builtin(dataset)
        listed = {t.name for t in series_index.indexed_tables(schema)}
        if schema.index is not None and listed & present:
            out.append(schema)
    return out


def _rebuild(args: argparse.Namespace) -> int:
    target = config.resolve_target(args.project, args.instance)
    schemas = _schemas(args, target)
    if not schemas:
        print(f"No table of a built-in dataset with an index in {target.describe()}")
        return 0
    for schema in schemas:
        print(f"{schema.dataset}: rebuilding {schema.index.table} in {target.describe()}")
        done = index_rebuild.rebuild(target, schema, lambda line: print(f"  {line}", flush=True))
        skipped = f", {done.skipped:,} rows of another key shape skipped" if done.skipped else ""
        print(
            f"  {done.index}: {done.written:,} index rows written, {done.deleted:,} stale ones "
            f"deleted{skipped} ({done.seconds:.1f}s)"
        )
    return 0


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``index`` (``index rebuild``) to a ``btts`` subparser set."""
    index = subparsers.add_parser(
        "index", help="rebuild a schema's series index (what btts serve lists series from)"
    )
    actions = index.add_subparsers(dest="action", metavar="ACTION", required=True)
    rebuild = actions.add_parser(
        "rebuild",
        help="scan the tables the index lists and make the index exactly what they hold",
        description="Scan every table a schema's series index lists (keys and cell times) and "
        "make the index (`index: {table: NAME}` in the schema) exactly what they hold: the "
        "series, the map entries and the tag values btts serve lists, each with its first and "
        "last time. For data landed before the schema declared an index, or after data went "
        "away (a tenant dropped, cells past their max_age). Run it while no job writes the "
        "dataset (a job writing meanwhile is folded in by its own writes, or by a second run).",
        epilog="example: btts index rebuild --schema flights.yaml",
    )
    rebuild.add_argument(
        "--schema",
        metavar="FILE",
        help="the schema whose index to rebuild (default: every built-in dataset with one "
        "whose tables the instance holds)",
    )
    rebuild.add_argument("--project", help="Google Cloud project of the Bigtable instance")
    rebuild.add_argument(
        "--instance", help="Bigtable instance ID (default on the emulator: its own)"
    )
    rebuild.set_defaults(func=_rebuild)
    return index
