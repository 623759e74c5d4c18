"""One ``/api/query`` request answered: plan and read each sub-query, then OpenTSDB's
arithmetic (:mod:`btts.tsdb.series`), then the response list, rendered as JSON with decimals
exactly as stored.

A downsample of whole hours with ``avg``, ``sum`` or ``count`` reads the metric's rollup table
(hourly sums and counts) for the whole hours of the read window, and the points only for any
partial hour at its edges; ``showQuery`` says which tables and ranges answered.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from btts.tsdb import budget, reads, series, tsuids
from btts.tsdb.catalog import Catalog, Metric, Source
from btts.tsdb.errors import BadRequest, TooLarge
from btts.tsdb.request import SubQuery, TsQuery

__all__ = ["Limits", "Stats", "answer", "render", "run_sub"]

ROLLUP_AGGREGATORS = ("avg", "sum", "count")


@dataclass
class Limits:
    max_points: int = 100_000
    deadline_s: float = 30.0


@dataclass
class Result:
    metric: str
    tags: dict
    aggregate_tags: list
    dps: list
    query: dict | None = None
    fill: str = "none"  # how a missing value is written: null for "null", else "NaN"
    members: list = field(default_factory=list)  # the series keys aggregated here
    index: int = 0  # the sub-query answered


def _rollup_source(metric: Metric, q: SubQuery) -> Source | None:
    """The rollup table answering ``q``'s downsample (hourly sums and counts), if any: a key
    field the query leaves open is enumerated from the keys, as for the points."""
    ds = q.downsample
    if ds is None or ds.aggregator not in ROLLUP_AGGREGATORS or not metric.rollups:
        return None
    if ds.interval_ms == 0 or ds.interval_ms % reads.HOUR_MS or ds.calendar is not None:
        return None
    tags = {f.tagk for f in q.filters}
    return next((s for s in metric.rollups if tags <= set(s.tags)), None)


def _rollup_partials(
    reader: reads.Reader,
    metric: Metric,
    rollup: Source,
    q: SubQuery,
    window,
    described: list,
    check: Callable[[int], None],
) -> dict:
    """``{series: [(hour, sum, count)…]}`` over the read window: the rollup's whole hours, the
    points of any partial hour at the edges."""
    first, last = reads.whole_hours(*window)
    partials: dict = {}
    covered: set | None = None
    if first < last:
        rp = reads.plan(reader, rollup, q.filters, first, last)
        check(max(len(rp.combos), 1))  # the point budget, before the read
        covered = {_series_key(c, rollup.tags) for c in rp.combos}
        rp.scans = [replace(s, start_ms=None, end_ms=None) for s in rp.scans]
        described.append(f"rollup {rollup.name} (hourly sum/count) for whole hours")
        described += rp.describe()
        for key, parts in reads.read_rollup(reader, rp, q.filters, first, last).items():
            partials.setdefault(key, []).extend(parts)
    edges = [(a, b) for a, b in ((window[0], first), (last, window[1])) if a < b]
    if edges and not metric.points:
        described.append("no point table: the partial hours at the edges are left out")
        return partials, covered
    for a, b in edges:
        source = reads.choose(metric, q.filters, reader.tenant)
        p = reads.plan(reader, source, q.filters, a, b)
        described += [f"points of the partial hour(s) from {source.name}", *p.describe()]
        for key, points in reads.read_points(reader, p, q.filters).items():
            hours: dict[int, list] = {}
            for ts, v in points:
                acc = hours.setdefault(ts - ts % reads.HOUR_MS, [0, 0])
                acc[0] += v
                acc[1] += 1
            partials.setdefault(key, []).extend((h, s, c) for h, (s, c) in hours.items())
    return partials, covered


def _series_key(combo: dict, tags) -> tuple:
    return tuple(sorted((t, str(v)) for t, v in combo.items() if t in tags))


def _uncovered(reader, metric: Metric, q: SubQuery, window, covered, described: list) -> dict:
    """The points of the series the point table holds and the rollup does not (landed
    without ``--hourly_rollup``): a rollup answers only for what it covers."""
    if covered is None or not metric.points:
        return {}
    source = reads.choose(metric, q.filters, reader.tenant)
    p = reads.plan(reader, source, q.filters, *window)
    if not p.combos or len(p.combos) != len(p.scans):  # salted: no per-series ranges
        return {}
    tags = {t for key in covered for t, _ in key}
    keep = [i for i, c in enumerate(p.combos) if _series_key(c, tags) not in covered]
    if not keep:
        return {}
    p.scans = [p.scans[i] for i in keep]
    p.combos = [p.combos[i] for i in keep]
    described += [f"{len(keep)} series the rollup lacks, from {source.name}", *p.describe()]
    return reads.read_points(reader, p, q.filters)


def run_sub(
    reader: reads.Reader, catalog: Catalog, q: SubQuery, tq: TsQuery, limits: Limits
) -> list[Result]:
    """One sub-query: read the window OpenTSDB would read (:func:`series.scan_window`) from
    the table whose key serves it, then :func:`compute`."""
    metric = catalog.get(q.metric)
    ds = q.downsample
    filled = ds is not None and ds.fill != "none" and ds.interval_ms
    if filled and series.bucket_count(tq.start_ms, tq.end_ms, ds.interval_ms) > limits.max_points:
        raise TooLarge(
            f"The downsample makes more than --max_points={limits.max_points} points: "
            "use a longer interval"
        )
    described: list[str] = []
    window = series.scan_window(tq.start_ms, tq.end_ms, ds.interval_ms if ds else 0)
    rollup = _rollup_source(metric, q)
    if rollup is not None:
        check = functools.partial(budget.check_series, q, tq, max_points=limits.max_points)
        partials, covered = _rollup_partials(reader, metric, rollup, q, window, described, check)
        data = {
            key: series.downsample_partials(
                sorted(parts), ds.interval_ms, ds.aggregator, ds.fill, *window, _fill_span(ds, tq)
            )
            for key, parts in partials.items()
        }
        for key, pts in _uncovered(reader, metric, q, window, covered, described).items():
            data[key] = series.downsample(
                pts, ds.interval_ms, ds.aggregator, ds.fill, *window, None, _fill_span(ds, tq)
            )
        results = compute(metric.name, data, q, tq, downsampled=True)
    else:
        if not metric.points and metric.rollups:
            raise BadRequest(
                f"{metric.name} is only kept as hourly sums and counts ({metric.rollups[0].name}): "
                "downsample it by 1h (or a multiple) with avg, sum or count"
            )
        source = reads.choose(metric, q.filters, reader.tenant)
        p = reads.plan(reader, source, q.filters, *window)
        budget.check_series(q, tq, max(len(p.combos), 1), limits.max_points)
        described += p.describe()
        results = compute(metric.name, reads.read_points(reader, p, q.filters), q, tq)
    for r in results:
        if r.query is not None:  # showQuery: which tables and ranges answered
            r.query["btts"] = {"reads": described}
    return results


def _fill_span(ds, tq: TsQuery) -> tuple[int, int]:
    """The buckets a fill must make: those the answer shows and the one before (a rate)."""
    return tq.start_ms - ds.interval_ms, tq.end_ms + ds.interval_ms


def _bucket_window(ds, tq: TsQuery) -> tuple[int, int]:
    """The window a series is downsampled over: ``0all`` is one bucket of the query range
    itself, an interval buckets the whole read window."""
    if ds.interval_ms == 0:
        return tq.start_ms, tq.end_ms
    return series.scan_window(tq.start_ms, tq.end_ms, ds.interval_ms)


def compute(
    name: str, data: dict, q: SubQuery, tq: TsQuery, downsampled: bool = False
) -> list[Result]:
    """The answer of one sub-query from the points read over its scan window
    (``{series key: [(ts, value), …]}``), in OpenTSDB's order: downsample, rate, group and
    aggregate, clip to ``[start, end]``. Pure: the conformance suite runs it directly."""
    if q.explicit_tags:  # explicitTags: the series whose tags are exactly the ones named
        named = {f.tagk for f in q.filters}
        data = {key: pts for key, pts in data.items() if {t for t, _ in key} == named}
    ds = q.downsample
    if ds is not None and not downsampled:
        window, span = _bucket_window(ds, tq), _fill_span(ds, tq)
        data = {
            key: series.downsample(
                pts, ds.interval_ms, ds.aggregator, ds.fill, *window, ds.calendar, span
            )
            for key, pts in data.items()
        }
    if q.rate is not None:
        r = q.rate
        data = {
            key: series.rate_span(pts, r.counter, r.counter_max, r.reset_value, r.drop_resets)
            for key, pts in data.items()
        }
    return _group(name, data, q, tq)


def _group(name: str, data: dict, q: SubQuery, tq: TsQuery) -> list[Result]:
    group_by = sorted({f.tagk for f in q.filters if f.group_by})
    groups: dict[tuple, list] = {}
    for key in sorted(data):
        labels = dict(key)
        groups.setdefault(tuple(labels.get(t, "") for t in group_by), []).append(key)
    fill = q.downsample.fill if q.downsample else "none"
    rates, downsampled = q.rate is not None, q.downsample is not None
    out = []
    for members in groups.values():
        if q.aggregator == "none":
            for key in members:
                dps = series.aggregate([data[key]], "none", rates)
                out.append(Result(name, dict(key), [], dps, fill=fill, members=[key]))
            continue
        all_tags = [dict(k) for k in members]
        common = {
            t: v for t, v in all_tags[0].items() if all(other.get(t) == v for other in all_tags)
        }
        aggregated = sorted({t for tags in all_tags for t in tags} - set(common))
        dps = series.aggregate([data[k] for k in members], q.aggregator, rates, downsampled)
        out.append(Result(name, common, aggregated, dps, fill=fill, members=members))
    shown = {**dict(q.raw), "index": q.index} if tq.show_query else None
    for r in out:
        r.dps = series.clip(r.dps, tq.start_ms, tq.end_ms)
        r.query = shown  # showQuery: the sub-query as asked, with its index
    return [r for r in out if r.dps]


@dataclass
class Stats:
    """What ``showStats`` and ``showSummary`` report, under OpenTSDB's ``QueryStats`` names
    (times in ms): per sub-query the rows read, the points emitted and the time taken."""

    started: float = field(default_factory=time.monotonic)
    queries: dict[int, dict] = field(default_factory=dict)

    def add(self, q: SubQuery, rows: int, seconds: float, results: Sequence[Result]) -> None:
        self.queries[q.index] = {
            "queryIndex": q.index,
            "rowsFromStorage": rows,
            "emittedDPs": sum(len(r.dps) for r in results),
            "queryScanTime": round(seconds * 1000, 3),
        }


def answer(
    reader: reads.Reader,
    catalog: Catalog,
    tq: TsQuery,
    limits: Limits,
    stats: Stats | None = None,
) -> list[Result]:
    results: list[Result] = []
    budget.check_request(tq, limits.max_points)
    for q in tq.queries:
        began, rows = time.monotonic(), reader.rows_read
        mine = run_sub(reader, catalog, q, tq, limits)
        for r in mine:
            r.index = q.index
        if stats is not None:
            stats.add(q, reader.rows_read - rows, time.monotonic() - began, mine)
        results += mine
        budget.check_deadline(reader.until)
    total = sum(len(r.dps) for r in results)
    if total > limits.max_points:
        raise TooLarge(
            f"The answer has {total} points, more than --max_points={limits.max_points}: "
            "downsample or narrow the time range"
        )
    return results


def _dps(r: Result, ms_resolution: bool, arrays: bool) -> str:
    dps: dict[int, str] = {}
    fill = "null" if arrays else r.fill
    for ts, value in r.dps:
        dps[ts if ms_resolution else ts // 1000] = series.render_number(value, fill)
    if arrays:
        return "[" + ",".join(f"[{t},{v}]" for t, v in dps.items()) + "]"
    return "{" + ",".join(f'"{t}":{v}' for t, v in dps.items()) + "}"


def _summary(stats: Stats, serialization_ms: float) -> dict:
    """``{"statsSummary": …}``: the request's totals and each sub-query's stats."""
    total = round((time.monotonic() - stats.started) * 1000, 3)
    out: dict = {
        "totalTime": total,
        "processingPreWriteTime": round(total - serialization_ms, 3),
        "serializationTime": serialization_ms,
        "emittedDPs": sum(q["emittedDPs"] for q in stats.queries.values()),
        "rowsFromStorage": sum(q["rowsFromStorage"] for q in stats.queries.values()),
    }
    for index, q in sorted(stats.queries.items()):
        out[f"queryIdx_{index:02d}"] = q
    return {"statsSummary": out}


def render(
    results: Sequence[Result],
    ms_resolution: bool,
    arrays: bool = False,
    tq: TsQuery | None = None,
    stats: Stats | None = None,
) -> bytes:
    """The response body: OpenTSDB's list of ``{metric, tags, aggregateTags, dps}``; with
    ``arrays`` (``?arrays=true``) ``dps`` is ``[[ts, value], …]`` and a missing value is
    ``null`` (Grafana's Go backend decodes numbers only). As ``HttpJsonSerializer`` writes
    them: ``query`` (showQuery) and ``tsuids`` (showTSUIDs) before ``dps``, ``stats``
    (showStats) after, and a last element ``{"statsSummary": …}`` (showSummary)."""
    began = time.monotonic()
    parts = []
    for r in results:
        head: dict = {"metric": r.metric, "tags": r.tags, "aggregateTags": r.aggregate_tags}
        if r.query is not None:
            head["query"] = r.query
        if tq is not None and tq.show_tsuids:
            head["tsuids"] = sorted(tsuids.encode(r.metric, dict(k)) for k in r.members)
        text = json.dumps(head)[:-1] + ',"dps":' + _dps(r, ms_resolution, arrays)
        if tq is not None and tq.show_stats and stats is not None:
            text += ',"stats":' + json.dumps(stats.queries.get(r.index, {"queryIndex": r.index}))
        parts.append(text + "}")
    if tq is not None and tq.show_summary and stats is not None:
        serialization = round((time.monotonic() - began) * 1000, 3)
        parts.append(json.dumps(_summary(stats, serialization)))
    return ("[" + ",".join(parts) + "]").encode("utf-8")
