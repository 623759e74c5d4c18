"""Hourly sums and counts, written as aggregate cells (docs/patterns.md §3 rule 13, §5.6; issue:
streaming).

The guidance: a counter updated many times a minute is accumulated in the pipeline and written
periodically. Here every point (entity, metric, event time, value) is added to its event-time
window (fixed, one hour by default); when the watermark passes the window's end the window's
sum and count are written with ``AddToCell``; a point that arrives after that but within the
allowed lateness is written at once as a delta (one per window for a bundle's late points), so
it lands in the right hour exactly once; a point later than the allowed lateness goes to the
``too_late`` output, never dropped.

Why state and timers rather than ``WindowInto`` + ``CombinePerKey``: Beam's Python runners drop
data behind the allowed lateness inside ``GroupByKey`` without a trace. Keeping the windows in
per-entity state makes the lateness decision here, where a late point can be routed and
counted. The watermark is known only through this key's fired timers, so the decision is
conservative in one direction: a point is refused only when its window's lateness deadline has
certainly passed (the first points of a brand-new key are always accepted).

Two modes. ``exact`` (the default of the jobs' ``--rollup_mode``): the window's totals stay in
state after the on-time pane (until its lateness is over); each pane writes the totals so far
with SetCell into the ``exact_sum`` / ``exact_count`` families (8-byte big-endian int64, see
:func:`~transforms.rollup.core.exact_row`), so a runner retrying a write rewrites the same
values instead of adding them again. ``add``: the guidance's pattern above, AddToCell into
``sum`` / ``count``; every retried write adds again.

Values are summed as integers scaled by 10**6 (exact for decimal text with up to six decimals;
more are rounded half-even), because Bigtable's aggregate sum is over int64.
"""

from __future__ import annotations

from collections.abc import Iterable

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.coders import PickleCoder, VarIntCoder
from apache_beam.metrics import Metrics
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import ReadModifyWriteStateSpec, TimerSpec, on_timer
from apache_beam.utils.timestamp import Timestamp
from apache_beam.utils.windowed_value import WindowedValue

from transforms.errors import InvalidEvent
from transforms.ingest.dead_letters import dead_letter_record
from transforms.metrics import NAMESPACE
from transforms.mutations import RowMutation
from transforms.rollup.core import HOUR_MS, MODES, KeyFn, RollupPoint, RollupSpec
from transforms.rollup.windows import WindowRules

__all__ = ["TOO_LATE", "Rollup"]

TOO_LATE = "too_late"


class _PointsFn(beam.DoFn):
    def __init__(self, spec: RollupSpec) -> None:
        self._spec = spec

    def process(self, element: RowMutation | list) -> Iterable:
        # A row, or a batch of rows (a list, as BuildRows hands them over): no unbatching step
        # needed in front, whose cost per row is the runner's per-element cost.
        for row in element if isinstance(element, list) else (element,):
            table, key, _cells = row
            if table != self._spec.source_table:
                continue
            try:
                yield from list(self._spec.points(row))
            except InvalidEvent as err:
                raw = key.decode("utf-8", "backslashreplace")
                record = dead_letter_record(f"rollup:{self._spec.table}", table, raw, str(err))
                yield pvalue.TaggedOutput(TOO_LATE, record)


class _GroupPointsFn(beam.DoFn):
    """A bundle's points as one ``(entity, [points])`` element per entity and window, stamped
    with its oldest point's event time: the stateful step then reads and writes an entity's
    state once per bundle instead of once per point (a stream of a few hosts sends thousands
    of points per host per bundle; per point, state access was most of the rollup's cost)."""

    def start_bundle(self) -> None:
        self._groups: dict[tuple, list[RollupPoint]] = {}

    def process(self, point: RollupPoint, window=beam.DoFn.WindowParam) -> None:
        group = self._groups.get((window, point.entity))
        if group is None:
            self._groups[(window, point.entity)] = [point]
        else:
            group.append(point)

    def finish_bundle(self) -> Iterable[WindowedValue]:
        groups, self._groups = self._groups, {}
        for (window, entity), points in groups.items():
            oldest = min(p.ts_ms for p in points)
            yield WindowedValue((entity, points), Timestamp(micros=oldest * 1000), [window])


class _RollupFn(beam.DoFn):
    """Per-entity windows in state; an event-time timer closes them (see module docstring).
    The Beam shell of :class:`~transforms.rollup.windows.WindowRules`: state in, rules applied,
    rows and counters out."""

    WINDOWS = ReadModifyWriteStateSpec("windows", PickleCoder())
    WATERMARK = ReadModifyWriteStateSpec("watermark", VarIntCoder())
    TICK = TimerSpec("tick", TimeDomain.WATERMARK)

    def __init__(
        self,
        table: str,
        key_fn: KeyFn,
        size_ms: int,
        lateness_ms: int,
        mode: str = "add",
        cell_timestamp: str = "unix",
    ) -> None:
        self._table = table
        self._rules = WindowRules(
            table, key_fn, size_ms, lateness_ms, mode == "exact", cell_timestamp
        )

    def setup(self) -> None:
        self._points = Metrics.counter(NAMESPACE, f"rollup_points_{self._table}")
        self._late_ok = Metrics.counter(NAMESPACE, f"rollup_late_accepted_{self._table}")
        self._too_late = Metrics.counter(NAMESPACE, f"rollup_too_late_{self._table}")
        self._rows = Metrics.counter(NAMESPACE, f"rollup_rows_{self._table}")

    def _arm(self, timer, windows: dict) -> None:
        """The timer at the next window end or lateness deadline; cleared when none is left."""
        due = self._rules.due(windows)
        if due is None:
            timer.clear()
        else:
            timer.set(Timestamp(micros=due * 1000))

    def process(
        self,
        element: tuple[str, list[RollupPoint]],
        windows_state=beam.DoFn.StateParam(WINDOWS),
        watermark_state=beam.DoFn.StateParam(WATERMARK),
        tick=beam.DoFn.TimerParam(TICK),
    ) -> Iterable:
        entity, points = element
        self._points.inc(len(points))
        windows = windows_state.read() or {}
        added = self._rules.add(entity, points, windows, watermark_state.read())
        for point, start in added.too_late:
            self._too_late.inc()
            raw, reason = self._rules.too_late(point, start)
            yield pvalue.TaggedOutput(
                TOO_LATE, dead_letter_record(f"rollup:{self._table}", "rollup", raw, reason)
            )
        if added.late_accepted:
            self._late_ok.inc(added.late_accepted)
        for row in added.rows:
            self._rows.inc()
            yield row
        if added.changed:
            windows_state.write(windows)
            self._arm(tick, windows)

    @on_timer(TICK)
    def on_tick(
        self,
        key=beam.DoFn.KeyParam,
        fire=beam.DoFn.TimestampParam,
        windows_state=beam.DoFn.StateParam(WINDOWS),
        watermark_state=beam.DoFn.StateParam(WATERMARK),
        tick=beam.DoFn.TimerParam(TICK),
    ) -> Iterable:
        now_ms = fire.micros // 1000
        known = watermark_state.read()  # None before the first tick (0 is 1970, a time)
        watermark_state.write(now_ms if known is None else max(now_ms, known))
        windows = windows_state.read() or {}
        for row in self._rules.tick(key, windows, now_ms):
            self._rows.inc()
            yield row
        windows_state.write(windows)
        self._arm(tick, windows)


class Rollup(beam.PTransform):
    """Rows → rows of the spec's table (output ``rows``: SetCell totals in ``exact`` mode,
    AddToCell deltas in ``add`` mode) and everything not rolled up
    (output ``too_late``: points past the allowed lateness and values the int64 sum cannot
    hold), as dead-letter records, named ``rollup:<table>``."""

    def __init__(self, spec: RollupSpec, allowed_lateness_ms: int, mode: str = "add") -> None:
        super().__init__()
        self._spec = spec
        self._lateness = allowed_lateness_ms
        self._mode = mode

    def expand(self, rows: beam.PCollection) -> dict[str, beam.PCollection]:
        points = rows | "Points" >> beam.ParDo(_PointsFn(self._spec)).with_outputs(
            TOO_LATE, main="points"
        )
        rolled = points["points"] | "Hourly" >> HourlyRollup(
            self._spec.table,
            self._spec.key_fn,
            self._lateness,
            mode=self._mode,
            cell_timestamp=self._spec.cell_timestamp,
        )
        rejected = (points[TOO_LATE], rolled[TOO_LATE]) | "Rejected" >> beam.Flatten()
        return {"rows": rolled["rows"], TOO_LATE: rejected}


class HourlyRollup(beam.PTransform):
    """RollupPoints → rows of ``table`` (main output: AddToCell deltas in ``add`` mode, SetCell
    totals in ``exact`` mode) and too-late points (output ``too_late``, as dead-letter
    records)."""

    def __init__(
        self,
        table: str,
        key_fn: KeyFn,
        allowed_lateness_ms: int,
        window_ms: int = HOUR_MS,
        mode: str = "add",
        cell_timestamp: str = "unix",
    ) -> None:
        super().__init__()
        if window_ms <= 0 or allowed_lateness_ms < 0:
            raise ValueError("window size must be positive and allowed lateness not negative")
        if mode not in MODES:
            raise ValueError(f"rollup mode {mode!r}: expected one of {', '.join(MODES)}")
        self._fn = _RollupFn(table, key_fn, window_ms, allowed_lateness_ms, mode, cell_timestamp)

    def expand(self, points: beam.PCollection) -> pvalue.DoOutputsTuple:
        return (
            points
            | "ByEntity"
            >> beam.ParDo(_GroupPointsFn()).with_output_types(tuple[str, list[RollupPoint]])
            | "Rollup" >> beam.ParDo(self._fn).with_outputs(TOO_LATE, main="rows")
        )
