"""Beam transforms that turn source lines into row mutations, with a dead-letter output.

A dataset is just a *builder*: a pure function ``record (dict) -> list[RowMutation]`` that raises
:class:`InvalidEvent` for bad input. Lines arrive as ``(source, raw)`` from JSON-lines files or
``(source, raw, header)`` from CSV files; :class:`BuildRows` decodes either into a record, runs the
builder, counts what happens, and routes every bad line, with its reason and raw text, to the
``dead_letter`` output.
"""

from __future__ import annotations

import base64
import gc
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.io import textio
from apache_beam.metrics import Metrics

from transforms import (
    events,
    readers,
    row_batches,  # noqa: F401 (registers the coder of FramedRows)
)
from transforms.errors import InvalidEvent, reason_kind
from transforms.mutations import (
    MAX_QUALIFIER_BYTES,
    FramedRows,
    RowMutation,
    check_limits,
    without_empty_rows,
)
from transforms.readers import Block

__all__ = [
    "DEAD_LETTER",
    "EMPTY_CELLS",
    "EMPTY_ROWS",
    "EVENT_TIMES",
    "GC_ALLOCATIONS",
    "MAX_REASON_KINDS",
    "NAMESPACE",
    "OTHER_REASONS",
    "PROGRESS_SECONDS",
    "REASONS_NAMESPACE",
    "ROWS",
    "TIMED_ROWS",
    "BuildRows",
    "Builder",
    "CsvAdapter",
    "FramedBuilder",
    "ReadPubSubLines",
    "WriteDeadLetterFiles",
    "WriteDeadLetters",
    "WriteDeadLettersToPubSub",
    "as_block",
    "dead_letter_record",
    "decoder",
    "message_lines",
    "reason_metric_name",
    "split_reason_metric_name",
    "tune_gc",
]

DEAD_LETTER = "dead_letter"
# Rows a builder made without a cell (an optional value absent): never sent, since Bigtable
# refuses a MutateRows entry without mutations; counted under this name.
EMPTY_ROWS = "empty_rows"
TIMED_ROWS = "timed_rows"  # rows whose event times make the span (EVENT_TIMES) of a run
EMPTY_CELLS = "empty_cells"  # unpivoted columns without a value: no event, not a dead letter
ROWS = "rows"
PROGRESS_SECONDS = 10.0
NAMESPACE = "btts"
# Dead letters by reason (generalised, see errors.reason_kind) and source: a counter each, and a
# distribution of line numbers whose minimum is the first line with that reason.
REASONS_NAMESPACE = "btts.dead_letter_reasons"
MAX_REASON_KINDS = 50  # per worker; rarer kinds beyond it count as OTHER_REASONS
OTHER_REASONS = "other reasons"
_LOG = logging.getLogger(__name__)

Builder = Callable[[dict], Sequence[RowMutation]]
# (record, batch, entries) → None: appends the record's rows to the batch and their framed
# request entries (None where not made) to entries, nothing when it raises (Builder.frame_into)
FramedBuilder = Callable[[dict, list, list], None]
CsvAdapter = Callable[[dict], dict]


def decoder(block: Block, csv_adapter: CsvAdapter | None = None) -> Callable[[object], dict]:
    """``raw item → record`` for the items of ``block`` (``csv_adapter`` reshapes CSV records)."""
    if block.kind == "csv":
        header = block.header
        if csv_adapter is None:
            return lambda raw: events.parse_csv_line(raw, header)
        return lambda raw: csv_adapter(events.parse_csv_line(raw, header))
    if block.kind == "json_array":
        return _array_element
    if block.kind == "record":
        return lambda record: record  # converted by readers.columnar_record when read
    return events.parse_json_object


def dead_letter_record(
    pipeline: str, source: str, raw: bytes | str | dict, reason: str, line: int | None = None
) -> dict:
    """What a dead letter holds: enough to understand, fix and replay the line (and where it
    was, when the reader knows)."""
    record = {"pipeline": pipeline, "source": source, "reason": reason}
    if line is not None:
        record["line"] = line
    if isinstance(raw, dict):  # a Parquet or Avro record, as JSON
        record["raw"] = json.dumps(raw, ensure_ascii=False, sort_keys=True, default=str)
    elif isinstance(raw, bytes):
        try:
            record["raw"] = raw.decode("utf-8")
        except UnicodeDecodeError:
            record["raw"] = raw.decode("utf-8", errors="backslashreplace")
            record["raw_base64"] = base64.b64encode(raw).decode("ascii")
    else:
        record["raw"] = raw
    return record


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


# The earliest and latest event time landed (a distribution: its min and max), from the cells of
# each valid event's first row, for the summary's warning when the times look misread.
EVENT_TIMES = "event_ms"


class _BuildRowsFn(beam.DoFn):
    def __init__(
        self,
        builder: Builder,
        pipeline: str,
        csv_adapter: CsvAdapter | None,
        event_ms: Mapping[str, Callable[[int], int]] | None = None,
        framed: FramedBuilder | None = None,
    ) -> None:
        self._builder = builder
        self._pipeline = pipeline
        self._csv_adapter = csv_adapter
        self._event_ms = dict(event_ms or {})
        self._framed = framed

    def setup(self) -> None:
        self._lines = Metrics.counter(NAMESPACE, "lines_read")
        self._blank = Metrics.counter(NAMESPACE, "blank_lines")
        self._events = Metrics.counter(NAMESPACE, "events_valid")
        self._dead = Metrics.counter(NAMESPACE, "dead_letters")
        self._unexpected = Metrics.counter(NAMESPACE, "unexpected_errors")
        self._empty = Metrics.counter(NAMESPACE, EMPTY_ROWS)
        self._empty_cells = Metrics.counter(NAMESPACE, EMPTY_CELLS)
        owner = getattr(self._framed or self._builder, "__self__", self._builder)
        self._take_empty = getattr(owner, "take_empty_cells", None)  # a schema's Builder
        self._times = Metrics.distribution(NAMESPACE, EVENT_TIMES)
        self._timed = Metrics.counter(NAMESPACE, TIMED_ROWS)
        self._seen = 0
        self._next_progress = 1024
        self._started = self._last_report = time.monotonic()

        self._kinds: set[str] = set()
        tune_gc()

    def start_bundle(self) -> None:
        # Counted locally and added once per bundle: a metric update per line costs more than
        # decoding the line.
        self._bundle_lines = self._bundle_events = 0
        self._reasons: dict[tuple[str, str], list] = {}
        self._stamps: dict[str, list[int]] = {}  # table → [lowest, highest] cell timestamp
        self._timed_in_bundle = 0  # the rows those stamps are of

    def finish_bundle(self) -> None:
        if self._take_empty is not None:
            self._empty_cells.inc(self._take_empty())
        self._lines.inc(self._bundle_lines)
        self._events.inc(self._bundle_events)
        self._bundle_lines = self._bundle_events = 0
        for table, stamps in self._stamps.items():  # as the table's cells hold event times
            for stamp in stamps:
                self._times.update(self._event_ms[table](stamp))
        self._stamps = {}
        self._timed.inc(self._timed_in_bundle)
        self._timed_in_bundle = 0
        for (kind, source), (count, first) in self._reasons.items():
            name = reason_metric_name(kind, source)
            Metrics.counter(REASONS_NAMESPACE, name).inc(count)
            if first is not None:
                Metrics.distribution(REASONS_NAMESPACE, name).update(first)
        self._reasons = {}

    def _count_reason(self, source: str, reason: str, line: int | None) -> None:
        kind = reason_kind(reason)
        if kind not in self._kinds:
            if len(self._kinds) >= MAX_REASON_KINDS:
                kind = OTHER_REASONS
            else:
                self._kinds.add(kind)
        entry = self._reasons.get((kind, source))
        if entry is None:
            self._reasons[(kind, source)] = [1, line]
        else:
            entry[0] += 1
            if line is not None and (entry[1] is None or line < entry[1]):
                entry[1] = line

    def _progress(self) -> None:
        # Long runs show they are alive: one log line per worker every PROGRESS_SECONDS.
        now = time.monotonic()
        if now - self._last_report >= PROGRESS_SECONDS:
            self._last_report = now
            rate = self._seen / max(now - self._started, 1e-9)
            _LOG.info(
                "%s: %d lines processed by this worker (%.0f lines/s)",
                self._pipeline,
                self._seen,
                rate,
            )

    def process(self, element: Block | tuple) -> Iterable:
        block = element if type(element) is Block else as_block(element)
        items = block.items
        self._bundle_lines += len(items)
        self._seen += len(items)
        if self._seen >= self._next_progress:
            self._next_progress = self._seen + 1024
            self._progress()
        build = self._builder
        framed = self._framed
        decode = decoder(block, self._csv_adapter)
        valid = 0
        batch: list = []
        entries: list = []
        limit = 0 if block.kind == "record" else MAX_QUALIFIER_BYTES
        for index, raw in enumerate(items):
            try:
                if framed is not None:  # rows with their request entries, made in one go
                    if len(raw) <= limit:
                        framed(decode(raw), batch, entries)
                        valid += 1
                        continue
                    # only so long a line can hold an oversize cell: checked before it is kept
                    rows, made = [], []
                    framed(decode(raw), rows, made)
                    check_limits(rows)
                    batch += rows
                    entries += made
                    valid += 1
                    continue
                rows = build(decode(raw))
                if len(raw) > limit:  # only so long a line can hold an oversize cell
                    check_limits(rows)
            except InvalidEvent as err:
                reason = str(err)
            except Exception as err:  # a builder bug must not lose the line or stop the stream
                _LOG.exception("unexpected error building rows from a line of %s", block.source)
                self._unexpected.inc()
                reason = f"unexpected error: {type(err).__name__}: {err}"
            else:
                valid += 1
                batch.extend(rows)
                continue
            if block.kind in ("jsonl", "csv") and not raw.strip():
                self._blank.inc()
                continue
            if block.kind == "jsonl":
                reason = events.array_hint(raw, reason)
            line = self._line(block, index)
            self._dead.inc()
            self._count_reason(block.source, reason, line)
            yield pvalue.TaggedOutput(
                DEAD_LETTER, dead_letter_record(self._pipeline, block.source, raw, reason, line)
            )
        self._bundle_events += valid
        if batch and not all(row[2] for row in batch):  # an event with no value for a table
            kept = without_empty_rows(FramedRows(batch, entries) if framed is not None else batch)
            self._empty.inc(len(batch) - len(kept))
            batch, entries = kept, getattr(kept, "entries", entries)
        if self._event_ms and batch:
            self._track_span(batch)
        if batch:
            yield FramedRows(batch, entries) if framed is not None else batch

    def _track_span(self, batch: list) -> None:
        """Widen the span of cell timestamps landed in the first table of ``batch`` that is
        stamped with event times: one pass per block, over that table's rows only."""
        tracked = self._event_ms
        table = next((row[0] for row in batch if row[0] in tracked), None)
        if table is None:
            return
        stamps = [row[2][0][3] for row in batch if row[0] == table and row[2]]
        if stamps:  # (a row may hold no cell)
            self._timed_in_bundle += len(stamps)
            span = self._stamps.setdefault(table, [stamps[0], stamps[0]])
            span[0], span[1] = min(span[0], *stamps), max(span[1], *stamps)

    def _line(self, block: Block, index: int) -> int | None:
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


def reason_metric_name(kind: str, source: str) -> str:
    """One metric per (reason kind, source); kinds hold no tab (errors.reason_kind)."""
    return f"{kind}\t{source}"


def split_reason_metric_name(name: str) -> tuple[str, str]:
    kind, _, source = name.partition("\t")
    return kind, source


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
    whose entries the writers send as they are instead of encoding every row again."""

    def __init__(
        self,
        builder: Builder,
        pipeline: str,
        csv_adapter: CsvAdapter | None = None,
        event_ms: Mapping[str, Callable[[int], int]] | None = None,
        framed: FramedBuilder | None = None,
    ) -> None:
        super().__init__()
        self._fn = _BuildRowsFn(builder, pipeline, csv_adapter, event_ms, framed)

    def expand(self, lines: beam.PCollection) -> pvalue.DoOutputsTuple:
        # Batches are FramedRows (or lists): coded and sized by transforms.row_batches
        build = beam.ParDo(self._fn).with_output_types(FramedRows)
        return lines | "BuildRows" >> build.with_outputs(DEAD_LETTER, main=ROWS)


class WriteDeadLetters(beam.PTransform):
    """Dead letters as JSON lines under ``prefix`` (``prefix-00000-of-00001.jsonl``)."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self._prefix = prefix

    def expand(self, records: beam.PCollection) -> beam.PCollection:
        return (
            records
            | "ToJson" >> beam.Map(lambda r: json.dumps(r, ensure_ascii=False, sort_keys=True))
            | "WriteJsonl" >> textio.WriteToText(self._prefix, file_name_suffix=".jsonl")
        )


def message_lines(payload: bytes) -> list[bytes]:
    """The events of one Pub/Sub message: one per line (a final newline ends the last one, it
    does not add a blank). Publishers that batch events into messages cut the per-message cost
    that bounds a stream (Beam's DirectRunner pulls 10 messages per bundle)."""
    lines = payload.split(b"\n")
    if len(lines) > 1 and not lines[-1]:
        lines.pop()
    return lines


class ReadPubSubLines(beam.PTransform):
    """Messages of a Pub/Sub subscription as blocks, one event per line of each message
    (:func:`message_lines`; line numbers within the message): the same shape as a file's
    blocks, so batch and streaming share every step after the read."""

    def __init__(self, subscription: str) -> None:
        super().__init__()
        self._subscription = subscription

    def expand(self, pbegin: pvalue.PBegin) -> beam.PCollection:
        from apache_beam.io.gcp.pubsub import ReadFromPubSub

        source = self._subscription
        return (
            pbegin
            | "ReadPubSub" >> ReadFromPubSub(subscription=source)
            | "SplitEvents"
            >> beam.Map(lambda payload: Block(source, "jsonl", message_lines(payload)))
        )


class WriteDeadLettersToPubSub(beam.PTransform):
    """Dead letters as JSON messages on a topic (the streaming counterpart of the files)."""

    def __init__(self, topic: str) -> None:
        super().__init__()
        self._topic = topic

    def expand(self, records: beam.PCollection) -> beam.PCollection:
        from apache_beam.io.gcp.pubsub import WriteToPubSub

        return (
            records
            | "ToJson"
            >> beam.Map(lambda r: json.dumps(r, ensure_ascii=False, sort_keys=True).encode("utf-8"))
            | "Publish" >> WriteToPubSub(self._topic)
        )


class _DeadLetterFilesFn(beam.DoFn):
    """One JSON-lines file per bundle that has dead letters: works on every runner, streaming
    included (Beam 2.77's windowed file sinks fail on the DirectRunner's streaming mode). A
    retried bundle may write its file again, so a dead letter can repeat; none is lost."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix

    def start_bundle(self) -> None:
        self._records: list[str] = []

    def process(self, record: dict) -> None:
        self._records.append(json.dumps(record, ensure_ascii=False, sort_keys=True))

    def finish_bundle(self) -> None:
        if not self._records:
            return
        from apache_beam.io.filesystems import FileSystems

        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        path = f"{self._prefix}-{stamp}-{uuid.uuid4().hex[:12]}.jsonl"
        with FileSystems.create(path) as out:
            out.write(("\n".join(self._records) + "\n").encode("utf-8"))
        self._records = []


class WriteDeadLetterFiles(beam.PTransform):
    """Dead letters of an unbounded input as files under ``prefix`` (one per bundle)."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self._prefix = prefix

    def expand(self, records: beam.PCollection) -> beam.PCollection:
        return records | "WriteFiles" >> beam.ParDo(_DeadLetterFilesFn(self._prefix))
