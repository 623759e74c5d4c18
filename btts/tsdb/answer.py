"""One ``/api/query`` request answered: plan and read each sub-query, then OpenTSDB's
arithmetic (:mod:`btts.tsdb.series`), then the response list, rendered as JSON with decimals
exactly as stored.

A downsample of whole hours with ``avg``, ``sum`` or ``count`` reads the metric's rollup table
(hourly sums and counts) for the whole hours of the range, and the points only for the partial
hours at its edges; ``showQuery`` says which tables and ranges answered.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace

from btts.tsdb import budget, reads, series
from btts.tsdb.catalog import Catalog, Metric
from btts.tsdb.request import BadRequest, SubQuery, TsQuery

__all__ = ["ROLLUP_AGGREGATORS", "Limits", "Result", "answer", "render", "run_sub"]

ROLLUP_AGGREGATORS = ("avg", "sum", "count")


@dataclass
class Limits:
    max_points: int = 100_000
    max_scan_rows: int = 0
    deadline_s: float = 30.0


@dataclass
class Result:
    metric: str
    tags: dict
    aggregate_tags: list
    dps: list
    query: dict | None = None


def _rollup_source(metric: Metric, q: SubQuery, tenant: str | None, allow_scan: bool):
    """The rollup table answering ``q``'s downsample, and whether it is a bounded scan."""
    ds = q.downsample
    if ds is None or ds.aggregator not in ROLLUP_AGGREGATORS or not metric.rollups:
        return None, False
    if ds.interval_ms == 0 or ds.interval_ms % reads.HOUR_MS:
        return None, False
    tags = {f.tagk for f in q.filters}
    for source in metric.rollups:
        if tags <= set(source.tags):
            missing = reads.missing_tag(source, q.filters, tenant)
            if missing is None or (allow_scan and not metric.points):
                return source, missing is not None
    return None, False


def run_sub(
    reader: reads.Reader, catalog: Catalog, q: SubQuery, tq: TsQuery, limits: Limits
) -> list[Result]:
    try:
        metric = catalog.get(q.metric)
    except LookupError as exc:
        raise BadRequest(str(exc)) from None
    ds = q.downsample
    filled = ds is not None and ds.fill != "none" and ds.interval_ms
    if filled and series.bucket_count(tq.start_ms, tq.end_ms, ds.interval_ms) > limits.max_points:
        raise BadRequest(
            f"The downsample makes more than --max_points={limits.max_points} points: "
            "use a longer interval",
            413,
        )
    allow_scan = limits.max_scan_rows > 0
    described: list[str] = []
    rollup, rollup_scan = _rollup_source(metric, q, reader.tenant, allow_scan)
    partials: dict | None = None
    if rollup is not None:
        first, last = reads.whole_hours(tq.start_ms, tq.end_ms)
        partials = {}
        if first < last:
            rp = reads.plan(reader, rollup, q.filters, first, last, rollup_scan)
            budget.check_series(q, tq, max(len(rp.combos), 1), limits.max_points)
            rp.scans = [replace(s, start_ms=None, end_ms=None) for s in rp.scans]
            described.append(f"rollup {rollup.name} (hourly sum/count) for whole hours")
            described += rp.describe()
            for key, parts in reads.read_rollup(reader, rp, q.filters, first, last).items():
                partials.setdefault(key, []).extend(parts)
        edges = [(a, b) for a, b in ((tq.start_ms, first), (last, tq.end_ms)) if a < b]
        if edges and metric.points:
            source, scanning = reads.choose(metric, q.filters, reader.tenant, allow_scan)
            for a, b in edges:
                p = reads.plan(reader, source, q.filters, a, b, scanning)
                described += [f"points of the partial hour(s) from {source.name}", *p.describe()]
                for key, points in reads.read_points(reader, p, q.filters).items():
                    hours: dict[int, list] = {}
                    for ts, v in points:
                        acc = hours.setdefault(ts - ts % reads.HOUR_MS, [0, 0])
                        acc[0] += v
                        acc[1] += 1
                    partials.setdefault(key, []).extend((h, s, c) for h, (s, c) in hours.items())
        elif edges:
            described.append("no point table: the partial hours at the edges are left out")
        data = {
            key: series.downsample_partials(
                sorted(parts), ds.interval_ms, ds.aggregator, ds.fill, tq.start_ms, tq.end_ms
            )
            for key, parts in partials.items()
        }
    else:
        if not metric.points and metric.rollups:
            need = reads.missing_tag(metric.rollups[0], q.filters, reader.tenant)
            if need and not allow_scan:
                raise reads.NeedsTag(
                    f"{metric.name}: the query would scan table {metric.rollups[0].name} (key "
                    f"{metric.rollups[0].key_text()}): give the tag {need}"
                )
            raise BadRequest(
                f"{metric.name} is only kept as hourly sums and counts ({metric.rollups[0].name}): "
                "downsample it by 1h (or a multiple) with avg, sum or count"
            )
        source, scanning = reads.choose(metric, q.filters, reader.tenant, allow_scan)
        p = reads.plan(reader, source, q.filters, tq.start_ms, tq.end_ms, scanning)
        budget.check_series(q, tq, max(len(p.combos), 1), limits.max_points)
        described += p.describe()
        data = reads.read_points(reader, p, q.filters)
        if ds is not None:
            data = {
                key: series.downsample(
                    pts, ds.interval_ms, ds.aggregator, ds.fill, tq.start_ms, tq.end_ms
                )
                for key, pts in data.items()
            }
    if q.rate is not None:
        r = q.rate
        data = {
            key: series.rate(pts, r.counter, r.counter_max, r.reset_value, r.drop_resets)
            for key, pts in data.items()
        }
    results = _group(metric.name, data, q, ds is None)
    if tq.show_query:
        shown = {**dict(q.raw), "index": q.index, "btts": {"reads": described}}
        for r in results:
            r.query = shown
    return results


def _group(name: str, data: dict, q: SubQuery, interpolate: bool) -> list[Result]:
    group_by = sorted({f.tagk for f in q.filters if f.group_by})
    groups: dict[tuple, list] = {}
    for key in sorted(data):
        labels = dict(key)
        groups.setdefault(tuple(labels.get(t, "") for t in group_by), []).append(key)
    fill = series.fill_value(q.downsample.fill) if q.downsample else None
    out = []
    for members in groups.values():
        if q.aggregator == "none":
            for key in members:
                out.append(Result(name, dict(key), [], data[key]))
            continue
        all_tags = [dict(k) for k in members]
        common = {
            t: v for t, v in all_tags[0].items() if all(other.get(t) == v for other in all_tags)
        }
        aggregated = sorted({t for tags in all_tags for t in tags} - set(common))
        dps = series.aggregate([data[k] for k in members], q.aggregator, interpolate, fill)
        out.append(Result(name, common, aggregated, dps))
    return [r for r in out if r.dps]


def answer(reader: reads.Reader, catalog: Catalog, tq: TsQuery, limits: Limits) -> list[Result]:
    results: list[Result] = []
    budget.check_request(tq, limits.max_points)
    for q in tq.queries:
        results += run_sub(reader, catalog, q, tq, limits)
        budget.check_deadline(reader.until)
    total = sum(len(r.dps) for r in results)
    if total > limits.max_points:
        raise BadRequest(
            f"The answer has {total} points, more than --max_points={limits.max_points}: "
            "downsample or narrow the time range",
            413,
        )
    return results


def render(results: Sequence[Result], ms_resolution: bool) -> bytes:
    """The response body: OpenTSDB's list of ``{metric, tags, aggregateTags, dps}``."""
    parts = []
    for r in results:
        dps: dict[int, str] = {}
        for ts, value in r.dps:
            dps[ts if ms_resolution else ts // 1000] = series.render_number(value)
        body = ",".join(f'"{t}":{v}' for t, v in dps.items())
        head = {"metric": r.metric, "tags": r.tags, "aggregateTags": r.aggregate_tags}
        if r.query is not None:
            head["query"] = r.query
        text = json.dumps(head)
        parts.append(text[:-1] + ',"dps":{' + body + "}}")
    return ("[" + ",".join(parts) + "]").encode("utf-8")
