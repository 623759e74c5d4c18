"""Beam transforms that turn source lines into row mutations, with a dead-letter output.

A dataset is just a *builder*: a pure function ``record (dict) -> list[RowMutation]`` that raises
:class:`InvalidEvent` for bad input. Lines arrive as ``(source, raw)`` from JSON-lines files or
``(source, raw, header)`` from CSV files; :class:`BuildRows` decodes either into a record, runs the
builder, counts what happens, and routes every bad line, with its reason and raw text, to the
``dead_letter`` output.
"""

from __future__ import annotations

import gc
import itertools
import logging
import operator
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from transforms.errors import InvalidEvent
from transforms.ingest import batches as row_batches  # noqa: F401 (registers the coder of FramedRows)
from transforms.ingest import block_rows, readers
from transforms.ingest import prints_coder as prints_coding  # noqa: F401 (registers the coder of Prints)
from transforms.ingest.dead_letters import dead_letter_record
from transforms.ingest.fingerprints import Prints, RowPrints
from transforms.ingest.index_fold import BundleIndex, IndexPlan
from transforms.ingest.overwrites import FIRST_NAMESPACE, RecentRows, counted, first_metric_name
from transforms.ingest.readers import Block
from transforms.metrics import (
    CHECK_CPU_US,
    CHECKED_ROWS,
    EMPTY_CELLS,
    EMPTY_ROWS,
    EVENT_TIMES,
    INDEX_CPU_US,
    NAMESPACE,
    REASONS_NAMESPACE,
    TIMED_ROWS,
)
from transforms.mutations import FramedRows, RowMutation, TableCut, without_empty_rows
from transforms.text import csv_dialect, events

__all__ = [
    "DEAD_LETTER",
    "INDEX",
    "PRINTS",
    "ROWS",
    "BuildRows",
    "CsvAdapter",
    "OverwriteCheck",
    "decoder",
]

DEAD_LETTER = "dead_letter"
ROWS = "rows"
PRINTS = "prints"  # the overwrite check's fingerprints (batch): (shard, fingerprints.Prints)
INDEX = "index"  # the series index's rows (batch, IndexPlan): a batch per bundle
PROGRESS_SECONDS = 10.0
_LOG = logging.getLogger(__name__)
_CELLS = operator.itemgetter(2)  # a row's cells: empty for a row with no value

Builder = Callable[[dict], Sequence[RowMutation]]
# (record, batch, entries) → None: appends the record's rows to the batch and their framed
# request entries (None where not made) to entries, nothing when it raises (Builder.frame_into)
FramedBuilder = Callable[[dict, list, list], None]
CsvAdapter = Callable[[dict], dict]


def decoder(
    block: Block, csv_adapter: CsvAdapter | None = None, numbered: str = ""
) -> Callable[[object], dict]:
    """``raw item → record`` for the items of ``block`` (``csv_adapter`` reshapes CSV records;
    ``numbered``: the field given each record's number in its file, ``from: record_number``),
    called once per item, in order."""
    decode = _decoder(block, csv_adapter)
    return _numbering(decode, block, numbered) if numbered else decode


def _numbering(decode: Callable[[object], dict], block: Block, name: str):
    """``decode`` giving each record its number in field ``name``: the block's first record's
    and one more per item (a blank or broken item takes its number too, as in every read).
    Raises InvalidEvent for a record that has none (it came from no file) or whose input has a
    field of that name (the number would replace its value in silence)."""
    numbers = itertools.count(block.first_record)

    def numbered(raw: object) -> dict:
        number = next(numbers)
        record = decode(raw)
        if not block.first_record:
            raise InvalidEvent(
                f"field {name!r} is the record's number in its file (from: record_number), "
                "but this record comes from no file"
            )
        if name in record:
            raise InvalidEvent(
                f"field {name!r} is the record's number in its file (from: record_number), "
                "and the record has a field of that name too: rename the schema's field"
            )
        return {**record, name: events.Num(str(number))}

    return numbered


def _decoder(block: Block, csv_adapter: CsvAdapter | None) -> Callable[[object], dict]:
    if block.kind == "csv":
        parse = csv_dialect.line_parser(block.header, block.dialect or csv_dialect.DEFAULT)
        if csv_adapter is None:
            return parse
        return lambda raw: csv_adapter(parse(raw))
    if block.kind == "json_array":
        return _array_element
    if block.kind == "record":
        return lambda record: record  # converted by readers.columnar_record when read
    return events.parse_json_object


GC_ALLOCATIONS = 100_000


def tune_gc() -> None:
    """Let the cyclic garbage collector run every ``GC_ALLOCATIONS`` allocations, not 700.

    A block's rows are many small tuples that live until the block is written and hold no
    cycles; at the default threshold the collector keeps scanning them and the job builds
    rows about a sixth slower than the same builder whose rows are dropped at once. Raised
    once per worker process, never lowered (a threshold set higher elsewhere stays)."""
    first, *rest = gc.get_threshold()
    if 0 < first < GC_ALLOCATIONS:
        gc.set_threshold(GC_ALLOCATIONS, *rest)


# The streaming overwrite check's memory, per build step and worker process: a runner may
# run each bundle on a fresh copy of the DoFn (the DirectRunner does when streaming), which must
# still compare its records with those the copies before it built.
_RECENT: dict[str, RecentRows] = {}


class OverwriteCheck(NamedTuple):
    """What the build step checks for overwrites: the checked tables, each with whether its key
    holds its cells' stamp. Batch: the fingerprints go to the ``prints`` output
    (:class:`~transforms.ingest.overwrite_check.CheckOverwrites` takes them on). Streaming
    (``recent_rows`` > 0): each record is compared with the worker's last ``recent_rows`` rows
    of at most ``recent_seconds`` ago (:class:`~transforms.ingest.overwrites.RecentRows`)."""

    tables: Mapping[str, bool]
    recent_rows: int = 0
    recent_seconds: float = 0.0


class _BuildRowsFn(beam.DoFn):
    """The Beam shell of the build step: each block to :func:`block_rows.build_block`, its
    outcome to the outputs, and the tallies to metrics once per bundle (a metric update per
    line costs more than decoding the line)."""

    def __init__(
        self,
        builder: Builder,
        pipeline: str,
        csv_adapter: CsvAdapter | None,
        event_ms: Mapping[str, Callable[[int], int]] | None = None,
        framed: FramedBuilder | None = None,
        check: OverwriteCheck | None = None,
        numbered: str = "",
        index: IndexPlan | None = None,
        lean: Collection[str] = (),
    ) -> None:
        self._builder = builder
        self._lean = frozenset(lean)
        self._index_plan = index
        self._pipeline = pipeline
        self._csv_adapter = csv_adapter
        self._numbered = numbered
        self._event_ms = dict(event_ms or {})
        self._framed = framed
        self._check = check
        self._memory = uuid.uuid4().hex  # this step's streaming memory (_RECENT), in any copy

    def setup(self) -> None:
        self._lines = Metrics.counter(NAMESPACE, "lines_read")
        self._blank = Metrics.counter(NAMESPACE, "blank_lines")
        self._events = Metrics.counter(NAMESPACE, "events_valid")
        self._dead = Metrics.counter(NAMESPACE, "dead_letters")
        self._unexpected = Metrics.counter(NAMESPACE, "unexpected_errors")
        self._times = Metrics.distribution(NAMESPACE, EVENT_TIMES)
        self._timed = Metrics.counter(NAMESPACE, TIMED_ROWS)
        self._empty = Metrics.counter(NAMESPACE, EMPTY_ROWS)
        self._empty_cells = Metrics.counter(NAMESPACE, EMPTY_CELLS)
        owner = getattr(self._framed or self._builder, "__self__", self._builder)
        self._take_empty = getattr(owner, "take_empty_cells", None)  # a schema's Builder
        self._frame = self._framed
        # a stream's check compares each record's cells: its rows stay whole
        lean = self._lean if self._check is None or not self._check.recent_rows else frozenset()
        if self._framed is not None and getattr(owner, "frame_into", None) == self._framed:
            self._frame = owner.framer(lean)  # its compiled function, called per event as it is
        self._index = None
        if self._index_plan is not None:  # the builder's own framer made to fold as it builds
            mine = self._frame is not self._framed
            frame, plan = self._frame, self._index_plan
            self._index = BundleIndex(plan, owner if mine else None, frame, lean)
            self._frame = self._index.frame
            self._skipped = Metrics.counter(NAMESPACE, "series_index_rows_skipped")
            self._index_cpu = Metrics.counter(NAMESPACE, INDEX_CPU_US)
            self._index_ns = 0  # the index's thread CPU outside the builder, this bundle
        written = getattr(owner, "tables", ())  # a schema's Builder: the tables it writes
        self._cut = TableCut(written[0] if len(written) == 1 else None)
        self._progress = block_rows.Progress(self._pipeline, PROGRESS_SECONDS, _LOG)
        self._tally = block_rows.ReasonTally()
        self._prints = self._recent = None
        check = self._check
        if check is not None:
            self._checked_rows = Metrics.counter(NAMESPACE, CHECKED_ROWS)
            self._check_cpu = Metrics.counter(NAMESPACE, CHECK_CPU_US)
            self._check_ns = 0  # the fingerprints' thread CPU since the last report
            self._checked_tables = frozenset(check.tables)
            if check.recent_rows:
                memory = RecentRows(check.recent_rows, check.recent_seconds)
                self._recent = _RECENT.setdefault(self._memory, memory)
                self._compared = 0
            else:
                self._prints = RowPrints(check.tables)
        tune_gc()

    def start_bundle(self) -> None:
        self._bundle_lines = self._bundle_events = 0
        self._spans = block_rows.EventSpans(self._event_ms)
        self._tally.drain()  # what a failed (retried) bundle counted is not reported
        if self._prints is not None:  # nor what it fingerprinted
            self._prints = RowPrints(self._check.tables)
            self._check_ns = 0
        if self._index is not None:  # nor what it folded
            self._index.drain()
            self._index_ns = 0

    def finish_bundle(self) -> Iterable[pvalue.TaggedOutput]:
        if self._take_empty is not None:
            self._empty_cells.inc(self._take_empty())
        self._timed.inc(self._spans.rows)
        self._lines.inc(self._bundle_lines)
        self._events.inc(self._bundle_events)
        self._bundle_lines = self._bundle_events = 0
        for event_ms in self._spans.drain():
            self._times.update(event_ms)
        for name, count, first in self._tally.drain():
            Metrics.counter(REASONS_NAMESPACE, name).inc(count)
            if first is not None:
                Metrics.distribution(REASONS_NAMESPACE, name).update(first)
        if self._prints is not None:
            began = time.thread_time_ns()
            shards = self._prints.drain()
            self._check_ns += time.thread_time_ns() - began
            self._check_cpu.inc(self._check_ns // 1000)
            self._check_ns = 0
            self._checked_rows.inc(self._prints.rows)
            self._prints.rows = 0
            for shard in shards:
                yield pvalue.TaggedOutput(
                    PRINTS, WindowedValue(shard, MIN_TIMESTAMP, (GlobalWindow(),))
                )
        if self._recent is not None:
            self._report_recent()
        index = self._drain_index()
        if index:
            yield pvalue.TaggedOutput(INDEX, WindowedValue(index, MIN_TIMESTAMP, (GlobalWindow(),)))

    def _report_recent(self) -> None:
        """The streaming check's findings of the bundle, as counters (and a warning)."""
        self._checked_rows.inc(self._compared)
        self._compared = 0
        found = self._recent.drain()
        for name, value in counted(found):
            Metrics.counter(NAMESPACE, name).inc(value)
        if found.first is not None and self._recent.first_reported(found.first):
            Metrics.counter(FIRST_NAMESPACE, first_metric_name(found.first)).inc()
        if found.records or found.duplicates:  # a stream's log tells as it goes
            first = f"; first: {found.first.describe()}" if found.first else ""
            _LOG.log(
                logging.WARNING if found.records else logging.INFO,
                "%s: overwrite check: %d records wrote %d cells another record wrote with "
                "another value, %d records repeated another exactly%s",
                self._pipeline,
                found.records,
                found.cells,
                found.duplicates,
                first,
            )

    def process(self, element: Block | tuple) -> Iterable:
        block = element if type(element) is Block else as_block(element)
        self._bundle_lines += len(block.items)
        self._progress.add(len(block.items))
        decode = decoder(block, self._csv_adapter, self._numbered)
        if self._recent is not None:  # each record's rows kept, to compare records
            keep = block_rows.RecordRows(decode, self._builder, self._frame)
            frame = keep.framed if self._frame is not None else None
            out = block_rows.build_block(
                block.source, block.kind, block.items, keep.decode, keep.build, frame, _LOG
            )
            self._compare(block, keep.valid(out))
        else:
            out = self._build(block, decode)
        if out.unexpected:
            self._unexpected.inc(out.unexpected)
        if out.blank:
            self._blank.inc(out.blank)
        for index, raw, reason in out.bad:
            line = _bad_line(block, index)
            self._dead.inc()
            self._tally.count(block.source, reason, line)
            yield pvalue.TaggedOutput(
                DEAD_LETTER, dead_letter_record(self._pipeline, block.source, raw, reason, line)
            )
        self._bundle_events += out.valid
        batch = self._written(out.batch, out.entries)
        if batch and (self._spans or self._prints is not None):
            parts, stamps = self._cut(batch), {}  # cut and read once for both
            if self._prints is not None:  # its thread CPU, a clock read each side (~1 µs)
                began = time.thread_time_ns()
                self._prints.add(batch, block.source, block.kind, block.offset, parts, stamps)
                self._check_ns += time.thread_time_ns() - began
            if self._spans:
                self._spans.track(batch, parts, stamps)
        if self._prints is not None and self._prints.full:  # handed on as they come: a
            began = time.thread_time_ns()  # bundle may be a whole input
            shards = self._prints.drain()
            self._check_ns += time.thread_time_ns() - began
            for shard in shards:
                yield pvalue.TaggedOutput(PRINTS, shard)
        if batch:
            yield batch

    def _build(self, block: Block, decode: Callable):
        """A block built (and its rows the builder did not fold into the index, folded)."""
        index = self._index
        checked = index.checked if index is not None else None
        frame = self._frame
        out = block_rows.build_block(
            block.source, block.kind, block.items, decode, self._builder, frame, _LOG, checked
        )
        if index is not None and out.batch:
            began = time.thread_time_ns()
            skipped = index.add(out.batch)
            self._index_ns += time.thread_time_ns() - began
            if skipped:
                self._skipped.inc(skipped)
        return out

    def _drain_index(self) -> FramedRows | None:
        """The bundle's index rows (None: no index, or nothing folded), and the index's CPU
        of the bundle counted (:data:`~transforms.metrics.INDEX_CPU_US`)."""
        if self._index is None:
            return None
        began = time.thread_time_ns()
        rows = self._index.drain()
        self._index_cpu.inc((self._index_ns + time.thread_time_ns() - began) // 1000)
        self._index_ns = 0
        return rows

    def _compare(self, block: Block, records: list[tuple[int, list]]) -> None:
        """Streaming: each valid record's rows of checked tables against the worker's recent
        rows (a record's place: its source and line, and a count of its own)."""
        tables = self._checked_tables
        for index, rows in records:
            mine = [row for row in rows if row[0] in tables and row[2]]
            if mine:
                self._compared += len(mine)
                self._recent.add(block.source, block.line(index), mine)

    def _written(self, rows: list, entries: list | None) -> list:
        """The block's rows as they go out: rows without a cell (an event with no value for a
        table) are counted and never sent (Bigtable refuses an entry without mutations)."""
        batch = FramedRows(rows, entries) if self._framed is not None else rows
        if rows and not all(map(_CELLS, rows)):
            kept = without_empty_rows(batch)
            self._empty.inc(len(rows) - len(kept))
            return kept
        return batch


def _bad_line(block: Block, index: int) -> int | None:
    """The line of a bad item; a range read counts its first line from the file, once."""
    line = block.line(index)
    if line is None and block.offset >= 0 and block.kind == "jsonl":
        try:
            first = readers.line_at(block.source, block.offset)
        except OSError:
            return None
        line = first + index
    return line


def as_block(element: tuple) -> Block:
    """A single line ``(source, raw)`` or CSV line ``(source, raw, header)`` as a block (line
    unknown): what tests and callers with their own reads still hand over."""
    if len(element) == 2:
        return Block(element[0], "jsonl", [element[1]], 0, -1)
    return Block(element[0], "csv", [element[1]], 0, -1, None, element[2])


def _array_element(raw: str) -> dict:
    if not raw:
        raise InvalidEvent("the JSON array ends without ']': is the file truncated?")
    return events.parse_json_object(raw)


class BuildRows(beam.PTransform):
    """Lines → row mutations (main output ``rows``) and dead letters (output ``dead_letter``:
    dicts with pipeline, source, reason, raw, line). ``csv_adapter`` reshapes a flat CSV record
    into the builder's record where the two differ (e.g. metric columns into a ``metrics``
    object). Each element of ``rows`` is a batch: the list of the rows of one input block
    (what the writers take), so the runner's per-element cost is paid once per block instead
    of once per row; a block with no valid line yields no batch. ``event_ms``: per table
    stamped with event times, its cell timestamp → event ms; the span of times landed is then
    counted (:data:`EVENT_TIMES`). ``framed``: the builder's variant that also makes each row's
    request entry (``generic.Builder.frame_into``); the batches are then :class:`FramedRows`,
    whose entries the writers send as they are instead of encoding every row again.
    ``check``: the overwrite check (:class:`OverwriteCheck`); a batch run's fingerprints are
    then the ``prints`` output. ``numbered``: the field given each record's number in its
    file (a schema's ``from: record_number``; the blocks carry the numbers). ``index``: the
    series index of a batch run's rows (:class:`~transforms.ingest.index_fold.IndexPlan`),
    folded as they are built; its rows, a batch per bundle, are the ``index`` output.
    ``lean``: the tables whose rows nothing after this step reads but the writers (not
    collapsed, rolled up, or folded into the index by a step of their own): a batch run's
    framed rows of them are then lean where the builder made their entry (their cells' count
    and stamp, no cell tuples: :mod:`transforms.mutations`)."""

    def __init__(
        self,
        builder: Builder,
        pipeline: str,
        csv_adapter: CsvAdapter | None = None,
        event_ms: Mapping[str, Callable[[int], int]] | None = None,
        framed: FramedBuilder | None = None,
        check: OverwriteCheck | None = None,
        numbered: str = "",
        index: IndexPlan | None = None,
        lean: Collection[str] = (),
    ) -> None:
        super().__init__()
        self._fn = _BuildRowsFn(
            builder, pipeline, csv_adapter, event_ms, framed, check, numbered, index, lean
        )

    def expand(self, lines: beam.PCollection) -> pvalue.DoOutputsTuple:
        # Batches are FramedRows (or lists): coded and sized by transforms.ingest.batches (the
        # index's too: sized from their entries, not by pickling a bundle's every index row);
        # the fingerprints as raw bytes by transforms.ingest.prints_coder
        tagged = {INDEX: FramedRows, DEAD_LETTER: Any, PRINTS: tuple[int, Prints]}
        build = beam.ParDo(self._fn).with_output_types(FramedRows, **tagged)
        return lines | "BuildRows" >> build.with_outputs(DEAD_LETTER, PRINTS, INDEX, main=ROWS)
