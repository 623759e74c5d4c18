"""What every request of ``btts serve`` shares: the catalog, the target, one data client, the
limits, and the bounded caches of enumerated series; the endpoints' answers as Python values.

With ``tenant`` only tables keyed by a tenant are served, and every read is pinned to that
tenant's key prefix.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from btts.config import Target
from btts.tsdb import answer, mquery, reads, request
from btts.tsdb.cache import TtlLru
from btts.tsdb.catalog import Catalog
from btts.tsdb.request import BadRequest, TagFilter

__all__ = ["Service"]

CACHE_S = 60.0
CACHE_ENTRIES = 256
REFRESH_MISS_S = 5.0  # an unknown metric looks for new map entries at most this often


class Service:
    """What every request shares: the catalog, the target, the limits, the caches."""

    def __init__(
        self, catalog: Catalog, target: Target, limits: answer.Limits, tenant: str | None = None
    ) -> None:
        self.catalog = catalog
        self.target = target
        self.limits = limits
        self.tenant = tenant
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
            self.target,
            self.limits.deadline_s,
            self.limits.max_scan_rows,
            self.tenant,
            self.enumerations,
        )

    # -- endpoints ---------------------------------------------------------------------------

    def query(self, tq: request.TsQuery) -> bytes:
        if any(q.metric not in self.catalog.metrics for q in tq.queries):
            self.refresh_catalog(REFRESH_MISS_S)
        stats = answer.Stats() if tq.show_stats or tq.show_summary else None
        results = answer.answer(self.reader(), self.catalog, tq, self.limits, stats)
        return answer.render(results, tq.ms_resolution, tq.arrays, tq, stats)

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
        parsed = mquery.parse_m("none:" + m)
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
