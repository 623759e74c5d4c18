"""``btts serve``: a read-only HTTP server speaking the OpenTSDB 2.x endpoints Grafana's built-in
OpenTSDB data source calls, plus a small chart page at ``/``.

Safe by default: no endpoint writes or deletes; it binds to loopback unless told otherwise;
every request has limits (points, scanned rows, a read deadline, the body size) and every
refusal is OpenTSDB's error shape ``{"error": {"code": …, "message": …}}`` with a reason,
never a traceback. With ``tenant`` only tables keyed by a tenant are served, and every read
is pinned to that tenant's key prefix.
"""

from __future__ import annotations

import json
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from google.cloud.bigtable.data import BigtableDataClient

from btts.config import Target
from btts.tsdb import answer, http_io, reads, request, series
from btts.tsdb.access import MAX_CONNECTIONS, Access
from btts.tsdb.cache import TtlLru
from btts.tsdb.catalog import Catalog
from btts.tsdb.request import BadRequest, TagFilter

__all__ = ["GRACE_S", "Server", "Service", "make_server"]

LOG = logging.getLogger(__name__)
PAGE = Path(__file__).resolve().parent / "page"
PAGE_FILES = {"/": ("index.html", "text/html"), "/page.js": ("page.js", "text/javascript")}
MAX_BODY = 1 << 20
DRAIN_MAX = 16 << 20  # an oversize body is read and dropped up to this, then the connection closes
VERSION = "2.4.0"
CACHE_S = 60.0
CACHE_ENTRIES = 256
REFRESH_MISS_S = 5.0  # an unknown metric looks for new map entries at most this often
HEADER_S = 10.0  # the request line and headers must arrive within this
IDLE_S = 15.0  # a kept-alive connection may wait this long for its next request
BODY_S = 30.0  # the body must arrive within this
WRITE_S = 60.0  # the client must take the answer within this
SOCKET_S = 10.0  # the longest one read or write on the socket may stall
GRACE_S = 10.0  # requests in flight may finish this long after a shutdown begins


class Service:
    """What every request shares: the catalog, the target, one client, the limits."""

    def __init__(
        self, catalog: Catalog, target: Target, limits: answer.Limits, tenant: str | None = None
    ) -> None:
        self.catalog = catalog
        self.target = target
        self.limits = limits
        self.tenant = tenant
        self.client = BigtableDataClient(project=target.project)
        self._cache = TtlLru(CACHE_ENTRIES, CACHE_S)  # keyed by client filters: bounded
        self.enumerations = TtlLru(CACHE_ENTRIES * 4, CACHE_S)  # a key field's values
        self._refresh_lock = threading.Lock()
        self._refreshed = time.monotonic()

    def refresh_catalog(self, older_than_s: float = CACHE_S) -> None:
        """Find the map entries again (an entry first sent after the start becomes a metric
        without a restart), at most once per ``older_than_s``."""
        with self._refresh_lock:
            if time.monotonic() - self._refreshed < older_than_s or not self.catalog.map_tables():
                return
            self._refreshed = time.monotonic()
        entries = reads.discover_entries(self.target, self.catalog.map_tables(), self.tenant)
        known = set(self.catalog.metrics)
        self.catalog = Catalog(self.catalog.schemas, entries, self.tenant)
        if set(self.catalog.metrics) != known:  # new entries came with new key values
            self.enumerations.clear()

    def reader(self) -> reads.Reader:
        return reads.Reader(
            self.client,
            self.target,
            self.limits.deadline_s,
            self.limits.max_scan_rows,
            self.tenant,
            self.enumerations,
        )

    def close(self) -> None:
        self.client.close()

    # -- endpoints ---------------------------------------------------------------------------

    def query(self, tq: request.TsQuery) -> bytes:
        if any(q.metric not in self.catalog.metrics for q in tq.queries):
            self.refresh_catalog(REFRESH_MISS_S)
        results = answer.answer(self.reader(), self.catalog, tq, self.limits)
        return answer.render(results, tq.ms_resolution, tq.arrays)

    def suggest(self, kind: str, prefix: str, limit: int) -> list[str]:
        if kind == "metrics":
            self.refresh_catalog()
            names = sorted(self.catalog.metrics)
        elif kind == "tagk":
            names = self.catalog.tag_keys()
        elif kind == "tagv":
            names = sorted({v for combo in self._all_series() for v in combo.values()})
        else:
            raise BadRequest(f"Invalid 'type' {kind[:20]!r}: metrics, tagk or tagv")
        return [n for n in names if n.startswith(prefix)][:limit]

    def _all_series(self) -> list[dict]:
        out: list[dict] = []
        seen = set()
        for metric in self.catalog.metrics.values():
            for source in metric.points + metric.rollups:
                if source.table.name in seen:
                    continue
                seen.add(source.table.name)
                try:
                    out += self._series_of(metric.name, source, ())
                except BadRequest:  # a table not written yet, too many values: skip it
                    continue
        return out

    def _series_of(self, name: str, source, filters: Sequence[TagFilter]) -> list[dict]:
        key = (source.schema.dataset, source.table.name, tuple(filters))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        given = {f.tagk for f in filters}
        open_tags = [
            request.tag_filter(t, "wildcard", "*", True) for t in source.tags if t not in given
        ]
        p = reads.plan(self.reader(), source, [*filters, *open_tags], 0, 1)
        combos = [{t: str(v) for t, v in combo.items() if t in source.tags} for combo in p.combos]
        self._cache.put(key, combos)
        return combos

    def lookup(self, m: str, limit: int) -> dict:
        parsed = request.parse_m("none:" + m)
        filters = [
            request.tag_filter(f["tagk"], f["type"], f["filter"], f["groupBy"])
            for f in parsed["filters"]
        ]
        if parsed["metric"] not in self.catalog.metrics:
            self.refresh_catalog(REFRESH_MISS_S)
        try:
            metric = self.catalog.get(parsed["metric"])
        except LookupError as exc:
            raise BadRequest(str(exc), 404) from None
        tags = {f.tagk for f in filters}
        sources = [s for s in metric.points + metric.rollups if tags <= set(s.tags)]
        combos = self._series_of(metric.name, sources[0], tuple(filters)) if sources else []
        shown = combos if limit <= 0 else combos[:limit]  # OpenTSDB: 0 or less is no limit
        results = [{"tsuid": "", "metric": metric.name, "tags": c} for c in shown]
        return {
            "type": "LOOKUP",
            "metric": metric.name,
            "tags": [{"key": f.tagk, "value": f.filter} for f in filters],
            "limit": limit,
            "time": 0,
            "results": results,
            "startIndex": 0,
            "totalResults": len(combos),
        }


def error_body(code: int, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message}}).encode("utf-8")


def _no_constant(name: str) -> float:
    raise BadRequest(f"{name} is not a number a query may hold")


_WRITE_PATHS = ("/api/put", "/api/annotation", "/api/uid", "/api/tree", "/api/rollup")
_READ_ONLY = "btts serve is read-only: no write or delete endpoint"


class Handler(BaseHTTPRequestHandler):
    """One connection: HTTP/1.1 keep-alive, every phase under a deadline, credentials checked
    before anything else, every answer (errors included) JSON in OpenTSDB's shape."""

    server_version = "btts-serve"
    protocol_version = "HTTP/1.1"
    timeout = SOCKET_S
    # headers and body leave in separate writes: with Nagle's algorithm the body would wait
    # for the client's delayed ACK of the headers (up to 40 ms on every kept-alive request)
    disable_nagle_algorithm = True
    service: Service  # set by make_server
    server: Server

    def setup(self) -> None:
        self._served = False
        self._counted = False  # this request is in the server's count of requests in flight
        self._pending = False  # a request body not read (yet): the connection cannot be reused
        tls = self.server.tls
        if tls is not None:  # the handshake runs here, in this connection's thread
            self.request.settimeout(SOCKET_S)
            self.request = tls.wrap_socket(
                self.request, server_side=True, do_handshake_on_connect=False
            )
            self.server.watchdog.arm(self.request, HEADER_S)
            try:
                self.request.do_handshake()
            finally:
                self.server.watchdog.disarm(self.request)
        super().setup()

    def log_message(self, format: str, *args) -> None:
        LOG.debug("%s " + format, self.address_string(), *args)

    def handle_one_request(self) -> None:
        dog = self.server.watchdog
        dog.arm(self.connection, IDLE_S + HEADER_S if self._served else HEADER_S)
        try:
            super().handle_one_request()
        finally:
            dog.disarm(self.connection)
            self._served = True
            if self._counted:
                self._counted = False
                self.server.request_done()

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        self.server.watchdog.disarm(self.connection)
        self.server.request_started()
        self._counted = True
        length = (self.headers.get("Content-Length") or "0").strip()
        chunked = "chunked" in (self.headers.get("Transfer-Encoding") or "").lower()
        self._pending = chunked or length != "0"
        return True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's own refusals (414, 431, 501, a bad request line) as JSON."""
        self.close_connection = True
        if self.request_version == "HTTP/0.9":  # an unparsable request line: answer in HTTP/1
            self.request_version = "HTTP/1.0"
        if self.server.access.required and not self._authorized():
            code, message = 401, "Authentication required"
        text = message or self.responses.get(code, ("Error",))[0]
        self._send(code, error_body(code, text[:200]))

    def _authorized(self) -> bool:
        headers = getattr(self, "headers", None)
        value = headers.get("Authorization") if headers is not None else None
        return self.server.access.allows(value)

    def _send(
        self, code: int, body: bytes, kind: str = "application/json", extra: dict | None = None
    ) -> None:
        if code >= 400 and self._pending:
            self.close_connection = True
        headers = getattr(self, "headers", None)
        packed = http_io.gzip_answer(body, headers.get("Accept-Encoding") if headers else None)
        self.server.watchdog.arm(self.connection, WRITE_S)
        self.send_response(code)
        charset = "; charset=utf-8" if "text" in kind or "json" in kind else ""
        self.send_header("Content-Type", kind + charset)
        self.send_header("Content-Length", str(len(packed if packed is not None else body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        if packed is not None:
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Vary", "Accept-Encoding")
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(packed if packed is not None else body)

    def _json(self, obj: object) -> None:
        self._send(200, json.dumps(obj).encode("utf-8"))

    def _guard(self, work: Callable[[], None]) -> None:
        try:
            if not self._authorized():
                self._send(
                    401,
                    error_body(401, "Authentication required"),
                    extra={"WWW-Authenticate": 'Basic realm="btts serve", charset="UTF-8"'},
                )
                return
            work()
        except BadRequest as exc:
            self._send(exc.code, error_body(exc.code, str(exc)))
        except (ConnectionError, TimeoutError, ssl.SSLError):
            self.close_connection = True  # the client went away or stalled: nobody to answer
        except Exception as exc:  # a bug must not leak a traceback to the client
            LOG.exception("request %s failed", self.path)
            self._send(
                500, error_body(500, f"Internal error ({type(exc).__name__}); see the server log")
            )

    def do_GET(self) -> None:
        self._guard(self._get)

    def do_HEAD(self) -> None:
        self._guard(self._get)

    def do_POST(self) -> None:
        self._guard(self._post)

    def do_OPTIONS(self) -> None:
        allow = {"Allow": "GET, HEAD, POST, OPTIONS"}
        self._guard(lambda: self._send(200, b"", extra=allow))

    def _refuse_write(self) -> None:
        self._guard(self._write)

    def _write(self) -> None:
        raise BadRequest(_READ_ONLY, 405)

    do_PUT = do_DELETE = do_PATCH = _refuse_write

    def _params(self) -> tuple[str, dict[str, list[str]]]:
        parts = urlsplit(self.path)
        try:
            params = parse_qs(parts.query, keep_blank_values=True, max_num_fields=100)
        except ValueError:
            raise BadRequest("Too many query parameters") from None
        if (params.get("delete") or ["false"])[0].lower() not in ("false", "0"):
            raise BadRequest(_READ_ONLY + " (delete=true is refused)", 405)
        return parts.path.rstrip("/") or "/", params

    def _get(self) -> None:
        path, params = self._params()
        svc = self.service

        def one(name: str, default: str = "") -> str:
            return (params.get(name) or [default])[0]

        def number(name: str, default: int) -> int:
            text = one(name, str(default))
            if not text.isdigit():
                raise BadRequest(f"Invalid '{name}': {text[:20]!r} is not a number")
            return min(int(text), 100_000)

        if path in PAGE_FILES or path == "/index.html":
            name, kind = PAGE_FILES.get(path, PAGE_FILES["/"])
            self._send(200, (PAGE / name).read_bytes(), kind)
        elif path == "/api/query":
            self._send(200, svc.query(request.parse_get(params)))
        elif path == "/api/suggest":
            self._json(svc.suggest(one("type"), one("q"), number("max", 25)))
        elif path == "/api/search/lookup":
            if not one("m"):
                raise BadRequest("Missing the 'm' parameter")
            limit = one("limit", "25")  # OpenTSDB: 0 or less is no limit
            self._json(svc.lookup(one("m"), 0 if limit.startswith("-") else number("limit", 25)))
        elif path == "/api/aggregators":
            self._json(sorted(series.AGGREGATORS))
        elif path == "/api/config/filters":
            self._json(
                {k: {"description": v, "examples": ""} for k, v in request.FILTER_TYPES.items()}
            )
        elif path == "/api/version":
            self._json(
                {"version": VERSION, "short_revision": "btts", "repo": "bigtable-timeseries"}
            )
        elif path == "/api/metrics":  # the page's list: metric → tags
            self._json({n: m.tags for n, m in sorted(svc.catalog.metrics.items())})
        else:
            raise BadRequest(f"Endpoint not found: {path[:80]}", 404)

    def _post(self) -> None:
        path, params = self._params()
        if path not in ("/api/query", "/api/query/last", "/api/suggest"):
            if path.startswith(_WRITE_PATHS):
                raise BadRequest(_READ_ONLY, 405)
            raise BadRequest(f"Endpoint not found: {path[:80]}", 404)
        if path == "/api/query/last":
            raise BadRequest("/api/query/last is not served", 404)
        self.server.watchdog.arm(self.connection, BODY_S)
        try:
            raw = http_io.read_body(self.rfile, self.headers, MAX_BODY, DRAIN_MAX)
        finally:
            self.server.watchdog.disarm(self.connection)
        self._pending = False
        try:
            body = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
        except BadRequest:
            raise
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise BadRequest("Unable to parse the request body as JSON") from None
        if path == "/api/suggest":  # pyopentsdb: {"type", "q", "max"} as a JSON body
            self._json(self._suggest_body(body))
            return
        if isinstance(body, dict) and request.truth(body.get("delete")):
            raise BadRequest(_READ_ONLY + " (delete: true is refused)", 405)
        tq = request.parse_body(body)
        if request.truth((params.get("arrays") or ["false"])[0]):
            tq = replace(tq, arrays=True)
        self._send(200, self.service.query(tq))

    def _suggest_body(self, body: object) -> list[str]:
        if not isinstance(body, dict):
            raise BadRequest("The suggest body must be a JSON object")
        limit = body.get("max", 25)
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise BadRequest(f"Invalid 'max': {str(limit)[:20]!r} is not a number")
        kind, prefix = str(body.get("type", "")), str(body.get("q") or "")
        return self.service.suggest(kind, prefix, min(limit, 100_000))


class Server(ThreadingHTTPServer):
    """The listening socket: at most ``max_connections`` open at once (beyond: a 503 and
    close), TLS when given a context, and a count of requests in flight for a graceful
    shutdown."""

    daemon_threads = True
    request_queue_size = 1024

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[Handler],
        access: Access | None = None,
        tls: ssl.SSLContext | None = None,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        super().__init__(address, handler)
        self.access = access or Access()
        self.tls = tls
        self.watchdog = http_io.Watchdog()
        self._slots = threading.BoundedSemaphore(max_connections)
        self._in_flight = 0
        self._idle = threading.Condition()

    def process_request(self, conn, client_address) -> None:
        if not self._slots.acquire(blocking=False):
            self._turn_away(conn)
            return
        try:
            super().process_request(conn, client_address)
        except Exception:
            self._slots.release()
            raise

    def process_request_thread(self, conn, client_address) -> None:
        try:
            super().process_request_thread(conn, client_address)
        finally:
            self._slots.release()

    def _turn_away(self, conn: socket.socket) -> None:
        if self.tls is None:
            body = error_body(503, "Too many connections: try again")
            head = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            try:
                conn.setblocking(False)
                conn.send(head.encode("ascii") + body)
            except OSError:
                pass
        self.shutdown_request(conn)

    def handle_error(self, conn, client_address) -> None:
        """A connection that failed below HTTP (a reset, a TLS handshake): logged, quietly."""
        LOG.debug("connection from %s failed", client_address, exc_info=True)

    def request_started(self) -> None:
        with self._idle:
            self._in_flight += 1

    def request_done(self) -> None:
        with self._idle:
            self._in_flight -= 1
            self._idle.notify_all()

    def drain(self, grace_s: float = GRACE_S) -> bool:
        """Wait (after ``shutdown``) for the requests in flight; False if some outlived
        ``grace_s``."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, grace_s)


def make_server(
    service: Service,
    bind: str = "127.0.0.1",
    port: int = 4242,
    access: Access | None = None,
    tls: ssl.SSLContext | None = None,
    max_connections: int = MAX_CONNECTIONS,
) -> Server:
    handler = type("BoundHandler", (Handler,), {"service": service})
    return Server((bind, port), handler, access, tls, max_connections)
