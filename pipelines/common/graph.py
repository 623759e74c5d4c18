"""The file-ingest graph: :class:`Ingest`, read (files or Pub/Sub) → build rows (bad input to
dead letters) → write each table (and the hourly rollup) and the dead letters, all as the run's
:class:`~pipelines.common.config.JobConfig` says.

Between the steps every element of a rows PCollection is a *batch*: a list of
:class:`~transforms.mutations.RowMutation` (the rows of one input block, of one table's share
of it, or of one rollup row). The runner's per-element cost is then paid once per block, not
once per row, and no step has to ask what it was handed."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import apache_beam as beam
from apache_beam import pvalue

from pipelines.common.config import JobConfig
from pipelines.common.jobspec import JobSpec
from pipelines.common.series_step import build_step_index, write_series_index
from transforms.bigtable.collapse import latest_only_families
from transforms.ingest.build_rows import DEAD_LETTER, INDEX, PRINTS, ROWS, BuildRows
from transforms.ingest.dead_letters import (
    WriteDeadLetterFiles,
    WriteDeadLetters,
    WriteDeadLettersToPubSub,
)
from transforms.ingest.overwrite_check import CheckOverwrites
from transforms.ingest.pubsub import ReadPubSubLines
from transforms.ingest.readers import ReadRecords
from transforms.rollup.hourly import TOO_LATE, Rollup
from transforms.table_model import TableDecl

__all__ = ["Ingest"]

ROLLUP = "rollup"


def _event_times(job: JobSpec) -> dict[str, Callable[[int], int]]:
    """Per table whose cells are stamped with event times: its cell timestamp → event ms (the
    span of times landed, for the summary's warning)."""
    schema = job.schema
    return {t: job.decls[t].event_ms for t in job.tables if schema.table(t).cell_time == "event"}


class Ingest(beam.PTransform):
    """A job's whole file (or Pub/Sub) ingest, as the run's :class:`JobConfig` says, applied to
    the pipeline.

    Outputs (a dict): ``rows`` (batches of rows), ``dead_letter`` (dead-letter records) and,
    with ``--hourly_rollup``, ``rollup`` (batches of the rollup's rows)."""

    def __init__(self, config: JobConfig) -> None:
        super().__init__()
        self._config = config

    def expand(self, pbegin: pvalue.PBegin) -> dict[str, beam.PCollection]:
        config, job = self._config, self._config.job
        if config.subscription:
            lines = pbegin | "ReadMessages" >> ReadPubSubLines(config.subscription)
        else:
            # a remote runner's inputs are URIs; nothing of them is opened here to pick readers
            read = ReadRecords(
                list(config.inputs),
                config.input_format,
                not config.remote,
                job.schema.csv,
                numbered=bool(job.schema.record_number),
            )
            lines = pbegin | "ReadLines" >> read
        check = config.overwrites
        index = None
        if not config.validate_only:
            index = build_step_index(job.schema, config.indexed, job.tables, config.streaming)
        built = lines | "ParseAndBuild" >> BuildRows(
            job.rows_fn(),
            job.name,
            job.csv_adapter,
            event_ms=_event_times(job),
            framed=job.framed_fn(),
            check=check,
            numbered=job.schema.record_number,
            index=index,
            lean=_lean_tables(config, index is not None),
        )
        rows = built[ROWS]
        if check is not None and not check.recent_rows:  # batch: every row, every worker
            built[PRINTS] | "CheckOverwrites" >> CheckOverwrites(
                job.rows_fn(),
                job.csv_adapter,
                config.input_format,
                check.tables,
                job.schema.csv,
                job.schema.record_number,
            )
        if config.validate_only:  # counted by BuildRows; no writes
            return {ROWS: rows, DEAD_LETTER: built[DEAD_LETTER]}
        self._write_tables(rows)
        dead = [built[DEAD_LETTER]]
        out = {ROWS: rows}
        if config.hourly_rollup:
            out[ROLLUP], too_late = self._rollup(rows)
            dead.append(too_late)
        parts = [out[k] for k in (ROWS, ROLLUP) if k in out and (k != ROWS or index is None)]
        folded = (built[INDEX], index.tables) if index is not None else (None, ())
        write_series_index(parts, job.schema, config.indexed, self._set_cells, *folded)
        letters = dead[0] if len(dead) == 1 else dead | "AllDeadLetters" >> beam.Flatten()
        write_dead_letters(letters, config)
        out[DEAD_LETTER] = letters
        return out

    def _write_tables(self, rows: beam.PCollection) -> None:
        """AddToCell rows go through the data client (one table each), SetCell rows the sink."""
        job = self._config.job
        aggregates = [t for t in job.tables if any(f.aggregate for f in job.decls[t].families)]
        plain = [t for t in job.tables if t not in aggregates]
        if aggregates:
            split = rows | "SplitAggregates" >> beam.ParDo(
                _SplitAggregates(aggregates)
            ).with_outputs(*aggregates, main="cells")
            for table in aggregates:
                split[table] | f"WriteAggregates_{table}" >> self._add_cells(table)
            cells = split["cells"]
        else:
            cells = rows
        if plain:
            cells | "WriteBigtable" >> self._set_cells(plain)

    def _rollup(self, rows: beam.PCollection) -> tuple[beam.PCollection, beam.PCollection]:
        """The hourly rollup of the rows, written: its batches and its too-late dead letters."""
        config, job = self._config, self._config.job
        rolled = (
            rows
            | "Unbatch" >> beam.FlatMap(list)  # the rollup keys and groups single rows
            | "HourlyRollup" >> Rollup(job.rollup, config.allowed_lateness_ms, config.rollup_mode)
        )
        batches = rolled["rows"] | "RollupBatches" >> beam.Map(lambda row: [row])
        if config.rollup_mode == "exact":  # SetCell totals: idempotent, through the sink
            batches | "WriteRollup" >> self._set_cells([job.rollup.table])
        else:
            batches | "WriteRollup" >> self._add_cells(job.rollup.table)
        return batches, rolled[TOO_LATE]

    def _set_cells(
        self, tables: Sequence[str], latest_only: dict[str, frozenset[str]] | None = None
    ) -> beam.PTransform:
        """The SetCell writer of ``tables`` (the sink); the families that keep one version are
        collapsed with ``--collapse_latest`` (``latest_only``: as given)."""
        from transforms.bigtable.write import WriteRows  # only a job that writes loads it

        config = self._config
        if latest_only is None:
            latest_only = _latest_only(config.tables, tables) if config.collapse_latest else {}
        return WriteRows(
            config.target.project,
            config.target.instance,
            tables,
            timeout_s=config.write_timeout_s,
            flow_control=config.flow_control,
            latest_only=latest_only,
        )

    def _add_cells(self, table: str) -> beam.PTransform:
        """The AddToCell writer of ``table`` (the data client)."""
        from transforms.bigtable.write_aggregates import WriteAggregates

        target = self._config.target
        return WriteAggregates(
            target.project,
            target.instance,
            table,
            operation_timeout=self._config.write_timeout_s,
        )


def _lean_tables(config: JobConfig, folded: bool) -> tuple[str, ...]:
    """The tables whose rows may leave the build step lean (their cells' count and stamp
    beside the entry the builder made, :mod:`transforms.mutations`): those whose cells no step
    after it reads. None when streaming (the overwrite check compares cells), rolled up,
    only checked, on a remote runner (kept whole until a run there shows lean batches cross
    its workers as they do locally), or writing aggregate tables (their split sends the other
    rows on without entries); not the collapsed ones (``--collapse_latest``), nor those the
    index folds from rows by a step of its own (``folded``: the build step folds them)."""
    job = config.job
    if config.streaming or config.hourly_rollup or config.validate_only or config.remote:
        return ()
    if any(f.aggregate for t in job.tables for f in job.decls[t].families):
        return ()
    collapsed = _latest_only(config.tables, job.tables) if config.collapse_latest else {}
    apart = () if folded else config.indexed
    return tuple(t for t in job.tables if t not in collapsed and t not in apart)


def _latest_only(
    decls: Mapping[str, TableDecl], tables: Sequence[str]
) -> dict[str, frozenset[str]]:
    """Per table, the families its declaration keeps one version of (``max_versions: 1``): the
    writer collapses a bundle's writes of one key in them to the cells Bigtable keeps."""
    families = {t: latest_only_families(decls[t]) for t in tables}
    return {t: f for t, f in families.items() if f}


class _SplitAggregates(beam.DoFn):
    """A batch of rows split: aggregate tables' rows to their table's output (a batch each),
    every other row to the main one (one batch)."""

    def __init__(self, aggregate_tables: Sequence[str]) -> None:
        self._aggregate = frozenset(aggregate_tables)

    def process(self, batch: list):
        by_table: dict[str, list] = {}
        cells = []
        for row in batch:  # rows are (table, key, cells) tuples
            if row[0] in self._aggregate:
                by_table.setdefault(row[0], []).append(row)
            else:
                cells.append(row)
        for table, rows in by_table.items():
            yield pvalue.TaggedOutput(table, rows)
        if cells:
            yield cells


def write_dead_letters(letters: beam.PCollection, config: JobConfig) -> None:
    """To --dead_letter_topic; else to this run's files, one per bundle when streaming (Beam's
    windowed file sinks fail on the streaming DirectRunner), sharded JSON lines in batch."""
    if config.dead_letter_topic:
        letters | "DeadLettersToPubSub" >> WriteDeadLettersToPubSub(config.dead_letter_topic)
    elif config.streaming:
        letters | "DeadLetterFiles" >> WriteDeadLetterFiles(config.dead_letter_prefix)
    else:
        letters | "WriteDeadLetters" >> WriteDeadLetters(config.dead_letter_prefix)
