"""Dead letters: the record a bad input line becomes (its reason, source, line and raw text), and
where they go: per-run files beside the job, or a Pub/Sub topic for a streaming job."""

from __future__ import annotations

import base64
import json
import time
import uuid

import apache_beam as beam
from apache_beam.io import textio

__all__ = [
    "WriteDeadLetterFiles",
    "WriteDeadLetters",
    "WriteDeadLettersToPubSub",
    "dead_letter_record",
]


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
