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
RANGES_PER_READ = 200  # series (key ranges) per multi-range read
STREAMS = 8  # reads in flight per request
_DOUBLE = struct.Struct(">d")
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
                "run btts tables create --schema prometheus"
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
    response = pb.ReadResponse()
    for query, series in zip(queries, found, strict=True):
        result = response.results.add()
        for labels, samples in _series_samples(reads, query, series):
            out = result.timeseries.add()
            out.labels.extend(pb.Label(name=k, value=v) for k, v in labels)
            out.samples.extend(pb.Sample(value=v, timestamp=t) for t, v in samples)
    return Answer(compress(response.SerializeToString()), SAMPLES_TYPE, True)


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


def _series_samples(reads: _Reads, query: _Query, series: Sequence) -> list:
    """``(labels, [(ms, value)…])`` of each series with samples in the query's range, in the
    order of ``series``; the ranges read a few multi-range reads at once."""
    if not series:
        return []
    decl = reads.store.decls[SAMPLES]
    scans = key_ranges.time_scans(
        decl, [{"series": sid} for _, sid in series], query.start_ms, query.end_ms + 1
    )
    cell_filter = filters.row_filter(scans[0])
    groups = [
        [s.ranges[0] for s in scans[at : at + RANGES_PER_READ]]
        for at in range(0, len(scans), RANGES_PER_READ)
    ]
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
    unpack = _DOUBLE.unpack
    for labels, sid in series:
        points = by_id.get(sid.encode("ascii"))
        if points:
            out.append((labels, [(t, unpack(v)[0]) for t, v in points]))
    return out


def _chunked(reads: _Reads, query: _Query, series: Sequence, index: int) -> list[bytes]:
    """One ``ChunkedReadResponse`` per series with samples: its XOR chunks of at most 120."""
    frames = []
    for labels, samples in _series_samples(reads, query, series):
        message = pb.ChunkedReadResponse(query_index=index)
        chunked = message.chunked_series.add()
        chunked.labels.extend(pb.Label(name=k, value=v) for k, v in labels)
        for low, high, data in xor.chunks(samples):
            chunked.chunks.add(min_time_ms=low, max_time_ms=high, type=pb.Chunk.XOR, data=data)
        frames.append(message.SerializeToString())
    return frames
