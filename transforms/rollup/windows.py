"""The rollup's per-entity windows as plain data and rules, free of Beam: which points a window
takes, which are too late, which rows a bundle's points or a watermark tick write, and when the
next tick is due. :mod:`transforms.rollup.hourly` keeps the windows in Beam state and timers
and delegates every decision here, so the rules are tested without a runner.

``windows`` maps a window's start (ms) to ``(fired, totals, late panes)``: whether its on-time
pane was written, metric → ``[scaled sum, count]``, and how many panes were written after it
(exact mode). The functions update it in place; the caller writes it back to state."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from transforms.mutations import RowMutation
from transforms.rollup.core import KeyFn, RollupPoint, exact_row, rollup_row, window_start

__all__ = ["WindowRules"]


def window(windows: dict, start: int) -> tuple[bool, dict, int]:
    """(on-time pane written?, metric → [scaled sum, count], panes written after it). State
    written before the exact mode held pairs (no pane count): read as pane 0, so a job updated
    in place keeps its windows."""
    fired, acc, *rest = windows.get(start, (False, {}, 0))
    return fired, acc, rest[0] if rest else 0


@dataclass
class Added:
    """What a bundle's points of one entity gave: rows to write, the too-late points with
    their window's start, how many late points were still taken, whether the windows changed."""

    rows: list[RowMutation] = field(default_factory=list)
    too_late: list[tuple[RollupPoint, int]] = field(default_factory=list)
    late_accepted: int = 0
    changed: bool = False


@dataclass(frozen=True)
class WindowRules:
    """One rollup table's windowing: ``size_ms`` windows kept ``lateness_ms`` after their end;
    ``exact``: totals rewritten whole with SetCell at each pane, else AddToCell deltas."""

    table: str
    key_fn: KeyFn
    size_ms: int
    lateness_ms: int
    exact: bool
    cell_timestamp: str = "unix"

    def add(
        self, entity: str, points: list[RollupPoint], windows: dict, watermark: int | None
    ) -> Added:
        """Take a bundle's points of ``entity`` into its windows. ``watermark``: the latest this
        key's timers saw (None before the first): a point is refused only when its window's
        lateness deadline has certainly passed."""
        out = Added()
        deltas: dict[int, dict] = {}  # add mode: window start → the late points' sums
        updated: set[int] = set()  # exact mode: closed windows whose totals changed
        for point in points:
            start = window_start(point.ts_ms, self.size_ms)
            if watermark is not None and start + self.size_ms + self.lateness_ms <= watermark:
                out.too_late.append((point, start))
                continue
            fired, acc, late_panes = window(windows, start)
            if fired and not self.exact:  # add: late points are deltas of their own
                acc = deltas.setdefault(start, {})
            total = acc.setdefault(point.metric, [0, 0])
            total[0] += point.scaled
            total[1] += 1
            if fired:
                out.late_accepted += 1
                if not self.exact:
                    continue
                updated.add(start)  # exact: the late point updates the totals
            windows[start] = (fired, acc, late_panes)
            out.changed = True
        for start, acc in deltas.items():  # add: one delta per window for the bundle's points
            key = self.key_fn(entity, start)
            out.rows.append(rollup_row(self.table, key, start, acc, self.cell_timestamp))
        for start in sorted(updated):  # exact: the totals written whole at a newer pane
            _fired, acc, late_panes = window(windows, start)
            late_panes = min(late_panes + 1, self.size_ms - 1)  # stays inside the window
            windows[start] = (True, acc, late_panes)
            key = self.key_fn(entity, start)
            out.rows.append(exact_row(self.table, key, start, acc, late_panes, self.cell_timestamp))
        return out

    def tick(self, entity: str, windows: dict, now_ms: int) -> list[RowMutation]:
        """The watermark reached ``now_ms``: the on-time pane of every window that ended, and
        windows past their lateness forgotten."""
        rows = []
        for start in sorted(windows):
            fired, acc, late_panes = window(windows, start)
            end = start + self.size_ms
            if not fired and end <= now_ms:
                if acc:
                    key = self.key_fn(entity, start)
                    if self.exact:
                        rows.append(exact_row(self.table, key, start, acc, 0, self.cell_timestamp))
                    else:
                        rows.append(rollup_row(self.table, key, start, acc, self.cell_timestamp))
                fired = True
                if not self.exact:  # add: late points are deltas, the totals are not needed
                    acc = {}
                windows[start] = (fired, acc, late_panes)
            if fired and end + self.lateness_ms <= now_ms:
                del windows[start]
        return rows

    def due(self, windows: dict) -> int | None:
        """When the next tick is needed (ms): the next window end or lateness deadline; None
        when no window is left."""
        if not windows:
            return None
        return min(
            start + self.size_ms + (self.lateness_ms if fired else 0)
            for start, (fired, *_) in windows.items()
        )

    def too_late(self, point: RollupPoint, start: int) -> tuple[str, str]:
        """A refused point as dead-letter text: ``(raw JSON, reason)``."""
        raw = json.dumps(
            {
                "entity": point.entity,
                "metric": point.metric.decode("utf-8", "backslashreplace"),
                "timestamp_ms": point.ts_ms,
                "value": point.text,
            }
        )
        reason = (
            f"later than the allowed lateness ({self.lateness_ms // 60000} min) of its window "
            f"starting {start} ms"
        )
        return raw, reason
