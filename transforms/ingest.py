"""Beam transforms that turn source lines into row mutations, with a dead-letter output.

A dataset is just a *builder*: a pure function ``record (dict) -> list[RowMutation]`` that raises
:class:`InvalidEvent` for bad input. Lines arrive as ``(source, raw)`` from JSON-lines files or
``(source, raw, header)`` from CSV files; :class:`BuildRows` decodes either into a record, runs the
builder, counts what happens, and routes every bad line, with its reason and raw text, to the
``dead_letter`` output.
"""

from __future__ import annotations

import base64
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Sequence

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.io import fileio, textio
from apache_beam.metrics import Metrics

from transforms import events
from transforms.errors import InvalidEvent, reason_kind
from transforms.mutations import MAX_QUALIFIER_BYTES, RowMutation, check_limits

DEAD_LETTER = "dead_letter"
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
CsvAdapter = Callable[[dict], dict]


def decode(element: tuple, csv_adapter: CsvAdapter | None = None) -> dict:
    """The record of a JSON line ``(source, raw)`` or a CSV line ``(source, raw, header)``."""
    if len(element) == 2:
        return events.parse_json_object(element[1])
    record = events.parse_csv_line(element[1], element[2])
    return csv_adapter(record) if csv_adapter else record


def dead_letter_record(pipeline: str, source: str, raw: bytes | str, reason: str) -> dict:
    """What a dead letter holds: enough to understand, fix and replay the line."""
    record = {"pipeline": pipeline, "source": source, "reason": reason}
    if isinstance(raw, bytes):
        try:
            record["raw"] = raw.decode("utf-8")
        except UnicodeDecodeError:
            record["raw"] = raw.decode("utf-8", errors="backslashreplace")
            record["raw_base64"] = base64.b64encode(raw).decode("ascii")
    else:
        record["raw"] = raw
    return record


class _BuildRowsFn(beam.DoFn):
    def __init__(self, builder: Builder, pipeline: str, csv_adapter: CsvAdapter | None) -> None:
        self._builder = builder
        self._pipeline = pipeline
        self._csv_adapter = csv_adapter

    def setup(self) -> None:
        self._lines = Metrics.counter(NAMESPACE, "lines_read")
        self._blank = Metrics.counter(NAMESPACE, "blank_lines")
        self._events = Metrics.counter(NAMESPACE, "events_valid")
        self._dead = Metrics.counter(NAMESPACE, "dead_letters")
        self._unexpected = Metrics.counter(NAMESPACE, "unexpected_errors")
        self._seen = 0
        self._started = self._last_report = time.monotonic()

        self._kinds: set[str] = set()

    def start_bundle(self) -> None:
        # Counted locally and added once per bundle: a metric update per line costs more than
        # decoding the line.
        self._bundle_lines = self._bundle_events = 0
        self._reasons: dict[tuple[str, str], list] = {}

    def finish_bundle(self) -> None:
        self._lines.inc(self._bundle_lines)
        self._events.inc(self._bundle_events)
        self._bundle_lines = self._bundle_events = 0
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

    def process(self, element: tuple) -> Iterable:
        source, raw = element[0], element[1]
        self._bundle_lines += 1
        self._seen += 1
        if not self._seen & 0x3FF:
            self._progress()
        if not raw.strip():
            self._blank.inc()
            return
        try:
            rows = self._builder(decode(element, self._csv_adapter))
            if len(raw) > MAX_QUALIFIER_BYTES:  # only a line this long can hold an oversize cell
                check_limits(rows)
        except InvalidEvent as err:
            reason = str(err)
        except Exception as err:  # a builder bug must not lose the line or stop the stream
            _LOG.exception("unexpected error building rows from a line of %s", source)
            self._unexpected.inc()
            reason = f"unexpected error: {type(err).__name__}: {err}"
        else:
            self._bundle_events += 1
            yield from rows
            return
        self._dead.inc()
        self._count_reason(source, reason, None)
        yield pvalue.TaggedOutput(
            DEAD_LETTER, dead_letter_record(self._pipeline, source, raw, reason)
        )


def reason_metric_name(kind: str, source: str) -> str:
    """One metric per (reason kind, source); kinds hold no tab (errors.reason_kind)."""
    return f"{kind}\t{source}"


def split_reason_metric_name(name: str) -> tuple[str, str]:
    kind, _, source = name.partition("\t")
    return kind, source


class BuildRows(beam.PTransform):
    """Lines → row mutations (main output ``rows``) and dead letters (output ``dead_letter``:
    dicts with pipeline, source, reason, raw). ``csv_adapter`` reshapes a flat CSV record into
    the builder's record where the two differ (e.g. metric columns into a ``metrics`` object)."""

    def __init__(
        self, builder: Builder, pipeline: str, csv_adapter: CsvAdapter | None = None
    ) -> None:
        super().__init__()
        self._builder = builder
        self._pipeline = pipeline
        self._csv_adapter = csv_adapter

    def expand(self, lines: beam.PCollection) -> pvalue.DoOutputsTuple:
        return lines | "BuildRows" >> beam.ParDo(
            _BuildRowsFn(self._builder, self._pipeline, self._csv_adapter)
        ).with_outputs(DEAD_LETTER, main=ROWS)


class ReadLines(beam.PTransform):
    """Read every line of the files matching any of the patterns, as ``(file, raw bytes)``.

    Bytes, not text: a line that is not UTF-8 must reach the dead letters, not crash the read.
    """

    def __init__(self, patterns: Sequence[str]) -> None:
        super().__init__()
        if not patterns:
            raise ValueError("no input pattern given")
        self._patterns = list(patterns)

    def expand(self, pbegin: pvalue.PBegin) -> beam.PCollection:
        reads = [
            pbegin
            | f"Read[{i}]"
            >> textio.ReadFromTextWithFilename(pattern, coder=beam.coders.BytesCoder())
            for i, pattern in enumerate(self._patterns)
        ]
        if len(reads) == 1:
            return reads[0]
        return reads | "FlattenInputs" >> beam.Flatten()


class _CsvLinesFn(beam.DoFn):
    """Every record line of one CSV file with that file's header (files may order columns
    differently). One record per line: quoted fields must not span lines."""

    def process(self, readable: fileio.ReadableFile) -> Iterable[tuple[str, bytes, tuple]]:
        path = readable.metadata.path
        header = None
        with readable.open() as handle:
            for line in handle:
                line = line.rstrip(b"\r\n")
                if header is None:
                    header = events.parse_csv_header(line)
                    continue
                yield path, line, header


class ReadCsvLines(beam.PTransform):
    """``(file, raw line, header)`` for every record of the CSV files matching the patterns."""

    def __init__(self, patterns: Sequence[str]) -> None:
        super().__init__()
        if not patterns:
            raise ValueError("no input pattern given")
        self._patterns = list(patterns)

    def expand(self, pbegin: pvalue.PBegin) -> beam.PCollection:
        matches = [
            pbegin | f"Match[{i}]" >> fileio.MatchFiles(pattern, empty_match_treatment="DISALLOW")
            for i, pattern in enumerate(self._patterns)
        ]
        return (
            matches
            | "FlattenMatches" >> beam.Flatten()
            | "ReadMatches" >> fileio.ReadMatches()
            | "CsvLines" >> beam.ParDo(_CsvLinesFn())
        )


def is_csv(pattern: str) -> bool:
    return pattern.lower().endswith((".csv", ".csv.gz", ".csv.bz2"))


class ReadRecordLines(beam.PTransform):
    """JSON-lines and CSV inputs together: CSV for patterns ending in ``.csv`` (or when
    ``input_format`` is ``csv``), JSON lines otherwise."""

    def __init__(self, patterns: Sequence[str], input_format: str = "auto") -> None:
        super().__init__()
        if input_format not in ("auto", "json", "csv"):
            raise ValueError(f"input format {input_format!r}: use auto, json or csv")
        csv_wanted = [
            p for p in patterns if input_format == "csv" or (input_format == "auto" and is_csv(p))
        ]
        self._csv = csv_wanted
        self._json = [p for p in patterns if p not in csv_wanted]

    def expand(self, pbegin: pvalue.PBegin) -> beam.PCollection:
        parts = []
        if self._json:
            parts.append(pbegin | "JsonLines" >> ReadLines(self._json))
        if self._csv:
            parts.append(pbegin | "CsvLines" >> ReadCsvLines(self._csv))
        if len(parts) == 1:
            return parts[0]
        return parts | "FlattenFormats" >> beam.Flatten()


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
    """Messages of a Pub/Sub subscription as ``(subscription, line bytes)``, one per event of
    each message (:func:`message_lines`): the same shape as a file's lines, so batch and
    streaming share every step after the read."""

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
            >> beam.FlatMap(lambda payload: [(source, line) for line in message_lines(payload)])
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
