"""``/api/query/last``: the latest point of each series, as OpenTSDB 2.4.1's
``QueryRpc.handleLastDataPointQuery`` answers it.

A sub-query names series by ``metric{tag=value,…}`` (``timeseries=``, or ``queries`` in a POST
body) or by TSUID (:mod:`btts.tsdb.tsuids`). With ``back_scan`` N (hours) OpenTSDB reads the
row of the current hour and up to N before it, for the one series whose tags are exactly those
given; so does btts. Without it OpenTSDB asks its meta table when each series matching the
tags was last written; btts has no such table and reads the data instead, in windows that
double going back from now (an hour, two, four…) until every series the metric has for those
tags has its point or the table's earliest time is passed: bounded by the request's deadline,
and reading about twice the time between now and the oldest of those last points.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from btts.tsdb import answer, lookup, mquery, planning, request, series, tsuids
from btts.tsdb.errors import BadRequest, UnknownName
from btts.tsdb.request import SubQuery, TsQuery
from btts.tsdb.service import Service
from transforms.errors import BttsError

__all__ = ["answer_last", "parse_last_body", "parse_last_get"]

HOUR_MS = 3_600_000
MAX_BACK_SCAN = 24 * 366 * 10  # hours: ten years of rows, one by one in OpenTSDB
FUTURE_MS = 366 * 86_400_000  # points stamped up to a year ahead of the clock are found
_SPECIAL = set(",={}()|*")


@dataclass(frozen=True)
class LastSub:
    metric: str
    tags: tuple[tuple[str, str], ...]
    exact: bool = False  # named by TSUID: that one series


@dataclass(frozen=True)
class LastQuery:
    subs: tuple[LastSub, ...]
    resolve: bool = False
    back_scan: int = 0


def _back_scan(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise BadRequest("Unable to parse back_scan parameter")
    text = str(value).strip()
    if not text.lstrip("-").isdigit():
        raise BadRequest("Unable to parse back_scan parameter")
    if int(text) < 0:
        raise BadRequest("Backscan must be zero or a positive number")
    return min(int(text), MAX_BACK_SCAN)


def _named(text: str) -> LastSub:
    """``metric{tag=value,…}`` (``Tags.parseWithMetric``): exact values only."""
    metric, filters = mquery.parse_metric(text)
    tags = []
    for f in filters:
        if f.type != "literal_or" or "|" in f.filter:
            raise BadRequest(f"The last data point takes exact tag values: {f.tagk}={f.filter}")
        tags.append((f.tagk, f.filter))
    return LastSub(metric, tuple(sorted(tags)))


def _by_tsuid(tsuid: object) -> LastSub:
    if not isinstance(tsuid, str):
        raise BadRequest("A TSUID must be text")
    metric, tags = tsuids.decode(tsuid)
    return LastSub(metric, tuple(sorted(tags.items())), exact=True)


def parse_last_get(params: Mapping[str, list[str]]) -> LastQuery:
    """``?timeseries=metric{tags}&tsuids=A,B&resolve&back_scan=N``."""
    subs = [_named(t) for t in params.get("timeseries") or []]
    for text in params.get("tsuids") or []:
        subs += [_by_tsuid(t) for t in text.split(",")]
    if not subs:
        raise BadRequest("Missing sub queries")
    back = _back_scan((params.get("back_scan") or ["0"])[0])
    return LastQuery(tuple(subs), mquery.flag(params, "resolve"), back)


def _body_sub(raw: object) -> list[LastSub]:
    if not isinstance(raw, dict):
        raise BadRequest("Each query must be a JSON object")
    if raw.get("tsuids"):
        if not isinstance(raw["tsuids"], list):
            raise BadRequest("tsuids must be a list")
        return [_by_tsuid(t) for t in raw["tsuids"]]
    metric, tags = raw.get("metric"), raw.get("tags") or {}
    if not isinstance(metric, str) or not metric:
        raise BadRequest("The metric cannot be empty")
    if not isinstance(tags, dict) or not all(isinstance(v, str) for v in tags.values()):
        raise BadRequest("tags must be an object of text values")
    return [LastSub(metric, tuple(sorted((str(k), v) for k, v in tags.items())))]


def parse_last_body(body: object) -> LastQuery:
    """``{"queries": [{"metric", "tags"} | {"tsuids"}], "resolveNames", "backScan"}``."""
    if not isinstance(body, dict):
        raise BadRequest("The query body must be a JSON object")
    raw = body.get("queries")
    if not isinstance(raw, list) or not raw:
        raise BadRequest("Missing sub queries")
    subs = [s for one in raw for s in _body_sub(one)]
    back = _back_scan(body.get("backScan", 0) if body.get("backScan") is not None else 0)
    return LastQuery(tuple(subs), request.truth(body.get("resolveNames")), back)


# -- answering --------------------------------------------------------------------------------


def _window(svc: Service, reader, sub: LastSub, start: int, end: int) -> dict[tuple, tuple]:
    """``{series key: (ts, value)}``: each series' latest point in ``[start, end]``."""
    filters = tuple(request.tag_filter(k, "literal_or", v, False) for k, v in sub.tags)
    sub_query = SubQuery(0, sub.metric, "none", filters=filters)
    ts_query = TsQuery(max(start, request.EARLIEST_MS), end, (sub_query,))
    asked = planning.asked(sub_query, ts_query)
    metric = svc.catalog.get(sub.metric)
    planned = planning.plan_sub(reader, metric, asked)  # no downsample: no budget to check
    out = {}
    for r in answer.run_sub(reader, planned):
        if r.dps:
            out[tuple(sorted(r.tags.items()))] = r.dps[-1]
    return out


def _known(svc: Service, sub: LastSub) -> set[tuple] | None:
    """The series the metric has for these tags (to stop early), when they can be listed."""
    if sub.exact:
        return {sub.tags}
    if any(_SPECIAL & set(k + v) for k, v in sub.tags):
        return None
    text = sub.metric + "{" + ",".join(f"{k}={v}" for k, v in sub.tags) + "}"
    try:
        found = svc.lookup(lookup.parse_m(text, 0))["results"]
    except BttsError:  # refused, too many, too slow, Bigtable down: read without the list
        return None
    return {tuple(sorted(r["tags"].items())) for r in found}


def _check(svc: Service, reader, sub: LastSub) -> None:
    if sub.metric not in svc.catalog.metrics:
        svc.refresh_catalog(5.0)
    metric = svc.catalog.get(sub.metric)
    for tagk, _ in sub.tags:
        if tagk not in metric.tags:
            raise UnknownName(f"No such name for 'tagk': '{tagk}'")
    source = svc.indexed_source(metric)
    if source is None or sub.exact:
        return
    pinned = {s.field for s in source.table.decl.key.segments if s.kind == "tenant"}
    values = [v for k, v in sub.tags if not (svc.tenant and k in pinned)]  # the server's own
    missing = svc.missing_value(reader, source, values)  # OpenTSDB resolves each value
    if missing is not None:
        raise UnknownName(f"No such name for 'tagv': '{missing}'")


def _latest(svc: Service, reader, sub: LastSub, back_scan: int, now_ms: int) -> dict:
    """``{series key: (ts, value)}`` for one sub-query."""
    hour = now_ms - now_ms % HOUR_MS
    if back_scan > 0:
        if not sub.tags:
            raise BadRequest("Tags cannot be null or empty when getting a TSUID")
        found = _window(svc, reader, sub, hour - back_scan * HOUR_MS, hour + HOUR_MS - 1)
        return {k: p for k, p in found.items() if k == sub.tags}  # exactly those tags
    known = _known(svc, sub)
    if known is not None and not known:
        return {}
    found: dict = {}
    end, size = now_ms + FUTURE_MS, HOUR_MS
    start = hour - size
    while end > request.EARLIEST_MS:
        for key, point in _window(svc, reader, sub, start, end).items():
            found.setdefault(key, point)
        if known is not None and known <= set(found):
            break
        end, size = start - 1, size * 2
        start = max(request.EARLIEST_MS, end + 1 - size)
    return {k: p for k, p in found.items() if not sub.exact or k == sub.tags}


def answer_last(svc: Service, last_query: LastQuery, now_ms: int | None = None) -> list[dict]:
    """The answer: one ``{timestamp, value, tsuid}`` per series (with ``metric`` and
    ``tags`` when ``resolve``), the value as text (``IncomingDataPoint``), the time in ms."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    reader = svc.reader()
    out = []
    for sub in last_query.subs:
        _check(svc, reader, sub)
        for key, (ts, value) in sorted(
            _latest(svc, reader, sub, last_query.back_scan, now_ms).items()
        ):
            tags = dict(key)
            point: dict = {"metric": sub.metric} if last_query.resolve else {}
            point.update(timestamp=ts, value=series.render_number(value).strip('"'))
            if last_query.resolve:
                point["tags"] = tags
            point["tsuid"] = tsuids.encode(sub.metric, tags)
            out.append(point)
    return out
