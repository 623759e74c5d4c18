"""Rollup arithmetic and row shapes, free of Beam and clients (see ``transforms.rollup.hourly``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import NamedTuple

from transforms.errors import InvalidEvent
from transforms.mutations import AddCell, Cell, RowMutation
from transforms.table_model import cell_micros

__all__ = [
    "COUNT_FAMILY",
    "EXACT_COUNT_FAMILY",
    "EXACT_SUM_FAMILY",
    "HOUR_MS",
    "MODES",
    "SUM_FAMILY",
    "KeyFn",
    "RollupPoint",
    "RollupSpec",
    "exact_row",
    "rollup_row",
    "schema_rollups",
    "unscale",
    "window_start",
]

SCALE_DIGITS = 6
SUM_FAMILY = "sum"
COUNT_FAMILY = "count"
# Exact mode (the default): the window's running totals, written with SetCell (see exact_row).
EXACT_SUM_FAMILY = "exact_sum"
EXACT_COUNT_FAMILY = "exact_count"
MODES = ("exact", "add")
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
    """Decimal text → integer of ``digits`` implied decimals, exactly (no float).
    Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
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


def rollup_row(
    table: str,
    key: bytes,
    start_ms: int,
    acc: dict[bytes, list[int]],
    cell_timestamp: str = "unix",
) -> RowMutation:
    """AddToCell cells for one window: ``sum:<metric>`` and ``count:<metric>``, all stamped with
    the window start (as ``table``'s ``cell_timestamp`` holds times) so every delta of the
    window adds into the same cell."""
    ts_us = cell_micros(start_ms, cell_timestamp)
    cells = []
    for metric, (total, count) in sorted(acc.items()):
        cells.append(AddCell(SUM_FAMILY, metric, total, ts_us))
        cells.append(AddCell(COUNT_FAMILY, metric, count, ts_us))
    return RowMutation(table, key, tuple(cells))


def int64_bytes(number: int) -> bytes:
    """8-byte big-endian two's complement: the encoding of Bigtable's own int64 sums."""
    return number.to_bytes(8, "big", signed=True)


def exact_row(
    table: str,
    key: bytes,
    start_ms: int,
    acc: dict[bytes, list[int]],
    pane: int = 0,
    cell_timestamp: str = "unix",
) -> RowMutation:
    """SetCell cells holding the window's totals so far: ``exact_sum:<metric>`` and
    ``exact_count:<metric>``, every metric of the window in each row.

    Idempotent: a retried write rewrites the same values at the same timestamp. The timestamp
    is the window start plus ``pane`` milliseconds (0 for the on-time pane, 1, 2… for each
    later update), so the newest total is the newest cell whatever order retried writes land
    in; readers take the latest cell of each column."""
    ts_us = cell_micros(start_ms + pane, cell_timestamp)
    cells = []
    for metric, (total, count) in sorted(acc.items()):
        cells.append(Cell(EXACT_SUM_FAMILY, metric, int64_bytes(total), ts_us))
        cells.append(Cell(EXACT_COUNT_FAMILY, metric, int64_bytes(count), ts_us))
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
    cell_timestamp: str = "unix"  # how ``table``'s cell timestamps hold times


class SchemaRollup:
    """The rollup a schema file declares for one aggregate table (its ``rollup:`` rule), as the
    two functions :class:`RollupSpec` needs. Pickles as the schema's text, like the builder.

    The entity is read back from the source row's key: the segment of the entity field (text
    segments can never hold the delimiter, so splitting is exact). The values are the cells of
    the source table's computed-qualifier columns (map entries, HHMM columns…), not those of
    literal-qualifier columns such as an ID.
    """

    def __init__(self, schema, table: str) -> None:
        self._schema = schema
        self.table = table
        spec = schema.table(table)
        rule = spec.rollup
        if rule is None:
            raise ValueError(f"table {table} declares no rollup")
        source = schema.table(rule.source)
        self.source = rule.source
        self._metric = rule.metric.encode("utf-8") if rule.metric else None
        self._delimiter = source.decl.key.delimiter.encode("utf-8")
        self._event_ms = source.decl.event_ms  # the source cells' timestamps → event ms
        self._cell_timestamp = spec.decl.cell_timestamp
        fields = [seg.field for seg in source.decl.key.segments]
        self._entity_at = fields.index(rule.entity)
        self._literal = frozenset(
            (col.family, col.qualifier.encode("utf-8"))
            for col in source.columns
            if isinstance(col.qualifier, str) and col.qualifier and not col.each
        )
        self._key = spec.decl.key
        self._key_fields = {  # field → whether it is the entity (else the window start)
            seg.field: seg.field == rule.entity for seg in spec.decl.key.segments if seg.field
        }

    def __getstate__(self) -> dict:
        return {
            "text": self._schema.text,
            "source": self._schema.source,
            "proto_modules": self._schema.proto_modules,
            "table": self.table,
        }

    def __setstate__(self, state: dict) -> None:
        from transforms.schema import loads

        schema = loads(state["text"], state["source"], state["proto_modules"])
        self.__init__(schema, state["table"])

    def points(self, row: RowMutation) -> list[RollupPoint]:
        _table, key, cells = row
        entity = key.split(self._delimiter)[self._entity_at].decode("utf-8")
        literal = self._literal
        metric = self._metric
        event_ms = self._event_ms
        return [
            point(entity, metric or qualifier, event_ms(us), value.decode("ascii"))
            for family, qualifier, value, us in cells
            if (family, qualifier) not in literal
        ]

    def key(self, entity: str, start_ms: int) -> bytes:
        values = {name: entity if use else start_ms for name, use in self._key_fields.items()}
        return self._key.build(values)

    def spec(self) -> RollupSpec:
        return RollupSpec(self.source, self.table, self.points, self.key, self._cell_timestamp)


def schema_rollups(schema) -> dict[str, RollupSpec]:
    """Source table → the rollup spec of every aggregate table the schema fills by rollup."""
    return {
        spec.rollup.source: SchemaRollup(schema, spec.name).spec()
        for spec in schema.tables
        if spec.rollup is not None
    }
