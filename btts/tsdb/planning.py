"""One ``/api/query`` sub-query planned once: what it asks (metric, filters, the range it
shows and the window it reads, downsample, rate, aggregation) and what answers it (the
tables and their key ranges), as one frozen :class:`SubPlan` that the reads
(:mod:`btts.tsdb.reads`) and the arithmetic (:mod:`btts.tsdb.series`, through
:mod:`btts.tsdb.answer`) take whole.

:func:`asked` is the pure half, made once per request where it is understood
(:meth:`btts.tsdb.service.Service.query`; the conformance suite computes from it directly);
:func:`plan_sub` decides whether the metric's rollup table answers the downsample, then asks
the reads once (:func:`btts.tsdb.reads.plan_query`) for the tables and key ranges, which may
read the series index or enumerate a key field. What a plan may cost is judged from the plan
by :mod:`btts.tsdb.budget`: the request's asked sub-queries once before any read, each
planned one before its rows are read.

A downsample of whole hours with ``avg``, ``sum`` or ``count`` is answered from the metric's
rollup table (hourly sums and counts) for the whole hours of the read window, and from the
points for any partial hour at its edges (:class:`btts.tsdb.reads.QueryReads`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from btts.tsdb import reads, series
from btts.tsdb.catalog import Metric, Source
from btts.tsdb.errors import BadRequest
from btts.tsdb.request import SubQuery, TagFilter, TsQuery
from btts.tsdb.series import Downsample, Rate
from transforms.scans.key_ranges import Window

__all__ = ["SubPlan", "asked", "plan_sub"]

ROLLUP_AGGREGATORS = ("avg", "sum", "count")


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
    filled_buckets: int = 0  # buckets a filled downsample makes per series (0: the data says)
    downsample: Downsample | None = None
    rate: Rate | None = None
    explicit_tags: bool = False  # only series whose tags are exactly the ones named
    shown_query: Mapping | None = None  # showQuery: the sub-query as asked, with its index
    tables: reads.QueryReads | None = None  # which tables and key ranges answer it

    @property
    def fill(self) -> str:
        return self.downsample.fill if self.downsample is not None else "none"

    @property
    def series_read(self) -> reads.Plan | None:
        """The reads whose key ranges count the series (the point table's, or the rollup's
        whole hours); None before :func:`plan_sub`, or when no whole hour is read."""
        return self.tables.series_read if self.tables is not None else None


def asked(sub_query: SubQuery, ts_query: TsQuery) -> SubPlan:
    """What ``sub_query`` of ``ts_query`` asks, before anything is read (pure): the window it
    reads is OpenTSDB's (:func:`series.scan_window`)."""
    downsample = sub_query.downsample
    interval = downsample.interval_ms if downsample is not None else 0
    shown = Window(ts_query.start_ms, ts_query.end_ms)
    read = Window(*series.scan_window(shown.start_ms, shown.end_ms, interval))
    filled = downsample is not None and downsample.fill != "none" and interval > 0
    buckets = series.bucket_count(shown.start_ms, shown.end_ms, interval) if filled else 0
    return SubPlan(
        index=sub_query.index,
        metric=sub_query.metric,
        aggregator=sub_query.aggregator,
        filters=sub_query.filters,
        shown=shown,
        read=read,
        buckets=shown if downsample is not None and interval == 0 else read,
        fill_span=Window(shown.start_ms - interval, shown.end_ms + interval),
        filled_buckets=buckets,
        downsample=downsample,
        rate=sub_query.rate,
        explicit_tags=sub_query.explicit_tags,
        shown_query=(
            {**dict(sub_query.raw), "index": sub_query.index} if ts_query.show_query else None
        ),
    )


def plan_sub(reader: reads.Reader, metric: Metric, sub: SubPlan) -> SubPlan:
    """``sub`` as :func:`asked` made it, with the tables of ``metric`` (its catalog entry)
    and the key ranges answering it: the rollup table when one serves the downsample, else
    the point table whose key serves the filters. An unknown tag, or a metric kept only as
    hourly sums read otherwise, is a :class:`BadRequest`; too many series a ``TooLarge``.
    What the plan costs is :func:`btts.tsdb.budget.check_series`'s to judge, before its
    rows are read."""
    sub = replace(sub, metric=metric.name)  # as the catalog names it
    rollup = _rollup_source(metric, sub)
    if rollup is None and not metric.points and metric.rollups:
        raise BadRequest(
            f"{metric.name} is only kept as hourly sums and counts ({metric.rollups[0].name}): "
            "downsample it by 1h (or a multiple) with avg, sum or count"
        )
    tables = reads.plan_query(reader, metric, sub.filters, sub.read, rollup)
    return replace(sub, tables=tables)


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
