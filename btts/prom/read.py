"""Remote read (``POST /api/v1/read``): a ``ReadRequest``'s queries answered from the
``prometheus`` schema's tables, as ``SAMPLES`` (one snappy-compressed ``ReadResponse``) or
``STREAMED_XOR_CHUNKS`` (framed ``ChunkedReadResponse`` messages of XOR chunks), whichever the
request accepts first.

Matchers are resolved from the label index (``PROM_SERIES``): an ``=`` on ``__name__`` reads
that metric's rows only (one prefix), anything else reads the index's rows (never the samples);
every matcher is then applied to each series' labels. The samples of the matching series are
read as key ranges ``SERIES#start-hour..SERIES#end-hour`` with a cell-time filter, split into a
few multi-range reads run in parallel. Budgets, each a 4xx naming it: a query's time range, the
series one query may match, the samples one request may return.
"""

from __future__ import annotations

import json
import struct
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from google.api_core import exceptions as gexc
from google.cloud.bigtable.data import row_filters

import protos.prometheus_pb2 as pb
from btts.errors import MissingTable
from btts.prom import labels as labels_lib
from btts.prom import xor
from btts.prom.codec import compress, decode
from btts.prom.store import SAMPLES, SERIES, Store
from btts.tsdb.errors import BadRequest, TooLarge
from transforms.bigtable import filters, rows_stream
from transforms.bigtable.rows_stream import SpanQuery
from transforms.errors import DataError, Timeout, Unavailable
from transforms.scans import key_ranges

__all__ = ["Budget", "remote_read"]

SAMPLES_TYPE = "application/x-protobuf"
STREAMED_TYPE = "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"
RANGES_PER_READ = 200  # series (key ranges) per multi-range read, at most
MIN_PER_READ = 25  # and at least: fewer series are one read
STREAMS = 8  # reads in flight per request
_DOUBLE = struct.Struct(">d")
_SIX = struct.Struct("7B")  # a Sample's timestamp tag and a 6-byte varint
_SIX_LOW, _SIX_HIGH = 1 << 35, 1 << 42  # the times whose varint has 6 bytes (1971..2109)
_POOL = ThreadPoolExecutor(STREAMS * 2, thread_name_prefix="prom-read")


@dataclass(frozen=True)
class Budget:
    """What one request may ask: ``max_range_ms`` per query, ``max_series`` per query,
    ``max_samples`` per request, and ``deadline_s`` to read them."""

    max_range_ms: int = 32 * 86_400_000
    max_series: int = 100_000
    max_samples: int = 50_000_000  # Prometheus' storage.remote.read-sample-limit
    deadline_s: float = 30.0


@dataclass(frozen=True)
class Answer:
    """A remote-read answer: its body, its content type and whether it is snappy-encoded."""

    body: bytes
    kind: str
    snappy: bool


class _Reads:
    """One request's reads: its deadline, its samples counted against the budget."""

    def __init__(self, store: Store, budget: Budget) -> None:
        self.store = store
        self.budget = budget
        self.until = time.monotonic() + budget.deadline_s
        self.rows = rows_stream.shared_reader()
        self.samples = 0

    def read(self, table: str, query: SpanQuery) -> list:
        left = self.until - time.monotonic()
        if left <= 0:
            raise Timeout("the remote read's deadline passed")
        try:
            return self.rows.read(self.store.table_name(table), query, left)
        except gexc.NotFound as exc:
            raise MissingTable(
                f"Table {table} does not exist in {self.store.target.describe()}: "
                "run btts tables create --table PROM_SAMPLES --table PROM_SERIES"
            ) from exc
        except (gexc.DeadlineExceeded, gexc.RetryError, gexc.Cancelled, TimeoutError) as exc:
            raise Timeout("the remote read's deadline passed") from exc
        except gexc.GoogleAPICallError as exc:
            raise Unavailable(f"Bigtable did not answer the read of {table}: {exc}") from exc


def remote_read(store: Store, raw: bytes, budget: Budget = Budget()) -> Answer:
    """The answer to one ``ReadRequest`` body; see the module docstring."""
    request = decode(raw, pb.ReadRequest)
    reads = _Reads(store, budget)
    queries = [_checked(i, q, budget) for i, q in enumerate(request.queries)]
    found = [_query_series(reads, q) for q in queries]
    if _streamed(request):
        frames = []
        for index, (query, series) in enumerate(zip(queries, found, strict=True)):
            frames += _chunked(reads, query, series, index)
        return Answer(xor.frame(frames), STREAMED_TYPE, False)
    results = []
    for query, series in zip(queries, found, strict=True):
        found_series = _series_cells(reads, query, series)
        result = b"".join(_field(1, _timeseries(labels, cells)) for labels, cells in found_series)
        results.append(_field(1, result))
    return Answer(compress(b"".join(results)), SAMPLES_TYPE, True)


def _field(number: int, data: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return xor.uvarint(number << 3 | 2) + xor.uvarint(len(data)) + data


def _timeseries(labels: tuple[tuple[str, str], ...], cells: list[tuple[int, bytes]]) -> bytes:
    """A ``TimeSeries`` message written out directly (a ``Sample`` object per sample costs
    more than the read): its labels, then each sample as its double (little-endian: the cell
    holds it big-endian) and its ms timestamp."""
    out = bytearray()
    for name, value in labels:
        out += _field(1, _field(1, name.encode("utf-8")) + _field(2, value.encode("utf-8")))
    if any(len(value) != 8 for _, value in cells):
        raise DataError("a PROM_SAMPLES cell holds other than a float64's 8 bytes")
    if cells[0][0] >= _SIX_LOW and cells[-1][0] < _SIX_HIGH:  # every time a 6-byte varint
        six = _SIX.pack
        out += b"".join(
            [
                b"\x12\x10\x09"
                + value[::-1]
                + six(
                    16,
                    ms & 127 | 128,
                    ms >> 7 & 127 | 128,
                    ms >> 14 & 127 | 128,
                    ms >> 21 & 127 | 128,
                    ms >> 28 & 127 | 128,
                    ms >> 35,
                )
                for ms, value in cells
            ]
        )
        return bytes(out)
    varint = xor.uvarint
    for ms, value in cells:
        body = b"\x09" + value[::-1] + b"\x10" + varint(ms)
        out += b"\x12" + bytes((len(body),)) + body
    return bytes(out)


def _streamed(request) -> bool:
    """Whether the answer is streamed chunks: the first response type the request accepts
    that this server has (none listed: samples)."""
    for kind in request.accepted_response_types:
        if kind in (pb.ReadRequest.SAMPLES, pb.ReadRequest.STREAMED_XOR_CHUNKS):
            return kind == pb.ReadRequest.STREAMED_XOR_CHUNKS
    if request.accepted_response_types:
        raise BadRequest("none of the accepted response types is SAMPLES or STREAMED_XOR_CHUNKS")
    return False


@dataclass(frozen=True)
class _Query:
    start_ms: int
    end_ms: int
    matchers: tuple[labels_lib.Matcher, ...]


def _checked(index: int, query, budget: Budget) -> _Query:
    start, end = query.start_timestamp_ms, query.end_timestamp_ms
    if end < start:
        raise BadRequest(f"query {index}: end {end} is before start {start}")
    if end - start > budget.max_range_ms:
        raise TooLarge(
            f"query {index}: a time range of {(end - start) / 3_600_000:,.1f} h is over the "
            f"budget of {budget.max_range_ms / 3_600_000:,.0f} h per query"
        )
    if not query.matchers:
        raise BadRequest(f"query {index}: no matcher (at least one is needed)")
    matchers = tuple(labels_lib.Matcher.of(m.type, m.name, m.value) for m in query.matchers)
    if all(m.matches_empty() for m in matchers):
        raise BadRequest(f"query {index}: every matcher matches the empty value")
    return _Query(max(start, 0), max(end, 0), matchers)


def _query_series(reads: _Reads, query: _Query) -> list[tuple[tuple[tuple[str, str], ...], str]]:
    """The (labels, series id) of every series the query's matchers select, from the index."""
    names = [m.value for m in query.matchers if m.name == labels_lib.NAME and m.kind == 0]
    if names and names[0]:
        span = key_ranges.prefix_range(names[0].encode("utf-8") + b"#")
    else:
        span = key_ranges.WHOLE_TABLE
    rows = reads.read(SERIES, SpanQuery([span], row_filters.CellsColumnLimitFilter(1)))
    out = []
    for row in rows:
        text = row.latest().get(("l", b"labels"))
        if text is None:
            continue
        labels = _labels(text)
        as_map = dict(labels)
        if all(m.test(as_map) for m in query.matchers):
            out.append((labels, row.key.rsplit(b"#", 1)[1].decode("ascii")))
            if len(out) > reads.budget.max_series:
                raise TooLarge(
                    f"the matchers {', '.join(map(str, query.matchers))} select more than "
                    f"{reads.budget.max_series:,} series: narrow them"
                )
    return out


def _labels(text: bytes) -> tuple[tuple[str, str], ...]:
    try:
        found = json.loads(text)
    except ValueError as exc:
        raise DataError(f"a PROM_SERIES row holds labels that are not JSON ({exc})") from None
    return tuple(sorted(found.items()))


def _series_cells(reads: _Reads, query: _Query, series: Sequence) -> list:
    """``(labels, [(ms, value bytes)…])`` of each series with samples in the query's range, in
    the order of ``series``; the ranges read as a few multi-range reads at once."""
    if not series:
        return []
    decl = reads.store.decls[SAMPLES]
    window = key_ranges.Window(query.start_ms, query.end_ms + 1)
    scans = key_ranges.time_scans(decl, [{"series": sid} for _, sid in series], window)
    cell_filter = filters.row_filter(scans[0])
    size = max(MIN_PER_READ, min(RANGES_PER_READ, -(-len(scans) // STREAMS)))
    groups = [[s.ranges[0] for s in scans[at : at + size]] for at in range(0, len(scans), size)]
    jobs = [_POOL.submit(reads.read, SAMPLES, SpanQuery(g, cell_filter)) for g in groups]
    by_id: dict[bytes, list] = {}
    for job in jobs:
        for row in job.result():
            points = by_id.setdefault(row.key[:32], [])
            points += [(c.timestamp_us // 1000, c.value) for c in reversed(row.cells)]
            reads.samples += len(row.cells)
        if reads.samples > reads.budget.max_samples:
            raise TooLarge(
                f"more than {reads.budget.max_samples:,} samples in one remote read: "
                "narrow the matchers or the time range"
            )
    out = []
    for labels, sid in series:
        points = by_id.get(sid.encode("ascii"))
        if points:
            out.append((labels, points))
    return out


def _chunked(reads: _Reads, query: _Query, series: Sequence, index: int) -> list[bytes]:
    """One ``ChunkedReadResponse`` per series with samples: its XOR chunks of at most 120."""
    frames = []
    unpack = _DOUBLE.unpack
    for labels, cells in _series_cells(reads, query, series):
        samples = [(ms, unpack(value)[0]) for ms, value in cells]
        message = pb.ChunkedReadResponse(query_index=index)
        chunked = message.chunked_series.add()
        chunked.labels.extend(pb.Label(name=k, value=v) for k, v in labels)
        for low, high, data in xor.chunks(samples):
            chunked.chunks.add(min_time_ms=low, max_time_ms=high, type=pb.Chunk.XOR, data=data)
        frames.append(message.SerializeToString())
    return frames
