"""The HTTP stack of ``btts serve``: keep-alive, gzip both ways, chunked bodies, JSON errors for
every status (the standard library's own 414/431/501 included), every phase of a connection
under a deadline, a cap on connections. An empty instance: a request that got through the
HTTP layer ends in a 400 naming the missing table."""

from __future__ import annotations

import gzip
import http.client
import json
import socket
import time
from urllib.parse import urlsplit

import pytest

from tests.support import serving
from tests.support.serving import T0, grafana_body, grafana_query

BODY = grafana_body(
    [grafana_query("market_data.bid", tags={"exchange": "NYSE", "symbol": "IBM"})],
    T0,
    T0 + 3_600_000,
)
REACHED = "does not exist"  # the read of the (absent) table: the request got through


@pytest.fixture(scope="module")
def server(bigtable_emulator):
    srv = serving.Server(serving.new_target())
    yield srv
    srv.stop()


def connect(server) -> http.client.HTTPConnection:
    parts = urlsplit(server.url)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)


def answer(conn: http.client.HTTPConnection) -> tuple[int, dict, object]:
    resp = conn.getresponse()
    raw = resp.read()
    if resp.getheader("Content-Encoding") == "gzip":
        raw = gzip.decompress(raw)
    return resp.status, dict(resp.getheaders()), json.loads(raw) if raw else None


def test_one_connection_serves_many_requests(server):
    conn = connect(server)
    for _ in range(3):
        conn.request("GET", "/api/version")
        status, headers, body = answer(conn)
        assert status == 200 and body["version"]
        assert headers.get("Connection") != "close"
    conn.close()


def test_gzip_answer_when_asked(server):
    conn = connect(server)
    conn.request("GET", "/page.js", headers={"Accept-Encoding": "gzip"})
    resp = conn.getresponse()
    raw = resp.read()
    assert resp.getheader("Content-Encoding") == "gzip"
    assert b"/api/query" in gzip.decompress(raw)


@pytest.mark.parametrize("encoding", ["gzip", "chunked", "gzip+chunked"])
def test_gzip_and_chunked_bodies_are_read(server, encoding):
    raw = json.dumps(BODY).encode()
    headers = {"Content-Type": "application/json"}
    if "gzip" in encoding:
        raw = gzip.compress(raw)
        headers["Content-Encoding"] = "gzip"
    conn = connect(server)
    if "chunked" in encoding:
        conn.request("POST", "/api/query", body=iter([raw[:10], raw[10:]]), headers=headers)
    else:
        conn.request("POST", "/api/query", body=raw, headers=headers)
    status, _, body = answer(conn)
    assert status == 400 and REACHED in body["error"]["message"], body


def test_a_gzip_bomb_stops_at_the_body_limit(server):
    bomb = gzip.compress(b" " * (64 << 20))
    conn = connect(server)
    conn.request("POST", "/api/query", body=bomb, headers={"Content-Encoding": "gzip"})
    status, _, body = answer(conn)
    assert status == 413 and "decompressed" in body["error"]["message"]


@pytest.mark.parametrize(
    ("what", "request_bytes", "status"),
    [
        ("uri too long", b"GET /api/version?" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 414),
        (
            "too many headers",
            b"GET /api/version HTTP/1.1\r\n" + b"X-A: b\r\n" * 200 + b"\r\n",
            431,
        ),
        ("unknown method", b"BREW /api/version HTTP/1.1\r\nHost: x\r\n\r\n", 501),
        ("bad version", b"GET /api/version HTTP/9.9\r\n\r\n", 505),
        ("bad request line", b"GET /api/version HTTP/1.1 x\r\n\r\n", 400),
    ],
)
def test_the_standard_library_refusals_are_json(server, what, request_bytes, status):
    parts = urlsplit(server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(request_bytes)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.split()[1] == str(status).encode(), head
    assert json.loads(body)["error"]["code"] == status


@pytest.mark.parametrize("start", ["NaN", "Infinity", "-Infinity"])
def test_non_numbers_as_times_are_a_400(server, start):
    raw = json.dumps(BODY).replace(str(T0), start, 1).encode()
    status, body = server.call("/api/query", raw=raw)
    assert status == 400 and start in body["error"]["message"], body


def test_options_is_answered(server):
    conn = connect(server)
    conn.request("OPTIONS", "/api/query")
    status, headers, _ = answer(conn)
    assert status == 200 and "POST" in headers["Allow"]


def test_delete_is_refused(server):
    status, body = server.call("/api/query", {**BODY, "delete": True})
    assert status == 405 and "delete" in body["error"]["message"]
    status, body = server.call("/api/query?start=1h-ago&m=sum:x&delete=true")
    assert status == 405


def test_a_refusal_before_the_body_closes_the_connection(server):
    conn = connect(server)
    conn.request("POST", "/api/put", body=b'{"metric": 1}')
    status, headers, _ = answer(conn)
    assert status == 405 and headers.get("Connection") == "close"


def test_connections_beyond_the_cap_get_a_503(bigtable_emulator):
    srv = serving.Server(serving.new_target(), "--max_connections", "2")
    parts = urlsplit(srv.url)
    idle = [socket.create_connection((parts.hostname, parts.port)) for _ in range(2)]
    try:
        time.sleep(0.5)  # both accepted and holding their slots
        with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
            sock.sendall(b"GET /api/version HTTP/1.1\r\n\r\n")
            reply = sock.recv(65536)
        assert reply.split()[1] == b"503"
        for sock in idle:
            sock.close()
        serving.wait_until(lambda: srv.call("/api/version")[0] == 200 or 1 / 0)
    finally:
        srv.stop()
