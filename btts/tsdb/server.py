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
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from google.cloud.bigtable.data import BigtableDataClient

from btts.config import Target
from btts.tsdb import answer, reads, request, series
from btts.tsdb.catalog import Catalog
from btts.tsdb.request import BadRequest, TagFilter

__all__ = ["Service", "make_server"]

LOG = logging.getLogger(__name__)
PAGE = Path(__file__).resolve().parent / "page"
PAGE_FILES = {"/": ("index.html", "text/html"), "/page.js": ("page.js", "text/javascript")}
MAX_BODY = 1 << 20
DRAIN_MAX = 16 << 20  # an oversize body is read and dropped up to this, then the connection closes
VERSION = "2.4.0"
CACHE_S = 60.0
REFRESH_MISS_S = 5.0  # an unknown metric looks for new map entries at most this often


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
        self._cache: dict[tuple, tuple[float, list]] = {}
        self._lock = threading.Lock()
        self._refreshed = time.monotonic()

    def refresh_catalog(self, older_than_s: float = CACHE_S) -> None:
        """Find the map entries again (an entry first sent after the start becomes a metric
        without a restart), at most once per ``older_than_s``."""
        with self._lock:
            if time.monotonic() - self._refreshed < older_than_s or not self.catalog.map_tables():
                return
            self._refreshed = time.monotonic()
        entries = reads.discover_entries(self.target, self.catalog.map_tables(), self.tenant)
        self.catalog = Catalog(self.catalog.schemas, entries, self.tenant)

    def reader(self) -> reads.Reader:
        return reads.Reader(
            self.client, self.target, self.limits.deadline_s, self.limits.max_scan_rows, self.tenant
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
        with self._lock:
            hit = self._cache.get(key)
            if hit and time.monotonic() - hit[0] < CACHE_S:
                return hit[1]
        given = {f.tagk for f in filters}
        open_tags = [
            request.tag_filter(t, "wildcard", "*", True) for t in source.tags if t not in given
        ]
        p = reads.plan(self.reader(), source, [*filters, *open_tags], 0, 1)
        combos = [{t: str(v) for t, v in combo.items() if t in source.tags} for combo in p.combos]
        with self._lock:
            self._cache[key] = (time.monotonic(), combos)
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


class Handler(BaseHTTPRequestHandler):
    server_version = "btts-serve"
    service: Service  # set by make_server

    def log_message(self, format: str, *args) -> None:
        LOG.debug("%s " + format, self.address_string(), *args)

    def _send(self, code: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(code)
        self.send_header(
            "Content-Type", kind + ("; charset=utf-8" if "text" in kind or "json" in kind else "")
        )
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, obj: object) -> None:
        self._send(200, json.dumps(obj).encode("utf-8"))

    def _guard(self, work) -> None:
        try:
            work()
        except BadRequest as exc:
            self._send(exc.code, error_body(exc.code, str(exc)))
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

    def _refuse_write(self) -> None:
        self._send(405, error_body(405, "btts serve is read-only: no write or delete endpoint"))

    do_PUT = do_DELETE = do_PATCH = _refuse_write

    def _params(self) -> tuple[str, dict[str, list[str]]]:
        parts = urlsplit(self.path)
        try:
            params = parse_qs(parts.query, keep_blank_values=True, max_num_fields=100)
        except ValueError:
            raise BadRequest("Too many query parameters") from None
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
            if path.startswith(
                ("/api/put", "/api/annotation", "/api/uid", "/api/tree", "/api/rollup")
            ):
                raise BadRequest("btts serve is read-only: no write or delete endpoint", 405)
            raise BadRequest(f"Endpoint not found: {path[:80]}", 404)
        if path == "/api/query/last":
            raise BadRequest("/api/query/last is not served", 404)
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            raise BadRequest("A POST needs a Content-Length", 411)
        if int(length) > MAX_BODY:
            # read (a bounded amount of) it first, so the client hears the 413, not a reset
            left = min(int(length), DRAIN_MAX)
            while left > 0:
                chunk = self.rfile.read(min(left, 1 << 16))
                if not chunk:
                    break
                left -= len(chunk)
            self.close_connection = True
            raise BadRequest(f"The body is larger than {MAX_BODY} bytes", 413)
        raw = self.rfile.read(int(length))
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise BadRequest("Unable to parse the request body as JSON") from None
        if path == "/api/suggest":  # pyopentsdb: {"type", "q", "max"} as a JSON body
            if not isinstance(body, dict):
                raise BadRequest("The suggest body must be a JSON object")
            limit = body.get("max", 25)
            if isinstance(limit, bool) or not isinstance(limit, int):
                raise BadRequest(f"Invalid 'max': {str(limit)[:20]!r} is not a number")
            kind, prefix = str(body.get("type", "")), str(body.get("q") or "")
            self._json(self.service.suggest(kind, prefix, min(limit, 100_000)))
            return
        if isinstance(body, dict) and request.truth(body.get("delete")):
            raise BadRequest("btts serve is read-only: no write or delete endpoint", 405)
        tq = request.parse_body(body)
        if request.truth((params.get("arrays") or ["false"])[0]):
            tq = replace(tq, arrays=True)
        self._send(200, self.service.query(tq))


def make_server(service: Service, bind: str = "127.0.0.1", port: int = 4242) -> ThreadingHTTPServer:
    handler = type("BoundHandler", (Handler,), {"service": service})
    server = ThreadingHTTPServer((bind, port), handler)
    server.daemon_threads = True
    return server
