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

import logging
import time
from collections.abc import Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from btts import errors
from pipelines import common
from pipelines.nightly.admin_steps import prepare
from pipelines.nightly.graph import build_plan
from pipelines.nightly.plan import OPTION_CLASSES, make_plan
from pipelines.nightly.summary import NAME, summary

__all__ = ["build", "run"]

_LOG = logging.getLogger(__name__)


def build(pipeline: beam.Pipeline, options: PipelineOptions) -> dict[str, beam.PCollection]:
    """The job's graph for these options (the admin steps are :func:`prepare`, run first)."""
    return build_plan(pipeline, make_plan(options))


def run(argv: Sequence[str] | None = None) -> common.RunReport:
    """Plan, prepare the tables, copy (and verify); prints rows scanned, copied and the time,
    and returns the run's report (its ``plan`` included)."""
    try:
        options = common.parse_args(
            argv, f"python -m pipelines.{NAME}", __doc__ or "", OPTION_CLASSES
        )
        plan = make_plan(options)
        started = time.monotonic()
        dry = common.is_dry_run(options)
        for line in [] if dry else prepare(plan):  # a dry run touches no table
            _LOG.info("%s", line)
    except errors.ConfigError as err:
        raise common.config_exit(NAME, err) from None
    _LOG.info("copying %s day(s) %s of %s", len(plan.days), ", ".join(plan.days), plan.source.name)
    with common.runner_refusals(NAME):
        pipeline = common.new_pipeline(options)
        build_plan(pipeline, plan)
        result = pipeline.run()
    if dry:
        what = (
            f"create {', '.join(plan.destinations)} and copy day(s) {', '.join(plan.days)} "
            f"of {plan.source.name} into it ({plan.layout})"
        )
        print(common.dry_run_report(NAME, options, what), flush=True)
        return common.RunReport(
            NAME, {}, tables=plan.destinations, plan=plan, dry_run=True, result=result
        )
    result.wait_until_finish()
    seconds = time.monotonic() - started
    totals = common.counters(result)
    print(summary(plan, totals, seconds), flush=True)
    return common.RunReport(
        NAME, totals, seconds, plan.destinations, plan.target, plan=plan, result=result
    )
