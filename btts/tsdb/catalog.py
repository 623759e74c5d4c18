"""Metric and tag names from the schema files (pure: no client).

A metric is ``DATASET.FIELD``: a numeric event field (``number`` or ``integer``) that some
table stores one value per event of, with a time in its key. A ``map`` field's entries are
metrics too, ``DATASET.FIELD.ENTRY`` (the column qualifier, e.g. ``CPU/CPU1_USR``); the
entries come from the data (the series index, :mod:`btts.tsdb.index`), the schema does not
list them. Tags are the text-like fields of the key of the table that serves the read
(``hostname``, ``user``, ``tenant``…): the key decides what a query can narrow.

An ``AGGREGATE`` table filled by the hourly rollup (``rollup: {from: T, entity: F}``) is a
second source of the metrics of ``T``: hourly sums and counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from btts.tsdb.errors import UnknownName
from transforms import schema as schema_lib
from transforms.scans.series_index import (
    has_time,
    point_table,
    stored_fields,
    tag_fields,
    tenant_keyed,
    time_qualified,
)
from transforms.schema import Schema, TableSpec

__all__ = ["Catalog", "Metric", "Source", "builtin_schemas"]


def metric_name(dataset: str, field_name: str, entry: str = "") -> str:
    """A metric's name: ``dataset.field``, and ``.entry`` for a map entry."""
    return f"{dataset}.{field_name}" + (f".{entry}" if entry else "")


@dataclass(frozen=True)
class Source:
    """One table that answers a metric: its points (``rollup`` False) or hourly sums/counts."""

    schema: Schema
    table: TableSpec
    field: str  # the record field holding the value (a map field for map entries)
    entry: str = ""  # the map entry (qualifier) of a map metric
    rollup: bool = False
    qualifier: bytes = b""  # the rollup's column of this metric

    @property
    def name(self) -> str:
        return self.table.name

    @property
    def tags(self) -> tuple[str, ...]:
        """The key's fields a query can name as tags, in key order (no time, no salt)."""
        return tag_fields(self.table)

    @property
    def metric(self) -> str:
        """The name of the metric this table answers (``dataset.field[.entry]``)."""
        return metric_name(self.schema.dataset, self.field, self.entry)


@dataclass
class Metric:
    name: str
    dataset: str
    field: str
    entry: str = ""
    points: list[Source] = field(default_factory=list)
    rollups: list[Source] = field(default_factory=list)

    @property
    def tags(self) -> list[str]:
        """Every tag some source of the metric can narrow by, in first-seen key order."""
        return list(dict.fromkeys(t for s in self.points + self.rollups for t in s.tags))


class Catalog:
    """Every metric of the given schemas, by name; ``entries`` holds the map entries found
    in the data: ``{(dataset, table, field): [ENTRY, …]}``. With ``tenant`` only the tables
    whose key starts with a tenant are served."""

    def __init__(
        self,
        schemas: Sequence[Schema],
        entries: Mapping[tuple[str, str, str], Iterable[str]] | None = None,
        tenant: str | None = None,
    ) -> None:
        self.schemas = list(schemas)
        self.tenant = tenant
        self.metrics: dict[str, Metric] = {}
        entries = entries or {}
        for schema in self.schemas:
            by_table = {t.name: t for t in schema.tables}
            for table in schema.tables:
                if tenant is not None and not tenant_keyed(table):
                    continue
                if point_table(table):
                    for name, is_map in stored_fields(schema, table):
                        found = (
                            entries.get((schema.dataset, table.name, name), ()) if is_map else [""]
                        )
                        for entry in found:
                            self._add(Source(schema, table, name, entry))
                elif table.rollup is not None and has_time(table):
                    source = by_table.get(table.rollup.source)
                    if source is not None:
                        self._add_rollup(schema, table, source, entries)

    def _metric(self, schema: Schema, field_name: str, entry: str) -> Metric:
        name = metric_name(schema.dataset, field_name, entry)
        return self.metrics.setdefault(name, Metric(name, schema.dataset, field_name, entry))

    def _add(self, source: Source) -> None:
        self._metric(source.schema, source.field, source.entry).points.append(source)

    def _add_rollup(self, schema: Schema, table: TableSpec, source: TableSpec, entries) -> None:
        rule = table.rollup
        if rule.metric:  # every value of the source is one metric (a short-wide row's HHMMs)
            for name in time_qualified(schema, source):
                metric = self._metric(schema, name, "")
                metric.rollups.append(
                    Source(schema, table, name, "", True, rule.metric.encode("utf-8"))
                )
            return
        for name, is_map in stored_fields(schema, source):
            if is_map:
                for entry in entries.get((schema.dataset, source.name, name), ()):
                    src = Source(schema, table, name, entry, True, entry.encode("utf-8"))
                    self._metric(schema, name, entry).rollups.append(src)

    def get(self, name: str) -> Metric:
        """The metric ``name``, or :class:`UnknownName` with the close names known here."""
        metric = self.metrics.get(name)
        if metric is None:
            close = [m for m in self.metrics if m.startswith(name.split(".")[0] + ".")][:5]
            hint = f"; known here: {', '.join(close)}" if close else ""
            raise UnknownName(f"No such name for 'metrics': '{name}'{hint}")
        return metric

    def tag_keys(self) -> list[str]:
        return sorted({t for m in self.metrics.values() for t in m.tags})

    def map_tables(self) -> list[tuple[Schema, TableSpec, str]]:
        """(schema, point table, map field) whose entries must be found in the data."""
        out = []
        for schema in self.schemas:
            for table in schema.tables:
                if point_table(table) and (self.tenant is None or tenant_keyed(table)):
                    out += [
                        (schema, table, f) for f, is_map in stored_fields(schema, table) if is_map
                    ]
        return out


def builtin_schemas() -> list[Schema]:
    """Every built-in dataset's schema (``transforms/declarations/*.yaml``)."""
    names = sorted(p.stem for p in schema_lib.DECLARATIONS.glob("*.yaml"))
    return [schema_lib.builtin(n) for n in names]
