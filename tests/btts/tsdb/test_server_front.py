"""The asyncio front of ``btts serve``: slow and idle connections cost no thread and are cut
at their phase's deadline, heads and bodies are parsed whatever pieces they come in, requests
on one connection are answered in order, and a stop lets the request under way finish.

An in-process server with a stand-in for the service (no emulator): the deadlines are
shortened by monkeypatching the module's constants, read when each phase begins."""

from __future__ import annotations

import gzip
import http.client
import json
import re
import socket
import threading
import time

import pytest

from btts.tsdb import http_io, server
from btts.tsdb.access import Access
from btts.tsdb.errors import BadRequest


class SlowService:
    """Answers /api/query after ``delay_s``, from a worker thread."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s

    def query(self, tq) -> bytes:
        time.sleep(self.delay_s)
        return b"[]"


@pytest.fixture
def front(monkeypatch):
    monkeypatch.setattr(server, "HEADER_S", 0.5)
    monkeypatch.setattr(server, "BODY_S", 0.5)
    monkeypatch.setattr(server, "IDLE_S", 0.5)
    service = SlowService()
    srv = server.make_server(service, "127.0.0.1", 0, workers=2)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv, service
    srv.shutdown()
    thread.join(10)
    srv.drain(1.0)
    srv.server_close()


def connect(srv) -> socket.socket:
    return socket.create_connection(srv.server_address[:2], timeout=10)


def read_all(sock: socket.socket) -> bytes:
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


def test_a_head_a_byte_at_a_time_is_cut_at_its_deadline(front):
    srv, _ = front
    with connect(srv) as sock:
        began = time.monotonic()
        with pytest.raises(OSError):  # reset (or closed) by the server, never answered
            for byte in b"GET /api/version HTTP/1.1\r\nX-Slow: " + b"a" * 100:
                sock.send(bytes([byte]))
                time.sleep(0.05)
            assert sock.recv(1) == b""
            raise ConnectionResetError
        assert time.monotonic() - began < 4


def test_a_trickling_body_is_cut_at_its_deadline(front):
    srv, _ = front
    with connect(srv) as sock:
        sock.sendall(b"POST /api/query HTTP/1.1\r\nContent-Length: 1000\r\n\r\n{")
        began = time.monotonic()
        with pytest.raises(OSError):
            for _ in range(100):
                sock.send(b" ")
                time.sleep(0.05)
            assert sock.recv(1) == b""
            raise ConnectionResetError
        assert time.monotonic() - began < 4


def test_slow_connections_hold_no_thread_and_a_normal_request_is_answered(front):
    srv, _ = front
    threads = threading.active_count()
    slow = [connect(srv) for _ in range(200)]
    try:
        for sock in slow:
            sock.send(b"GET /api/version HTTP/1.1\r\nX-Slow: ")
        time.sleep(0.2)
        assert threading.active_count() <= threads + 2  # the workers, at most
        conn = http.client.HTTPConnection(*srv.server_address[:2], timeout=10)
        conn.request("GET", "/api/version")
        assert conn.getresponse().status == 200
    finally:
        for sock in slow:
            sock.close()


def test_requests_sent_together_are_answered_in_order(front):
    srv, _ = front
    with connect(srv) as sock:
        sock.sendall(
            b"GET /api/version HTTP/1.1\r\n\r\nGET /nowhere HTTP/1.1\r\n\r\n"
            b"GET /api/aggregators HTTP/1.1\r\nConnection: close\r\n\r\n"
        )
        reply = read_all(sock)
    statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", reply)
    assert statuses == [b"200", b"404", b"200"], reply[:500]


def test_a_body_in_any_pieces_is_read(front):
    srv, _ = front
    body = gzip.compress(json.dumps({"start": "1h-ago", "queries": [{}]}).encode())
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (body[:7], body[7:])) + b"0\r\n\r\n"
    head = b"POST /api/query HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n"
    with connect(srv) as sock:
        for byte in head + b"Connection: close\r\n\r\n" + chunked:
            sock.send(bytes([byte]))
        reply = read_all(sock)
    head_bytes, _, answer = reply.partition(b"\r\n\r\n")
    assert head_bytes.split()[1] == b"400", reply  # read and parsed: the query lacks a metric
    assert "metric" in json.loads(answer)["error"]["message"]


def test_a_stop_lets_the_request_under_way_finish(front):
    srv, service = front
    service.delay_s = 1.0
    conn = http.client.HTTPConnection(*srv.server_address[:2], timeout=10)
    conn.request("GET", "/api/query?start=1h-ago&m=sum:x")
    time.sleep(0.3)  # the request is with a worker
    srv.shutdown()
    resp = conn.getresponse()
    assert resp.status == 200 and resp.read() == b"[]"
    assert resp.getheader("Connection") == "close"


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
def test_a_chunked_body_fed_in_any_pieces_is_the_same(size):
    data = bytes(range(256)) * 40
    wire = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in (data[:100], data[100:]))
    wire += b"0\r\nTrailer: x\r\n\r\nNEXT"
    body = http_io.Body(http_io.Headers({"transfer-encoding": "chunked"}), 1 << 20, 1 << 20)
    rest = b""
    for i in range(0, len(wire), size):
        rest += body.feed(wire[i : i + size])
    assert body.done and body.raw == data and rest == b"NEXT"


def test_a_chunked_body_past_the_limit_is_a_413():
    body = http_io.Body(http_io.Headers({"transfer-encoding": "chunked"}), 10, 10)
    with pytest.raises(BadRequest) as err:
        body.feed(b"b\r\n" + b"x" * 11 + b"\r\n")
    assert err.value.code == 413


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"GET /a HTTP/1.1 x", 400),
        (b"GET /a HTTP/2.0", 505),
        (b"BREW /a HTTP/1.1", 501),
        (b"GET /a HTTP/1.1\r\n" + b"X: y\r\n" * 101, 431),
        (b"GET /a HTTP/1.1\r\nno colon", 400),
    ],
)
def test_bad_heads_are_refused_with_the_standard_librarys_codes(raw, code):
    with pytest.raises(BadRequest) as err:
        http_io.parse_head(raw)
    assert err.value.code == code


def test_a_head_parses_its_headers_and_keep_alive():
    head = http_io.parse_head(b"GET //a?b=1 HTTP/1.0\r\nConnection: Keep-Alive\r\nX-A:  b \r\n")
    assert (head.method, head.target, head.version) == ("GET", "/a?b=1", "HTTP/1.0")
    assert head.keep_alive and head.headers.get("x-a") == "b"
    assert not http_io.parse_head(b"GET / HTTP/1.1\r\nConnection: close").keep_alive


def test_thousands_of_refusals_sent_together_are_all_answered():
    srv = server.make_server(SlowService(), "127.0.0.1", 0, Access(tokens=(b"secret",)), workers=1)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        with connect(srv) as sock:
            sock.sendall(b"\r\n" + b"GET /api/version HTTP/1.1\r\n\r\n" * 3000)
            sock.sendall(b"GET /api/version HTTP/1.1\r\nAuthorization: Bearer secret\r\n")
            sock.sendall(b"Connection: close\r\n\r\n")
            reply = read_all(sock)
        statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", reply)
        assert statuses == [b"401"] * 3000 + [b"200"]
    finally:
        srv.shutdown()
        thread.join(10)
        srv.server_close()
