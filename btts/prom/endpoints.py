"""The two endpoints ``btts serve`` routes to this package: ``POST /api/v1/write`` and
``POST /api/v1/read``, over the served ``prometheus`` schema. Each request's body arrives whole
(the front's limits apply); the answer is ``(status, body, content type, extra headers)`` and a
refusal a typed error the routes turn into a status (4xx: the client's, never retried by
Prometheus; 5xx: retried).
"""

from __future__ import annotations

import threading
import weakref

from btts.lazy import lazy_module
from btts.tsdb.errors import NotFound

# loaded on the first Prometheus request: btts serve's routes import this module
read = lazy_module("btts.prom.read")
store = lazy_module("btts.prom.store")
write = lazy_module("btts.prom.write")

__all__ = ["PATHS", "answer"]

WRITE, READ = "/api/v1/write", "/api/v1/read"
PATHS = (WRITE, READ)
_STORES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _store(service) -> store.Store:
    """The service's Prometheus store, made on first use and kept with the service. Making it
    also loads this package's modules, under the lock: importlib's ``LazyLoader`` is not
    thread-safe before Python 3.12, and concurrent first writes saw a half-loaded module."""
    with _LOCK:
        found = _STORES.get(service)
        if found is None:
            for module in (read, store, write):
                _ = module.__name__  # any attribute loads a lazy module, here in one thread
            schema = store.prometheus_schema(service.catalog.schemas)
            if schema is None:
                raise NotFound(
                    "Prometheus remote write and read need the prometheus dataset: "
                    "btts serve --schema prometheus"
                )
            topic = getattr(service, "remote_write_topic", None)
            found = _STORES[service] = store.Store(service.target, schema, topic)
        return found


def answer(service, path: str, raw: bytes) -> tuple[int, bytes, str, tuple[tuple[str, str], ...]]:
    """The answer to one request on :data:`PATHS`."""
    where = _store(service)
    if path == WRITE:
        done = write.remote_write(where, raw)
        dropped = []
        if done.exemplars_dropped:
            dropped.append(f"{done.exemplars_dropped} exemplar(s)")
        if done.metadata_dropped:
            dropped.append(f"{done.metadata_dropped} metadata entr(ies)")
        extra = (("X-Btts-Not-Stored", ", ".join(dropped)),) if dropped else ()
        return 204, b"", "text/plain", extra
    budget = read.Budget(deadline_s=getattr(service.limits, "deadline_s", 30.0))
    got = read.remote_read(where, raw, budget)
    extra = (("Content-Encoding", "snappy"),) if got.snappy else ()
    return 200, got.body, got.kind, extra
