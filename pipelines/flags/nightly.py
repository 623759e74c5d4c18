"""The nightly job's description and own flags (unique names across all jobs: Beam parses them
together)."""

from __future__ import annotations

import argparse

from pipelines.flags.spec import Flag, Group

__all__ = ["DESCRIPTION", "GROUP", "LAYOUTS", "MAX_DATES", "SINGLE_TABLE_SUFFIX"]

DESCRIPTION = """\
The nightly job (docs/patterns.md §5.3): copy one day of SENSOR into a small table of its own.

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

# One run covers at most this many days (the day filter is one regex, at most 16 KiB).
MAX_DATES = 366
SINGLE_TABLE_SUFFIX = "DAILY"
LAYOUTS = ("per_day_table", "single_table")


def _flag(text: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "yes", "1", "on"):
        return True
    if value in ("false", "no", "0", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


# Which days, where they go, retention and verification.
GROUP = Group.of(
    "nightly",
    "Nightly copy",
    Flag(
        "--date",
        help="Day to copy, YYYYMMDD. Default: yesterday in --timezone.",
    ),
    Flag(
        "--dates",
        help="Days to copy for a backfill, START..END (YYYYMMDD..YYYYMMDD, inclusive), read "
        f"in one scan of the source; at most {MAX_DATES} days. Not with --date.",
    ),
    Flag(
        "--keep_days",
        type=int,
        help="Retention: keep the daily tables of the N days ending with the run date and "
        "drop older <source>_YYYYMMDD tables (single_table layout: older day prefixes). "
        "Default: drop nothing.",
    ),
    Flag(
        "--layout",
        default="per_day_table",
        choices=LAYOUTS,
        help="per_day_table (default): one table <source>_YYYYMMDD per day. single_table: "
        f"one table <source>_{SINGLE_TABLE_SUFFIX} keyed YYYYMMDD#METER.",
    ),
    Flag(
        "--source_table",
        default="SENSOR",
        help="Declared table to copy from; its keys must end with #YYYYMMDD. Default: SENSOR.",
    ),
    Flag(
        "--verify",
        type=_flag,
        nargs="?",
        const=True,
        default=True,
        help="After the copy, compare row count and content checksum of source and "
        "destination per day and fail on any difference (default; --verify=false or "
        "--no_verify to skip).",
    ),
    Flag(
        "--no_verify",
        dest="verify",
        action="store_false",
        help="Skip the verification.",
    ),
)
