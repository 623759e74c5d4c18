"""Running a job against the test emulator and reading what it wrote (a table's cells, every
table's snapshot, the dead letters); the flags a job's option classes give Beam's parser."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import functools
import glob
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from btts import admin, config
from btts.query import engine
from pipelines import load
from transforms.table_model import KeyRecipe, Segment


def write_lines(path: Path, lines: Sequence[str | bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        for line in lines:
            out.write((line.encode("utf-8") if isinstance(line, str) else line) + b"\n")
    return path


def run_job(
    job: str,
    target: config.Target,
    input_path: Path,
    dead_prefix: Path,
    extra: Sequence[str] = (),
    create: bool = True,
):
    """Run an ingest job's ``run()`` exactly as a user would, returning its result. Tests
    feed a few lines, often mostly bad ones on purpose: the default --max_bad_records (10%)
    applies only where a test says so (``extra``), as
    tests/pipelines/common/test_fail_loudly.py does."""
    limits = ("--max_bad_records", "--max_dead_letter_ratio")
    if not any(arg.startswith(limits) for arg in extra):
        extra = ["--max_bad_records=100%", *extra]
    argv = [
        f"--input={input_path}",
        f"--dead_letter={dead_prefix}",
        f"--bigtable_project={target.project}",
        f"--bigtable_instance={target.instance}",
        *(["--create_tables"] if create else []),
        *extra,
    ]
    return load(job).run(argv)


def read_dead_letters(prefix: Path) -> list[dict]:
    records = []
    for name in sorted(glob.glob(f"{prefix}*")):
        with open(name, encoding="utf-8") as f:
            records += [json.loads(line) for line in f if line.strip()]
    return records


def dump(target: config.Target, table: str, latest_only: bool = False) -> list[tuple]:
    """Every cell of a table, timestamps included: equal dumps mean identical tables.

    Use ``latest_only`` for families that keep one version: the emulator, like Bigtable,
    garbage-collects superseded versions lazily, so a full dump of them changes over time."""
    # Families of a row may come back in any order; cells of a column newest first.
    return sorted(
        (
            (row.key, cell.family, cell.qualifier, cell.value, cell.timestamp_us)
            for row in engine.read_rows(target, table, latest_only=latest_only)
            for cell in row.cells
        ),
        key=lambda c: (c[0], c[1], c[2], -c[4]),
    )


def _one_version_families(target: config.Target, table: str) -> set[str]:
    """Families whose GC rule (read from the table itself) keeps one version."""
    with admin.Admin(target) as api:
        families = api.get_families(table) or {}
    out = set()
    for name, family in families.items():
        rule = family.gc_rule
        rules = list(rule.union.rules) or list(rule.intersection.rules) or [rule]
        if any(r.max_num_versions == 1 for r in rules):
            out.add(name)
    return out


def snapshot(target: config.Target) -> dict[str, list[tuple]]:
    """Every table of the instance, every cell with its timestamp.

    Families keeping one version are read latest-only: when a column received several
    timestamps (CURRENT_METRIC, a meter's ID cell), Bigtable and the emulator garbage-collect the
    older versions lazily, at a moment of their choosing, so a full dump of such a family can
    change between two reads of an unchanged table. Every other family is dumped whole."""
    with admin.Admin(target) as api:
        names = api.list_tables()
    out = {}
    for table in names:
        single = _one_version_families(target, table)
        full = [c for c in dump(target, table) if c[1] not in single]
        latest = (
            [c for c in dump(target, table, latest_only=True) if c[1] in single] if single else []
        )
        out[table] = sorted(full + latest, key=lambda c: (c[0], c[1], c[2], -c[4]))
    return out


@functools.cache
def compiled(dataset: str, tables: tuple[str, ...] = (), tz: dt.tzinfo = dt.timezone.utc):
    """The compiled builder of a built-in schema file (what the dataset's job runs)."""
    from transforms import schema as schema_lib
    from transforms.builder import builder as generic

    return generic.Builder(schema_lib.builtin(dataset), list(tables) or None, tz)


def recipe_key(*segments: tuple[str, object]) -> str:
    """The key a table's key recipe builds (the one writes, rollups and queries share) from
    ``(segment kind, value)`` pairs, e.g. ``("tenant", "acme"), ("text", "phone")``."""
    recipe = KeyRecipe(tuple(Segment(kind, f"f{i}") for i, (kind, _) in enumerate(segments)))
    return recipe.build({f"f{i}": value for i, (_, value) in enumerate(segments)}).decode()


# The retry harness (tests/transforms/bigtable/test_bundle_retries.py): Dataflow re-runs a failed
# bundle whole, and what the failed attempt had already written stays; the DirectRunner never
# retries. Under the harness every write request is sent as such a retry sends it: twice
# (``twice``: the failure came after the writes), or its first half and then whole (``half``: the
# attempt was abandoned half-way).
HARNESS_MODES = ("twice", "half")


def harness_attempts(items: Sequence, how: str) -> list[Sequence]:
    """The successive attempts at sending ``items`` (one request's entries) under ``how``."""
    if how == "twice":
        return [items, items]
    if how == "half":
        return [items[: (len(items) + 1) // 2], items]
    raise ValueError(f"retry harness {how!r}: expected one of {', '.join(HARNESS_MODES)}")


def put_retry_harness(patch: pytest.MonkeyPatch, how: str) -> None:
    """Every write the jobs make from now on (until ``patch`` is undone) goes through the
    harness, at the writers' seams: the SetCell writer's request sender
    (``transforms.bigtable.write.open_sender``) and the AddToCell writer's data client
    (``transforms.bigtable.write_aggregates.BigtableDataClient``)."""
    from transforms.bigtable import write, write_aggregates

    harness_attempts((), how)  # a mistyped mode fails here, not on a worker
    opened = write.open_sender

    def open_sender(*args, **kwargs):
        send, closing = opened(*args, **kwargs)

        def retried(batch):  # a transport.Batch: one request's entries
            *earlier, _whole = harness_attempts(list(range(len(batch.keys))), how)
            for indexes in earlier:
                send(batch.subset(indexes))
            return send(batch)  # the last attempt's outcome is the request's

        return retried, closing

    class Client(write_aggregates.BigtableDataClient):
        def get_table(self, *args, **kwargs):
            table = super().get_table(*args, **kwargs)
            send = table.bulk_mutate_rows

            def retried(entries, **kwargs):
                for attempt in harness_attempts(entries, how):
                    send(attempt, **kwargs)

            table.bulk_mutate_rows = retried
            return table

    patch.setattr(write, "open_sender", open_sender)
    patch.setattr(write_aggregates, "BigtableDataClient", Client)


@contextlib.contextmanager
def retry_harness(how: str):
    """Jobs run inside this block write through the retry harness (:func:`put_retry_harness`)."""
    with pytest.MonkeyPatch.context() as patch:
        put_retry_harness(patch, how)
        yield


class _Recorder(argparse.ArgumentParser):
    """A parser keeping the Action of every argument added to it or to its groups, in order:
    ``add_argument``'s return value is argparse's public way to them (its list is private)."""

    def __init__(self) -> None:
        super().__init__(add_help=False, allow_abbrev=False)
        self.added: list[argparse.Action] = []

    def add_argument(self, *args, **kwargs) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.added.append(action)
        return action

    def add_argument_group(self, *args, **kwargs):
        group = super().add_argument_group(*args, **kwargs)
        plain = group.add_argument

        def add_argument(*a, **k) -> argparse.Action:
            action = plain(*a, **k)
            self.added.append(action)
            return action

        group.add_argument = add_argument
        return group


def added_flags(*adders: Callable[[argparse.ArgumentParser], None]) -> dict[str, argparse.Action]:
    """``--name`` → its argparse Action, for every flag the ``adders`` add to one parser, in
    that order."""
    parser = _Recorder()
    for add in adders:
        add(parser)
    return {action.option_strings[0]: action for action in parser.added}


def parsed_flags(classes: Sequence[type]) -> dict[str, argparse.Action]:
    """The flags option classes add to a parser the way Beam's parsing does (each class's
    ``_add_argparse_args`` hook): what a job's run parses (see :func:`added_flags`)."""
    return added_flags(*(cls._add_argparse_args for cls in classes))


def draft_land_and_query(source: Path, work: Path, capsys) -> tuple[dict, list[dict]]:
    """``btts init`` of ``source`` untouched, the generic job landing it with that draft on a
    fresh instance of the test emulator (no dead letter), and ``btts query`` of the draft's first
    table as JSON: the draft and the records read back."""
    import uuid

    import yaml

    from btts_cli import main as cli

    schema_path = work / "s.yaml"
    code = cli.main(["init", str(source), "-o", str(schema_path)])
    err = capsys.readouterr().err
    assert code == 0, err
    drafted = yaml.safe_load(schema_path.read_text(encoding="utf-8"))
    target = config.Target("test-project", f"t{uuid.uuid4().hex[:12]}")
    run_job("generic", target, source, work / "dead", [f"--schema={schema_path}"])
    assert read_dead_letters(work / "dead") == []
    capsys.readouterr()
    table = drafted["tables"][0]["name"]
    where = ["--project", target.project, "--instance", target.instance]
    argv = ["query", "--schema", str(schema_path), "--table", table, "--format", "json"]
    assert cli.main([*argv, *where]) == 0
    return drafted, json.loads(capsys.readouterr().out)
