"""One ``/api/query`` request answered: each sub-query planned once
(:func:`btts.tsdb.planning.plan_sub`), its rows read, then OpenTSDB's arithmetic
(:mod:`btts.tsdb.series`) on the planned value, then the response list, rendered as JSON with
decimals exactly as stored.

A sub-query a rollup table answers (:class:`~btts.tsdb.reads.QueryReads`' ``rollup``) reads the
rollup's hourly sums and counts for the whole hours of its read window and the points only for
any partial hour at its edges; ``showQuery`` says which tables and ranges answered.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from btts.tsdb import budget, planning, points, reads, series, tsuids
from btts.tsdb.catalog import Catalog
from btts.tsdb.errors import TooLarge
from btts.tsdb.planning import SubPlan
from btts.tsdb.request import SubQuery, TsQuery

__all__ = ["Limits", "Stats", "answer", "render", "run_sub"]


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


def _rollup_data(reader: reads.Reader, sub: SubPlan) -> dict:
    """``{series: downsampled points}`` of a sub-query a rollup answers: the rollup's hourly
    ``(hour, sum, count)``, the points of the partial hours summed by hour, then the series
    the rollup lacks downsampled from their points."""
    parts = sub.tables.rollup
    partials: dict = {}
    if parts.hours is not None:
        found = points.read_rollup(reader, parts.hours, sub.filters, parts.whole_hours)
        for key, sums in found.items():
            partials.setdefault(key, []).extend(sums)
    for edge in parts.edges:
        for key, pts in points.read_points(reader, edge, sub.filters).items():
            by_hour: dict[int, list] = {}
            for ts, v in pts:
                acc = by_hour.setdefault(ts - ts % reads.HOUR_MS, [0, 0])
                acc[0] += v
                acc[1] += 1
            partials.setdefault(key, []).extend((h, s, c) for h, (s, c) in by_hour.items())
    data = {
        key: series.downsample_partials(sorted(sums), sub.downsample, sub.read, sub.fill_span)
        for key, sums in partials.items()
    }
    if parts.uncovered is not None:
        for key, pts in points.read_points(reader, parts.uncovered, sub.filters).items():
            data[key] = series.downsample(pts, sub.downsample, sub.read, sub.fill_span)
    return data


def run_sub(reader: reads.Reader, sub: SubPlan) -> list[Result]:
    """One planned sub-query: read its rows (the window OpenTSDB would read, from the tables
    whose keys serve it), then :func:`compute`."""
    tables = sub.tables
    if tables.rollup is not None:
        results = compute(sub, _rollup_data(reader, sub), downsampled=True)
    else:
        results = compute(sub, points.read_points(reader, tables.points, sub.filters))
    for r in results:
        if r.query is not None:  # showQuery: which tables and ranges answered
            r.query["btts"] = {"reads": list(tables.described)}
    return results


def compute(sub: SubPlan, data: dict, downsampled: bool = False) -> list[Result]:
    """The answer of one sub-query from the points read over its scan window
    (``{series key: [(ts, value), …]}``), in OpenTSDB's order: downsample, rate, group and
    aggregate, clip to ``[start, end]``. Pure: the conformance suite runs it directly on
    :func:`planning.asked`."""
    if sub.explicit_tags:  # explicitTags: the series whose tags are exactly the ones named
        named = {f.tagk for f in sub.filters}
        data = {key: pts for key, pts in data.items() if {t for t, _ in key} == named}
    if sub.downsample is not None and not downsampled:
        data = {
            key: series.downsample(pts, sub.downsample, sub.buckets, sub.fill_span)
            for key, pts in data.items()
        }
    if sub.rate is not None:
        data = {key: series.rate_span(pts, sub.rate) for key, pts in data.items()}
    return _group(sub, data)


def _group(sub: SubPlan, data: dict) -> list[Result]:
    group_by = sorted({f.tagk for f in sub.filters if f.group_by})
    groups: dict[tuple, list] = {}
    for key in sorted(data):
        labels = dict(key)
        groups.setdefault(tuple(labels.get(t, "") for t in group_by), []).append(key)
    name, fill = sub.metric, sub.fill
    rates, downsampled = sub.rate is not None, sub.downsample is not None
    out = []
    for members in groups.values():
        if sub.aggregator == "none":
            for key in members:
                dps = series.aggregate([data[key]], "none", rates)
                out.append(Result(name, dict(key), [], dps, fill=fill, members=[key]))
            continue
        all_tags = [dict(k) for k in members]
        common = {
            t: v for t, v in all_tags[0].items() if all(other.get(t) == v for other in all_tags)
        }
        aggregated = sorted({t for tags in all_tags for t in tags} - set(common))
        dps = series.aggregate([data[k] for k in members], sub.aggregator, rates, downsampled)
        out.append(Result(name, common, aggregated, dps, fill=fill, members=members))
    for r in out:
        r.dps = series.clip(r.dps, sub.shown.start_ms, sub.shown.end_ms)
        if sub.shown_query is not None:  # showQuery: the sub-query as asked, with its index
            r.query = dict(sub.shown_query)
    return [r for r in out if r.dps]


@dataclass
class Stats:
    """What ``showStats`` and ``showSummary`` report, under OpenTSDB's ``QueryStats`` names
    (times in ms): per sub-query the rows read, the points emitted and the time taken."""

    started: float = field(default_factory=time.monotonic)
    queries: dict[int, dict] = field(default_factory=dict)

    def add(
        self, sub: SubPlan | SubQuery, rows: int, seconds: float, results: Sequence[Result]
    ) -> None:
        self.queries[sub.index] = {
            "queryIndex": sub.index,
            "rowsFromStorage": rows,
            "emittedDPs": sum(len(r.dps) for r in results),
            "queryScanTime": round(seconds * 1000, 3),
        }


def answer(
    reader: reads.Reader,
    catalog: Catalog,
    subs: Sequence[SubPlan],
    limits: Limits,
    stats: Stats | None = None,
) -> list[Result]:
    """Every sub-query as asked (:func:`planning.asked`) planned (:func:`planning.plan_sub`),
    its cost checked (:func:`budget.check_series`) and answered in turn, within the request's
    deadline; an answer of more than ``max_points`` points is a ``TooLarge``. The request's
    own budget was checked before (:func:`budget.check_request`)."""
    results: list[Result] = []
    for asked in subs:
        began, rows = time.monotonic(), reader.rows_read
        metric = catalog.get(asked.metric)
        sub = planning.plan_sub(reader, metric, asked)
        budget.check_series(sub, limits.max_points)  # before its rows are read
        mine = run_sub(reader, sub)
        for r in mine:
            r.index = sub.index
        if stats is not None:
            stats.add(sub, reader.rows_read - rows, time.monotonic() - began, mine)
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
        "emittedDPs": sum(one["emittedDPs"] for one in stats.queries.values()),
        "rowsFromStorage": sum(one["rowsFromStorage"] for one in stats.queries.values()),
    }
    for index, one in sorted(stats.queries.items()):
        out[f"queryIdx_{index:02d}"] = one
    return {"statsSummary": out}


def render(
    results: Sequence[Result],
    ms_resolution: bool,
    arrays: bool = False,
    ts_query: TsQuery | None = None,
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
        if ts_query is not None and ts_query.show_tsuids:
            head["tsuids"] = sorted(tsuids.encode(r.metric, dict(k)) for k in r.members)
        text = json.dumps(head)[:-1] + ',"dps":' + _dps(r, ms_resolution, arrays)
        if ts_query is not None and ts_query.show_stats and stats is not None:
            text += ',"stats":' + json.dumps(stats.queries.get(r.index, {"queryIndex": r.index}))
        parts.append(text + "}")
    if ts_query is not None and ts_query.show_summary and stats is not None:
        serialization = round((time.monotonic() - began) * 1000, 3)
        parts.append(json.dumps(_summary(stats, serialization)))
    return ("[" + ",".join(parts) + "]").encode("utf-8")
