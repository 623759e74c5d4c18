"""The bytes on the wire of ``btts serve``: a request's head parsed under the standard library's
limits, bounded bodies (``Content-Length`` or chunked, plain or gzip), gzip answers.

The front (:mod:`btts.tsdb.front`) feeds whatever bytes arrive, a byte at a time or all at
once, to :class:`Head` and :class:`Body`; neither ever blocks, so a slow client costs its
buffer, not a thread. A body is never kept past ``limit`` bytes, whether it comes with a
length, in chunks, or compressed (a gzip bomb stops at the limit).
"""

from __future__ import annotations

import gzip
import re
import zlib

from btts.tsdb.errors import BadRequest

__all__ = [
    "Body",
    "Head",
    "Headers",
    "HttpError",
    "decode_body",
    "gzip_answer",
    "head_end",
    "parse_head",
    "too_long",
]

GZIP_MIN = 1024  # answers shorter than this travel uncompressed
MAX_LINE = 65536  # the standard library's limit on the request line and on a header line
MAX_HEADERS = 100  # ... and on the number of header lines
MAX_HEAD = 4 * MAX_LINE  # the whole head (request line and headers)
METHODS = frozenset({"GET", "HEAD", "POST", "OPTIONS", "PUT", "DELETE", "PATCH"})
# RFC 9110 §5.6.2: a field name is a token; a field value holds no control but HTAB (§5.5: a
# CR, LF or NUL in a value MUST be refused or replaced; the other controls too, as h11 does)
TOKEN = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f]")
_HEX = b"0123456789abcdefABCDEF"
_OWS = " \t"  # optional whitespace around a field value (RFC 9110 §5.6.3)


class Headers(dict):
    """A request's headers, names in lower case; ``get`` ignores the name's case."""

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return super().get(name.lower(), default)


class Head:
    """A request line and its headers, as parsed from bytes."""

    __slots__ = ("headers", "keep_alive", "method", "target", "version")

    def __init__(self, method: str, target: str, version: str, headers: Headers) -> None:
        self.method, self.target, self.version, self.headers = method, target, version, headers
        connection = (headers.get("Connection") or "").lower()
        if version == "HTTP/1.1":
            self.keep_alive = "close" not in connection
        else:
            self.keep_alive = "keep-alive" in connection and "close" not in connection


class HttpError(BadRequest):
    """A request the HTTP layer refuses before any endpoint sees it (a head too long, a version,
    method or coding not spoken, a body over the limit): its status (``code``) is part of what
    it is, as in the standard library's ``send_error``. Only the HTTP layer (this module, the
    fronts, the routes) raises these; the routes' ``error_reply`` answers them."""

    def __init__(self, message: str, code: int = 400) -> None:
        super().__init__(message)
        self.code = code


def _version(text: str) -> str:
    """The version of a request line (``HTTP/1.x``); a 400 or a 505 otherwise."""
    number = text[5:].split(".") if text.startswith("HTTP/") else []
    if len(number) != 2 or not all(p.isdigit() and len(p) <= 10 for p in number):
        raise HttpError(f"Bad request version ({text[:40]!r})")
    if (int(number[0]), int(number[1])) >= (2, 0):
        raise HttpError(f"Invalid HTTP version ({text[5:45]})", 505)
    return "HTTP/1.1" if (int(number[0]), int(number[1])) >= (1, 1) else "HTTP/1.0"


def _headers(lines: list[bytes]) -> Headers:
    if len(lines) > MAX_HEADERS:
        raise HttpError("Too many headers", 431)
    fields: list[list[str]] = []  # [name, value] per field, folded lines joined to theirs
    for raw in lines:
        if len(raw) > MAX_LINE:
            raise HttpError("Line too long", 431)
        line = raw.decode("iso-8859-1")
        if _CONTROL.search(line):
            raise HttpError(f"Bad header line ({line[:40]!r}): a control character")
        if line[:1] in (" ", "\t") and fields:  # an obsolete folded line
            fields[-1][1] = f"{fields[-1][1]} {line.strip(_OWS)}".strip(_OWS)
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name.strip(TOKEN):  # a name is a token: no space, no colon
            raise HttpError(f"Bad header line ({line[:40]!r})")
        fields.append([name.lower(), value.strip(_OWS)])  # OWS only: 0xA0 is a value's
    out = Headers()
    for name, value in fields:
        if name == "content-length" and out.get(name, value) != value:
            raise HttpError("Conflicting Content-Length headers")  # RFC 9112 §6.3: a 400
        out.setdefault(name, value)  # a repeated header: the first one counts
    return out


def parse_head(raw: bytes) -> Head:
    """The request line and headers of ``raw`` (the head without its blank line), under the
    standard library's rules and limits: 400, 414, 431, 501 or 505 otherwise."""
    lines = raw.lstrip(b"\r\n").split(b"\n")  # empty lines before a request are ignored
    lines = [line[:-1] if line.endswith(b"\r") else line for line in lines]
    if len(lines[0]) > MAX_LINE:
        raise HttpError("Request-URI Too Long", 414)
    request_line = lines[0].decode("iso-8859-1")
    words = request_line.split()
    if len(words) == 3:
        version = _version(words[2])
    elif len(words) == 2 and words[0] == "GET":
        version = "HTTP/1.0"  # HTTP/0.9 is answered in HTTP/1.0
    else:
        raise HttpError(f"Bad request syntax ({request_line[:40]!r})")
    method, target = words[0], words[1]
    if target.startswith("//"):
        target = "/" + target.lstrip("/")
    head = Head(method, target, version, _headers([ln for ln in lines[1:] if ln]))
    if method not in METHODS:
        raise HttpError(f"Unsupported method ({method[:20]!r})", 501)
    return head


def head_end(buffer: bytearray, searched: int) -> int:
    """Where the blank line ending a head starts in ``buffer`` (-1: not there yet), looking
    only past ``searched`` bytes already searched (a head a byte at a time stays linear)."""
    start = max(0, searched - 3)
    ends = [i for i in (buffer.find(b"\n\r\n", start), buffer.find(b"\n\n", start)) if i >= 0]
    return min(ends) if ends else -1


def too_long(buffer: bytearray) -> HttpError | None:
    """The refusal of a head that grew past its limits before it ended, if it did."""
    if len(buffer) > MAX_LINE and buffer.find(b"\n", 0, MAX_LINE + 2) < 0:
        return HttpError("Request-URI Too Long", 414)
    if len(buffer) > MAX_HEAD:
        return HttpError("Request Header Fields Too Large", 431)
    return None


class Body:
    """A request body arriving in pieces (``Content-Length`` or chunked), kept up to ``limit``
    bytes. :meth:`feed` takes bytes and gives back those past the body (the next request's);
    ``done`` says when the body is whole. An oversize body with a length is read and dropped
    up to ``drain`` bytes, so the client hears the 413, not a reset; ``error`` then holds it."""

    __slots__ = ("_left", "_limit", "_line", "_parts", "_size", "_state", "done", "error")

    def __init__(self, headers: Headers, limit: int, drain: int) -> None:
        self._limit, self._parts, self._size, self._line = limit, bytearray(), 0, bytearray()
        self.done, self.error = False, None
        coding = (headers.get("Transfer-Encoding") or "").strip()
        if coding:  # RFC 9112 §6.1: a coding not understood is a 501; chunked wins over a length
            if coding.lower() != "chunked":
                what = f"Unsupported Transfer-Encoding {coding[:20]!r}: chunked only"
                raise HttpError(what, 501)
            self._state, self._left = "size", 0
            return
        length = headers.get("Content-Length")
        if length is None:
            raise HttpError("A POST needs a Content-Length or a chunked body", 411)
        self._state, self._left = "length", _length(length)
        if self._left > limit:
            self._state, self._left = "drop", min(self._left, drain)
            self.error = HttpError(f"The body is larger than {limit} bytes", 413)
        self.done = self._left == 0

    @property
    def raw(self) -> bytes:
        return bytes(self._parts)

    def feed(self, data: bytes | bytearray) -> bytes:
        """Take ``data``; the bytes past the end of the body. An HttpError for a malformed or
        oversize chunked body."""
        view = memoryview(data)
        while view and not self.done:
            if self._state in ("length", "drop", "data"):
                n = min(self._left, len(view))
                if self._state != "drop":
                    self._parts += view[:n]
                self._left -= n
                view = view[n:]
                if self._left == 0:
                    self._state, self.done = "crlf", self._state != "data"
            else:
                view = self._take_line(view)
        return bytes(view)

    def _take_line(self, view: memoryview) -> memoryview:
        """Gather a chunk-size line, the CRLF after a chunk or a trailer line; act on it once
        whole."""
        end = bytes(view[: 1026 - len(self._line)]).find(b"\n")
        if end < 0:
            self._line += view[: 1026 - len(self._line)]
            if len(self._line) > 1024:
                raise HttpError("Invalid chunked body: a line is too long")
            return view[len(view) :]
        line = bytes(self._line + view[:end])
        line = line[:-1] if line.endswith(b"\r") else line  # CRLF, or a lone LF (RFC 9112 §2.2)
        self._line.clear()
        if self._state == "crlf":
            if line:
                raise HttpError("Invalid chunked body: a chunk's data runs past its size")
            self._state = "size"
        elif self._state == "trailer":
            self.done = not line
        else:
            self._chunk_size(line)
        return view[end + 1 :]

    def _chunk_size(self, line: bytes) -> None:
        """``chunk-size [ BWS ; chunk-ext ]``: hexadecimal digits and nothing else."""
        digits = line.split(b";", 1)[0].rstrip(b" \t")
        if not digits or len(digits) > 16 or digits.strip(_HEX):
            raise HttpError("Invalid chunked body: a chunk size is not hexadecimal")
        n = int(digits, 16)
        if n == 0:
            self._state = "trailer"
            return
        self._size += n
        if self._size > self._limit:
            raise HttpError(f"The body is larger than {self._limit} bytes", 413)
        self._state, self._left = "data", n


def _length(text: str) -> int:
    """A Content-Length value: ASCII digits, or a list of one value repeated (RFC 9112 §6.3:
    anything else is a 400)."""
    values = {v.strip() for v in text.split(",")}
    value = values.pop() if len(values) == 1 else ""
    if not (value.isascii() and value.isdigit()):
        raise HttpError(f"Invalid Content-Length {text[:20]!r}")
    return int(value)


def _inflate(raw: bytes, encoding: str, limit: int) -> bytes:
    wbits = 16 + zlib.MAX_WBITS if encoding in ("gzip", "x-gzip") else zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(raw, limit + 1)
    except zlib.error:
        raise HttpError(f"The body is not valid {encoding} data") from None
    if len(out) > limit:
        raise HttpError(f"The body is larger than {limit} bytes once decompressed", 413)
    return out


def decode_body(raw: bytes, headers: Headers, limit: int) -> bytes:
    """A whole body decoded from gzip/deflate, at most ``limit`` bytes; a 413/415/400 in
    OpenTSDB's shape otherwise."""
    encoding = (headers.get("Content-Encoding") or "identity").strip().lower()
    if encoding in ("gzip", "x-gzip", "deflate"):
        return _inflate(raw, encoding, limit)
    if encoding != "identity":
        raise HttpError(f"Unsupported Content-Encoding {encoding[:20]!r}: gzip or none", 415)
    return raw


def gzip_answer(body: bytes, accept_encoding: str | None) -> bytes | None:
    """``body`` gzip-compressed when the client accepts it and it is worth it, else None."""
    if len(body) < GZIP_MIN or "gzip" not in (accept_encoding or "").lower():
        return None
    return gzip.compress(body, compresslevel=1, mtime=0)
