"""Remote write (``POST /api/v1/write``): a ``WriteRequest`` becomes the ``prometheus``
schema's rows through its builder and is written before the answer.

All or nothing, as Prometheus' retries need: every sample of the request is built (checked)
first; one that the schema refuses (a time before 1970, a metric name that cannot be key text,
a label named twice) refuses the request with a 400 naming it, and nothing is written. Native
histograms are refused the same way (this store keeps float samples). Then every row is written
and acknowledged (:meth:`Store.write`) before the 204; a storage failure is a 503, which
Prometheus retries, rewriting the same cells. Exemplars and metadata are not stored: the answer
says how many were dropped in a header, the samples still land.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass

import protos.prometheus_pb2 as pb
from btts.prom import labels as labels_lib
from btts.prom.codec import decode
from btts.prom.store import SAMPLES, SERIES, Store
from transforms.errors import InvalidEvent, UserError
from transforms.text.events import Num

__all__ = ["remote_write"]

_DOUBLE = struct.Struct(">d")
_BITS = struct.Struct(">Q")


@dataclass(frozen=True)
class Written:
    """What one request landed, and what it held that is not stored."""

    samples: int
    series: int
    exemplars_dropped: int
    metadata_dropped: int


class RefusedWrite(UserError):
    """A request whose samples the schema refuses: nothing of it was written."""


def remote_write(store: Store, raw: bytes) -> Written:
    """Decode, build every row, then write them all; see the module docstring."""
    request = decode(raw, pb.WriteRequest)
    rows: dict[str, list[tuple]] = {SAMPLES: [], SERIES: []}
    samples_build = store.samples.rows
    exemplars = 0
    first: dict[str, dict] = {}  # series id → one record (its index row is built from it)
    for number, series in enumerate(request.timeseries):
        if series.histograms:
            raise RefusedWrite(
                f"series {number}: native histograms are not stored (only float samples); "
                "nothing of this request was written"
            )
        exemplars += len(series.exemplars)
        record = _series_record(number, series)
        out = rows[SAMPLES]
        for sample in series.samples:
            record["ts"] = Num(sample.timestamp)
            record["value"] = sample.value
            try:
                out += samples_build(record)
            except InvalidEvent as exc:
                raise RefusedWrite(
                    f"series {number} ({_short(record['labels'])}), sample at "
                    f"{sample.timestamp}: {exc}; nothing of this request was written"
                ) from None
        if series.samples:
            first.setdefault(record["series"], record)
    if store.topic:  # the production path: the streaming job lands them (docs/prometheus.md)
        store.publish(_event_lines(request))
        return Written(len(rows[SAMPLES]), len(first), exemplars, len(request.metadata))
    fresh = store.unknown(list(first))
    for sid in fresh:
        rows[SERIES] += store.series.rows(first[sid])
    store.write({t: r for t, r in rows.items() if r})
    store.remember(fresh)
    return Written(len(rows[SAMPLES]), len(first), exemplars, len(request.metadata))


def _event_lines(request) -> list[bytes]:
    """Every sample as the JSON line the streaming job builds (``btts ingest --schema
    prometheus``): the value as ``0x`` and its 16 hex digits, since JSON has no NaN."""
    lines = []
    for series in request.timeseries:
        record = _series_record(0, series)
        head = json.dumps(record, ensure_ascii=False)[:-1]
        for sample in series.samples:
            bits = _BITS.unpack(_DOUBLE.pack(sample.value))[0]
            lines.append(f'{head}, "ts": {sample.timestamp}, "value": "0x{bits:016x}"}}'.encode())
    return lines


def _series_record(number: int, series) -> dict:
    """The fields of a series' samples but the time and value: its id, name and labels."""
    pairs = [(label.name, label.value) for label in series.labels]
    try:
        text = labels_lib.canonical(pairs)
    except UserError as exc:
        raise RefusedWrite(f"series {number}: {exc}; nothing of this request was written") from None
    name = next((v for k, v in pairs if k == labels_lib.NAME), "")
    if not name:
        raise RefusedWrite(
            f"series {number} ({_short(text)}): no metric name (__name__); "
            "nothing of this request was written"
        )
    return {"series": labels_lib.series_id(text), "name": name, "labels": text}


def _short(text: str) -> str:
    return text if len(text) <= 120 else text[:117] + "..."
