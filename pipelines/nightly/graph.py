"""The nightly job's graph: read the days from the source (filtered on the server), retarget,
write; with verification, read the destinations back after the write and compare per day."""

from __future__ import annotations

from typing import NamedTuple

import apache_beam as beam

from pipelines.nightly.plan import Plan
from pipelines.nightly.rows import (
    EMPTY,
    Digest,
    add_digests,
    copy_day,
    destination_row,
    row_digest,
    source_filter,
)
from transforms.bigtable.read import ReadFromBigtableRows
from transforms.bigtable.write import WriteRows
from transforms.errors import SystemFailure
from transforms.metrics import NAMESPACE

__all__ = ["build_plan"]


class VerificationError(SystemFailure, RuntimeError):
    """The destination does not hold exactly the rows read from the source."""


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
        """Raises VerificationError (a SystemFailure: the copy differs)."""
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


def _copy_batch(row, source: str, layout: str) -> list:
    return [destination_row(row, source, layout)]


def build_plan(pipeline: beam.Pipeline, plan: Plan) -> dict[str, beam.PCollection]:
    """Read the days from the source (filter on the server) → retarget → write; then, with
    verification, read the destinations back after the write and compare per day."""
    target, source, layout = plan.target, plan.source.name, plan.layout
    rows = pipeline | "ReadSource" >> ReadFromBigtableRows(
        target.project, target.instance, source, row_filter=source_filter(plan.days, plan.source)
    )
    # Batches between the steps, as in every job: here one copied row each.
    copies = rows | "Retarget" >> beam.Map(_copy_batch, source, layout)
    written = copies | "WriteCopies" >> WriteRows(
        target.project,
        target.instance,
        plan.destinations,
        timeout_s=plan.write_timeout_s,
        flow_control=plan.flow_control,
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

    copied_rows = copies | "CopiedRows" >> beam.FlatMap(list)

    verified = (
        {
            "requested": pipeline | "Days" >> beam.Create([(d, None) for d in plan.days]),
            "copied": by_day(copied_rows, "Copied"),
            "stored": by_day(stored, "Stored"),
        }
        | "JoinDigests" >> beam.CoGroupByKey()
        | "Verify" >> beam.ParDo(_CheckDayFn({d: plan.where(d) for d in plan.days}, source))
    )
    out["verified"] = verified
    return out
