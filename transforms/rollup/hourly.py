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

import json
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
from transforms.rollup.core import (
    HOUR_MS,
    MODES,
    KeyFn,
    RollupPoint,
    RollupSpec,
    exact_row,
    rollup_row,
    window_start,
)

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


def _window(windows: dict, start: int) -> tuple[bool, dict, int]:
    """(on-time pane written?, metric → [scaled sum, count], panes written after it). State
    written before the exact mode held pairs (no pane count): read as pane 0, so a job updated
    in place keeps its windows."""
    fired, acc, *rest = windows.get(start, (False, {}, 0))
    return fired, acc, rest[0] if rest else 0


class _RollupFn(beam.DoFn):
    """Per-entity windows in state; an event-time timer closes them (see module docstring)."""

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
        self._stamps = cell_timestamp
        self._key_fn = key_fn
        self._size = size_ms
        self._lateness = lateness_ms
        self._exact = mode == "exact"

    def setup(self) -> None:
        self._points = Metrics.counter(NAMESPACE, f"rollup_points_{self._table}")
        self._late_ok = Metrics.counter(NAMESPACE, f"rollup_late_accepted_{self._table}")
        self._too_late = Metrics.counter(NAMESPACE, f"rollup_too_late_{self._table}")
        self._rows = Metrics.counter(NAMESPACE, f"rollup_rows_{self._table}")

    def _arm(self, timer, windows: dict) -> None:
        """The timer at the next window end or lateness deadline; cleared when none is left."""
        if not windows:
            timer.clear()
            return
        due = min(
            start + self._size + (self._lateness if fired else 0)
            for start, (fired, *_) in windows.items()
        )
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
        known_watermark = watermark_state.read()
        windows = windows_state.read() or {}
        deltas: dict[int, dict] = {}  # add mode: window start → the late points' sums
        updated: set[int] = set()  # exact mode: closed windows whose totals changed
        changed = False
        for point in points:
            start = window_start(point.ts_ms, self._size)
            deadline = start + self._size + self._lateness
            if known_watermark is not None and deadline <= known_watermark:
                self._too_late.inc()
                yield pvalue.TaggedOutput(TOO_LATE, self._late_record(point, start))
                continue
            fired, acc, late_panes = _window(windows, start)
            if fired and not self._exact:  # add: late points are deltas of their own
                acc = deltas.setdefault(start, {})
            total = acc.setdefault(point.metric, [0, 0])
            total[0] += point.scaled
            total[1] += 1
            if fired:
                self._late_ok.inc()
                if not self._exact:
                    continue
                updated.add(start)  # exact: the late point updates the totals
            windows[start] = (fired, acc, late_panes)
            changed = True
        for start, acc in deltas.items():  # add: one delta per window for the bundle's points
            self._rows.inc()
            key = self._key_fn(entity, start)
            yield rollup_row(self._table, key, start, acc, self._stamps)
        for start in sorted(updated):  # exact: the totals written whole at a newer pane
            _fired, acc, late_panes = _window(windows, start)
            late_panes = min(late_panes + 1, self._size - 1)  # stays inside the window
            windows[start] = (True, acc, late_panes)
            self._rows.inc()
            key = self._key_fn(entity, start)
            yield exact_row(self._table, key, start, acc, late_panes, self._stamps)
        if changed:
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
        for start in sorted(windows):
            fired, acc, late_panes = _window(windows, start)
            end = start + self._size
            if not fired and end <= now_ms:
                if acc:
                    self._rows.inc()
                    row_key = self._key_fn(key, start)
                    if self._exact:
                        yield exact_row(self._table, row_key, start, acc, 0, self._stamps)
                    else:
                        yield rollup_row(self._table, row_key, start, acc, self._stamps)
                fired = True
                if not self._exact:  # add: late points are deltas, the totals are not needed
                    acc = {}
                windows[start] = (fired, acc, late_panes)
            if fired and end + self._lateness <= now_ms:
                del windows[start]
        windows_state.write(windows)
        self._arm(tick, windows)

    def _late_record(self, point: RollupPoint, start: int) -> dict:
        raw = json.dumps(
            {
                "entity": point.entity,
                "metric": point.metric.decode("utf-8", "backslashreplace"),
                "timestamp_ms": point.ts_ms,
                "value": point.text,
            }
        )
        reason = (
            f"later than the allowed lateness ({self._lateness // 60000} min) of its window "
            f"starting {start} ms"
        )
        return dead_letter_record(f"rollup:{self._table}", "rollup", raw, reason)


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
