"""The endpoints of ``btts serve``: one whole request (method, target, headers, raw body) in,
one :class:`Reply` out, synchronously, on a worker thread of the front (:mod:`btts.tsdb.server`).

No endpoint writes or deletes; every refusal is OpenTSDB's error shape
``{"error": {"code": …, "message": …}}`` with a reason, never a traceback. The code below the
routes raises typed errors (:mod:`btts.tsdb.errors`, :mod:`transforms.errors`) and never an
HTTP status: :func:`error_reply` is the one place a kind of error becomes a status, as
Prometheus' API does in ``returnAPIError``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from btts.prom import endpoints as prom
from btts.tsdb import http_io, last, lookup, mquery, request, series
from btts.tsdb.errors import BadRequest, NotFound, TooLarge
from btts.tsdb.http_io import Headers, HttpError
from btts.tsdb.service import Service
from transforms.errors import BttsError, Timeout, Unavailable, UserError

__all__ = ["MAX_BODY", "Reply", "error_body", "error_reply", "respond", "wants_body"]

LOG = logging.getLogger(__name__)
PAGE = Path(__file__).resolve().parent / "page"
PAGE_FILES = {"/": ("index.html", "text/html"), "/page.js": ("page.js", "text/javascript")}
MAX_BODY = 1 << 20
VERSION = "2.4.0"
BODY_PATHS = ("/api/query", "/api/query/last", "/api/suggest", "/api/search/lookup", *prom.PATHS)
_WRITE_PATHS = ("/api/put", "/api/annotation", "/api/uid", "/api/tree", "/api/rollup")
_READ_ONLY = "btts serve is read-only: no write or delete endpoint"
# QueryRpc.execute's refusal of a DELETE when tsd.http.query.allow_delete is false (its default)
_NO_DELETE = "Deleting data is not enabled (tsd.http.query.allow_delete=false)"


@dataclass(frozen=True)
class Reply:
    """An answer: its status, its body (gzip-compressed when ``gzipped``), its type and any
    further headers."""

    code: int
    body: bytes
    kind: str = "application/json"
    extra: tuple[tuple[str, str], ...] = ()
    gzipped: bool = False


def error_body(code: int, message: str, details: str = "") -> bytes:
    """OpenTSDB's error shape: ``details`` only when there are some."""
    error: dict = {"code": code, "message": message}
    if details:
        error["details"] = details
    return json.dumps({"error": error}).encode("utf-8")


# Each kind of error and its HTTP status, the most specific first. An HttpError (the HTTP layer's
# own refusal) carries its status; an error of no kind here is a bug: a 500 naming only its type.
STATUSES: tuple[tuple[type[BaseException], int], ...] = (
    (TooLarge, 413),  # points, series, key ranges, queries over a limit
    (NotFound, 404),  # an endpoint, a lookup's metric or tag value nobody has
    (UserError, 400),  # a bad request, an unknown name, a table the instance lacks
    (Timeout, 504),  # the deadline passed, or Bigtable cancelled the read
    (Unavailable, 503),  # Bigtable failing, an index to rebuild
    (BttsError, 500),  # a stored row the schema cannot read, another failure
)


def status(exc: BaseException) -> int:
    """The HTTP status answering ``exc``: see :data:`STATUSES`."""
    if isinstance(exc, HttpError):
        return exc.code
    return next((code for kind, code in STATUSES if isinstance(exc, kind)), 500)


def error_reply(exc: BaseException, limit: int | None = None) -> Reply:
    """The answer to a request refused or failed with ``exc``: its :func:`status` and OpenTSDB's
    error shape, the message cut to ``limit`` characters when given. A bug's message names
    only its type (the traceback is in the server log, never sent)."""
    code = status(exc)
    if isinstance(exc, BttsError):
        message, details = str(exc), getattr(exc, "details", "")
    else:
        message, details = f"Internal error ({type(exc).__name__}); see the server log", ""
    return Reply(code, error_body(code, message[:limit] if limit else message, details))


def _no_constant(name: str) -> float:
    raise BadRequest(f"{name} is not a number a query may hold")


def _path(target: str) -> str:
    return urlsplit(target).path.rstrip("/") or "/"


def wants_body(method: str, target: str) -> bool:
    """True when the front must read this request's body before answering it."""
    return method == "POST" and _path(target) in BODY_PATHS


def respond(
    service: Service, method: str, target: str, headers: Headers, raw: bytes | None
) -> Reply:
    """The answer to one request whose credentials were checked; never raises."""
    try:
        reply = _route(service, method, target, headers, raw)
    except BttsError as exc:
        return error_reply(exc)
    except Exception as exc:  # a bug must not leak a traceback to the client
        LOG.exception("request %s %s failed", method, target[:200])
        return error_reply(exc)
    packed = http_io.gzip_answer(reply.body, headers.get("Accept-Encoding"))
    return reply if packed is None else replace(reply, body=packed, gzipped=True)


def _route(service: Service, method: str, target: str, headers: Headers, raw: bytes | None):
    if method in ("GET", "HEAD"):
        return _get(service, *_params(target))
    if method == "POST":
        return _post(service, *_params(target), headers, raw)
    if method == "OPTIONS":
        return Reply(200, b"", extra=(("Allow", "GET, HEAD, POST, OPTIONS"),))
    if method == "DELETE" and _path(target).startswith("/api/query"):
        raise BadRequest("Bad request", _NO_DELETE)  # as OpenTSDB's default answers
    raise HttpError(_READ_ONLY, 405)  # PUT, PATCH, DELETE elsewhere


def _params(target: str) -> tuple[str, dict[str, list[str]]]:
    parts = urlsplit(target)
    try:
        params = parse_qs(parts.query, keep_blank_values=True, max_num_fields=100)
    except ValueError:
        raise BadRequest("Too many query parameters") from None
    if (params.get("delete") or ["false"])[0].lower() not in ("false", "0"):
        raise HttpError(_READ_ONLY + " (delete=true is refused)", 405)
    return parts.path.rstrip("/") or "/", params


def _json(obj: object) -> Reply:
    return Reply(200, json.dumps(obj).encode("utf-8"))


def _get(svc: Service, path: str, params: dict[str, list[str]]) -> Reply:
    def one(name: str, default: str = "") -> str:
        return (params.get(name) or [default])[0]

    def number(name: str, default: int) -> int:
        text = one(name, str(default))
        if not text.isdigit():
            raise BadRequest(f"Invalid '{name}': {text[:20]!r} is not a number")
        return min(int(text), 100_000)

    if path in PAGE_FILES or path == "/index.html":
        name, kind = PAGE_FILES.get(path, PAGE_FILES["/"])
        return Reply(200, (PAGE / name).read_bytes(), kind)
    if path == "/api/query":
        return Reply(200, svc.query(mquery.parse_get(params)))
    if path == "/api/query/last":
        return _json(last.answer_last(svc, last.parse_last_get(params)))
    if path == "/api/suggest":
        return _json(svc.suggest(one("type"), one("q"), number("max", 25)))
    if path == "/api/search/lookup":
        if not one("m"):
            raise BadRequest("Missing the 'm' parameter")
        limit = one("limit", "25")  # OpenTSDB: 0 or less is no limit
        wanted = 0 if limit.startswith("-") else number("limit", 25)
        return _json(svc.lookup(lookup.parse_m(one("m"), wanted)))
    return _static(svc, path)


def _static(svc: Service, path: str) -> Reply:
    """The endpoints that answer from what the server already knows."""
    if path == "/api/aggregators":
        return _json(sorted(series.AGGREGATORS))
    if path == "/api/config/filters":
        return _json(
            {k: {"description": v, "examples": ""} for k, v in request.FILTER_TYPES.items()}
        )
    if path == "/api/version":
        return _json({"version": VERSION, "short_revision": "btts", "repo": "bigtable-timeseries"})
    if path == "/api/metrics":  # the page's list: metric → tags
        return _json({n: m.tags for n, m in sorted(svc.catalog.metrics.items())})
    raise NotFound(f"Endpoint not found: {path[:80]}")


def _post(
    svc: Service, path: str, params: dict[str, list[str]], headers: Headers, raw: bytes | None
) -> Reply:
    if path not in BODY_PATHS or raw is None:
        if path.startswith(_WRITE_PATHS):
            raise HttpError(_READ_ONLY, 405)
        raise NotFound(f"Endpoint not found: {path[:80]}")
    if path in prom.PATHS:  # Prometheus remote write and read: snappy protobuf bodies
        return Reply(*prom.answer(svc, path, raw))
    raw = http_io.decode_body(raw, headers, MAX_BODY)
    try:
        body = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except BadRequest:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadRequest("Unable to parse the request body as JSON") from None
    if path == "/api/suggest":  # pyopentsdb: {"type", "q", "max"} as a JSON body
        return _json(_suggest_body(svc, body))
    if path == "/api/query/last":
        return _json(last.answer_last(svc, last.parse_last_body(body)))
    if path == "/api/search/lookup":  # SearchQuery's JSON: {"metric", "tags", "limit"}
        return _json(svc.lookup(lookup.parse_body(body)))
    if isinstance(body, dict) and request.truth(body.get("delete")):
        raise HttpError(_READ_ONLY + " (delete: true is refused)", 405)
    ts_query = request.parse_body(body)
    if mquery.flag(params, "arrays"):
        ts_query = replace(ts_query, arrays=True)
    return Reply(200, svc.query(ts_query))


def _suggest_body(svc: Service, body: object) -> list[str]:
    if not isinstance(body, dict):
        raise BadRequest("The suggest body must be a JSON object")
    limit = body.get("max", 25)
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise BadRequest(f"Invalid 'max': {str(limit)[:20]!r} is not a number")
    kind, prefix = str(body.get("type", "")), str(body.get("q") or "")
    return svc.suggest(kind, prefix, min(limit, 100_000))
