"""Pub/Sub input as lines: a message may carry several events, one per line, so a streaming job
builds them exactly as a file's lines."""

from __future__ import annotations

import apache_beam as beam
from apache_beam import pvalue

from transforms.ingest.readers import Block

__all__ = ["ReadPubSubLines"]


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
