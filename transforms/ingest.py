"""Beam transforms that turn source lines into row mutations, with a dead-letter output.

A dataset is just a *builder*: a pure function ``raw line -> list[RowMutation]`` that raises
:class:`InvalidEvent` for bad input. :class:`BuildRows` runs any builder, counts what happens, and
routes every bad line, with its reason and raw text, to the ``dead_letter`` output.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.io import textio
from apache_beam.metrics import Metrics

from transforms.errors import InvalidEvent
from transforms.mutations import RowMutation

DEAD_LETTER = "dead_letter"
ROWS = "rows"
PROGRESS_SECONDS = 10.0
NAMESPACE = "btts"
_LOG = logging.getLogger(__name__)

Builder = Callable[[bytes], Sequence[RowMutation]]


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
    def __init__(self, builder: Builder, pipeline: str) -> None:
        self._builder = builder
        self._pipeline = pipeline

    def setup(self) -> None:
        self._lines = Metrics.counter(NAMESPACE, "lines_read")
        self._blank = Metrics.counter(NAMESPACE, "blank_lines")
        self._events = Metrics.counter(NAMESPACE, "events_valid")
        self._dead = Metrics.counter(NAMESPACE, "dead_letters")
        self._unexpected = Metrics.counter(NAMESPACE, "unexpected_errors")
        self._seen = 0
        self._started = self._last_report = time.monotonic()

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

    def process(self, element: tuple[str, bytes]) -> Iterable:
        source, raw = element
        self._lines.inc()
        self._seen += 1
        if not self._seen & 0x3FF:
            self._progress()
        if not raw.strip():
            self._blank.inc()
            return
        try:
            rows = self._builder(raw)
        except InvalidEvent as err:
            reason = str(err)
        except Exception as err:  # a builder bug must not lose the line or stop the stream
            _LOG.exception("unexpected error building rows from a line of %s", source)
            self._unexpected.inc()
            reason = f"unexpected error: {type(err).__name__}: {err}"
        else:
            self._events.inc()
            yield from rows
            return
        self._dead.inc()
        yield pvalue.TaggedOutput(
            DEAD_LETTER, dead_letter_record(self._pipeline, source, raw, reason)
        )


class BuildRows(beam.PTransform):
    """``(source, raw line)`` → row mutations (main output ``rows``) and dead letters
    (output ``dead_letter``: dicts with pipeline, source, reason, raw)."""

    def __init__(self, builder: Builder, pipeline: str) -> None:
        super().__init__()
        self._builder = builder
        self._pipeline = pipeline

    def expand(self, lines: beam.PCollection) -> pvalue.DoOutputsTuple:
        return lines | "BuildRows" >> beam.ParDo(
            _BuildRowsFn(self._builder, self._pipeline)
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
