"""The HTTP/1.1 front by hand (btts/tsdb/http_io.py, server.py) against reference parsers and
against the official front (btts/tsdb/stdlib_front.py, ``BTTS_OFFICIAL=http``).

* Well-formed requests, generated (any method and target, headers repeated or folded, bodies by
  length or in chunks with extensions and trailers, a request pipelined behind, lines ended by
  CRLF or LF, the bytes arriving in any pieces): the fork parses what h11 parses, to the byte,
  and leaves the pipelined request where h11 finds it.
* Malformed requests, one defect each: the fork refuses what h11 refuses, with the status the
  standard library's own parser gives where it has one; where the fork accepts what h11 refuses,
  the leniency is listed here with the rule it follows.
* The two fronts over sockets: the same requests (keep-alive, pipelined, chunked bodies,
  refusals, credentials) get the same statuses and bodies."""

from __future__ import annotations

import io
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler

import h11
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from btts.tsdb import http_io, server
from btts.tsdb.access import Access
from btts.tsdb.errors import BadRequest
from btts.tsdb.stdlib_front import StdlibServer

TOKEN = st.text(http_io.TOKEN, min_size=1, max_size=8)
VALUE = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=12).map(
    lambda v: v.strip(" ")
)
PATH = st.text("abcXYZ019-._~%/?=&+:@!$'()*,;", max_size=16).map(lambda p: "/" + p.lstrip("/"))


def fork_parse(data: bytes, cuts: list[int]) -> tuple:
    """What the asyncio front makes of ``data`` arriving in the pieces ``cuts`` make: the head's
    method, target, version and headers, the body (read whenever it is announced) and the bytes
    left for the next request; or ``("refused", status)``."""
    pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    buffer, searched, end = bytearray(), 0, -1
    try:
        while pieces and end < 0:
            buffer += pieces.pop(0)
            end = http_io.head_end(buffer, searched)
            searched = len(buffer)
            if end < 0 and (refusal := http_io.too_long(buffer)) is not None:
                raise refusal
        if end < 0:
            return ("incomplete",)
        raw = bytes(buffer[:end])
        del buffer[: end + (3 if buffer[end + 1 : end + 2] == b"\r" else 2)]
        head = http_io.parse_head(raw)
        body, rest = None, bytes(buffer)
        if head.headers.get("Content-Length") is not None or head.headers.get("Transfer-Encoding"):
            reader = http_io.Body(head.headers, 1 << 20, 1 << 20)
            rest = reader.feed(rest)
            while pieces and not reader.done:
                rest = reader.feed(pieces.pop(0))
            body = reader.raw if reader.done else "incomplete"
        rest += b"".join(pieces)
    except BadRequest as exc:
        return ("refused", exc.code)
    headers = dict(head.headers)
    if "transfer-encoding" in headers:  # h11 gives the coding in lower case
        headers["transfer-encoding"] = headers["transfer-encoding"].lower()
    return (head.method, head.target, head.version, headers, body, rest)


def h11_parse(data: bytes) -> tuple:
    """What h11 (a strict RFC 9112 parser) makes of ``data``: the same fields, or its refusal;
    the rest is what it would read as the next request."""
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(data)
    body = bytearray()
    try:
        request = conn.next_event()
        if not isinstance(request, h11.Request):
            return ("incomplete",)
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                break
            else:
                return ("incomplete",)
    except h11.RemoteProtocolError as err:
        return ("refused", err.error_status_hint)
    headers: dict[str, str] = {}
    for name, value in request.headers:
        headers.setdefault(name.decode("latin-1"), value.decode("latin-1"))
    framed = "content-length" in headers or "transfer-encoding" in headers
    version = "HTTP/" + request.http_version.decode()
    rest = bytes(conn.trailing_data[0])
    target = request.target.decode("latin-1")
    return (
        request.method.decode(),
        target,
        version,
        headers,
        bytes(body) if framed else None,
        rest,
    )


@st.composite
def well_formed(draw) -> tuple[bytes, bytes]:
    """A request RFC 9112 allows, and the request pipelined behind it."""
    nl = draw(st.sampled_from([b"\r\n", b"\n"]))
    method = draw(st.sampled_from(["GET", "POST", "HEAD", "OPTIONS", "PUT", "DELETE", "PATCH"]))
    version = draw(st.sampled_from(["1.1", "1.0"]))
    lines = [f"{method} {draw(PATH)} HTTP/{version}".encode()]
    headers = draw(st.lists(st.tuples(TOKEN, VALUE), max_size=5))
    headers = [
        (n, v) for n, v in headers if n.lower() not in ("content-length", "transfer-encoding")
    ]
    if version == "1.1" or draw(st.booleans()):
        headers.insert(draw(st.integers(0, len(headers))), ("Host", draw(TOKEN)))
    for name, value in headers:
        lines.append(
            f"{name}:{draw(st.sampled_from(['', ' ', '  ', chr(9)]))}{value}".encode("latin-1")
        )
        if value and draw(st.integers(0, 5)) == 0:  # an obsolete folded continuation
            lines.append(b" " + draw(TOKEN).encode())
    body = draw(st.binary(max_size=60))
    framing = draw(st.sampled_from(["none", "length", "chunked"]))
    payload = b""
    if framing == "length" or (framing == "none" and method == "POST"):
        lines.append(b"Content-Length: %d" % len(body))
        payload = body
    elif framing == "chunked":
        lines.append(b"Transfer-Encoding: " + draw(st.sampled_from([b"chunked", b"Chunked"])))
        sizes = draw(st.lists(st.integers(1, 20), max_size=4))
        start = 0
        for size in sizes:
            piece = body[start : start + size]
            start += size
            if piece:
                ext = draw(st.sampled_from([b"", b";x=1", b";name"]))
                payload += b"%x%s\r\n%s\r\n" % (len(piece), ext, piece)
        payload += b"0\r\n" + draw(st.sampled_from([b"", b"Trailer-Field: 1\r\n"])) + b"\r\n"
    head = nl.join(lines) + nl + nl
    return head + payload, b"GET /next HTTP/1.1\r\nHost: h\r\n\r\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=well_formed(), data=st.data())
def test_well_formed_requests_parse_as_h11_parses_them(request, data):
    first, pipelined = request
    raw = first + pipelined
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(raw) - 1), max_size=6))))
    theirs = h11_parse(raw)
    assert theirs[0] != "refused", theirs  # the generator makes only what RFC 9112 allows
    ours = fork_parse(raw, cuts)
    assert ours == theirs
    assert ours[-1] == pipelined  # the next request starts where h11 says


def stdlib_status(data: bytes) -> int | str:
    """The standard library's parser on ``data``: the status of its refusal, "accepted", or
    "closed" (no answer)."""

    class Probe(BaseHTTPRequestHandler):
        def __init__(self) -> None:  # no socket: the parser alone
            self.rfile, self.wfile = io.BytesIO(data), io.BytesIO()
            self.client_address, self.request_version = ("probe", 0), "HTTP/1.0"
            self.code = None

        def send_error(self, code, message=None, explain=None):
            self.code = code

    probe = Probe()
    probe.raw_requestline = probe.rfile.readline(65537)
    if len(probe.raw_requestline) > 65536:
        return 414
    if not probe.parse_request():
        return probe.code or "closed"
    if probe.command not in http_io.METHODS:
        return 501
    return "accepted"


GET = b"GET /api/version HTTP/1.1\r\nHost: h\r\n"
POST = b"POST /api/query HTTP/1.1\r\nHost: h\r\n"
# (defect, request, the fork's verdict, the reference it follows). A status: refused with it
# (h11 refuses too; the standard library, where it judges, with the same status). "accepted":
# a leniency of the fork over h11, and why.
DEFECTS = [
    ("version 2", b"GET / HTTP/2.0\r\n\r\n", 505, "stdlib"),
    ("bad version", b"GET / HTTP/1.x\r\nHost: h\r\n\r\n", 400, "stdlib"),
    ("four words", b"GET / HTTP/1.1 x\r\nHost: h\r\n\r\n", 400, "stdlib"),
    ("unknown method", b"BREW / HTTP/1.1\r\nHost: h\r\n\r\n", 501, "stdlib"),
    ("lower-case method", b"get / HTTP/1.1\r\nHost: h\r\n\r\n", 501, "stdlib"),
    ("long request line", b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", 414, "stdlib"),
    ("long header line", GET + b"X: " + b"a" * 70_000 + b"\r\n\r\n", 431, "stdlib"),
    ("too many headers", GET + b"X: a\r\n" * 101 + b"\r\n", 431, "stdlib"),
    ("no colon", GET + b"Bad header\r\n\r\n", 400, "h11"),
    ("space before colon", GET + b"X : a\r\n\r\n", 400, "h11"),
    ("space in a name", GET + b"X Y: a\r\n\r\n", 400, "h11"),
    ("NUL in a name", GET + b"X\x00: a\r\n\r\n", 400, "h11"),
    ("NUL in a value", GET + b"X: a\x00b\r\n\r\n", 400, "h11"),
    ("CR in a value", GET + b"X: a\rb\r\n\r\n", 400, "h11"),
    ("two lengths", POST + b"Content-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400, "h11"),
    ("length not digits", POST + b"Content-Length: 1a\r\n\r\n1a", 400, "h11"),
    ("length superscript", POST + b"Content-Length: \xb2\r\n\r\nab", 400, "h11"),
    ("negative length", POST + b"Content-Length: -1\r\n\r\n", 400, "h11"),
    ("gzip coding", POST + b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501, "h11"),
    ("size 0x", POST + b"Transfer-Encoding: chunked\r\n\r\n0x1\r\na\r\n0\r\n\r\n", 400, "h11"),
    ("size _", POST + b"Transfer-Encoding: chunked\r\n\r\n1_0\r\na\r\n0\r\n\r\n", 400, "h11"),
    ("size not hex", POST + b"Transfer-Encoding: chunked\r\n\r\nzz\r\na\r\n0\r\n\r\n", 400, "h11"),
    (
        "data past size",
        POST + b"Transfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n",
        400,
        "h11",
    ),
    # leniencies: the standard library's server accepts these, and so does the fork
    ("HTTP/0.9 GET", b"GET /api/version\r\n\r\n", "accepted", "stdlib answers HTTP/0.9"),
    ("no Host", b"GET / HTTP/1.1\r\n\r\n", "accepted", "stdlib needs no Host"),
    ("leading empty line", b"\r\n" + GET + b"\r\n", "accepted", "RFC 9112 §2.2: SHOULD ignore"),
    (
        "BWS before ;",
        POST + b"Transfer-Encoding: chunked\r\n\r\n1 ;x\r\na\r\n0\r\n\r\n",
        "accepted",
        "RFC 9112 §7.1.1 chunk-ext allows BWS",
    ),
]


@pytest.mark.parametrize(
    ("what", "data", "verdict", "follows"), DEFECTS, ids=[d[0] for d in DEFECTS]
)
def test_a_malformed_request_is_refused_as_the_references_refuse_it(what, data, verdict, follows):
    ours = fork_parse(data, [])
    theirs = h11_parse(data)
    if verdict == "accepted":
        assert ours[0] not in ("refused", "incomplete"), ours
        assert theirs[0] == "refused" or what == "BWS before ;"  # h11 is stricter
        if follows.startswith("stdlib"):
            assert stdlib_status(data) in ("accepted", "closed")
        return
    assert ours == ("refused", verdict)
    assert theirs[0] == "refused" or follows == "stdlib"
    if follows == "stdlib":
        assert stdlib_status(data) == verdict


# -- the two fronts, end to end ---------------------------------------------------------------


class Service:
    """The routes' service, without Bigtable: /api/query answers the body it got."""

    def query(self, tq) -> bytes:
        return json.dumps([tq.start_ms, [q.metric for q in tq.queries]]).encode()


@pytest.fixture(scope="module")
def fronts():
    access = Access(tokens=(b"secret",))
    fork = server.make_server(Service(), "127.0.0.1", 0, access, workers=2)
    official = StdlibServer(Service(), ("127.0.0.1", 0), access, None, 64)
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (fork, official)]
    for thread in threads:
        thread.start()
    yield fork, official
    for srv, thread in zip((fork, official), threads, strict=True):
        srv.shutdown()
        thread.join(10)
        srv.server_close()


AUTH = b"Authorization: Bearer secret\r\n"
QUERY = b'{"start": 1000, "queries": [{"metric": "m", "aggregator": "sum"}]}'
REQUESTS = [
    b"GET /api/version HTTP/1.1\r\nHost: h\r\n" + AUTH + b"\r\n",
    b"GET /api/aggregators HTTP/1.1\r\nHost: h\r\n" + AUTH + b"Accept-Encoding: gzip\r\n\r\n",
    b"HEAD /api/version HTTP/1.1\r\nHost: h\r\n" + AUTH + b"\r\n",
    b"OPTIONS /api/query HTTP/1.1\r\nHost: h\r\n" + AUTH + b"\r\n",
    b"GET /nowhere HTTP/1.1\r\nHost: h\r\n" + AUTH + b"\r\n",
    b"DELETE /api/query HTTP/1.1\r\nHost: h\r\n" + AUTH + b"\r\n",
    b"POST /api/query HTTP/1.1\r\nHost: h\r\n" + AUTH
    + b"Content-Length: %d\r\n\r\n%s" % (len(QUERY), QUERY),
    b"POST /api/query HTTP/1.1\r\nHost: h\r\n" + AUTH + b"Transfer-Encoding: chunked\r\n\r\n"
    + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in (QUERY[:9], QUERY[9:])) + b"0\r\n\r\n",
    b"POST /api/query HTTP/1.1\r\nHost: h\r\n" + AUTH + b"Content-Length: 5\r\n\r\n{nope",
]  # fmt: skip
LAST = [  # requests after which a front closes the connection
    b"GET /api/version HTTP/1.1\r\nHost: h\r\n\r\n",  # no credentials: a 401
    b"GET /api/version HTTP/1.0\r\n" + AUTH + b"\r\n",
    b"GET /api/version HTTP/1.1\r\n" + AUTH + b"Connection: close\r\n\r\n",
    b"POST /api/query HTTP/1.1\r\n" + AUTH + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"GET /api/version HTTP/2.0\r\n\r\n",
]


def exchange(srv, requests: list[bytes]) -> list[tuple[int, bytes]]:
    """Send ``requests`` on one connection, read until the server closes it; the statuses and
    bodies of the answers (Date and Server headers differ by design)."""
    with socket.create_connection(srv.server_address[:2], timeout=20) as sock:
        sock.sendall(b"".join(requests))
        sock.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    client = h11.Connection(h11.CLIENT)
    client.receive_data(reply)
    answers = []
    for request in requests:  # each answer read as the answer to its request's method
        client.send(
            h11.Request(method=request.split(b" ", 1)[0], target="/", headers=[("Host", "h")])
        )
        client.send(h11.EndOfMessage())
        response, body = client.next_event(), b""
        if not isinstance(response, h11.Response):
            break
        while not isinstance(event := client.next_event(), h11.EndOfMessage):
            body += event.data
        answers.append((response.status_code, body))
        if h11.MUST_CLOSE in (client.our_state, client.their_state):
            break
        client.start_next_cycle()
    return answers


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    picked=st.lists(st.sampled_from(REQUESTS), min_size=1, max_size=5), last=st.sampled_from(LAST)
)
def test_both_fronts_answer_the_same_requests_alike(fronts, picked, last):
    fork, official = fronts
    ours, theirs = exchange(fork, [*picked, last]), exchange(official, [*picked, last])
    assert ours == theirs
    assert len(ours) == len(picked) + 1  # every request answered, the last one too


def test_the_switch_makes_the_official_front(monkeypatch):
    monkeypatch.setenv("BTTS_OFFICIAL", "http")
    srv = server.make_server(Service(), "127.0.0.1", 0)
    try:
        assert isinstance(srv, StdlibServer)
    finally:
        srv.server_close()
    monkeypatch.delenv("BTTS_OFFICIAL")
    srv = server.make_server(Service(), "127.0.0.1", 0)
    try:
        assert isinstance(srv, server.Server)
    finally:
        srv.server_close()


def test_a_client_that_hangs_up_is_not_reported_as_an_error(capsys):
    """500 slow clients dropped by the benchmark printed 500 tracebacks: a broken pipe is the
    client's leaving, not the server's fault; any other error is still reported."""
    srv = StdlibServer(Service(), ("127.0.0.1", 0), Access(), None, 4)
    try:
        for gone in (BrokenPipeError(32, "Broken pipe"), ConnectionResetError(104, "reset")):
            try:
                raise gone
            except ConnectionError:
                srv.handle_error(None, ("127.0.0.1", 1))
        assert capsys.readouterr().err == ""
        try:
            raise ValueError("a real fault")
        except ValueError:
            srv.handle_error(None, ("127.0.0.1", 1))
        assert "ValueError: a real fault" in capsys.readouterr().err
    finally:
        srv.server_close()
