"""Hourly sums and counts, written as aggregate cells (SPEC §3 rule 13, §5.6; issue: streaming).

The guidance: a counter updated many times a minute is accumulated in the pipeline and written
periodically. Here every point (entity, metric, event time, value) is added to its event-time
window (fixed, one hour by default); when the watermark passes the window's end the window's
sum and count are written with ``AddToCell``; a point that arrives after that but within the
allowed lateness is written at once as its own delta, so it lands in the right hour exactly
once; a point later than the allowed lateness goes to the ``too_late`` output, never dropped.

Why state and timers rather than ``WindowInto`` + ``CombinePerKey``: Beam's Python runners drop
data behind the allowed lateness inside ``GroupByKey`` without a trace. Keeping the windows in
per-entity state makes the lateness decision here, where a late point can be routed and
counted. The watermark is known only through this key's fired timers, so the decision is
conservative in one direction: a point is refused only when its window's lateness deadline has
certainly passed (the first points of a brand-new key are always accepted).

Values are summed as integers scaled by 10**6 (exact for decimal text with up to six decimals;
more are rounded half-even), because Bigtable's aggregate sum is over int64.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import NamedTuple

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.coders import PickleCoder, VarIntCoder
from apache_beam.metrics import Metrics
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import ReadModifyWriteStateSpec, TimerSpec, on_timer
from apache_beam.utils.timestamp import Timestamp

from transforms.errors import InvalidEvent
from transforms.ingest import NAMESPACE
from transforms.mutations import AddCell, RowMutation

SCALE_DIGITS = 6
SUM_FAMILY = "sum"
COUNT_FAMILY = "count"
HOUR_MS = 3_600_000
TOO_LATE = "too_late"
_INT64_MAX = 2**63 - 1
_QUANTUM = Decimal(1)


class RollupPoint(NamedTuple):
    entity: str
    metric: bytes
    ts_ms: int
    scaled: int  # value × 10**SCALE_DIGITS
    text: str  # the value as the source wrote it, for the too-late output


def point(entity: str, metric: bytes, ts_ms: int, text: str) -> RollupPoint:
    return RollupPoint(entity, metric, ts_ms, scale(text), text)


def scale(text: str, digits: int = SCALE_DIGITS) -> int:
    """Decimal text → integer of ``digits`` implied decimals, exactly (no float)."""
    try:
        scaled = Decimal(text).scaleb(digits).quantize(_QUANTUM, rounding=ROUND_HALF_EVEN)
    except InvalidOperation:
        raise InvalidEvent(f"value {text!r} is not a decimal number") from None
    if not scaled.is_finite() or abs(scaled) > _INT64_MAX:
        raise InvalidEvent(
            f"value {text!r} does not fit the int64 rollup once scaled by 1e{digits}"
        )
    return int(scaled)


def unscale(number: int, digits: int = SCALE_DIGITS) -> Decimal:
    return Decimal(number).scaleb(-digits)


def window_start(ts_ms: int, size_ms: int = HOUR_MS) -> int:
    return ts_ms - ts_ms % size_ms


def rollup_row(table: str, key: bytes, start_ms: int, acc: dict[bytes, list[int]]) -> RowMutation:
    """AddToCell cells for one window: ``sum:<metric>`` and ``count:<metric>``, all stamped with
    the window start so every delta of the window adds into the same cell."""
    ts_us = start_ms * 1000
    cells = []
    for metric, (total, count) in sorted(acc.items()):
        cells.append(AddCell(SUM_FAMILY, metric, total, ts_us))
        cells.append(AddCell(COUNT_FAMILY, metric, count, ts_us))
    return RowMutation(table, key, tuple(cells))


KeyFn = Callable[[str, int], bytes]  # (entity, window start ms) → row key


class _RollupFn(beam.DoFn):
    """Per-entity windows in state; an event-time timer closes them (see module docstring)."""

    WINDOWS = ReadModifyWriteStateSpec("windows", PickleCoder())
    WATERMARK = ReadModifyWriteStateSpec("watermark", VarIntCoder())
    TICK = TimerSpec("tick", TimeDomain.WATERMARK)

    def __init__(self, table: str, key_fn: KeyFn, size_ms: int, lateness_ms: int) -> None:
        self._table = table
        self._key_fn = key_fn
        self._size = size_ms
        self._lateness = lateness_ms

    def setup(self) -> None:
        self._points = Metrics.counter(NAMESPACE, f"rollup_points_{self._table}")
        self._late_ok = Metrics.counter(NAMESPACE, f"rollup_late_accepted_{self._table}")
        self._too_late = Metrics.counter(NAMESPACE, f"rollup_too_late_{self._table}")
        self._rows = Metrics.counter(NAMESPACE, f"rollup_rows_{self._table}")

    def _next_due(self, windows: dict) -> int | None:
        due = [
            start + self._size + (self._lateness if fired else 0)
            for start, (fired, _) in windows.items()
        ]
        return min(due) if due else None

    def _arm(self, timer, windows: dict) -> None:
        due = self._next_due(windows)
        if due is None:
            timer.clear()
        else:
            timer.set(Timestamp(micros=due * 1000))

    def process(
        self,
        element: tuple[str, RollupPoint],
        windows_state=beam.DoFn.StateParam(WINDOWS),
        watermark_state=beam.DoFn.StateParam(WATERMARK),
        tick=beam.DoFn.TimerParam(TICK),
    ) -> Iterable:
        entity, point = element
        self._points.inc()
        start = window_start(point.ts_ms, self._size)
        deadline = start + self._size + self._lateness
        known_watermark = watermark_state.read()
        if known_watermark is not None and deadline <= known_watermark:
            self._too_late.inc()
            yield pvalue.TaggedOutput(TOO_LATE, self._late_record(point, start))
            return
        windows = windows_state.read() or {}
        fired, acc = windows.get(start, (False, {}))
        if fired:  # the on-time pane is out: this point is a late delta of its own
            self._late_ok.inc()
            self._rows.inc()
            key = self._key_fn(entity, start)
            yield rollup_row(self._table, key, start, {point.metric: [point.scaled, 1]})
            return
        total = acc.setdefault(point.metric, [0, 0])
        total[0] += point.scaled
        total[1] += 1
        windows[start] = (False, acc)
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
        watermark_state.write(max(now_ms, watermark_state.read() or 0))
        windows = windows_state.read() or {}
        for start in sorted(windows):
            fired, acc = windows[start]
            end = start + self._size
            if not fired and end <= now_ms:
                if acc:
                    self._rows.inc()
                    yield rollup_row(self._table, self._key_fn(key, start), start, acc)
                windows[start] = fired, acc = (True, {})
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
        return {
            "pipeline": f"rollup:{self._table}",
            "source": "rollup",
            "reason": f"later than the allowed lateness ({self._lateness // 60000} min) of its "
            f"window starting {start} ms",
            "raw": raw,
        }


class HourlyRollup(beam.PTransform):
    """RollupPoints → AddToCell rows of ``table`` (main output) and too-late points (output
    ``too_late``, as dead-letter records)."""

    def __init__(
        self,
        table: str,
        key_fn: KeyFn,
        allowed_lateness_ms: int,
        window_ms: int = HOUR_MS,
    ) -> None:
        super().__init__()
        if window_ms <= 0 or allowed_lateness_ms < 0:
            raise ValueError("window size must be positive and allowed lateness not negative")
        self._fn = _RollupFn(table, key_fn, window_ms, allowed_lateness_ms)

    def expand(self, points: beam.PCollection) -> pvalue.DoOutputsTuple:
        return (
            points
            | "EventTime"
            >> beam.Map(lambda p: beam.window.TimestampedValue(p, Timestamp(micros=p.ts_ms * 1000)))
            | "ByEntity" >> beam.Map(lambda p: (p.entity, p))
            | "Rollup" >> beam.ParDo(self._fn).with_outputs(TOO_LATE, main="rows")
        )
