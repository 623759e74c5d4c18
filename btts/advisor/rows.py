"""How large a table's rows grow under the workload its schema file declares: events a row
receives while its key's time bucket is open, cells its families keep, bytes (the lint's row-size
rule; numbers in the words the reports use).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from btts.advisor.workload import Workload
from transforms.table_model import TIME_KINDS, Segment, TableDecl

__all__ = [
    "CELL_OVERHEAD_BYTES",
    "bucket_seconds",
    "count_text",
    "entity_fields",
    "estimate_row",
    "human_bytes",
    "rate_text",
]

# Bigtable cells carry a timestamp of this many bytes besides their family, qualifier, value.
CELL_OVERHEAD_BYTES = 8

BUCKET_SECONDS = {
    "epoch_ms": 0.001,
    "reverse_ts": 0.001,
    "yyyymmddhhmmssmmm": 0.001,
    "minute": 60,
    "hour": 3600,
    "day": 86400,
    "yyyymmdd": 86400,
    "week": 7 * 86400,
    "month": 31 * 86400,
    "yyyymm": 31 * 86400,
}


@dataclass(frozen=True)
class RowEstimate:
    """The largest row the declared workload makes: events it receives, cells it keeps, bytes."""

    events: float
    cells: float
    bytes: float
    detail: str


def bucket_seconds(decl: TableDecl) -> float:
    """How long one row keeps receiving events: its finest time segment (inf when none)."""
    spans = [
        BUCKET_SECONDS[seg.arg if seg.kind == "time" else seg.kind]
        for seg in decl.key.segments
        if seg.kind in TIME_KINDS
    ]
    return min(spans) if spans else math.inf


def entity_fields(segments: Sequence[Segment]) -> list[str]:
    """Key fields that name an entity (not time, salt or constant), each once, in key order."""
    out: list[str] = []
    for seg in segments:
        if seg.kind not in (*TIME_KINDS, "const", "salt") and seg.field not in out:
            out.append(seg.field)
    return out


def estimate_row(decl: TableDecl, workload: Workload) -> RowEstimate:
    entities = math.prod(workload.field(f).cardinality for f in entity_fields(decl.key.segments))
    row_rate = workload.events_per_s / entities
    lifetime = bucket_seconds(decl)
    events = row_rate * lifetime if math.isfinite(lifetime) else math.inf
    cells_total = 0.0
    size = 0.0
    parts = []
    for fam in decl.families:
        load = workload.family(fam.name)
        if fam.aggregate:  # AddToCell merges a column's inputs of one timestamp into one cell
            cells = load.columns if load.columns else max(1.0, events) * load.cells_per_event
        else:
            window = lifetime
            if fam.max_age:
                window = min(window, fam.max_age.total_seconds())
            arriving = row_rate * window * load.cells_per_event if math.isfinite(window) else None
            cells = math.inf if arriving is None else max(load.cells_per_event, arriving)
            if fam.max_versions and load.columns is not None:
                cells = min(cells, load.columns * fam.max_versions)
        cell_bytes = len(fam.name) + load.qualifier_bytes + load.value_bytes + CELL_OVERHEAD_BYTES
        cells_total += cells
        size += cells * cell_bytes
        parts.append(f"{fam.name}: {count_text(cells)} cells × {cell_bytes} B")
    detail = (
        f"{rate_text(workload.events_per_s)} events/s over {count_text(entities)} rows alive at "
        f"once, a row open for {span_text(lifetime)} → {count_text(events)} events a row; "
        + "; ".join(parts)
    )
    return RowEstimate(events, cells_total, size, detail)


def count_text(x: float) -> str:
    return "unbounded" if math.isinf(x) else rate_text(x)


def rate_text(x: float) -> str:
    return f"{x:,.0f}" if x >= 10 else f"{x:.2g}"


def span_text(seconds: float) -> str:
    if math.isinf(seconds):
        return "ever (no time segment)"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        if seconds >= size:
            n = seconds / size
            return f"{n:g} {unit}{'s' * (n != 1)}"
    return f"{seconds * 1000:g} ms"


def human_bytes(n: float) -> str:
    if math.isinf(n):
        return "unbounded"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")
