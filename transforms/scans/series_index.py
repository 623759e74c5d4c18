"""The series index: what it holds, how its keys are laid out, and what a data row says about
its series (pure: no Beam, no client).

A *series* is a metric and a tag set: a numeric field (or a map field's entry) of one table
that stores a value per event with the time in its key (:func:`point_table`), or of the hourly
rollup of such a table, and the values of that table's key fields that are tags
(:func:`tag_fields`: not the time, a constant, a salt or a ``rows_per`` name). ``btts serve``
lists series, tag values and map entries from the index, so a dashboard over 100,000 series
never reads data to find them. Three kinds of rows, each component escaped and separated so
that keys sort as their components do:

* ``s | TABLE | FIELD | ENTRY | TAG VALUE…``: one per series (``ENTRY`` empty for a field);
* ``m | TABLE | SCOPE | FIELD | ENTRY``: one per metric of a table (the map entries found in the
  data), ``SCOPE`` empty, and once more per tenant for a tenant-keyed table;
* ``v | SCOPE | VALUE``: every tag value (suggest), ``SCOPE`` empty, and once more per tenant;
* ``d | KEY``: the directory, one series or tag-value row in 64 (:func:`sampled`) once more,
  so a reader wanting the first few rows of a range reads between its keys.

Each row holds two cells in a family that keeps one version: ``first`` stamped ``R - t`` and
``last`` stamped ``t``, with ``t`` the earliest and the latest cell timestamp of the series (as
its table stores times). Bigtable keeps the highest timestamp of a column, so whatever order,
bundling, retries or re-runs write them in, the index holds exactly the first and the last
time: every write is idempotent, and a writer pre-aggregates a bundle to two cells per row.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter

from transforms import table_model
from transforms.builder.wire import marks_entry
from transforms.mutations import Cell, FramedRows
from transforms.schema.model import INDEX_FAMILY, Schema, TableSpec
from transforms.text import keys

__all__ = [
    "DIRECTORY",
    "TableSeries",
    "cells",
    "decode",
    "encode",
    "has_time",
    "indexed_tables",
    "metric_key",
    "metric_prefix",
    "mutations",
    "point_table",
    "seen",
    "series_prefix",
    "stored_fields",
    "tag_fields",
    "tenant_keyed",
    "time_qualified",
    "value_key",
    "value_prefix",
]

NUMERIC = ("number", "integer")
SEP = b"\x00\x01"  # between components; a component's own \x00 is written \x00\xff
FIRST, LAST = b"first", b"last"
REVERSE = 10**18  # ``first`` is stamped REVERSE - t: the highest stamp is the earliest time
SERIES, METRIC, VALUE = "s", "m", "v"
Metric = tuple[str, str]  # (field, map entry or "")


# -- which tables and fields are series ---------------------------------------------------------


def tag_fields(table: TableSpec) -> tuple[str, ...]:
    """The key's fields a query can name as tags, in key order (no time, const, salt or
    ``rows_per`` name)."""
    per = table.rows_per.name if table.rows_per is not None else None
    return tuple(
        s.field
        for s in table.decl.key.segments
        if s.field
        and s.kind not in table_model.TIME_KINDS
        and s.kind not in ("const", "salt")
        and s.field != per
    )


def has_time(table: TableSpec) -> bool:
    """Does the key hold the event time (so a time range is a key range)?"""
    return any(s.kind in table_model.TIME_KINDS for s in table.decl.key.segments)


def tenant_keyed(table: TableSpec) -> bool:
    return any(s.kind == "tenant" for s in table.decl.key.segments)


def point_table(table: TableSpec) -> bool:
    """A table holding one cell per event and field, its time in the key: a time series.
    Aggregates, latest-only rows and short-wide rows (qualifiers made of times, one record
    per row) are left out."""
    decl = table.decl
    if any(f.aggregate for f in decl.families) or not has_time(table):
        return False
    return not any(
        isinstance(c.qualifier, tuple) and c.qualifier[0] == "time" for c in table.columns
    )


def stored_fields(schema: Schema, table: TableSpec) -> list[tuple[str, bool]]:
    """The numeric fields (name, is a map) one table stores a value of per event."""
    refs = schema.field_by_ref()
    out: list[tuple[str, bool]] = []
    if table.rows_per is not None:
        out += [(f, False) for f in table.rows_per.fields]
    for col in table.columns:
        if col.add is not None:
            continue
        if col.each:
            out.append((col.each, True))
            continue
        kind = col.value[:1]
        if kind == ("field",):
            out.append((col.value[1], False))
        elif kind == ("protobuf",):
            out += [(name, False) for _, name in col.value[2]]
        elif kind == ("json",):
            out += [(name, False) for name in col.value[1]]
    times = {schema.time, table.time, table.time_else}
    keep = []
    for name, is_map in dict.fromkeys(out):
        spec = refs.get(name)
        if name in times or spec is None:
            continue
        if (is_map and spec.type == "map") or (not is_map and spec.type in NUMERIC):
            keep.append((name, is_map))
    return keep


def time_qualified(schema: Schema, table: TableSpec) -> list[str]:
    """The numeric fields a short-wide table keeps in time-named columns (one metric of a
    rollup that names every value ``metric``)."""
    refs = schema.field_by_ref()
    return list(
        dict.fromkeys(
            c.value[1]
            for c in table.columns
            if isinstance(c.qualifier, tuple)
            and c.qualifier[0] == "time"
            and c.value[:1] == ("field",)
            and refs.get(c.value[1]) is not None
            and refs[c.value[1]].type in NUMERIC
        )
    )


def indexed_tables(schema: Schema) -> list[TableSpec]:
    """The tables whose series the index lists: the point tables and the hourly rollups of
    them (what ``btts serve`` serves)."""
    by_name = {t.name: t for t in schema.tables}
    out = []
    for t in schema.tables:
        if point_table(t):
            keep = bool(stored_fields(schema, t))
        else:
            source = by_name.get(t.rollup.source) if t.rollup is not None else None
            keep = source is not None and has_time(t) and bool(stored_fields(schema, source))
        if keep:
            out.append(t)
    return out


# -- keys ---------------------------------------------------------------------------------------


def encode(parts: Iterable[str | bytes]) -> bytes:
    """Components, each followed by the separator, so that keys sort as the tuples of their
    components and the key of some leading components is the prefix of every longer one."""
    raw = [part.encode("utf-8") if isinstance(part, str) else part for part in parts]
    raw.append(b"")
    joined = SEP.join(raw)  # one join; escaped again only when a component holds a \x00
    if joined.count(b"\x00") == len(raw) - 1:
        return joined
    return SEP.join([part.replace(b"\x00", b"\x00\xff") for part in raw])


def decode(key: bytes) -> list[str]:
    """The components of an index key (or of its tail after a prefix), as text."""
    body = key[: -len(SEP)] if key.endswith(SEP) else key
    return [p.replace(b"\x00\xff", b"\x00").decode("utf-8", "replace") for p in body.split(SEP)]


def series_prefix(table: str, metric: Metric) -> bytes:
    return encode((SERIES, table, metric[0], metric[1]))


def metric_prefix(table: str, scope: str) -> bytes:
    return encode((METRIC, table, scope))


def value_prefix(scope: str) -> bytes:
    return encode((VALUE, scope))


def metric_key(table: str, scope: str, metric: Metric) -> bytes:
    return encode((METRIC, table, scope, metric[0], metric[1]))


def value_key(scope: str, value: str) -> bytes:
    return encode((VALUE, scope, value))


def prefix_end(prefix: bytes) -> bytes:
    return keys.prefix_end(prefix)


def cells(first_us: int, last_us: int) -> tuple[Cell, Cell]:
    """The two cells of an index row seen from ``first_us`` to ``last_us`` (cell timestamps
    of its table)."""
    return (
        _new(Cell, (INDEX_FAMILY, FIRST, b"", REVERSE - first_us)),  # NamedTuple's __new__ in
        _new(Cell, (INDEX_FAMILY, LAST, b"", last_us)),  # C: a bundle lists every series
    )


_new = tuple.__new__


def seen(row_cells: Iterable) -> tuple[int, int] | None:
    """``(first, last)`` cell timestamps of an index row read back (the newest cell of each
    column wins; None when a cell is missing)."""
    first = last = None
    for cell in row_cells:
        if cell[1] == FIRST:
            first = REVERSE - cell[3] if first is None else min(first, REVERSE - cell[3])
        elif cell[1] == LAST:
            last = cell[3] if last is None else max(last, cell[3])
    return None if first is None or last is None else (first, last)


# -- what a data row says about its series ----------------------------------------------------


def _tag_text(seg: table_model.Segment, part: bytes) -> str:
    """A key segment's text as a tag value (what a record's field shows: see
    :func:`transforms.scans.key_ranges.split_key`)."""
    text = part.decode("utf-8")
    kind = seg.kind
    if kind == "zero_pad":
        return str(int(text))
    if kind == "space_pad":
        return text.rstrip(" ")
    if kind == "reverse_id":
        return text[::-1]
    if kind == "reverse_domain":
        return ".".join(reversed(text.split(".")))
    return text


@dataclass
class TableSeries:
    """How one indexed table's rows name their series: which key segments are tags, which
    columns hold which metrics (what :mod:`transforms.scans.series_fold` folds rows by)."""

    schema: Schema
    table: TableSpec
    tags: tuple[str, ...] = ()
    tenant: bool = False
    literal: dict[str, dict[bytes, tuple[Metric, ...]]] = field(default_factory=dict)
    maps: dict[str, tuple[str, ...]] = field(default_factory=dict)  # family → map fields
    # json blob columns holding optional numeric fields: (required names, (name, b'"name":')…)
    blobs: dict[tuple[str, bytes], tuple[tuple[str, ...], tuple]] = field(default_factory=dict)
    per: int = -1  # the key segment naming the field (rows_per), else -1
    per_fields: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        table, decl = self.table, self.table.decl
        self.tags = tag_fields(table)
        self.tenant = tenant_keyed(table)
        segments = decl.key.segments
        self.delimiter = self._delim = decl.key.delimiter.encode("utf-8")
        self._segments = len(segments)
        self._tag_at = tuple(i for i, s in enumerate(segments) if s.field in self.tags)
        self._seg = {i: segments[i] for i in self._tag_at}
        self._tag_cache: dict[tuple, tuple[str, ...]] = {}
        self._cols_cache: dict[tuple, tuple[Metric, ...]] = {}
        self._keys: dict[tuple, tuple[bytes, ...]] = {}  # series and tag values → index keys
        self._prefixes: dict[Metric, bytes] = {}  # a metric → its series keys' head
        self.time_last = bool(segments) and segments[-1].kind in table_model.TIME_KINDS
        if table.rollup is not None and not point_table(table):
            self._rollup_columns()
        else:
            self._point_columns()
        self.quick = self.per < 0 and not self.blobs  # a row's columns name its metrics
        # a job's rows of this table fold by their key's head and qualifiers (fold_built)
        self.built = self.quick and table.rollup is None
        families = {f.name for f in decl.families}
        self.family = next(iter(families)) if len(families) == 1 else None
        self.columns_of = itemgetter(1) if self.family is not None else itemgetter(0, 1)

    def head(self, key: bytes) -> bytes:
        """What of a row key names its series: the key without its time when the time is its
        last segment (one search from the end), else the whole key."""
        return key.rpartition(self._delim)[0] if self.time_last else key

    def head_values(self, head: bytes) -> tuple[str, ...] | None:
        """The tag values of a key's :meth:`head` (None: not this table's key shape)."""
        if self.time_last and self._segments == 1:  # the key is its time: a series, no tag
            return () if not head else None
        found = self.tag_values(head + self._delim if self.time_last else head)
        return found[0] if found is not None else None

    def series_keys(
        self, values: tuple[str, ...], metrics: tuple[Metric, ...]
    ) -> tuple[bytes, ...]:
        """The index keys of a tag set's series of ``metrics`` (each :func:`with_directory`),
        cached: every bundle of a stream lists its series again, and encoding and hashing keys
        cost more than folding. Per tag set and column set, not per series: a key is its
        metric's head and its tag set's tail, the tail encoded once."""
        found = self._keys.get((values, metrics))
        if found is None:
            tail, prefixes, out = encode(values), self._prefixes, []
            for metric in metrics:
                prefix = prefixes.get(metric)
                if prefix is None:
                    prefix = prefixes[metric] = series_prefix(self.table.name, metric)
                out += with_directory(prefix + tail)
            found = tuple(out)
            self._remember((values, metrics), found)
        return found

    def value_keys(self, scope: str, value: str) -> tuple[bytes, ...]:
        """The index keys of a tag value in a scope (:func:`with_directory`), cached."""
        found = self._keys.get((scope, value, None))
        if found is None:
            found = with_directory(value_key(scope, value))
            self._remember((scope, value, None), found)
        return found

    def _remember(self, what: tuple, keys: tuple[bytes, ...]) -> None:
        if len(self._keys) >= 200_000:  # bounded: a worker sees as many series as it likes
            self._keys.clear()
        self._keys[what] = keys

    def metrics_for(self, columns: tuple) -> tuple[Metric, ...]:
        """The metrics a row of these ``(family, qualifier)`` columns holds (cached: a bundle
        repeats a few column sets)."""
        found = self._cols_cache.get(columns)
        if found is None:
            out: list[Metric] = []
            pairs = columns
            if columns and type(columns[0]) is bytes:  # qualifiers of the one family
                pairs = tuple((self.family, q) for q in columns)
            for family, qualifier in pairs:
                named = self.literal.get(family)
                got = named.get(qualifier) if named is not None else None
                if got is None:
                    fields = self.maps.get(family, ())
                    got = tuple((f, qualifier.decode("utf-8", "replace")) for f in fields)
                out += got
            found = tuple(dict.fromkeys(out))
            if len(self._cols_cache) < 10_000:
                self._cols_cache[columns] = found
        return found

    def _point_columns(self) -> None:
        schema, table = self.schema, self.table
        numeric = dict(stored_fields(schema, table))
        per = table.rows_per
        if per is not None:
            names = [s.field for s in table.decl.key.segments]
            self.per = names.index(per.name) if per.name in names else -1
            self.per_fields = frozenset(f for f in per.fields if f in numeric)
        for col in table.columns:
            if col.add is not None:
                continue
            if col.each:
                if numeric.get(col.each):
                    self.maps[col.family] = (*self.maps.get(col.family, ()), col.each)
                continue
            if not isinstance(col.qualifier, str) or not col.qualifier:
                continue  # a qualifier from data: a TB-COL value, named by the key (rows_per)
            qualifier = col.qualifier.encode("utf-8")
            own = self.literal.setdefault(col.family, {})
            own.setdefault(qualifier, ())  # a named column is never a map entry
            kind = col.value[:1]
            found: list[str] = []
            if kind == ("field",) and numeric.get(col.value[1]) is False:
                found = [col.value[1]]
            elif kind == ("protobuf",):  # proto3 scalars: every field has a value
                found = [n for _, n in col.value[2] if numeric.get(n) is False]
            elif kind == ("json",):
                found = self._blob_fields(col.family, qualifier, col.value[1], numeric)
            own[qualifier] = (*own[qualifier], *((n, "") for n in found if n))

    def _blob_fields(
        self, family: str, qualifier: bytes, names: Sequence[str], numeric: Mapping[str, bool]
    ) -> list[str]:
        """The numeric fields a JSON blob column always holds (the schema requires them); the
        optional ones are found per cell by their ``"name":`` (the builder writes each field
        it has as ``"name":number``, strings escaped: the text occurs nowhere else)."""
        refs = self.schema.field_by_ref()
        fields = [n for n in names if numeric.get(n) is False]
        maybe = tuple((n, json.dumps(n).encode("utf-8") + b":") for n in fields if refs[n].optional)
        required = [n for n in fields if not refs[n].optional]
        if maybe:
            self.blobs[(family, qualifier)] = (tuple(required), maybe)
            return [""]  # looked up in the blob
        return required

    def _rollup_columns(self) -> None:
        """A rollup's cells: each value column of its source, per metric qualifier."""
        rule = self.table.rollup
        source = self.schema.table(rule.source)
        if rule.metric:
            metrics = tuple((f, "") for f in time_qualified(self.schema, source))
            for fam in self.table.decl.families:
                self.literal[fam.name] = {rule.metric.encode("utf-8"): metrics}
            return
        maps = tuple(f for f, is_map in stored_fields(self.schema, source) if is_map)
        for fam in self.table.decl.families:
            self.maps[fam.name] = maps

    def tag_values(self, key: bytes) -> tuple[tuple[str, ...], list[bytes]] | None:
        """The tag values of a row key (None: not this table's key shape) and its parts."""
        parts = key.split(self._delim)
        if len(parts) != self._segments:
            return None
        raw = tuple([parts[i] for i in self._tag_at])
        values = self._tag_cache.get(raw)
        if values is None:
            try:
                values = tuple(
                    _tag_text(self._seg[i], p) for i, p in zip(self._tag_at, raw, strict=True)
                )
            except (UnicodeDecodeError, ValueError):
                return None
            if len(self._tag_cache) < 100_000:
                self._tag_cache[raw] = values
        return values, parts

    def metrics_of(self, parts: list[bytes], row_cells: Sequence) -> dict[Metric, list[int]]:
        """The metrics a row holds values of, each with its earliest and latest cell time."""
        out: dict[Metric, list[int]] = {}
        if self.per >= 0:
            name = parts[self.per].decode("utf-8", "replace")
            if name in self.per_fields and row_cells:
                stamps = [c[3] for c in row_cells]
                out[(name, "")] = [min(stamps), max(stamps)]
            return out
        literal, maps = self.literal, self.maps
        for cell in row_cells:
            family, qualifier, stamp = cell[0], cell[1], cell[3]
            named = literal.get(family)
            found = named.get(qualifier) if named is not None else None
            if found is None:
                fields = maps.get(family)
                if not fields:
                    continue
                entry = qualifier.decode("utf-8", "replace")
                found = tuple((f, entry) for f in fields)
            elif (family, qualifier) in self.blobs:
                found = self._blob_metrics(family, qualifier, cell[2])
            for metric in found:
                span = out.get(metric)
                if span is None:
                    out[metric] = [stamp, stamp]
                elif stamp < span[0]:
                    span[0] = stamp
                elif stamp > span[1]:
                    span[1] = stamp
        return out

    def _blob_metrics(self, family: str, qualifier: bytes, value: bytes) -> tuple[Metric, ...]:
        required, maybe = self.blobs[(family, qualifier)]
        return tuple((n, "") for n in (*required, *(n for n, text in maybe if text in value)))


def with_directory(key: bytes) -> tuple[bytes, ...]:
    """A series or tag-value row's key, and its directory row's when it is :func:`sampled`."""
    return (key, DIRECTORY + key) if sampled(key) else (key,)


DIRECTORY = encode(("d",))  # before the key of one series or tag value in :data:`SAMPLE`
SAMPLE = 64


def sampled(key: bytes) -> bool:
    """Is this series or tag-value row also in the directory (one in :data:`SAMPLE`, by a
    stable hash of its key: every writer samples the same rows)? The directory's keys cut a
    range of many series into narrow ones, so a reader wanting the first few reads a few
    hundred rows, never the whole range (a range read costs the emulator every row in it)."""
    return hashlib.blake2b(key, digest_size=4).digest()[0] % SAMPLE == 0  # (CRC32's low bits
    # follow the key's digits: a thousand host names could all miss)


def mutations(index_table: str, rows: Mapping[bytes, Sequence[int]]) -> FramedRows:
    """The index rows as SetCell row mutations ``(table, key, cells)``, with their request
    entries made here, in a batch the runner sizes from its entries.

    Why not :func:`~transforms.builder.wire.marks_entry` per row (the writer's general encoder
    took five times as long for these cells without a value): a bundle lists every series it
    saw, a row each, and a call per row that looked up each cell's head and stamp again cost
    the job as much as the rest of the index's rows. Every index row is the same two cells, so
    a row is its key framed by one formatting call around the two cells' bytes, made once per
    distinct ``(first, last)`` (:func:`_marks`: a bundle's series mostly share their first and
    last times). A key or row too long for one-byte lengths, or an empty key, is
    :func:`marks_entry`'s (tests compare both with the general encoder's bytes)."""
    out, entries = [], []
    append, add = out.append, entries.append
    known: dict[tuple[int, int], tuple[tuple[Cell, Cell], bytes]] = {}
    for key in sorted(rows):
        first, last = rows[key]
        made = known.get((first, last))
        if made is None:
            made = known[(first, last)] = _marks(first, last)
        row_cells, tail = made
        append((index_table, key, row_cells))
        size = len(key)
        body = size + 2 + len(tail)
        if body < 128 and size:  # every length one byte: one formatting call
            add(b"\x12%c\x0a%c%b%b" % (body, size, key, tail))
        else:
            add(marks_entry(key, INDEX_FAMILY, ((FIRST, REVERSE - first), (LAST, last))))
    return FramedRows(out, entries)


def _marks(first: int, last: int) -> tuple[tuple[Cell, Cell], bytes]:
    """An index row's two :func:`cells` and their ``Mutation`` fields' bytes: what
    :func:`marks_entry` writes after the key, taken from its entry of a one-byte key (framed
    as ``0x12 len 0x0a 0x01 key``: two cells of at most 25 bytes each keep every length there
    one byte, so the key's field ends at byte 5)."""
    entry = marks_entry(b"k", INDEX_FAMILY, ((FIRST, REVERSE - first), (LAST, last)))
    return cells(first, last), entry[5:]
