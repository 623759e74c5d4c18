"""Prometheus' remote write and read as a client speaks them, for the tests of btts/prom:
requests built and snappy-compressed, answers decoded (samples, or streamed XOR chunks)."""

from __future__ import annotations

import math
import struct
import urllib.error
import urllib.request

import cramjam
import google_crc32c

from btts.admin import Admin
from btts.prom import xor
from protos import prometheus_pb2 as pb
from transforms.schema import builtin

STALE_NAN = struct.unpack(">d", bytes.fromhex("7ff0000000000002"))[0]
T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z
ODD = [
    math.nan,
    STALE_NAN,
    struct.unpack(">d", bytes.fromhex("fff8000000000001"))[0],  # a negative NaN with a payload
    math.inf,
    -math.inf,
    -0.0,
    5e-324,
    1.7976931348623157e308,
    0.1,
]
UP_A = (("__name__", "up"), ("instance", "a:1"), ("job", "node"))
UP_B = (("__name__", "up"), ("instance", "b:2"), ("job", "node"))
REQS = (("__name__", "http_requests_total"), ("code", "200"), ("job", "api"))
EARLY = (("__name__", "early"),)  # 1970: timestamps of fewer varint bytes
SERIES = {
    EARLY: [(1000, 1.5), (2000, -2.5)],
    UP_A: [(T0 + i * 1000, v) for i, v in enumerate(ODD)],
    UP_B: [(T0 + i * 15_000, float(i)) for i in range(400)],  # crosses two hour rows
    REQS: [(T0 + i * 1000, 10.0 * i) for i in range(3)],
}


def create_tables(target) -> None:
    with Admin(target) as admin:
        for decl in builtin("prometheus").decls().values():
            admin.ensure(decl)


def bits(value: float) -> bytes:
    return struct.pack(">d", value)


def write_request(series: dict[tuple[tuple[str, str], ...], list[tuple[int, float]]]) -> bytes:
    """A snappy-compressed WriteRequest of ``{labels: [(ms, value)…]}``."""
    request = pb.WriteRequest()
    for labels, samples in series.items():
        ts = request.timeseries.add()
        ts.labels.extend(pb.Label(name=k, value=v) for k, v in labels)
        ts.samples.extend(pb.Sample(value=v, timestamp=t) for t, v in samples)
    return snappy(request.SerializeToString())


def snappy(data: bytes) -> bytes:
    return bytes(cramjam.snappy.compress_raw(data))


def read_request(queries: list[tuple[int, int, list[tuple[int, str, str]]]], streamed=False):
    """A snappy-compressed ReadRequest of ``(start, end, [(type, name, value)…])`` queries."""
    request = pb.ReadRequest()
    for start, end, matchers in queries:
        q = request.queries.add(start_timestamp_ms=start, end_timestamp_ms=end)
        q.matchers.extend(pb.LabelMatcher(type=t, name=n, value=v) for t, n, v in matchers)
    if streamed:
        request.accepted_response_types.append(pb.ReadRequest.STREAMED_XOR_CHUNKS)
    return snappy(request.SerializeToString())


def post(url: str, body: bytes, headers: dict | None = None) -> tuple[int, dict, bytes]:
    """(status, headers, body) of one POST with Prometheus' headers."""
    req = urllib.request.Request(url, data=body, method="POST")
    req.add_header("Content-Encoding", "snappy")
    req.add_header("Content-Type", "application/x-protobuf")
    req.add_header("X-Prometheus-Remote-Write-Version", "0.1.0")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def samples_answer(body: bytes) -> list[dict]:
    """Per query: {labels: [(ms, value bits)…]} of a SAMPLES answer."""
    response = pb.ReadResponse.FromString(bytes(cramjam.snappy.decompress_raw(body)))
    return [
        {
            tuple((lb.name, lb.value) for lb in ts.labels): [
                (s.timestamp, bits(s.value)) for s in ts.samples
            ]
            for ts in result.timeseries
        }
        for result in response.results
    ]


def uvarint_at(data: bytes, at: int) -> tuple[int, int]:
    """The unsigned varint at ``data[at]`` and the offset just past it."""
    number = shift = 0
    while True:
        byte = data[at]
        at += 1
        number |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return number, at


def streamed_answer(body: bytes) -> dict[int, dict]:
    """Per query index: {labels: [(ms, value bits)…]} of a STREAMED_XOR_CHUNKS answer, every
    frame's CRC checked and every chunk decoded."""
    out: dict[int, dict] = {}
    at = 0
    while at < len(body):
        length, at = uvarint_at(body, at)
        crc, data = body[at : at + 4], body[at + 4 : at + 4 + length]
        at += 4 + length
        assert int.from_bytes(crc, "big") == google_crc32c.value(data)
        message = pb.ChunkedReadResponse.FromString(data)
        for cs in message.chunked_series:
            labels = tuple((lb.name, lb.value) for lb in cs.labels)
            got = out.setdefault(message.query_index, {}).setdefault(labels, [])
            for chunk in cs.chunks:
                assert chunk.type == pb.Chunk.XOR
                points = xor.decode(chunk.data)
                assert (points[0][0], points[-1][0]) == (chunk.min_time_ms, chunk.max_time_ms)
                got += [(t, bits(v)) for t, v in points]
    return out


def expected(series):
    return {labels: [(t, bits(v)) for t, v in samples] for labels, samples in series.items()}


def read(server, queries, streamed=False):
    status, headers, body = post(server.url + "/api/v1/read", read_request(queries, streamed))
    assert status == 200, body
    if streamed:
        assert headers["Content-Type"].startswith("application/x-streamed-protobuf")
        got = streamed_answer(body)
        return [got.get(i, {}) for i in range(len(queries))]
    assert headers["Content-Encoding"] == "snappy"
    return samples_answer(body)


def write(server, series) -> tuple[int, dict, bytes]:
    return post(server.url + "/api/v1/write", write_request(series))
