"""The file-ingest graph: :class:`Ingest`, read (files or Pub/Sub) → build rows (bad input to
dead letters) → write each table (and the hourly rollup), and where this run's dead letters go.

Between the steps every element of a rows PCollection is a *batch*: a list of
:class:`~transforms.mutations.RowMutation` (the rows of one input block, of one table's share
of it, or of one rollup row). The runner's per-element cost is then paid once per block, not
once per row, and no step has to ask what it was handed."""

from __future__ import annotations

import datetime as dt
import functools
import uuid
from collections.abc import Callable, Sequence

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.common.jobspec import JobSpec, with_time_input
from pipelines.common.options import (
    BigtableOptions,
    FileInputOptions,
    StreamingInputOptions,
    input_patterns,
    resolve_target,
    write_settings,
)
from pipelines.common.remote import is_remote, remote_dead_letter_base
from pipelines.common.series_step import write_series_index
from transforms.bigtable.collapse import latest_only_families
from transforms.ingest.build_rows import DEAD_LETTER, PRINTS, ROWS, BuildRows, OverwriteCheck
from transforms.ingest.dead_letters import (
    WriteDeadLetterFiles,
    WriteDeadLetters,
    WriteDeadLettersToPubSub,
)
from transforms.ingest.overwrite_check import CheckOverwrites
from transforms.ingest.pubsub import ReadPubSubLines
from transforms.ingest.readers import ReadRecords
from transforms.rollup.hourly import TOO_LATE, Rollup

__all__ = ["Ingest", "dead_letter_location", "new_run_id"]

ROLLUP = "rollup"
# The streaming overwrite check's memory: each record is compared with the last RECENT_ROWS rows
# its worker built, none older than RECENT_SECONDS (bounded: a stream never ends).
RECENT_ROWS = 100_000
RECENT_SECONDS = 600.0


def new_run_id(now: dt.datetime | None = None) -> str:
    """A run's own name: its UTC start and a short random id, e.g. ``20261125T123000Z-1a2b3c``
    (sorts by time; two runs in the same second still differ)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"


def dead_letter_base(options: PipelineOptions, job: str) -> str:
    """``--dead_letter``, or by default ``dead-letters/<job>`` (on a remote runner, under
    ``--temp_location``: a worker's own disk vanishes with it): what every run's own prefix
    starts with."""
    given = options.view_as(FileInputOptions).dead_letter
    remote = remote_dead_letter_base(options, job) if is_remote(options) else None
    return given or remote or f"dead-letters/{job}"


def dead_letter_prefix(options: PipelineOptions, job: str, run_id: str) -> str:
    """The path prefix of this run's dead-letter files: the base and the run's id, so a re-run
    never replaces (Beam's file sink deletes what matches its own prefix) an earlier run's."""
    return f"{dead_letter_base(options, job)}-{run_id}"


def dead_letter_location(options: PipelineOptions, job: str, run_id: str) -> str | None:
    """Where this run's dead letters go, for the summary: a topic, a file pattern, or None
    when nothing is written (``--validate_only``)."""
    stream = options.view_as(StreamingInputOptions)
    if stream.dead_letter_topic:
        return stream.dead_letter_topic
    if options.view_as(FileInputOptions).validate_only:
        return None
    return f"{dead_letter_prefix(options, job, run_id)}*.jsonl"


def overwrite_check(options: PipelineOptions, job: JobSpec) -> OverwriteCheck | None:
    """The build step's overwrite check (``--overwrite_check``): every SetCell table the job
    writes from events (aggregates sum by design; the rollup writes its own totals)."""
    if options.view_as(FileInputOptions).overwrite_check == "off":
        return None
    stamp_in_key = getattr(job.builder, "stamp_in_key", None)
    tables = stamp_in_key() if stamp_in_key is not None else {}
    if not tables:
        return None
    if options.view_as(StreamingInputOptions).input_subscription:
        return OverwriteCheck(tables, RECENT_ROWS, RECENT_SECONDS)
    return OverwriteCheck(tables)


def _event_times(job: JobSpec) -> dict[str, Callable[[int], int]]:
    """Per table whose cells are stamped with event times: its cell timestamp → event ms (the
    span of times landed, for the summary's warning)."""
    schema = job.builder.schema
    return {t: job.decls[t].event_ms for t in job.tables if schema.table(t).cell_time == "event"}


class Ingest(beam.PTransform):
    """A job's whole file (or Pub/Sub) ingest for ``options``, applied to the pipeline.

    Outputs (a dict): ``rows`` (batches of rows), ``dead_letter`` (dead-letter records) and,
    with ``--hourly_rollup``, ``rollup`` (batches of the rollup's rows). ``run_id`` names this
    run's dead-letter files (default: a new one); ``dead_letters`` says where they go."""

    def __init__(self, options: PipelineOptions, job: JobSpec, run_id: str | None = None) -> None:
        super().__init__()
        self._options = options
        self._job = with_time_input(options, job)
        self.run_id = run_id or new_run_id()
        self.dead_letters = dead_letter_location(options, job.name, self.run_id)

    def expand(self, pbegin: pvalue.PBegin) -> dict[str, beam.PCollection]:
        options, job = self._options, self._job
        stream = options.view_as(StreamingInputOptions)
        if stream.input_subscription:
            lines = pbegin | "ReadMessages" >> ReadPubSubLines(stream.input_subscription)
        else:
            input_format = options.view_as(FileInputOptions).input_format
            # a remote runner's inputs are URIs; nothing of them is opened here to pick readers
            read = ReadRecords(input_patterns(options), input_format, not is_remote(options))
            lines = pbegin | "ReadLines" >> read
        check = overwrite_check(options, job)
        built = lines | "ParseAndBuild" >> BuildRows(
            job.rows_fn(),
            job.name,
            job.csv_adapter,
            event_ms=_event_times(job),
            framed=job.framed_fn(),
            check=check,
        )
        rows = built[ROWS]
        if check is not None and not check.recent_rows:  # batch: every row, every worker
            input_format = options.view_as(FileInputOptions).input_format
            built[PRINTS] | "CheckOverwrites" >> CheckOverwrites(
                job.rows_fn(), job.csv_adapter, input_format, check.tables
            )
        if options.view_as(FileInputOptions).validate_only:  # counted by BuildRows; no writes
            return {ROWS: rows, DEAD_LETTER: built[DEAD_LETTER]}
        settings = write_settings(options)
        add_cells, set_cells = _sinks(options, settings.flow_control)
        collapse = settings.collapse_latest
        self._write_tables(rows, add_cells, set_cells, collapse)
        dead = [built[DEAD_LETTER]]
        out = {ROWS: rows}
        if stream.hourly_rollup and job.rollup:
            out[ROLLUP], too_late = self._rollup(rows, stream, add_cells, set_cells, collapse)
            dead.append(too_late)
        write_series_index(
            [out[k] for k in (ROWS, ROLLUP) if k in out], job, set_cells, ROLLUP in out
        )
        letters = dead[0] if len(dead) == 1 else dead | "AllDeadLetters" >> beam.Flatten()
        write_dead_letters(letters, options, job.name, self.run_id)
        out[DEAD_LETTER] = letters
        return out

    def _write_tables(
        self, rows: beam.PCollection, add_cells: Callable, set_cells: Callable, collapse: bool
    ) -> None:
        """AddToCell rows go through the data client (one table each), SetCell rows the sink."""
        job = self._job
        aggregates = [t for t in job.tables if any(f.aggregate for f in job.decls[t].families)]
        plain = [t for t in job.tables if t not in aggregates]
        if aggregates:
            split = rows | "SplitAggregates" >> beam.ParDo(
                _SplitAggregates(aggregates)
            ).with_outputs(*aggregates, main="cells")
            for table in aggregates:
                split[table] | f"WriteAggregates_{table}" >> add_cells(table)
            cells = split["cells"]
        else:
            cells = rows
        if plain:
            latest = _latest_only(job, plain) if collapse else {}
            cells | "WriteBigtable" >> set_cells(plain, latest_only=latest)

    def _rollup(
        self,
        rows: beam.PCollection,
        stream: StreamingInputOptions,
        add_cells: Callable,
        set_cells: Callable,
        collapse: bool,
    ) -> tuple[beam.PCollection, beam.PCollection]:
        """The hourly rollup of the rows, written: its batches and its too-late dead letters."""
        job = self._job
        rolled = (
            rows
            | "Unbatch" >> beam.FlatMap(list)  # the rollup keys and groups single rows
            | "HourlyRollup"
            >> Rollup(job.rollup, stream.allowed_lateness_minutes * 60_000, stream.rollup_mode)
        )
        batches = rolled["rows"] | "RollupBatches" >> beam.Map(lambda row: [row])
        if stream.rollup_mode == "exact":  # SetCell totals: idempotent, through the sink
            rollup_table = [job.rollup.table]
            latest = _latest_only(job, rollup_table) if collapse else {}
            batches | "WriteRollup" >> set_cells(rollup_table, latest_only=latest)
        else:
            batches | "WriteRollup" >> add_cells(job.rollup.table)
        return batches, rolled[TOO_LATE]


def _sinks(options: PipelineOptions, flow_control: bool) -> tuple[Callable, Callable]:
    """The two writers of a job's target, as ``table(s) → PTransform``: AddToCell through the
    data client, SetCell through the sink."""
    # Only a job that writes loads the writers and the Bigtable client (not `btts check`).
    from transforms.bigtable.write import WriteRows
    from transforms.bigtable.write_aggregates import WriteAggregates

    target = resolve_target(options)
    timeout = options.view_as(BigtableOptions).write_timeout_seconds
    add_cells = functools.partial(
        WriteAggregates, target.project, target.instance, operation_timeout=timeout
    )
    set_cells = functools.partial(
        WriteRows,
        target.project,
        target.instance,
        timeout_s=timeout,
        flow_control=flow_control,
    )
    return add_cells, set_cells


def _latest_only(job: JobSpec, tables: Sequence[str]) -> dict[str, frozenset[str]]:
    """Per table, the families its declaration keeps one version of (``max_versions: 1``): the
    writer collapses a bundle's writes of one key in them to the cells Bigtable keeps."""
    families = {t: latest_only_families(job.decls[t]) for t in tables}
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


def write_dead_letters(
    letters: beam.PCollection, options: PipelineOptions, job: str, run_id: str
) -> None:
    """To --dead_letter_topic; else to this run's files, one per bundle when streaming (Beam's
    windowed file sinks fail on the streaming DirectRunner), sharded JSON lines in batch."""
    stream = options.view_as(StreamingInputOptions)
    prefix = dead_letter_prefix(options, job, run_id)
    if stream.dead_letter_topic:
        letters | "DeadLettersToPubSub" >> WriteDeadLettersToPubSub(stream.dead_letter_topic)
    elif stream.input_subscription:
        letters | "DeadLetterFiles" >> WriteDeadLetterFiles(prefix)
    else:
        letters | "WriteDeadLetters" >> WriteDeadLetters(prefix)
