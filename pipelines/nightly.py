"""The nightly job (docs/patterns.md §5.3): copy one day of SENSOR into a small table of its own.

Once a day, at a quiet hour, the job scans SENSOR (keys ``METER#YYYYMMDD``) with a key filter
evaluated by Bigtable (only the day's rows leave the server) and copies those rows, with the same
keys, families, qualifiers, values and cell timestamps, into ``SENSOR_YYYYMMDD``, creating it with
SENSOR's families. "All meters of one day" then is a full scan of a small table.

    python -m pipelines.nightly                               # yesterday, days in UTC
    python -m pipelines.nightly --timezone Europe/Paris --keep_days 30
    python -m pipelines.nightly --dates 20170720..20170726    # backfill a week in one scan

Dates: ``--date YYYYMMDD`` (default: yesterday in --timezone, the zone SENSOR's day keys use) or
``--dates START..END`` (inclusive; at most 366 days per run). A date after today is refused.

The copy holds every live cell of the day's rows: cell versions beyond a family's
``max_versions`` (condemned by its GC rule, though Bigtable may not have collected them yet) are
left out by the server-side filter, so source and copy stay equal whenever either is collected.

Safe re-runs: a destination that already holds the day is cleared before the copy, so a re-run
leaves exactly the day's current rows (the same table when SENSOR did not change), never a mix.
The job always creates its destination tables (--create_tables is implied); --skip_preflight only
skips checking that the source table exists.

Retention: ``--keep_days N`` keeps the daily tables of the N days ending with the run date (the
latest date of the run) and drops older ``SENSOR_YYYYMMDD`` tables. Only names made of the source
table, ``_`` and a valid 8-digit date are candidates: SENSOR itself, other tables and malformed
names are never dropped, nor a table this run writes. Before creating a table the job counts the
instance's tables and refuses, with a clear message, at :data:`TABLE_GUARD` (Bigtable allows
1,000 tables per instance).

Verification (on by default; ``--no_verify`` skips it): after the write, the job reads every
destination back and compares, per day, the row count and a content checksum with the rows it
read from SENSOR (re-keyed for the single-table layout). The checksum is the sum modulo 2**256 of
one SHA-256 per row over its key and every cell (family, qualifier, timestamp, value, in column
order). Keys are unique within a table, so it equals comparing the key-ordered dumps (a missing,
extra, duplicated or altered row or cell changes it) while being computable in parallel. A
mismatch fails the job with :class:`VerificationError`, naming the day and both sides.

Layouts, and the trade-off:

* ``--layout per_day_table`` (default, what docs/patterns.md §5.3 describes): one table per day. A
  day is a whole small table (scan it, export it, drop it in one cheap admin call for retention),
  and the copy never touches the tables of other days. But the general guidance says *not* to create
  a table per day or per customer: every table counts against the 1,000-table instance limit, each
  carries its own metadata and tablets, and tiny tables spread load badly. Hence the guard and
  ``--keep_days`` are part of this layout, not options to forget: with no retention, a daily table a
  day reaches the limit in under three years.
* ``--layout single_table``: one table ``SENSOR_DAILY`` keyed ``YYYYMMDD#METER``, what the
  general best practices prefer. "All meters of one day" is a prefix scan of that one table, the
  table count never grows, and retention drops the row ranges of expired day prefixes. The
  price: a day is no longer a unit of administration (dropping days is a row-range delete, not a
  table drop), and the date-first key concentrates each night's copy on the tablets of one day,
  which is acceptable for this one batch writer and never for live ingestion.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import hashlib
import logging
import re
import time
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.runner import PipelineResult
from google.cloud.bigtable.data import BigtableDataClient, ReadRowsQuery, row_filters

from btts import admin
from btts.query_engine import KEYS_ONLY
from pipelines import common
from transforms import builtin_tables
from transforms.bigtable_read import ReadFromBigtableRows, key_suffix_filter, re2_literal
from transforms.bigtable_write import WriteRows
from transforms.ingest import NAMESPACE
from transforms.mutations import RowMutation
from transforms.table_model import TableDecl

NAME = "nightly"
LAYOUTS = ("per_day_table", "single_table")
# Refuse to create a table when the instance already holds this many (Bigtable's limit is 1,000).
TABLE_GUARD = 990
# One run covers at most this many days (the day filter is one regex, at most 16 KiB).
MAX_DATES = 366
SINGLE_TABLE_SUFFIX = "DAILY"
_DAY = re.compile(r"[0-9]{8}")
_LOG = logging.getLogger(__name__)


class VerificationError(RuntimeError):
    """The destination does not hold exactly the rows read from the source."""


# -- options ----------------------------------------------------------------------------------


def _flag(text: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "yes", "1", "on"):
        return True
    if value in ("false", "no", "0", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


class NightlyOptions(PipelineOptions):
    """The nightly job's own flags (unique names across all jobs: Beam parses them together)."""

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("Nightly copy")
        group.add_argument(
            "--date",
            help="Day to copy, YYYYMMDD. Default: yesterday in --timezone.",
        )
        group.add_argument(
            "--dates",
            help="Days to copy for a backfill, START..END (YYYYMMDD..YYYYMMDD, inclusive), read "
            f"in one scan of the source; at most {MAX_DATES} days. Not with --date.",
        )
        group.add_argument(
            "--keep_days",
            type=int,
            help="Retention: keep the daily tables of the N days ending with the run date and "
            "drop older <source>_YYYYMMDD tables (single_table layout: older day prefixes). "
            "Default: drop nothing.",
        )
        group.add_argument(
            "--layout",
            default="per_day_table",
            choices=LAYOUTS,
            help="per_day_table (default): one table <source>_YYYYMMDD per day. single_table: "
            f"one table <source>_{SINGLE_TABLE_SUFFIX} keyed YYYYMMDD#METER.",
        )
        group.add_argument(
            "--source_table",
            default="SENSOR",
            help="Declared table to copy from; its keys must end with #YYYYMMDD. Default: SENSOR.",
        )
        group.add_argument(
            "--verify",
            type=_flag,
            nargs="?",
            const=True,
            default=True,
            help="After the copy, compare row count and content checksum of source and "
            "destination per day and fail on any difference (default; --verify=false or "
            "--no_verify to skip).",
        )
        group.add_argument(
            "--no_verify",
            dest="verify",
            action="store_false",
            help="Skip the verification.",
        )


# What run() parses and --help shows.
OPTION_CLASSES = (NightlyOptions, common.BigtableOptions, common.TimeOptions)


# -- pure helpers: dates, names, keys, retention, checksums -----------------------------------


def parse_day(text: str, flag: str = "--date") -> dt.date:
    """A ``YYYYMMDD`` day; anything else is a :class:`admin.ConfigError` naming the flag."""
    if not isinstance(text, str) or not _DAY.fullmatch(text):
        raise admin.ConfigError(f"{flag}: expected a day as YYYYMMDD, got {text!r}")
    try:
        return dt.date(int(text[:4]), int(text[4:6]), int(text[6:]))
    except ValueError:
        raise admin.ConfigError(f"{flag}: {text!r} is not a calendar day") from None


def day_label(day: dt.date) -> str:
    return day.strftime("%Y%m%d")


def day_span(spec: str) -> list[dt.date]:
    """``START..END`` → every day from START to END inclusive."""
    start_text, sep, end_text = spec.partition("..")
    if not sep:
        raise admin.ConfigError(f"--dates: expected START..END (YYYYMMDD..YYYYMMDD), got {spec!r}")
    start, end = parse_day(start_text, "--dates"), parse_day(end_text, "--dates")
    if end < start:
        raise admin.ConfigError(f"--dates: {end_text} is before {start_text}")
    count = (end - start).days + 1
    if count > MAX_DATES:
        raise admin.ConfigError(
            f"--dates: {count} days is more than {MAX_DATES} per run; split the backfill"
        )
    return [start + dt.timedelta(days=n) for n in range(count)]


def run_days(date: str | None, dates: str | None, today: dt.date) -> list[dt.date]:
    """The days this run copies: --date, --dates or yesterday. Days after ``today`` are refused
    (their rows do not exist yet)."""
    if date and dates:
        raise admin.ConfigError("pass either --date or --dates, not both")
    if dates:
        days = day_span(dates)
    elif date:
        days = [parse_day(date)]
    else:
        days = [today - dt.timedelta(days=1)]
    late = [d for d in days if d > today]
    if late:
        raise admin.ConfigError(
            f"{day_label(late[0])} is after today ({day_label(today)}): nothing to copy yet"
        )
    if today in days:
        _LOG.warning("copying today (%s): the day is not over, its table will be partial", today)
    return days


def daily_table(source: str, day: str) -> str:
    return f"{source}_{day}"


def single_table(source: str) -> str:
    return f"{source}_{SINGLE_TABLE_SUFFIX}"


def as_day(text: str) -> dt.date | None:
    """The day ``YYYYMMDD`` names, or None when it is not exactly that."""
    try:
        return parse_day(text)
    except admin.ConfigError:
        return None


def daily_table_day(name: str, source: str) -> dt.date | None:
    """The day of a per-day table name ``<source>_YYYYMMDD``; None for any other name
    (the source itself, other tables, malformed or impossible dates)."""
    prefix = f"{source}_"
    return as_day(name[len(prefix) :]) if name.startswith(prefix) else None


def retention_cutoff(run_day: dt.date, keep_days: int) -> dt.date:
    """The oldest day kept: ``keep_days`` days ending with ``run_day``."""
    if keep_days < 1:
        raise admin.ConfigError(f"--keep_days must be at least 1, got {keep_days}")
    return run_day - dt.timedelta(days=keep_days - 1)


def expired_tables(
    names: Iterable[str], source: str, run_day: dt.date, keep_days: int, protect: Iterable[str] = ()
) -> list[str]:
    """The per-day tables retention drops: well-formed ``<source>_YYYYMMDD`` names whose day is
    before the cutoff, except the ``protect`` ed ones (the tables this run writes)."""
    cutoff = retention_cutoff(run_day, keep_days)
    keep = set(protect)
    days = ((name, daily_table_day(name, source)) for name in names if name not in keep)
    return sorted(name for name, day in days if day is not None and day < cutoff)


def key_day(key: bytes) -> str:
    """The ``YYYYMMDD`` a source key ends with (``...#YYYYMMDD``)."""
    _, sep, day = key.rpartition(b"#")
    if not sep or not _DAY.fullmatch(day.decode("ascii", "replace")):
        raise ValueError(f"row key {key!r} does not end with #YYYYMMDD")
    return day.decode("ascii")


def single_table_key(key: bytes) -> bytes:
    """``METER#YYYYMMDD`` → ``YYYYMMDD#METER`` (the single-table layout's key)."""
    head, _, day = key.rpartition(b"#")
    key_day(key)
    return day + b"#" + head


def day_filter(days: Sequence[str]) -> row_filters.RowKeyRegexFilter:
    """Server-side filter: keys ending with ``#YYYYMMDD`` of one of ``days``."""
    return key_suffix_filter([b"#" + d.encode("ascii") for d in days])


def live_cells_filter(decl: TableDecl) -> row_filters.RowFilter | None:
    """Server-side filter dropping cell versions the families' ``max_versions`` GC rules have
    already condemned (Bigtable collects them lazily, so reads may still return them). Copying
    them would make the copy differ from the source once either side is collected."""
    limits = {f.name: f.max_versions for f in decl.families}
    if not any(limits.values()):
        return None
    if len(set(limits.values())) == 1:
        return row_filters.CellsColumnLimitFilter(next(iter(limits.values())))
    return row_filters.RowFilterUnion(
        [
            row_filters.RowFilterChain(
                [
                    row_filters.FamilyNameRegexFilter(re2_literal(name.encode("utf-8"))),
                    row_filters.CellsColumnLimitFilter(limit)
                    if limit
                    else row_filters.PassAllFilter(True),
                ]
            )
            for name, limit in limits.items()
        ]
    )


def source_filter(plan_days: Sequence[str], decl: TableDecl) -> row_filters.RowFilter:
    """The source scan's filter: the days' keys, and only the live versions of each column."""
    live = live_cells_filter(decl)
    days = day_filter(plan_days)
    return days if live is None else row_filters.RowFilterChain([days, live])


def destination_row(row: RowMutation, source: str, layout: str) -> RowMutation:
    """A source row retargeted to its destination: same cells; per-day table, or re-keyed."""
    if layout == "single_table":
        return row._replace(table=single_table(source), key=single_table_key(row.key))
    return row._replace(table=daily_table(source, key_day(row.key)))


def copy_day(row: RowMutation, layout: str) -> str:
    """The day of a destination row (from its table name, or its key's date prefix)."""
    if layout == "single_table":
        return row.key[:8].decode("ascii")
    return row.table[-8:]


class Digest(NamedTuple):
    """Row count and content checksum of a set of rows."""

    rows: int
    checksum: int

    @property
    def hex(self) -> str:
        return f"{self.checksum:064x}"

    def describe(self) -> str:
        return f"{self.rows:,} rows (checksum {self.hex[:16]})"


EMPTY = Digest(0, 0)
_MOD = 1 << 256


def row_digest(row: RowMutation) -> Digest:
    """One row's :class:`Digest`: SHA-256 of its key and cells in a canonical order (family,
    qualifier, newest first), every field length-prefixed so no two different rows encode alike."""
    digest = hashlib.sha256()
    digest.update(len(row.key).to_bytes(4, "big") + row.key)
    for cell in sorted(row.cells, key=lambda c: (c.family, c.qualifier, -c.timestamp_us, c.value)):
        family = cell.family.encode("utf-8")
        digest.update(len(family).to_bytes(2, "big") + family)
        digest.update(len(cell.qualifier).to_bytes(4, "big") + cell.qualifier)
        digest.update(cell.timestamp_us.to_bytes(8, "big", signed=True))
        digest.update(len(cell.value).to_bytes(4, "big") + cell.value)
    return Digest(1, int.from_bytes(digest.digest(), "big"))


def add_digests(digests: Iterable[Digest]) -> Digest:
    """The :class:`Digest` of disjoint sets of rows together. Counts and checksums add in any
    order, so Beam may combine partial digests as it likes (``beam.CombinePerKey``)."""
    rows, checksum = 0, 0
    for digest in digests:
        rows += digest.rows
        checksum += digest.checksum
    return Digest(rows, checksum % _MOD)


def digest_rows(rows: Iterable[RowMutation]) -> Digest:
    """The :class:`Digest` of rows (order-independent; equal for equal tables)."""
    return add_digests(map(row_digest, rows))


# -- the plan: what a run does, decided before anything moves ----------------------------------


@dataclasses.dataclass(frozen=True)
class Plan:
    target: admin.Target
    source: TableDecl
    days: tuple[str, ...]
    layout: str
    keep_days: int | None
    verify: bool
    check_source: bool
    write_timeout_s: float = 300.0

    @property
    def run_day(self) -> dt.date:
        return parse_day(max(self.days))

    @property
    def destinations(self) -> tuple[str, ...]:
        if self.layout == "single_table":
            return (single_table(self.source.name),)
        return tuple(daily_table(self.source.name, d) for d in self.days)

    def destination_decls(self) -> list[TableDecl]:
        if self.layout == "single_table":
            return [builtin_tables.get(single_table(self.source.name))]
        return [
            dataclasses.replace(
                self.source,
                name=name,
                doc=f"One day of {self.source.name}, copied by the nightly job.",
            )
            for name in self.destinations
        ]

    def where(self, day: str) -> str:
        """Where the copy of ``day`` lives, for messages."""
        if self.layout == "single_table":
            return f"{single_table(self.source.name)} (prefix {day}#)"
        return daily_table(self.source.name, day)


def _today(tz: dt.tzinfo) -> dt.date:
    return dt.datetime.now(tz).date()


def _source_decl(name: str) -> TableDecl:
    try:
        decl = builtin_tables.get(name)
    except KeyError as err:
        raise admin.ConfigError(f"--source_table: {err.args[0]}") from None
    last = decl.key.segments[-1]
    if decl.key.delimiter != "#" or last.kind != "time" or last.arg != "yyyymmdd":
        raise admin.ConfigError(
            f"--source_table {name}: its key ({decl.key.describe()}) does not end with "
            "#YYYYMMDD, so its rows cannot be split by day"
        )
    return decl


def make_plan(options: PipelineOptions) -> Plan:
    """Validate the flags into a :class:`Plan` (raises :class:`admin.ConfigError`)."""
    own = options.view_as(NightlyOptions)
    tz = common.timezone(options)
    target = common.resolve_target(options)
    source = _source_decl(own.source_table)
    days = run_days(own.date, own.dates, _today(tz))
    if own.keep_days is not None:
        retention_cutoff(days[-1], own.keep_days)
    plan = Plan(
        target=target,
        source=source,
        days=tuple(day_label(d) for d in days),
        layout=own.layout,
        keep_days=own.keep_days,
        verify=bool(own.verify),
        check_source=not options.view_as(common.BigtableOptions).skip_preflight,
        write_timeout_s=options.view_as(common.BigtableOptions).write_timeout_seconds,
    )
    if plan.layout == "single_table":
        try:
            decl = plan.destination_decls()[0]
        except KeyError:
            raise admin.ConfigError(
                f"--layout single_table needs a declared table {single_table(source.name)}"
            ) from None
        if [f.name for f in decl.families] != [f.name for f in source.families]:
            raise admin.ConfigError(f"{decl.name} must have the families of {source.name}")
    return plan


# -- admin steps: retention, table guard, create, clear -----------------------------------------


def _first_key(target: admin.Target, table: str) -> bytes | None:
    query = ReadRowsQuery(limit=1, row_filter=KEYS_ONLY)
    with BigtableDataClient(project=target.project) as client:
        rows = client.get_table(target.instance, table).read_rows(query)
    return bytes(rows[0].row_key) if rows else None


def _drop_rows(api: admin.Admin, table: str, prefix: bytes | None = None) -> None:
    """Drop the rows of ``table`` under ``prefix``, or all of them when no prefix is given (an
    empty prefix is sent as one, never taken to mean the whole table)."""
    which = (
        {"row_key_prefix": prefix} if prefix is not None else {"delete_all_data_from_table": True}
    )
    api.api.drop_row_range(request={"name": api.target.table_path(table), **which})


def _expire_day_prefixes(api: admin.Admin, table: str, cutoff: dt.date) -> list[str]:
    """Single-table retention: drop the oldest day prefix while it is before ``cutoff``."""
    done: list[str] = []
    last = None
    while True:
        key = _first_key(api.target, table)
        if key is None:
            return done
        text = key[:8].decode("ascii", "replace")
        day = as_day(text) if key[8:9] == b"#" else None
        if day is None:
            _LOG.warning("%s: first key %r has no YYYYMMDD# prefix; retention stops", table, key)
            return done
        if day >= cutoff or text == last:
            return done
        _drop_rows(api, table, key[:9])
        done.append(f"dropped day {text} from {table} (older than --keep_days)")
        last = text


def prepare(plan: Plan) -> list[str]:
    """The admin steps, before any data moves. Returns what was done, one line each."""
    done: list[str] = []
    with admin.Admin(plan.target) as api:
        if plan.check_source:
            problems = api.problems([plan.source])
            if problems:
                raise admin.ConfigError(
                    "; ".join(problems) + f" in {plan.target.describe()}: nothing to copy from"
                )
        existing = set(api.list_tables())
        if plan.keep_days is not None:
            cutoff = retention_cutoff(plan.run_day, plan.keep_days)
            if plan.layout == "single_table":
                if single_table(plan.source.name) in existing:
                    done += _expire_day_prefixes(api, single_table(plan.source.name), cutoff)
            else:
                for name in expired_tables(
                    existing, plan.source.name, plan.run_day, plan.keep_days, plan.destinations
                ):
                    api.drop(name)
                    existing.discard(name)
                    done.append(f"dropped table {name} (older than --keep_days {plan.keep_days})")
        missing = [name for name in plan.destinations if name not in existing]
        if missing and len(existing) + len(missing) > TABLE_GUARD:
            raise admin.ConfigError(
                f"{plan.target.describe()} holds {len(existing)} tables; creating "
                f"{', '.join(missing[:3])}{' …' if len(missing) > 3 else ''} would pass "
                f"{TABLE_GUARD}, this job's guard below Bigtable's "
                f"{admin.MAX_TABLES_PER_INSTANCE:,}-tables-per-instance limit. Refusing to "
                "create it: drop old daily tables (--keep_days N), or use --layout single_table."
            )
        for decl in plan.destination_decls():
            if decl.name in existing:
                if plan.layout == "single_table":
                    for day in plan.days:
                        _drop_rows(api, decl.name, day.encode("ascii") + b"#")
                    done.append(f"cleared days {', '.join(plan.days)} of {decl.name} to re-copy")
                else:
                    _drop_rows(api, decl.name)
                    done.append(f"cleared {decl.name} to re-copy it")
            done += api.ensure(decl)
    return done


# -- the pipeline -------------------------------------------------------------------------------


class VerifiedDay(NamedTuple):
    day: str
    where: str
    digest: Digest


class _CheckDayFn(beam.DoFn):
    """(day, {requested, copied, stored}) → VerifiedDay, or :class:`VerificationError`.
    ``wheres`` maps each day of the run to where its copy lives."""

    def __init__(self, wheres: dict[str, str], source: str) -> None:
        self._wheres = dict(wheres)
        self._source = source

    def setup(self) -> None:
        self._verified_days = beam.metrics.Metrics.counter(NAMESPACE, "verified_days")
        self._verified_rows = beam.metrics.Metrics.counter(NAMESPACE, "verified_rows")

    def process(self, element):
        day, groups = element
        copied = next(iter(groups["copied"]), EMPTY)
        stored = next(iter(groups["stored"]), EMPTY)
        where = self._wheres.get(day, day)
        if day not in self._wheres:
            raise VerificationError(
                f"nightly verification failed: {where} holds rows of day {day}, "
                "which this run did not copy"
            )
        if copied != stored:
            raise VerificationError(
                f"nightly verification failed for {day}: the job read {copied.describe()} of "
                f"that day from {self._source}, but {where} holds {stored.describe()}. The copy "
                f"is incomplete or altered; re-run the job for --date {day}."
            )
        self._verified_days.inc()
        self._verified_rows.inc(stored.rows)
        yield VerifiedDay(day, where, stored)


def build_plan(pipeline: beam.Pipeline, plan: Plan) -> dict[str, beam.PCollection]:
    """Read the days from the source (filter on the server) → retarget → write; then, with
    verification, read the destinations back after the write and compare per day."""
    target, source, layout = plan.target, plan.source.name, plan.layout
    rows = pipeline | "ReadSource" >> ReadFromBigtableRows(
        target.project, target.instance, source, row_filter=source_filter(plan.days, plan.source)
    )
    copies = rows | "Retarget" >> beam.Map(destination_row, source, layout)
    written = copies | "WriteCopies" >> WriteRows(
        target.project, target.instance, plan.destinations, timeout_s=plan.write_timeout_s
    )
    out = {"rows": rows, "copies": copies}
    if not plan.verify:
        return out
    done = list(written.values())
    # A per-day table is read back whole; the single table, only the days of this run.
    prefixes = [d.encode("ascii") + b"#" for d in plan.days] if layout == "single_table" else None
    reads = [
        pipeline
        | f"ReadBack[{name}]"
        >> ReadFromBigtableRows(
            target.project, target.instance, name, prefixes=prefixes, wait_for=done
        )
        for name in plan.destinations
    ]
    stored = reads[0] if len(reads) == 1 else tuple(reads) | "JoinReadBack" >> beam.Flatten()

    def by_day(pcoll: beam.PCollection, step: str) -> beam.PCollection:
        return (
            pcoll
            | f"{step}ByDay" >> beam.Map(lambda r: (copy_day(r, layout), row_digest(r)))
            | f"{step}Digest" >> beam.CombinePerKey(add_digests)
        )

    verified = (
        {
            "requested": pipeline | "Days" >> beam.Create([(d, None) for d in plan.days]),
            "copied": by_day(copies, "Copied"),
            "stored": by_day(stored, "Stored"),
        }
        | "JoinDigests" >> beam.CoGroupByKey()
        | "Verify" >> beam.ParDo(_CheckDayFn({d: plan.where(d) for d in plan.days}, source))
    )
    out["verified"] = verified
    return out


def build(pipeline: beam.Pipeline, options: PipelineOptions) -> dict[str, beam.PCollection]:
    """The job's graph for these options (the admin steps are :func:`prepare`, run first)."""
    return build_plan(pipeline, make_plan(options))


def summary(plan: Plan, totals: dict[str, int], seconds: float) -> str:
    scanned = totals.get(f"read_rows_{plan.source.name}", 0)
    lines = [
        f"{NAME}: {plan.source.name} → {', '.join(plan.destinations)} ({plan.layout}) "
        f"done in {seconds:.1f}s into {plan.target.describe()}",
        f"  rows scanned    {scanned:>12,}   (rows of {len(plan.days)} day(s) returned by the "
        "server-side key filter)",
    ]
    for name in plan.destinations:
        lines.append(
            f"  rows copied     {totals.get('rows_' + name, 0):>12,}   "
            f"cells {totals.get('cells_' + name, 0):,} into {name}"
        )
    if plan.verify:
        lines.append(
            f"  verified        {totals.get('verified_rows', 0):>12,}   rows in "
            f"{totals.get('verified_days', 0)} day(s): counts and checksums match"
        )
    else:
        lines.append("  verification skipped (--no_verify)")
    return "\n".join(lines)


def run(argv: Sequence[str] | None = None) -> PipelineResult:
    """Plan, prepare the tables, copy (and verify); prints rows scanned, copied and the time."""
    try:
        options = common.parse_args(
            argv, f"python -m pipelines.{NAME}", __doc__ or "", OPTION_CLASSES
        )
        plan = make_plan(options)
        started = time.monotonic()
        dry = common.is_dry_run(options)
        for line in [] if dry else prepare(plan):  # a dry run touches no table
            _LOG.info("%s", line)
    except admin.ConfigError as err:
        raise SystemExit(f"{NAME}: error: {err}") from None
    _LOG.info("copying %s day(s) %s of %s", len(plan.days), ", ".join(plan.days), plan.source.name)
    pipeline = common.new_pipeline(options)
    build_plan(pipeline, plan)
    result = pipeline.run()
    result.nightly_plan = plan
    if dry:
        result.btts_counters = {}
        what = (
            f"create {', '.join(plan.destinations)} and copy day(s) {', '.join(plan.days)} "
            f"of {plan.source.name} into it ({plan.layout})"
        )
        print(common.dry_run_report(NAME, options, what), flush=True)
        return result
    result.wait_until_finish()
    seconds = time.monotonic() - started
    result.btts_counters = common.counters(result)
    print(summary(plan, result.btts_counters, seconds), flush=True)
    return result


if __name__ == "__main__":
    common.main(run)
