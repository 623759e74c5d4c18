"""Rollup arithmetic and row shapes, free of Beam and clients (see ``transforms.rollup``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import NamedTuple

from transforms.errors import InvalidEvent
from transforms.mutations import AddCell, RowMutation

SCALE_DIGITS = 6
SUM_FAMILY = "sum"
COUNT_FAMILY = "count"
HOUR_MS = 3_600_000
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
PointsFn = Callable[[RowMutation], Iterable[RollupPoint]]


class RollupSpec(NamedTuple):
    """What a dataset rolls up: points taken from the rows of ``source_table`` (so the rollup
    sees exactly what was written), summed per entity and hour into ``table``."""

    source_table: str
    table: str
    points: PointsFn
    key_fn: KeyFn
