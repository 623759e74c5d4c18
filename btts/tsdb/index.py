"""What ``btts serve`` lists from the series indexes of the served schemas (``index:``): a
metric's series (for lookup and for the ``*``, wildcards and regexps of a query), the tag
values (suggest), the map entries (the metric catalog), whether a tag value exists.

Every answer is a key range of an index (:mod:`btts.query.series`), never a read of data. A
schema that declares no index keeps the older way, bounded: map entries sampled from the first
rows of each key value, a key field's values enumerated from the keys (at most
``MAX_DISTINCT``, within the deadline; beyond, an error naming ``btts index rebuild``). A table
holding data that its index does not list (landed before the schema declared ``index:``) is an
error naming ``btts index rebuild``, never an empty answer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

from google.cloud.bigtable.data import ReadRowsQuery, RowRange

from btts.config import Target
from btts.errors import MissingTable
from btts.query import series as series_lib
from btts.tsdb.catalog import Source
from btts.tsdb.errors import Unlisted
from btts.tsdb.reads import Reader
from btts.tsdb.request import TagFilter
from transforms import schema as schema_lib
from transforms import table_model
from transforms.bigtable.filters import COLUMNS_ONLY, KEYS_ONLY
from transforms.errors import BttsError
from transforms.mutations import ReadRow
from transforms.scans import key_ranges, series_index
from transforms.scans.key_ranges import Window
from transforms.text import keys

__all__ = ["SeriesIndex", "discover_entries"]

MAX_SAMPLED = 1000  # key values sampled for map entries (a schema without an index)
MAX_LEADING = 2000  # literal tag-value combinations read as index ranges
Entries = dict[tuple[str, str, str], list[str]]


def _rebuild_hint(schema: schema_lib.Schema) -> str:
    builtin = str(schema.source).startswith(str(schema_lib.DECLARATIONS))
    return "btts index rebuild" + ("" if builtin else f" --schema {schema.source}")


class SeriesIndex:
    """The indexes of the served schemas: which index lists which table, and which tables
    hold data their index does not list (found by :meth:`entries`)."""

    def __init__(self, schemas: Sequence[schema_lib.Schema], tenant: str | None = None) -> None:
        self.tenant = tenant
        self.scope = tenant or ""
        self._of: dict[tuple[str, str], str] = {}  # (dataset, table) → its index table
        self._schemas: dict[str, schema_lib.Schema] = {}  # index table → its schema
        for schema in schemas:
            if schema.index is None:
                continue
            tables = [
                t
                for t in series_index.indexed_tables(schema)
                if tenant is None
                or series_index.tenant_keyed(t)  # a tenant's server: its tables only
            ]
            if tables:
                self._schemas[schema.index.table] = schema
            for table in tables:
                self._of[(schema.dataset, table.name)] = schema.index.table
        self.unlisted: dict[tuple[str, str], str] = {}  # (dataset, table) → why it is an error

    @property
    def tables(self) -> list[str]:
        return sorted(self._schemas)

    def covers(self, source: Source) -> bool:
        return (source.schema.dataset, source.table.name) in self._of

    def name(self, source: Source) -> str:
        return self._of[(source.schema.dataset, source.table.name)]

    def _check(self, source: Source) -> None:
        why = self.unlisted.get((source.schema.dataset, source.table.name))
        if why:
            raise Unlisted(why)

    # -- series ------------------------------------------------------------------------------

    def series(
        self,
        reader: Reader,
        source: Source,
        filters: Sequence[TagFilter],
        window: Window | None = None,
        limit: int = 0,
    ) -> list[dict[str, str]]:
        """The tag values of the series of ``source``'s metric that pass ``filters`` (pinned
        to the tenant), seen in the ``window`` when given, at most ``limit`` (0: all)."""
        self._check(source)
        tags = source.tags
        fixed = _fixed(tags, filters, self.tenant, source)
        if fixed is None:  # a literal value the other filters refuse: no series
            return []
        at = {t: i for i, t in enumerate(tags)}
        checks = [
            (at[f.tagk], f.match)
            for f in filters
            if f.tagk in at
            and not (f.type in ("wildcard", "iwildcard") and f.filter and not f.filter.strip("*"))
        ]

        def keep(values: tuple[str, ...]) -> bool:
            return len(values) == len(tags) and all(match(values[i]) for i, match in checks)

        cells = None
        if window is not None:
            decl = source.table.decl
            cells = (
                max(decl.cell_micros(window.start_ms), 0),
                max(decl.cell_micros(window.end_ms), 0),
            )
        found = series_lib.series(
            reader.read, self.name(source), source.table.name, (source.field, source.entry),
            fixed, keep if checks else None, cells, limit,
        )  # fmt: skip
        return [dict(zip(tags, s.values, strict=True)) for s in found]

    # -- suggest, catalog, unknown values ----------------------------------------------------

    def tag_values(self, reader: Reader, prefix: str, limit: int) -> list[str]:
        """The first ``limit`` tag values (of every index) starting with ``prefix``."""

        def one(index: str) -> list[str]:
            try:
                return series_lib.tag_values(reader.read, index, self.scope, prefix, limit)
            except MissingTable:  # nothing landed yet
                return []

        return sorted(set().union(*_each(one, self.tables)))[:limit] if self.tables else []

    def present(self, reader: Reader, source: Source, values: Iterable[str]) -> set[str] | None:
        """Which of ``values`` some series of the served indexes has as a tag value (its own
        index first, the others only for what it lacks); None when its own index does not
        exist (nothing landed yet: nothing is known either way)."""
        wanted = set(values)
        found: set[str] = set()
        order = [self.name(source)] + [t for t in self.tables if t != self.name(source)]
        for index in order:
            if found >= wanted:
                break
            try:
                found |= series_lib.present_values(reader.read, index, self.scope, wanted - found)
            except MissingTable:
                if index == order[0]:
                    return None
        return found

    def entries(self, reader: Reader) -> Entries:
        """The map entries each indexed map table holds, from the metric rows; a table the
        index lists nothing of while it holds rows becomes :attr:`unlisted`."""
        out: Entries = {}
        unlisted: dict[tuple[str, str], str] = {}
        for index, schema in self._schemas.items():
            tables = [
                t
                for t in series_index.indexed_tables(schema)
                if (schema.dataset, t.name) in self._of
            ]
            try:
                metrics = series_lib.metrics(
                    reader.read, index, [t.name for t in tables], self.scope
                )
            except MissingTable:
                metrics = {t.name: [] for t in tables}
                missing = f"its series index {index} does not exist"
            else:
                missing = f"its series index {index} lists none of it"
            for table in tables:
                found = metrics.get(table.name, [])
                maps = {f for f, is_map in series_index.stored_fields(schema, table) if is_map}
                for field, entry in found:
                    if entry and (field in maps or table.rollup is not None):
                        out.setdefault((schema.dataset, table.name, field), []).append(entry)
                if not found and self._holds_rows(reader, table.name):
                    unlisted[(schema.dataset, table.name)] = (
                        f"{table.name} holds data but {missing} (data landed before the schema "
                        f"declared it?): run `{_rebuild_hint(schema)}`"
                    )
        self.unlisted = unlisted
        return {k: sorted(set(v)) for k, v in out.items()}

    def _holds_rows(self, reader: Reader, table: str) -> bool:
        query = ReadRowsQuery(limit=1, row_filter=KEYS_ONLY)
        try:
            return bool(reader.read(table, query))
        except MissingTable:  # nothing to list
            return False


def _fixed(
    tags: Sequence[str], filters: Sequence[TagFilter], tenant: str | None, source: Source
) -> list[tuple[str, ...]] | None:
    """The literal values of the leading tags (the tenant's pinned), as index ranges (none:
    every series; None: no series can match)."""
    by_tag: dict[str, list[TagFilter]] = {}
    for f in filters:
        by_tag.setdefault(f.tagk, []).append(f)
    tenant_field = next(
        (s.field for s in source.table.decl.key.segments if s.kind == "tenant"), None
    )
    combos: list[tuple[str, ...]] = [()]
    for tag in tags:
        if tag == tenant_field and tenant:
            values = [tenant]
        else:
            values = None
            for f in by_tag.get(tag, []):
                allowed = f.literals()
                if allowed is not None:
                    values = [
                        v for v in dict.fromkeys(allowed) if all(g.match(v) for g in by_tag[tag])
                    ]
                    break
        if values is None or len(combos) * len(values) > MAX_LEADING:
            break
        combos = [(*c, v) for c in combos for v in values]
        if not combos:
            return None
    return [] if combos == [()] else combos


def _each(fn: Callable, items: Sequence) -> list:
    """``fn`` of every item, their reads at once."""
    if len(items) < 2:
        return [fn(i) for i in items]
    with ThreadPoolExecutor(max_workers=min(8, len(items))) as pool:
        return list(pool.map(fn, items))


# -- a schema without an index: map entries sampled from the data -----------------------------


def discover_entries(
    target: Target, tables: Sequence, tenant: str | None = None, rows: int = 200
) -> dict[tuple[str, str, str], list[str]]:
    """The map entries (column qualifiers) the map tables hold: the names of
    ``DATASET.FIELD.ENTRY`` metrics. Each value of the key's first field (each host) is
    sampled, ``rows`` rows of it, so an entry only a late-sorting host sends is found too."""
    out: dict[tuple[str, str, str], list[str]] = {}
    reader = Reader(target, tenant=tenant)
    for schema, table, field_name in tables:
        families = {c.family for c in table.columns if c.each == field_name}
        try:
            names = {
                c.qualifier.decode("utf-8", "replace")
                for prefix in _sample_prefixes(reader, table, tenant)
                for r in _first_rows(reader, table.name, prefix, rows)
                for c in r.cells
                if c.family in families
            }
        except BttsError:  # no table yet, too many hosts, Bigtable not answering: what is known
            continue
        out[(schema.dataset, table.name, field_name)] = sorted(names)
    return out


def _sample_prefixes(reader: Reader, table, tenant: str | None) -> list[bytes]:
    """The key prefixes to sample: one per value of the first key field after the tenant."""
    decl = table.decl
    fixed = {_tenant_field(table): tenant} if tenant is not None else {}
    prefix = key_ranges.key_prefix(decl, fixed) if fixed else b""
    open_fields = [
        s for s in decl.key.segments if s.kind != "const" and not (s.kind == "tenant" and tenant)
    ]
    first = open_fields[0] if open_fields else None
    if (
        first is None
        or not first.field
        or first.kind in table_model.TIME_KINDS
        or first.kind == "salt"
    ):
        return [prefix]
    values = reader.distinct(decl, prefix, first.field, MAX_SAMPLED)
    return [key_ranges.key_prefix(decl, {**fixed, first.field: v}) for v in values] or [prefix]


def _first_rows(reader: Reader, table: str, prefix: bytes, rows: int) -> list[ReadRow]:
    query = ReadRowsQuery(
        row_ranges=[RowRange(start_key=prefix or None, end_key=keys.prefix_end(prefix) or None)],
        limit=rows,
        row_filter=COLUMNS_ONLY,
    )
    return reader.read(table, query)


def _tenant_field(table) -> str:
    return next(s.field for s in table.decl.key.segments if s.kind == "tenant")
