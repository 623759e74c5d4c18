# The sales job. Its docstring, what its --help prints, is DESCRIPTION in
# pipelines/flags/sales.py, where --help reads it without importing Beam.

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from google.cloud.bigtable.data import (
    BigtableDataClient,
    DeleteAllFromRow,
    ReadRowsQuery,
    RowMutationEntry,
)
from google.cloud.bigtable.data.row_filters import RowFilterChain

from btts import errors
from btts.config import Target
from pipelines import common
from pipelines.flags import sales as job_flags
from transforms.bigtable.filters import KEYS_ONLY, key_suffix_filter
from transforms.errors import InvalidEvent

__doc__ = job_flags.DESCRIPTION
__all__ = ["JOB", "OPTION_CLASSES", "build", "run"]

NAME = "sales"
_LOG = logging.getLogger(__name__)


# Months in UTC; job_for() gives the job for the configured --timezone.
JOB = common.builtin_job(NAME, __doc__)


# What run() parses and --help shows.
OPTION_CLASSES = common.option_classes(NAME)


TABLE = "SALES_MONTHLY"
_MONTH = re.compile(r"[0-9]{4}(0[1-9]|1[0-2])")


def replace_months(options: PipelineOptions) -> tuple[str, ...]:
    """The validated --replace_months, sorted; () without the flag.
    Raises ConfigError (a UserError: one line naming what to change)."""
    raw = options.view_as(common.options_class(job_flags.GROUP)).replace_months
    if raw is None:
        return ()
    months = sorted({m.strip() for m in raw.split(",") if m.strip()})
    bad = [m for m in months if not _MONTH.fullmatch(m)]
    if bad or not months:
        raise errors.ConfigError(f"--replace_months: expected months YYYYMM, got {raw!r}")
    return tuple(months)


class OnlyMonths:
    """A check on every event's rows: they must fall in ``months``; another month is bad input
    (it would add onto a month this run does not rebuild). Rows are keyed ``EMPLOYEE#YYYYMM``
    and the employee cannot hold the delimiter, so the month is the key's last segment."""

    def __init__(self, months: Sequence[str]) -> None:
        self.months = tuple(months)
        self._months = frozenset(m.encode() for m in months)

    def __call__(self, rows: Sequence[tuple]) -> None:
        for _table, key, _cells in rows:
            month = key.rsplit(b"#", 1)[-1]
            if month not in self._months:
                raise InvalidEvent(
                    f"month {month.decode()} is not in --replace_months "
                    f"({', '.join(sorted(m.decode() for m in self._months))})"
                )


def delete_months(target: Target, months: Sequence[str]) -> int:
    """Delete every SALES_MONTHLY row of ``months``; the number deleted. One key-only scan of
    the table with a key regex: rows are per employee first, so a month's rows are not one
    range (the table holds one row per employee and month: small). Idempotent."""
    in_months = key_suffix_filter([b"#" + m.encode() for m in months])
    row_filter = RowFilterChain([in_months, KEYS_ONLY])
    with BigtableDataClient(project=target.project) as client:
        table = client.get_table(target.instance, TABLE)
        keys = [row.row_key for row in table.read_rows(ReadRowsQuery(row_filter=row_filter))]
        entries = [RowMutationEntry(k, [DeleteAllFromRow()]) for k in keys]
        for start in range(0, len(entries), 1000):
            table.bulk_mutate_rows(entries[start : start + 1000])
    return len(keys)


def job_for(options: PipelineOptions) -> common.JobSpec:
    """The job with months in the configured zone (an unknown zone is a ConfigError); with
    --replace_months, sales outside those months are refused."""
    job = common.builtin_job(NAME, __doc__, tz=common.timezone(options))
    months = replace_months(options)
    if months:
        job = dataclasses.replace(job, check_rows=OnlyMonths(months))
    return job


def _graph(pipeline: beam.Pipeline, config: common.JobConfig) -> dict[str, beam.PCollection]:
    """Read lines → build AddCell rows (bad lines to dead letters) → AddToCell. With
    --replace_months (the job's month check) the months' rows are deleted first, here, before
    the job starts."""
    check = config.job.check_rows
    months = check.months if isinstance(check, OnlyMonths) else ()
    if months and config.writes:
        deleted = delete_months(config.target, months)
        _LOG.info("%s: deleted %d row(s) of %s before writing", NAME, deleted, ", ".join(months))
    return common.ingest(pipeline, config)


ENTRY = common.IngestEntry(NAME, __doc__, OPTION_CLASSES, job_for, _graph)
build, run = ENTRY.build, ENTRY.run

if __name__ == "__main__":
    ENTRY.main()
