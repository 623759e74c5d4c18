"""``btts serve``'s HTTP front: an asyncio server that reads requests without a thread each
and answers them on a small pool of worker threads calling the synchronous
:func:`btts.tsdb.routes.respond`.

A connection waiting for its headers, trickling its body or idle between requests costs a
buffer and a timer, not a thread, so a thousand slow clients cannot starve the workers. Every
phase has a deadline from its first byte (headers 10 s, body 30 s, idle 15 s, the answer's
delivery 60 s), not per read, so a byte at a time does not stretch it. HTTP/1.1 keep-alive,
gzip answers, gzip and chunked bodies, TLS, credentials checked before a body is read, at most
``max_connections`` connections (beyond: a 503), every refusal in OpenTSDB's JSON error shape,
and a graceful stop that lets the requests in flight finish.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
from concurrent.futures import ThreadPoolExecutor
from email.utils import formatdate
from http import HTTPStatus

from btts.tsdb import http_io, routes
from btts.tsdb.access import MAX_CONNECTIONS, Access
from btts.tsdb.http_io import Body, Head, HttpError
from btts.tsdb.routes import Reply, error_body
from btts.tsdb.service import Service
from btts.tsdb.stdlib_front import StdlibServer, make_stdlib_server
from transforms import official

__all__ = ["GRACE_S", "WORKERS", "Server", "make_server"]

LOG = logging.getLogger(__name__)
DRAIN_MAX = 16 << 20  # an oversize body is read and dropped up to this, then the connection closes
HEADER_S = 10.0  # the request line and headers must arrive within this
IDLE_S = 15.0  # a kept-alive connection may wait this long for its next request
BODY_S = 30.0  # the body must arrive within this
WRITE_S = 60.0  # the client must take the answer within this
GRACE_S = 10.0  # requests in flight may finish this long after a shutdown begins
WRITE_HIGH = 256 << 10  # answer bytes queued for a slow reader before reading pauses
WORKERS = min(32, 4 * (os.cpu_count() or 1))  # threads answering requests
_AUTH = (("WWW-Authenticate", 'Basic realm="btts serve", charset="UTF-8"'),)


def _status_line(code: int) -> bytes:
    try:
        phrase = HTTPStatus(code).phrase
    except ValueError:
        phrase = "Error"
    return f"HTTP/1.1 {code} {phrase}\r\n".encode("ascii")


def reply_head(reply: Reply, length: int, close: bool, date: str) -> bytes:
    """The status line and headers of ``reply``."""
    charset = "; charset=utf-8" if "text" in reply.kind or "json" in reply.kind else ""
    lines = [
        f"Server: btts-serve\r\nDate: {date}\r\nContent-Type: {reply.kind}{charset}\r\n"
        f"Content-Length: {length}\r\nX-Content-Type-Options: nosniff\r\n"
    ]
    if reply.gzipped:
        lines.append("Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n")
    lines += [f"{name}: {value}\r\n" for name, value in reply.extra]
    if close:
        lines.append("Connection: close\r\n")
    lines.append("\r\n")
    return _status_line(reply.code) + "".join(lines).encode("latin-1")


class Connection(asyncio.Protocol):
    """One client connection: a head gathered from whatever bytes arrive, then (for a POST
    that has one) its body, then the request handed to a worker; one request at a time."""

    __slots__ = (
        "_body",
        "_buffer",
        "_busy",
        "_eof",
        "_head",
        "_searched",
        "_server",
        "_timer",
        "_tx",
    )

    def __init__(self, server: Server) -> None:
        self._server = server
        self._tx: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._searched = 0
        self._head: Head | None = None
        self._body: Body | None = None
        self._busy = False  # a worker is answering the request
        self._eof = False  # the client will send nothing more
        self._timer: asyncio.TimerHandle | None = None

    # -- transport events ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._tx = transport  # type: ignore[assignment]
        if not self._server.admit(self):
            transport.write(_turned_away())  # type: ignore[attr-defined]
            transport.close()
            return
        self._tx.set_write_buffer_limits(high=WRITE_HIGH)
        self._arm(HEADER_S)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._busy or self._head is not None:
            self._server.request_done()
        self._busy, self._head, self._tx = False, None, None
        self._server.release(self)

    def data_received(self, data: bytes) -> None:
        if self._busy:  # a pipelined request: kept until the answer before it is out
            self._buffer += data
            self._tx.pause_reading()
            return
        if self._body is not None:
            self._feed_body(data)
            return
        self._buffer += data
        self._next_head()

    def eof_received(self) -> bool:
        """The client sent all it will: answer the request under way (if any), then close."""
        self._eof = True
        return self._busy or self._head is not None

    def pause_writing(self) -> None:
        self._arm(WRITE_S)  # a reader too slow for the answer has this long to take it
        self._tx.pause_reading()

    def resume_writing(self) -> None:
        self._disarm()
        if not self._busy:
            self._idle()

    # -- the phases of a request -------------------------------------------------------------

    def idle_close(self) -> None:
        """Close if no request is under way (a graceful stop)."""
        if self._tx is not None and not self._busy and self._head is None:
            self._tx.close()

    def abort(self) -> None:
        if self._tx is not None:
            self._tx.abort()

    def _next_head(self) -> None:
        end = http_io.head_end(self._buffer, self._searched)
        if end < 0:
            self._searched = len(self._buffer)
            refusal = http_io.too_long(self._buffer)
            if refusal is not None:
                self._refuse(refusal, None)
            return
        raw = bytes(self._buffer[:end])
        del self._buffer[: end + (3 if self._buffer[end + 1 : end + 2] == b"\r" else 2)]
        self._searched = 0
        self._disarm()
        try:
            head = http_io.parse_head(raw)
        except HttpError as exc:
            self._refuse(exc, None)
            return
        self._head = head
        self._server.request_started()
        self._begin(head)

    def _begin(self, head: Head) -> None:
        """Credentials first; then the body, if the request needs one; then the work."""
        server = self._server
        if not server.access.allows(head.headers.get("Authorization")):
            self._refuse(HttpError("Authentication required", 401), head)
        elif not routes.wants_body(head.method, head.target):
            self._dispatch(None)
        else:
            try:
                self._body = Body(head.headers, routes.MAX_BODY, DRAIN_MAX)
            except HttpError as exc:
                self._refuse(exc, head)
                return
            if head.version == "HTTP/1.1" and (head.headers.get("Expect") or "").lower() == (
                "100-continue"
            ):
                self._tx.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            self._arm(BODY_S)
            rest, self._buffer = bytes(self._buffer), bytearray()
            self._feed_body(rest)

    def _feed_body(self, data: bytes) -> None:
        body = self._body
        try:
            rest = body.feed(data)
        except HttpError as exc:
            self._body = None
            self._refuse(exc, self._head)
            return
        if not body.done:
            return
        self._disarm()
        self._body = None
        self._buffer += rest
        if body.error is not None:
            self._refuse(body.error, self._head)  # drained up to the limit: 413 and close
        else:
            self._dispatch(body.raw)

    def _dispatch(self, raw: bytes | None) -> None:
        head, server = self._head, self._server
        self._busy = True
        self._tx.pause_reading()
        work = server.loop.run_in_executor(
            server.pool, routes.respond, server.service, head.method, head.target, head.headers, raw
        )
        unread = raw is None and _pending(head)  # a body left on the wire: close after
        work.add_done_callback(lambda done: self._answered(done, unread))

    def _answered(self, work: asyncio.Future, unread: bool) -> None:
        if self._tx is None:  # the client went away meanwhile
            return
        try:
            reply = work.result()
        except Exception as exc:  # respond catches every error; this is a last guard
            LOG.error("request failed: %r", exc)
            reply = Reply(500, error_body(500, "Internal error; see the server log"))
        self._send(reply, close=unread)

    def _refuse(self, exc: HttpError, head: Head | None) -> None:
        """An error answered here, before or while a body is read (so the connection closes
        when one was announced) or on a request not understood (it closes too)."""
        authorized = head is not None and self._server.access.allows(
            head.headers.get("Authorization")
        )
        if exc.code == 401 or (self._server.access.required and not authorized):
            reply = Reply(401, error_body(401, "Authentication required"), extra=_AUTH)
        else:
            reply = routes.error_reply(exc, limit=200)
        if head is None:
            self._server.request_started()  # counted like any request until its answer is out
        self._body = None
        self._send(reply, close=head is None or _pending(head))

    def _send(self, reply: Reply, close: bool) -> None:
        head, tx, server = self._head, self._tx, self._server
        close = close or head is None or not head.keep_alive or self._eof or server.stopping
        body = b"" if head is not None and head.method == "HEAD" else reply.body
        tx.write(reply_head(reply, len(reply.body), close, server.date()) + body)
        self._head, self._busy = None, False
        server.request_done()
        if close:
            tx.close()  # once the answer is out; a reader that never takes it: WRITE_S
            self._arm(WRITE_S) if tx.get_write_buffer_size() else self._disarm()
        elif tx.get_write_buffer_size() <= WRITE_HIGH:
            self._idle()

    def _idle(self) -> None:
        """Wait for the next request (or take it from the bytes already here, on the loop's
        next turn: a long run of requests sent together is no deeper a stack than one)."""
        self._arm(IDLE_S + HEADER_S)
        self._tx.resume_reading()
        if self._buffer:
            self._server.loop.call_soon(self._pipelined)

    def _pipelined(self) -> None:
        if self._tx is not None and not self._busy and self._head is None and self._body is None:
            self._next_head()

    # -- the deadline of the current phase ----------------------------------------------------

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._timer = self._server.loop.call_later(seconds, self._late)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _late(self) -> None:
        self._timer = None
        if self._tx is not None:
            self._tx.abort()  # a phase outlived its allowance: nobody to answer


def _pending(head: Head | None) -> bool:
    """True when ``head`` announces a body (which may still be on the wire)."""
    if head is None:
        return False
    length = (head.headers.get("Content-Length") or "0").strip()
    return "chunked" in (head.headers.get("Transfer-Encoding") or "").lower() or length != "0"


def _turned_away() -> bytes:
    body = error_body(503, "Too many connections: try again")
    head = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    return head.encode("ascii") + body


class Server:
    """The listening socket, its event loop and the worker pool: at most ``max_connections``
    connections open at once, TLS when given a context, and a count of requests under way
    for a graceful stop. ``serve_forever``/``shutdown``/``drain``/``server_close`` as the
    standard library's servers."""

    def __init__(
        self,
        service: Service,
        sock: socket.socket,
        access: Access,
        tls: ssl.SSLContext | None,
        max_connections: int,
        workers: int,
    ) -> None:
        self.service, self.access, self.tls = service, access, tls
        self.server_address = sock.getsockname()
        self.loop = asyncio.new_event_loop()
        self.pool = ThreadPoolExecutor(max(1, workers), thread_name_prefix="btts-serve")
        self.stopping = False
        self._sock = sock
        self._max = max_connections
        self._open: set[Connection] = set()
        self._in_flight = 0
        self._stop = asyncio.Event()
        self._listener: asyncio.Server | None = None
        self._date = (0, "")

    def admit(self, conn: Connection) -> bool:
        if len(self._open) >= self._max or self.stopping:
            return False
        self._open.add(conn)
        return True

    def release(self, conn: Connection) -> None:
        self._open.discard(conn)

    def request_started(self) -> None:
        self._in_flight += 1

    def request_done(self) -> None:
        self._in_flight -= 1

    def date(self) -> str:
        """The Date header's value, formatted once a second."""
        now = int(self.loop.time())
        if self._date[0] != now:
            self._date = (now, formatdate(usegmt=True))
        return self._date[1]

    async def _serve(self) -> None:
        self._listener = await self.loop.create_server(
            lambda: Connection(self),
            sock=self._sock,
            ssl=self.tls,
            ssl_handshake_timeout=HEADER_S if self.tls else None,
            backlog=1024,
        )
        await self._stop.wait()
        self._stop_accepting()
        await self._drained(GRACE_S)

    def _stop_accepting(self) -> None:
        self.stopping = True
        self._listener.close()  # no new connection; the idle ones close now
        for conn in list(self._open):
            conn.idle_close()

    def serve_forever(self) -> None:
        """Serve until :meth:`shutdown`, then let the requests under way finish (at most
        :data:`GRACE_S`); Ctrl-C raises KeyboardInterrupt at once."""
        self.loop.run_until_complete(self._serve())

    def shutdown(self) -> None:
        """Stop accepting (from any thread, a signal handler included)."""
        self.loop.call_soon_threadsafe(self._stop.set)

    async def _drained(self, grace_s: float) -> bool:
        end = self.loop.time() + grace_s
        while self._in_flight > 0 and self.loop.time() < end:
            await asyncio.sleep(0.05)
        return self._in_flight <= 0

    def drain(self, grace_s: float = GRACE_S) -> bool:
        """Let the requests still under way finish (after ``serve_forever`` returned or was
        interrupted); False if some outlived ``grace_s``."""
        if self._listener is not None and not self.stopping:
            self._stop_accepting()
        if self._in_flight <= 0:
            return True
        return self.loop.run_until_complete(self._drained(grace_s))

    def server_close(self) -> None:
        """Close every connection left, the listening socket, the workers and the loop."""
        for conn in list(self._open):
            conn.abort()
        if self._listener is not None:
            self._listener.close()
        else:
            self._sock.close()
        self.loop.run_until_complete(asyncio.sleep(0))
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.loop.close()


def make_server(
    service: Service,
    bind: str = "127.0.0.1",
    port: int = 4242,
    access: Access | None = None,
    tls: ssl.SSLContext | None = None,
    max_connections: int = MAX_CONNECTIONS,
    workers: int = WORKERS,
) -> Server | StdlibServer:
    """A server listening on ``bind:port`` (0: a free port), not yet serving; an OSError
    when the address cannot be taken. With ``BTTS_OFFICIAL=http``, the standard library's
    threading server instead (:mod:`btts.tsdb.stdlib_front`; ``workers`` does not apply)."""
    if official.uses("http"):
        return make_stdlib_server(service, bind, port, access, tls, max_connections)
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    sock = socket.create_server((bind, port), family=family, backlog=1024)
    return Server(service, sock, access or Access(), tls, max_connections, workers)
