"""``btts serve`` on the standard library's HTTP server: the official counterpart of the asyncio
front (:mod:`btts.tsdb.server`, :mod:`btts.tsdb.http_io`), taken with ``BTTS_OFFICIAL=http``.

Why keep it: the asyncio front re-implements HTTP/1.1 (heads, chunked bodies, keep-alive) so
that a slow or idle connection costs a buffer, not a thread, and every phase has a deadline from
its first byte. Here :class:`http.server.ThreadingHTTPServer` and its request handler parse every
request and the answers come from the same :func:`btts.tsdb.routes.respond`, so a wrong answer
seen on both is not the front's. What the standard library does not do is added as little as it
takes: chunked request bodies (read with the standard library's line limits), credentials
before a body, the OpenTSDB JSON error shape, a cap on connections and TLS. What it cannot do:
a connection holds a thread, and a deadline is per read (``timeout``), not per phase.
tests/btts/tsdb/test_http_fork.py compares the two fronts; benchmarks/forks.py measures them.
"""

from __future__ import annotations

import socket
import ssl
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from btts.tsdb import routes
from btts.tsdb.access import Access
from btts.tsdb.http_io import Headers, HttpError
from btts.tsdb.routes import Reply, error_body

__all__ = ["StdlibServer", "make_stdlib_server"]

READ_S = 30.0  # a read that waits longer than this closes the connection (per read)
DRAIN_MAX = 16 << 20  # an oversize body is read and dropped up to this (as the asyncio front)
_AUTH = ("WWW-Authenticate", 'Basic realm="btts serve", charset="UTF-8"')


class _Handler(BaseHTTPRequestHandler):
    """One connection: the standard library parses each request, :func:`routes.respond`
    answers it."""

    protocol_version = "HTTP/1.1"  # keep-alive, as the asyncio front
    default_request_version = "HTTP/1.0"  # a refusal before the version is known has a status line
    server_version = "btts-serve"
    sys_version = ""
    timeout = READ_S
    disable_nagle_algorithm = True  # head and body leave in two writes: no wait for an ACK
    server: StdlibServer

    def setup(self) -> None:
        super().setup()
        if isinstance(self.request, ssl.SSLSocket):  # the handshake in this thread, not accept's
            self.request.do_handshake()

    def parse_request(self) -> bool:
        self.headers = None  # a refusal before the headers: no credentials of an earlier request
        return super().parse_request()

    def log_message(self, format: str, *args) -> None:
        """Quiet, as the asyncio front (requests are not logged)."""

    def send_error(  # the standard library's signature: OpenTSDB's shape has no `explain`
        self,
        code: int,
        message: str | None = None,
        explain: str | None = None,  # noqa: V107
    ):
        """A refusal of the standard library's parser, in OpenTSDB's JSON shape; a client
        without credentials hears only that it needs them (as from the asyncio front)."""
        self.close_connection = True
        access, headers = self.server.access, getattr(self, "headers", None)
        if access.required and not access.allows(headers and headers.get("Authorization")):
            reply = Reply(401, error_body(401, "Authentication required"), extra=(_AUTH,))
        else:
            reply = Reply(code, error_body(code, (message or HTTPStatus(code).phrase)[:200]))
        self._send(reply, True)

    def _headers(self) -> Headers:
        out = Headers()
        for name, value in self.headers.items():
            out.setdefault(name.lower(), value.strip(" \t"))  # a repeated one: the first counts
        return out

    def _serve(self) -> None:
        headers = self._headers()
        if self.server.access.required and not self.server.access.allows(
            headers.get("Authorization")
        ):
            self._send(Reply(401, error_body(401, "Authentication required"), extra=(_AUTH,)))
            return
        raw = None
        try:
            if routes.wants_body(self.command, self.path):
                raw = self._body(headers)
        except HttpError as exc:
            self.close_connection = True
            self._send(routes.error_reply(exc, limit=200))
            return
        reply = routes.respond(self.server.service, self.command, self.path, headers, raw)
        self._send(reply, unread=raw is None and _pending(headers))

    do_GET = do_HEAD = do_POST = do_OPTIONS = do_PUT = do_DELETE = do_PATCH = _serve

    def _body(self, headers: Headers) -> bytes:
        """The request's body, at most ``routes.MAX_BODY`` bytes (a 411 or 413 otherwise)."""
        coding = (headers.get("Transfer-Encoding") or "").strip()
        if coding:
            if coding.lower() != "chunked":
                what = f"Unsupported Transfer-Encoding {coding[:20]!r}: chunked only"
                raise HttpError(what, 501)
            return self._chunked()
        if headers.get("Content-Length") is None:
            raise HttpError("A POST needs a Content-Length or a chunked body", 411)
        length = self.headers.get_all("Content-Length")  # a list of one value, once or more
        values = {v.strip() for line in length for v in line.split(",")}
        length = values.pop() if len(values) == 1 else ""
        if not (length.isascii() and length.isdigit()):
            raise HttpError(f"Invalid Content-Length {headers.get('Content-Length')[:20]!r}")
        size = int(length)
        if size > routes.MAX_BODY:  # read and dropped (up to a limit): the client hears why
            left = min(size, DRAIN_MAX)
            while left > 0 and (piece := self.rfile.read(min(65536, left))):
                left -= len(piece)
            raise HttpError(f"The body is larger than {routes.MAX_BODY} bytes", 413)
        return self.rfile.read(size)

    def _chunked(self) -> bytes:
        """A chunked body (RFC 9112 §7.1), read line by line under the stdlib's limits."""
        out = bytearray()
        while True:
            digits = self.rfile.readline(1026).rstrip(b"\r\n").split(b";", 1)[0].rstrip(b" \t")
            if not digits or len(digits) > 16 or digits.strip(b"0123456789abcdefABCDEF"):
                raise HttpError("Invalid chunked body: a chunk size is not hexadecimal")
            size = int(digits, 16)
            if size == 0:
                break
            if len(out) + size > routes.MAX_BODY:
                raise HttpError(f"The body is larger than {routes.MAX_BODY} bytes", 413)
            out += self.rfile.read(size)
            if self.rfile.readline(1026).rstrip(b"\r\n"):
                raise HttpError("Invalid chunked body: a chunk's data runs past its size")
        while self.rfile.readline(1026).rstrip(b"\r\n"):  # trailer fields, to the blank line
            pass
        return bytes(out)

    def _send(self, reply: Reply, unread: bool = False) -> None:
        close = unread or self.close_connection or self.server.stopping.is_set()
        self.send_response(reply.code)
        charset = "; charset=utf-8" if "text" in reply.kind or "json" in reply.kind else ""
        self.send_header("Content-Type", f"{reply.kind}{charset}")
        self.send_header("Content-Length", str(len(reply.body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        if reply.gzipped:
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Vary", "Accept-Encoding")
        for name, value in reply.extra:
            self.send_header(name, value)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(reply.body)


def _pending(headers: Headers) -> bool:
    length = (headers.get("Content-Length") or "0").strip()
    return "chunked" in (headers.get("Transfer-Encoding") or "").lower() or length != "0"


class StdlibServer(ThreadingHTTPServer):
    """The standard library's threading server with the interface of
    :class:`btts.tsdb.server.Server`: at most ``max_connections`` connections (a 503 beyond),
    TLS when given a context, ``serve_forever``/``shutdown``/``drain``/``server_close``."""

    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, service, address: tuple, access: Access, tls, max_connections: int):
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, _Handler)
        self.service, self.access = service, access
        self.stopping = threading.Event()
        self._slots = threading.BoundedSemaphore(max_connections)
        self._open = 0
        self._lock = threading.Lock()
        if tls is not None:
            self.socket = tls.wrap_socket(
                self.socket, server_side=True, do_handshake_on_connect=False
            )

    def process_request(self, request, client_address) -> None:
        if not self._slots.acquire(blocking=False):
            body = error_body(503, "Too many connections: try again")
            head = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            try:
                request.sendall(head.encode("ascii") + body)
            finally:
                self.shutdown_request(request)
            return
        with self._lock:
            self._open += 1
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._lock:
                self._open -= 1
            self._slots.release()

    def handle_error(self, request, client_address) -> None:
        """A client that hung up before its answer was written (a broken pipe, a reset) is
        no error of the server's: nothing printed. Anything else: the standard library's
        report (the exception and the client's address on stderr)."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def shutdown(self) -> None:
        self.stopping.set()
        super().shutdown()

    def drain(self, grace_s: float = 10.0) -> bool:
        """Let the connections still open finish (at most ``grace_s``)."""
        self.stopping.set()
        ends = threading.Event()
        for _ in range(int(grace_s / 0.05)):
            with self._lock:
                if self._open <= 0:
                    return True
            ends.wait(0.05)
        return False


def make_stdlib_server(service, bind, port, access, tls, max_connections) -> StdlibServer:
    """The official front, listening on ``bind:port`` (0: a free port)."""
    return StdlibServer(service, (bind, port), access or Access(), tls, max_connections)
