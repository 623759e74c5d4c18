"""The bytes on the wire of ``btts serve``: bounded time per connection, bounded bodies
(``Content-Length`` or chunked, plain or gzip), gzip answers.

A client that sends its headers or body a byte at a time, or leaves a connection open and
idle, must not hold a thread for ever: a :class:`Watchdog` shuts every socket whose current
phase (headers, body, answer) has outlived its allowance. A body is never read past
``limit`` bytes, whether it comes with a length, in chunks, or compressed (a gzip bomb
stops at the limit).
"""

from __future__ import annotations

import contextlib
import gzip
import socket
import threading
import time
import zlib
from typing import BinaryIO

from btts.tsdb.request import BadRequest

__all__ = ["Watchdog", "gzip_answer", "read_body"]

GZIP_MIN = 1024  # answers shorter than this travel uncompressed
_CHUNK = 1 << 16


class Watchdog:
    """Shuts the sockets whose deadline passed: one thread for every connection."""

    def __init__(self, tick_s: float = 0.25) -> None:
        self._due: dict[socket.socket, float] = {}
        self._lock = threading.Lock()
        self._tick = tick_s
        self._thread = threading.Thread(target=self._run, name="btts-watchdog", daemon=True)
        self._thread.start()

    def arm(self, sock: socket.socket, seconds: float) -> None:
        with self._lock:
            self._due[sock] = time.monotonic() + seconds

    def disarm(self, sock: socket.socket) -> None:
        with self._lock:
            self._due.pop(sock, None)

    def _run(self) -> None:
        while True:
            time.sleep(self._tick)
            now = time.monotonic()
            with self._lock:
                late = [s for s, due in self._due.items() if due < now]
                for s in late:
                    del self._due[s]
            for s in late:
                with contextlib.suppress(OSError):  # already closed by its handler
                    s.shutdown(socket.SHUT_RDWR)


def _read_exact(rfile: BinaryIO, n: int) -> bytes:
    data = rfile.read(n)
    if len(data) != n:
        raise BadRequest("The body ended before its announced length")
    return data


def _read_chunked(rfile: BinaryIO, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    while True:
        line = rfile.readline(1024)
        head = line.split(b";", 1)[0].strip()
        try:
            n = int(head, 16)
        except ValueError:
            raise BadRequest("Invalid chunked body: a chunk size is not hexadecimal") from None
        if n == 0:
            while rfile.readline(1024) not in (b"\r\n", b"\n", b""):  # trailers
                pass
            return b"".join(parts)
        size += n
        if size > limit:
            raise BadRequest(f"The body is larger than {limit} bytes", 413)
        parts.append(_read_exact(rfile, n))
        rfile.readline(1024)  # the CRLF after the chunk


def _inflate(raw: bytes, encoding: str, limit: int) -> bytes:
    wbits = 16 + zlib.MAX_WBITS if encoding in ("gzip", "x-gzip") else zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(raw, limit + 1)
    except zlib.error:
        raise BadRequest(f"The body is not valid {encoding} data") from None
    if len(out) > limit:
        raise BadRequest(f"The body is larger than {limit} bytes once decompressed", 413)
    return out


def read_body(rfile: BinaryIO, headers, limit: int, drain: int) -> bytes:
    """The request body, decoded from chunks and gzip/deflate, at most ``limit`` bytes;
    a 411/413/415/400 in OpenTSDB's shape otherwise. An oversize body with a length is
    read and dropped up to ``drain`` bytes, so the client hears the 413, not a reset."""
    chunked = "chunked" in (headers.get("Transfer-Encoding") or "").lower()
    if chunked:
        raw = _read_chunked(rfile, limit)
    else:
        length = headers.get("Content-Length")
        if length is None or not length.strip().isdigit():
            raise BadRequest("A POST needs a Content-Length or a chunked body", 411)
        n = int(length)
        if n > limit:
            left = min(n, drain)
            while left > 0:
                got = rfile.read(min(left, _CHUNK))
                if not got:
                    break
                left -= len(got)
            raise BadRequest(f"The body is larger than {limit} bytes", 413)
        raw = _read_exact(rfile, n)
    encoding = (headers.get("Content-Encoding") or "identity").strip().lower()
    if encoding in ("gzip", "x-gzip", "deflate"):
        return _inflate(raw, encoding, limit)
    if encoding != "identity":
        raise BadRequest(f"Unsupported Content-Encoding {encoding[:20]!r}: gzip or none", 415)
    return raw


def gzip_answer(body: bytes, accept_encoding: str | None) -> bytes | None:
    """``body`` gzip-compressed when the client accepts it and it is worth it, else None."""
    if len(body) < GZIP_MIN or "gzip" not in (accept_encoding or "").lower():
        return None
    return gzip.compress(body, compresslevel=1, mtime=0)
