"""The logic of the build step, apart from Beam: one block of raw items built into rows (bad
items kept with their reason), and the per-bundle tallies the step reports as metrics.

Pure (no Beam, no client): :class:`transforms.ingest.build_rows.BuildRows` is a thin shell that
hands each block to :func:`build_block` and turns the outcome into outputs and counters, so the
rules (what is blank, what is a dead letter, which line a reason's first bad item is on) are
tested without a pipeline."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from transforms.errors import InvalidEvent, reason_kind
from transforms.ingest.fingerprints import stamp_array
from transforms.limits import MAX_QUALIFIER_BYTES
from transforms.metrics import MAX_REASON_KINDS, OTHER_REASONS, reason_metric_name
from transforms.mutations import RowMutation, check_limits
from transforms.text import events

__all__ = ["EventSpans", "Progress", "ReasonTally", "RecordRows", "build_block"]

_LOG = logging.getLogger(__name__)


@dataclass
class BlockOutcome:
    """What one block gave: its rows (and, framed, their request entries), how many items were
    valid, blank (skipped, not dead letters) or a builder's unexpected error, and each bad
    item as ``(index, raw, reason)`` in input order."""

    batch: list = field(default_factory=list)
    entries: list = field(default_factory=list)
    valid: int = 0
    blank: int = 0
    unexpected: int = 0
    bad: list[tuple[int, object, str]] = field(default_factory=list)


def build_block(
    source: str,
    kind: str,
    items: Sequence,
    decode: Callable[[object], dict],
    build: Callable[[dict], Sequence[RowMutation]] | None,
    framed: Callable[[dict, list, list], None] | None = None,
    log: logging.Logger = _LOG,
    checked: Callable[[dict, list, list], None] | None = None,
) -> BlockOutcome:
    """The rows of a block's items (``framed``: with their request entries, made in one go),
    every bad item kept with its reason; a builder bug costs its item only, never the block
    (it is logged to ``log``, with its traceback). ``checked``: what builds, checks against
    the limits and keeps an item that needs the check instead of ``framed`` (which folds the
    series index as it builds: :class:`transforms.ingest.index_fold.BundleIndex`)."""
    out = BlockOutcome()
    batch, entries = out.batch, out.entries
    # only so long an item can hold an oversize cell: checked before it is kept
    limit = 0 if kind == "record" else MAX_QUALIFIER_BYTES
    for index, raw in enumerate(items):
        try:
            if framed is None:
                rows = build(decode(raw))
                if len(raw) > limit:
                    check_limits(rows)
                batch += rows
            elif len(raw) > limit:
                if checked is None:
                    _build_framed_checked(framed, decode(raw), out)
                else:
                    checked(decode(raw), batch, entries)
            else:  # the common case, per event: no call but the builder's
                framed(decode(raw), batch, entries)
            continue
        except InvalidEvent as err:
            reason = str(err)
        except Exception as err:  # a builder bug must not lose the line or stop the stream
            log.exception("unexpected error building rows from a line of %s", source)
            out.unexpected += 1
            reason = f"unexpected error: {type(err).__name__}: {err}"
        if kind in ("jsonl", "csv") and not raw.strip():
            out.blank += 1
            continue
        if kind == "jsonl":
            reason = events.array_hint(raw, reason)
        out.bad.append((index, raw, reason))
    out.valid = len(items) - len(out.bad) - out.blank  # every other item built its rows
    return out


def _build_framed_checked(
    framed: Callable[[dict, list, list], None], record: dict, out: BlockOutcome
) -> None:
    """One record's rows and entries into the block's lists, when its size calls for the
    limits check: built apart first, so that a refused record leaves nothing behind."""
    rows: list = []
    made: list = []
    framed(record, rows, made)
    check_limits(rows)
    out.batch += rows
    out.entries += made


class RecordRows:
    """A block's decoder and builder wrapped to keep each record's rows, for
    :func:`build_block` (the overwrite check compares records): ``made`` holds ``(item index,
    rows)`` of every record built, bad ones included (:meth:`valid` drops those the block's
    outcome calls bad)."""

    def __init__(
        self,
        decode: Callable[[object], dict],
        build: Callable[[dict], Sequence[RowMutation]],
        framed: Callable[[dict, list, list], None] | None = None,
    ) -> None:
        self._decode, self._build, self._framed = decode, build, framed
        self.index = -1
        self.made: list[tuple[int, list]] = []

    def decode(self, raw: object) -> dict:
        self.index += 1
        return self._decode(raw)

    def build(self, record: dict) -> Sequence[RowMutation]:
        rows = self._build(record)
        self.made.append((self.index, rows))
        return rows

    def framed(self, record: dict, batch: list, entries: list) -> None:
        rows: list = []
        made: list = []
        self._framed(record, rows, made)
        batch += rows
        entries += made
        self.made.append((self.index, rows))

    def valid(self, out: BlockOutcome) -> list[tuple[int, list]]:
        """``(item index, rows)`` of the block's valid records, in order."""
        bad = {index for index, _, _ in out.bad}
        return [(index, rows) for index, rows in self.made if index not in bad]


class ReasonTally:
    """Dead letters per (reason kind, source) with the first line of each: added up over a
    bundle and reported once (a metric update per line costs more than decoding the line).
    At most ``MAX_REASON_KINDS`` kinds per worker; the rest count as ``OTHER_REASONS``."""

    def __init__(self) -> None:
        self._kinds: set[str] = set()
        self._reasons: dict[tuple[str, str], list] = {}

    def count(self, source: str, reason: str, line: int | None) -> None:
        kind = reason_kind(reason)
        if kind not in self._kinds:
            if len(self._kinds) >= MAX_REASON_KINDS:
                kind = OTHER_REASONS
            else:
                self._kinds.add(kind)
        entry = self._reasons.get((kind, source))
        if entry is None:
            self._reasons[(kind, source)] = [1, line]
        else:
            entry[0] += 1
            if line is not None and (entry[1] is None or line < entry[1]):
                entry[1] = line

    def drain(self) -> list[tuple[str, int, int | None]]:
        """``(metric name, count, first line or None)`` of the bundle so far, then forgotten
        (the kinds seen stay: the cap is per worker)."""
        drained = [
            (reason_metric_name(kind, source), count, first)
            for (kind, source), (count, first) in self._reasons.items()
        ]
        self._reasons = {}
        return drained


class EventSpans:
    """The lowest and highest cell timestamp landed per table stamped with event times, turned
    into event ms (``event_ms``: per such table, its cell timestamp → event ms)."""

    def __init__(self, event_ms: Mapping[str, Callable[[int], int]]) -> None:
        self._event_ms = dict(event_ms)
        self._stamps: dict[str, list[int]] = {}  # table → [lowest, highest] cell timestamp
        self.rows = 0  # the rows those stamps are of (the summary's "all the same time" check)

    def __bool__(self) -> bool:
        return bool(self._event_ms)

    def track(
        self,
        batch: list,
        parts: list[tuple[str, list]] | None = None,
        stamps: dict[str, np.ndarray] | None = None,
    ) -> None:
        """Widen the span of cell timestamps landed in one table of ``batch`` stamped with
        event times: one pass per block, over that table's rows only.

        ``parts``: ``batch`` cut by table (every row holding a cell), when the caller has cut
        it; ``stamps``: per table, its rows' stamps another step of the block read already
        (such a table is the one tracked: its stamps are not read again), and where this adds
        those it reads."""
        tracked = self._event_ms
        if parts is None:
            table = next((row[0] for row in batch if row[0] in tracked), None)
            parts = [] if table is None else [(table, [r for r in batch if r[0] == table and r[2]])]
        mine = [(table, rows) for table, rows in parts if table in tracked and rows]
        if not mine:
            return
        table, rows = next(((t, r) for t, r in mine if stamps and t in stamps), mine[0])
        read = stamps.get(table) if stamps is not None else None
        if read is None:
            read = stamp_array(rows)
            if stamps is not None:
                stamps[table] = read
        self.rows += len(read)
        low, high = int(read.min()), int(read.max())
        span = self._stamps.setdefault(table, [low, high])
        span[0], span[1] = min(span[0], low), max(span[1], high)

    def drain(self) -> list[int]:
        """The event ms of every span end tracked so far, then forgotten."""
        stamps, self._stamps = self._stamps, {}
        self.rows = 0
        # as the table's cells hold event times
        return [self._event_ms[table](stamp) for table, span in stamps.items() for stamp in span]


class Progress:
    """Long runs show they are alive: one line to ``log`` per worker every ``every_seconds``,
    the clock read only every 1024 items."""

    def __init__(
        self,
        pipeline: str,
        every_seconds: float,
        log: logging.Logger = _LOG,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._pipeline = pipeline
        self._every = every_seconds
        self._log = log
        self._clock = clock
        self.seen = 0
        self._next = 1024
        self._started = self._last_report = clock()

    def add(self, count: int) -> None:
        self.seen += count
        if self.seen < self._next:
            return
        self._next = self.seen + 1024
        now = self._clock()
        if now - self._last_report >= self._every:
            self._last_report = now
            rate = self.seen / max(now - self._started, 1e-9)
            self._log.info(
                "%s: %d lines processed by this worker (%.0f lines/s)",
                self._pipeline,
                self.seen,
                rate,
            )
