"""What every request of ``btts serve`` shares: the catalog, the target, the limits, the series
indexes, the bounded caches; the endpoints' answers as Python values (a refusal as a typed
error of :mod:`btts.tsdb.errors`, which the routes turn into an HTTP status).

Suggest, lookup and the expansion of a query's ``*``, wildcards and regexps read the series
indexes (:mod:`btts.tsdb.index`), never the data; a schema without an index has its series
enumerated from the keys, and a lookup there keeps those whose rows hold the metric
(:mod:`btts.tsdb.holding`: keys and qualifiers read, never values). A request that fails for
want of time or of Bigtable (``Timeout``, ``Unavailable``) is remembered for :data:`FAIL_S`
seconds: the same request in that time gets the same error at once instead of spending the
server's time again (a dashboard refreshing a panel that times out would otherwise keep the
server busy with it).

With ``tenant`` only tables keyed by a tenant are served, and every read is pinned to that
tenant's key prefix (the index's too).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from btts.config import Target
from btts.errors import MissingTable
from btts.tsdb import answer, budget, holding, index, planning, reads, request, tsuids
from btts.tsdb import lookup as lookup_lib
from btts.tsdb.cache import TtlLru
from btts.tsdb.catalog import Catalog, Metric
from btts.tsdb.errors import BadRequest, NotFound, TooLarge, UnknownName, Unlisted
from btts.tsdb.request import TagFilter
from transforms.errors import BttsError, Timeout, Unavailable
from transforms.scans.key_ranges import Window

__all__ = ["Service"]

LOG = logging.getLogger(__name__)
CACHE_S = 60.0
CACHE_ENTRIES = 256
REFRESH_MISS_S = 5.0  # an unknown metric looks for new map entries at most this often
REFRESH_S = 30.0  # the least time a refresh of the catalog may read for
FAIL_S = 10.0  # a request that failed for want of time or of Bigtable: its error, this long
MAX_LOOKUP = 100_000  # series one lookup lists (OpenTSDB: no limit given, 25)
RESOLVED_LITERALS = 4096  # tsd.query.filter.expansion_limit: literal values looked up


class Service:
    """What every request shares: the catalog, the target, the limits, the caches."""

    def __init__(
        self, catalog: Catalog, target: Target, limits: answer.Limits, tenant: str | None = None
    ) -> None:
        self.catalog = catalog
        self.target = target
        self.limits = limits
        self.tenant = tenant
        self.index = index.SeriesIndex(catalog.schemas, tenant)
        self._cache = TtlLru(CACHE_ENTRIES, CACHE_S)  # keyed by client filters: bounded
        self.enumerations = TtlLru(CACHE_ENTRIES * 4, CACHE_S)  # a key field's values
        self._failures = TtlLru(CACHE_ENTRIES, FAIL_S)
        self._refresh_lock = threading.Lock()
        self._refreshed = time.monotonic()

    def refresh_catalog(self, older_than_s: float = CACHE_S) -> None:
        """Find the map entries again (an entry first sent after the start becomes a metric
        without a restart), at most once per ``older_than_s``: from the indexes, or sampled
        from the data of a schema without one."""
        with self._refresh_lock:
            if time.monotonic() - self._refreshed < older_than_s:
                return
            self._refreshed = time.monotonic()
        reader = self.reader(max(self.limits.deadline_s, REFRESH_S))
        try:
            entries = self.index.entries(reader)
        except BttsError as exc:  # Bigtable not answering: keep what is known
            LOG.warning("the series indexes could not be read (%s); the catalog stays", exc)
            return
        bare = [m for m in self.catalog.map_tables() if m[0].index is None]
        entries.update(index.discover_entries(self.target, bare, self.tenant))
        known = set(self.catalog.metrics)
        self.catalog = Catalog(self.catalog.schemas, entries, self.tenant)
        if set(self.catalog.metrics) != known:  # new entries came with new key values
            self.enumerations.clear()
            self._cache.clear()

    def reader(self, deadline_s: float | None = None) -> reads.Reader:
        return reads.Reader(
            self.target,
            self.limits.deadline_s if deadline_s is None else deadline_s,
            self.tenant,
            self.enumerations,
            self.index,
        )

    def _remembered(self, key: tuple, work: Callable):
        """``work()``, or the ``Timeout`` or ``Unavailable`` the same request met less than
        :data:`FAIL_S` ago (an index to rebuild is cheap to find: not remembered)."""
        failed = self._failures.get(key)
        if failed is not None:
            kind, args = failed
            raise kind(*args)
        try:
            return work()
        except (Timeout, Unavailable) as exc:
            if not isinstance(exc, Unlisted):
                self._failures.put(key, (type(exc), exc.args))
            raise

    # -- endpoints ---------------------------------------------------------------------------

    def _recheck(self) -> None:
        """While some table's data is missing from its index, look again every few seconds
        (a ``btts index rebuild`` ends it without a restart)."""
        if self.index.unlisted:
            self.refresh_catalog(REFRESH_MISS_S)

    def query(self, ts_query: request.TsQuery) -> bytes:
        """``/api/query``: the request understood once (each sub-query as
        :func:`planning.asked` sees it, the budget checked before any read), its tag values
        resolved, then :func:`answer.answer` plans the key ranges and reads."""
        self._recheck()
        if any(s.metric not in self.catalog.metrics for s in ts_query.queries):
            self.refresh_catalog(REFRESH_MISS_S)
        moment = (ts_query.start_ms // 10_000, ts_query.end_ms // 10_000)  # a refresh asks again
        shown = (
            ts_query.show_query,
            ts_query.show_stats,
            ts_query.show_summary,
            ts_query.show_tsuids,
        )
        key = ("query", ts_query.queries, moment, ts_query.ms_resolution, ts_query.arrays, shown)

        def work() -> bytes:
            reader = self.reader()
            subs = [planning.asked(s, ts_query) for s in ts_query.queries]
            budget.check_request(subs, self.limits.max_points)  # once, before any read
            for sub in subs:
                self._resolve_tag_values(reader, sub)
            stats = answer.Stats() if ts_query.show_stats or ts_query.show_summary else None
            results = answer.answer(reader, self.catalog, subs, self.limits, stats)
            return answer.render(results, ts_query.ms_resolution, ts_query.arrays, ts_query, stats)

        return self._remembered(key, work)

    def indexed_source(self, metric: Metric):
        """The source of ``metric`` a served index lists (None: none does)."""
        return _indexed_source(metric, self.index)

    def _resolve_tag_values(self, reader: reads.Reader, sub: planning.SubPlan) -> None:
        """OpenTSDB resolves each value of a case-sensitive ``literal_or`` (of a ``tags``
        value) to its UID before it reads, and fails the query on one it has never seen
        (``tsd.query.skip_unresolved_tagvs`` is false by default): refused, not an empty
        answer. Here a value is known when a served index lists it (metrics of a schema without
        an index are not checked)."""
        metric = self.catalog.metrics.get(sub.metric)
        source = _indexed_source(metric, self.index) if metric is not None else None
        if source is None:
            return
        pinned = {s.field for s in source.table.decl.key.segments if s.kind == "tenant"}
        values = [
            v
            for f in sub.filters
            if f.type == "literal_or"
            and f.filter.count("|") < RESOLVED_LITERALS
            and f.tagk in metric.tags  # an unknown tag key is refused as such, later
            and not (self.tenant and f.tagk in pinned)  # the server's own tenant decides
            for v in dict.fromkeys(f.filter.split("|"))
        ]
        missing = self.missing_value(reader, source, values)
        if missing is not None:
            text = f"No such name for 'tagv': '{missing}'"
            raise BadRequest(text, details=text)

    def suggest(self, kind: str, prefix: str, limit: int) -> list[str]:
        if kind == "metrics":
            self.refresh_catalog()
            names = sorted(self.catalog.metrics)
        elif kind == "tagk":
            names = self.catalog.tag_keys()
        elif kind == "tagv":
            self._recheck()
            return self._remembered(
                ("tagv", prefix, limit), lambda: self._tag_values(prefix, limit)
            )
        else:
            raise BadRequest(f"Invalid 'type' {kind[:20]!r}: metrics, tagk or tagv")
        return [n for n in names if n.startswith(prefix)][:limit]

    def _tag_values(self, prefix: str, limit: int) -> list[str]:
        """Every served tag value starting with ``prefix``, the first ``limit``: from the
        indexes, and enumerated from the keys for the tables of a schema without one."""
        for why in self.index.unlisted.values():
            raise Unlisted(why)
        reader = self.reader()
        found = set(self.index.tag_values(reader, prefix, limit))
        for combo in self._unindexed_series(reader):
            found.update(v for v in combo.values() if v.startswith(prefix))
        return sorted(found)[:limit]

    def _unindexed_series(self, reader: reads.Reader) -> list[dict]:
        out: list[dict] = []
        seen = set()
        for metric in self.catalog.metrics.values():
            for source in metric.points + metric.rollups:
                if source.table.name in seen or self.index.covers(source):
                    continue
                seen.add(source.table.name)
                try:
                    out += self._series_of(reader, source, ())
                except MissingTable:  # not landed yet
                    continue
        return out

    def _series_of(
        self, reader: reads.Reader, source, filters: Sequence[TagFilter], limit: int = 0
    ) -> list[dict]:
        """The tag values of the series of ``source`` passing ``filters``: from its index, or
        (a schema without one) enumerated from the keys, bounded, cached a while; on the
        request's ``reader`` (one deadline for all its reads)."""
        if self.index.covers(source):
            return self.index.series(reader, source, filters, None, limit)
        return [_tags(source, combo) for combo in self._key_series(reader, source, filters)]

    def _key_series(
        self, reader: reads.Reader, source, filters: Sequence[TagFilter]
    ) -> tuple[dict, ...]:
        """The series of ``source`` passing ``filters`` as the keys of a schema without an
        index list them (its key fields before the time, :func:`reads.plan`'s combos), bounded,
        cached a while; over the bound or the deadline the error names the index."""
        per = source.field if source.table.rows_per is not None else None  # in the key's prefix
        key = (source.schema.dataset, source.table.name, per, tuple(filters))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        given = {f.tagk for f in filters}
        open_tags = [
            request.tag_filter(t, "wildcard", "*", True) for t in source.tags if t not in given
        ]
        try:
            planned = reads.plan(reader, source, [*filters, *open_tags], Window(0, 1))
        except TooLarge as exc:  # the keys hold too many series: an index lists them
            raise TooLarge.because(exc, hint=holding.INDEX_HINT) from exc
        except Timeout as exc:  # or take too long to list
            raise Timeout.because(exc, hint=holding.INDEX_HINT) from exc
        self._cache.put(key, planned.combos)
        return planned.combos

    def lookup(self, search: lookup_lib.Lookup) -> dict:
        """``/api/search/lookup`` (:mod:`btts.tsdb.lookup`): the series of the metric (every
        served one when none is named) that have the tag keys, pass the pairs and hold the
        metric, from the indexes (or, without one, the keys and the rows' qualifiers); at most
        ``limit`` (0 or less: all, as OpenTSDB)."""
        self._recheck()
        if search.metric is not None and search.metric not in self.catalog.metrics:
            self.refresh_catalog(REFRESH_MISS_S)
        metrics = self._lookup_metrics(search)
        wanted = search.limit if search.limit > 0 else MAX_LOOKUP

        def work() -> list[dict]:
            reader = self.reader()  # one deadline for the whole lookup
            out: list[dict] = []
            resolved: set[str] = set()  # index tables the lookup's values were checked on
            for metric in metrics:
                needed = search.tag_keys
                source = next(
                    (s for s in metric.points + metric.rollups if needed <= set(s.tags)), None
                )
                if source is None:
                    continue
                own = self.index.name(source) if self.index.covers(source) else None
                if own is not None and own not in resolved:  # the metrics of one index: once
                    self._resolve_lookup(reader, source, search)
                    resolved.add(own)
                for combo in self._lookup_series(reader, source, search, wanted - len(out)):
                    out.append(
                        {"tsuid": tsuids.encode(metric.name, combo), "metric": metric.name,
                         "tags": combo}
                    )  # fmt: skip
                if len(out) >= wanted:
                    break
            return out[:wanted]

        results = self._remembered(("lookup", search, wanted), work)
        head = {"type": "LOOKUP"} | ({"metric": metrics[0].name} if search.metric else {})
        return head | {
            "tags": [{"key": k, "value": v} for k, v in search.pairs],
            "limit": search.limit,
            "time": 0,
            "results": results,
            "startIndex": 0,
            "totalResults": len(results),  # OpenTSDB: the series it returns
        }

    def _lookup_metrics(self, search: lookup_lib.Lookup) -> list[Metric]:
        """The metrics a lookup lists series of; an unknown metric, or a tag key no served
        metric has, is OpenTSDB's "not found" (its name has no UID)."""
        if search.metric is not None:
            try:
                metrics = [self.catalog.get(search.metric)]
            except UnknownName as exc:  # OpenTSDB's lookup answers "not found", its query a 400
                raise NotFound.because(exc) from exc
        else:
            metrics = [self.catalog.metrics[n] for n in sorted(self.catalog.metrics)]
        known = {t for m in self.catalog.metrics.values() for t in m.tags}
        missing = sorted(search.tag_keys - known)
        if missing:
            why = f"No such name for 'tagk': '{missing[0]}'"
            raise NotFound("Unable to resolve one or more UIDs", details=why)
        return metrics

    def _lookup_series(
        self, reader: reads.Reader, source, search: lookup_lib.Lookup, wanted: int
    ) -> list[dict]:
        """The tag values of the series of ``source`` a lookup lists: a key alone is any
        value of it; a value alone (OR'd with the others) checked on what the index gives.
        Without an index the keys list series, not metrics: only those whose rows hold the
        metric are kept (:func:`holding.held`: keys and qualifiers read, never values)."""
        any_value = [request.tag_filter(k, "wildcard", "*", False) for k in search.keys]
        filters = (*search.filters, *any_value)

        def asked(tags: dict) -> bool:
            return not search.values or any(v in search.values for v in tags.values())

        if not self.index.covers(source):
            key = ("held", source.schema.dataset, source.name, source.field, source.entry)
            key += (filters, search.values, wanted)
            hit = self._cache.get(key)
            if hit is None:
                combos = self._key_series(reader, source, filters)
                found = holding.held(
                    reader, source, combos, wanted, lambda c: asked(_tags(source, c))
                )
                hit = [_tags(source, c) for c in found]
                self._cache.put(key, hit)
            return hit
        if not search.values:
            return self._series_of(reader, source, filters, wanted)[:wanted]
        found = self._series_of(reader, source, filters)
        return [c for c in found if asked(c)][:wanted]

    def _resolve_lookup(self, reader: reads.Reader, source, search: lookup_lib.Lookup) -> None:
        """A lookup's tag value nobody has: OpenTSDB's "not found" (SearchRpc,
        NoSuchUniqueName)."""
        values = [
            f.filter for f in search.filters if f.type == "literal_or" and "|" not in f.filter
        ]
        values += search.values
        missing = self.missing_value(reader, source, values)
        if missing is not None:
            why = f"No such name for 'tagv': '{missing}'"
            raise NotFound("Unable to resolve one or more UIDs", details=why)

    def missing_value(self, reader: reads.Reader, source, values: Sequence[str]) -> str | None:
        """The first of ``values`` no served index lists as a tag value (OpenTSDB: a name
        without a UID); None when all are known, or nothing can be said (no index yet)."""
        if not values:
            return None
        known = self.index.present(reader, source, values)
        if known is None:  # no index table yet (nothing landed): nothing to resolve against
            return None
        return next((v for v in values if v not in known), None)


def _tags(source, combo: dict) -> dict:
    """A series' tags as text, from its key fields' values (the rows' field left out)."""
    return {t: str(v) for t, v in combo.items() if t in source.tags}


def _indexed_source(metric: Metric, series_index: index.SeriesIndex):
    return next((s for s in metric.points + metric.rollups if series_index.covers(s)), None)
