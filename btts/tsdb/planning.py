"""One ``/api/query`` sub-query planned once: what it asks (metric, filters, the range it
shows and the window it reads, downsample, rate, aggregation) and what answers it (the
tables and their key ranges), as one frozen :class:`SubPlan` that the reads
(:mod:`btts.tsdb.reads`) and the arithmetic (:mod:`btts.tsdb.series`, through
:mod:`btts.tsdb.answer`) take whole.

:func:`asked` is the pure half (the conformance suite computes from it directly);
:func:`plan_sub` adds the key ranges, which may read the series index or enumerate a key
field, and refuses a sub-query whose series make its filled downsample too large
(:class:`~btts.tsdb.errors.TooLarge`) before any of its rows are read. The request's own
budget (key ranges and points of all its sub-queries) is checked once, before any read, by
:func:`btts.tsdb.budget.check_request`.

A downsample of whole hours with ``avg``, ``sum`` or ``count`` is answered from the metric's
rollup table (hourly sums and counts) for the whole hours of the read window, and from the
points for any partial hour at its edges (:class:`RollupReads`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from btts.tsdb import budget, reads, series
from btts.tsdb.catalog import Catalog, Metric, Source
from btts.tsdb.errors import BadRequest
from btts.tsdb.request import Rate, SubQuery, TagFilter, TsQuery
from btts.tsdb.series import Downsample, Window

__all__ = ["RollupReads", "SubPlan", "asked", "plan_sub", "series_key"]

ROLLUP_AGGREGATORS = ("avg", "sum", "count")


@dataclass(frozen=True)
class RollupReads:
    """The reads of a sub-query a rollup table answers: its whole ``hours`` (None when the
    window holds none), the points of the partial hours at the ``edges``, and the points of
    the series the rollup lacks (``uncovered``: landed without ``--hourly_rollup``)."""

    hours: reads.Plan | None
    whole_hours: Window
    edges: tuple[reads.Plan, ...] = ()
    uncovered: reads.Plan | None = None


@dataclass(frozen=True)
class SubPlan:
    """One sub-query as it is answered: asked, then planned (see the module's text)."""

    index: int
    metric: str
    aggregator: str
    filters: tuple[TagFilter, ...]
    shown: Window  # [start, end] the answer shows, the end included
    read: Window  # [first, last) OpenTSDB reads: whole hours around the range
    buckets: Window  # the window a series is downsampled over
    fill_span: Window  # the buckets a fill makes: those shown and the one before (a rate)
    downsample: Downsample | None = None
    rate: Rate | None = None
    explicit_tags: bool = False  # only series whose tags are exactly the ones named
    shown_query: Mapping | None = None  # showQuery: the sub-query as asked, with its index
    points: reads.Plan | None = None  # the point table's reads
    rollup: RollupReads | None = None  # or the rollup table's
    described: tuple[str, ...] = ()  # showQuery: which tables and ranges answer

    @property
    def fill(self) -> str:
        return self.downsample.fill if self.downsample is not None else "none"


def asked(sub_query: SubQuery, ts_query: TsQuery) -> SubPlan:
    """What ``sub_query`` of ``ts_query`` asks, before anything is read (pure): the window it
    reads is OpenTSDB's (:func:`series.scan_window`)."""
    downsample = sub_query.downsample
    interval = downsample.interval_ms if downsample is not None else 0
    shown = Window(ts_query.start_ms, ts_query.end_ms)
    read = Window(*series.scan_window(shown.start_ms, shown.end_ms, interval))
    return SubPlan(
        index=sub_query.index,
        metric=sub_query.metric,
        aggregator=sub_query.aggregator,
        filters=sub_query.filters,
        shown=shown,
        read=read,
        buckets=shown if downsample is not None and interval == 0 else read,
        fill_span=Window(shown.start_ms - interval, shown.end_ms + interval),
        downsample=downsample,
        rate=sub_query.rate,
        explicit_tags=sub_query.explicit_tags,
        shown_query=(
            {**dict(sub_query.raw), "index": sub_query.index} if ts_query.show_query else None
        ),
    )


def plan_sub(reader: reads.Reader, catalog: Catalog, sub: SubPlan, max_points: int) -> SubPlan:
    """``sub`` as :func:`asked` made it, with the tables and key ranges answering it: the
    rollup table when one serves the downsample, else the point table whose key serves the
    filters. An unknown metric or tag, or a metric kept only as hourly sums read otherwise, is
    a :class:`BadRequest`; too many points (series x buckets) a ``TooLarge``."""
    metric = catalog.get(sub.metric)
    rollup = _rollup_source(metric, sub)
    if rollup is not None:
        return _plan_rollup(reader, metric, rollup, sub, max_points)
    if not metric.points and metric.rollups:
        raise BadRequest(
            f"{metric.name} is only kept as hourly sums and counts ({metric.rollups[0].name}): "
            "downsample it by 1h (or a multiple) with avg, sum or count"
        )
    points = _points(reader, metric, sub, sub.read)
    budget.check_series(sub.downsample, sub.shown, max(len(points.combos), 1), max_points)
    return replace(sub, metric=metric.name, points=points, described=tuple(points.describe()))


def _points(reader: reads.Reader, metric: Metric, sub: SubPlan, window: Window) -> reads.Plan:
    """The key ranges of the point table serving ``sub``'s filters over ``window``."""
    source = reads.choose(metric, sub.filters, reader.tenant)
    return reads.plan(reader, source, sub.filters, window.start_ms, window.end_ms)


def _rollup_source(metric: Metric, sub: SubPlan) -> Source | None:
    """The rollup table answering ``sub``'s downsample (hourly sums and counts), if any: a key
    field the query leaves open is enumerated from the keys, as for the points."""
    downsample = sub.downsample
    if downsample is None or downsample.aggregator not in ROLLUP_AGGREGATORS:
        return None
    if not metric.rollups or downsample.calendar is not None:
        return None
    if downsample.interval_ms == 0 or downsample.interval_ms % reads.HOUR_MS:
        return None
    tags = {f.tagk for f in sub.filters}
    return next((s for s in metric.rollups if tags <= set(s.tags)), None)


def series_key(combo: Mapping, tags) -> tuple:
    """A series' key, ``((tag, value), …)`` sorted, from the key fields of a plan's combo."""
    return tuple(sorted((t, str(v)) for t, v in combo.items() if t in tags))


def _plan_rollup(
    reader: reads.Reader, metric: Metric, rollup: Source, sub: SubPlan, max_points: int
) -> SubPlan:
    """The rollup's whole hours of the read window, the points of any partial hour at its
    edges, and the points of the series the rollup does not cover."""
    first, last = reads.whole_hours(sub.read.start_ms, sub.read.end_ms)
    described: list[str] = []
    hours = covered = None
    if first < last:
        planned = reads.plan(reader, rollup, sub.filters, first, last)
        budget.check_series(sub.downsample, sub.shown, max(len(planned.combos), 1), max_points)
        covered = {series_key(c, rollup.tags) for c in planned.combos}
        whole = tuple(replace(s, start_ms=None, end_ms=None) for s in planned.scans)
        hours = replace(planned, scans=whole)
        described += [f"rollup {rollup.name} (hourly sum/count) for whole hours", *hours.describe()]
    edges = [
        Window(a, b) for a, b in ((sub.read.start_ms, first), (last, sub.read.end_ms)) if a < b
    ]
    parts = RollupReads(hours, Window(first, last))
    if edges and not metric.points:
        described.append("no point table: the partial hours at the edges are left out")
        return replace(sub, metric=metric.name, rollup=parts, described=tuple(described))
    edge_plans = []
    for edge in edges:
        planned = _points(reader, metric, sub, edge)
        described += [f"points of the partial hour(s) from {planned.source.name}"]
        described += planned.describe()
        edge_plans.append(planned)
    uncovered = _uncovered(reader, metric, sub, covered, described)
    parts = replace(parts, edges=tuple(edge_plans), uncovered=uncovered)
    return replace(sub, metric=metric.name, rollup=parts, described=tuple(described))


def _uncovered(
    reader: reads.Reader, metric: Metric, sub: SubPlan, covered: set | None, described: list
) -> reads.Plan | None:
    """The point reads of the series the point table holds and the rollup does not (landed
    without ``--hourly_rollup``): a rollup answers only for what it covers."""
    if covered is None or not metric.points:
        return None
    planned = _points(reader, metric, sub, sub.read)
    if not planned.combos or len(planned.combos) != len(planned.scans):  # salted: no series
        return None
    tags = {t for key in covered for t, _ in key}
    keep = [i for i, c in enumerate(planned.combos) if series_key(c, tags) not in covered]
    if not keep:
        return None
    planned = replace(
        planned,
        scans=tuple(planned.scans[i] for i in keep),
        combos=tuple(planned.combos[i] for i in keep),
    )
    described += [f"{len(keep)} series the rollup lacks, from {planned.source.name}"]
    described += planned.describe()
    return planned
