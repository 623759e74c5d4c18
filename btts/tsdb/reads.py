"""Which table and key ranges answer a query, and reading them (the key decides the read).

For a metric and its tag filters, every table storing the metric is walked key segment by key
segment up to its time: a tag given literal values fixes a segment (one range per value); a
``*``/wildcard/regexp tag (or a key field the query leaves open: a metric-only query
aggregates every series, as OpenTSDB does) takes the series the schema's series index lists
for the filters, seen in the read window (:mod:`btts.tsdb.index`: one range per series, never
a read of data to find them; a schema without an index enumerates the field's values from the
keys, one one-row keys-only read per value, bounded); a salt fans out over its buckets, and the
time segment bounds each range (reversed timestamps swap the bounds, via
:mod:`transforms.scans.key_ranges`). A table whose key the query names fully is preferred.

A downsample of whole hours that the planner answers from a rollup table (hourly sums and
counts) reads the rollup for the whole hours of the read window, and the point table for any
partial hour at its edges and for the series the rollup lacks: which tables answer, and their
key ranges, are planned here in one call (:func:`plan_query`), the point table chosen after
the rollup's ranges.

Rows are read with :mod:`transforms.bigtable.rows_stream` (ReadRows straight from gRPC), many
ranges as a few multi-range reads at once (:mod:`btts.tsdb.multi_range`); turning them into
points is :mod:`btts.tsdb.points`'s. A read past the deadline, or cancelled, is a ``Timeout``;
Bigtable failing it, ``Unavailable``; a table the instance lacks,
:class:`~btts.errors.MissingTable` (the routes say which HTTP status).

The layer stands on its own, whatever the query language above it: a :class:`Reader` (one
request's deadline), :func:`plan_query` (the tables and key ranges answering some tag
filters of a metric over a :class:`Window`: a :class:`QueryReads`) and :func:`plan` (one
table's key ranges); ``/api/query`` reaches it through :mod:`btts.tsdb.planning`, and reads
the rows with :mod:`btts.tsdb.points`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from google.api_core import exceptions as gexc
from google.cloud.bigtable.data import ReadRowsQuery, RowRange, row_filters

from btts.config import Target
from btts.errors import MissingTable
from btts.query import engine
from btts.tsdb import multi_range
from btts.tsdb.cache import TtlLru
from btts.tsdb.catalog import Metric, Source
from btts.tsdb.errors import BadRequest, TooLarge
from btts.tsdb.request import TagFilter
from transforms import table_model
from transforms.bigtable import rows_stream
from transforms.bigtable.filters import (
    KEYS_ONLY,
    read_query,
)
from transforms.errors import DataError, Timeout, Unavailable
from transforms.mutations import ReadRow
from transforms.rollup import core
from transforms.scans import key_ranges
from transforms.scans.key_ranges import Scan, Window
from transforms.text import keys

__all__ = [
    "HOUR_MS",
    "PARALLEL_SCANS",
    "Plan",
    "QueryReads",
    "Reader",
    "SeriesKey",
    "plan",
    "plan_query",
]

HOUR_MS = core.HOUR_MS
LATE = "The read did not finish before the deadline: narrow the query"
MAX_DISTINCT = 10_000
DESCRIBED = 50  # scans showQuery spells out; the rest are counted
MAX_SERIES = 100_000  # series one sub-query may read (the index counts them before any read)
PARALLEL_SCANS = 8
SeriesKey = tuple[tuple[str, str], ...]  # sorted (tag, value) pairs


@dataclass(frozen=True)
class Plan:
    """The reads of one query on one table (its key ranges), and what to tell
    ``showQuery``."""

    source: Source
    scans: tuple[Scan, ...] = ()
    combos: tuple[dict, ...] = ()  # the key fields' values before the time, one per series
    notes: tuple[str, ...] = ()

    def describe(self) -> list[str]:
        """Each scan in words (the first :data:`DESCRIBED` of many, then how many more)."""
        shown = [s.describe() for s in self.scans[:DESCRIBED]]
        if len(self.scans) > DESCRIBED:
            shown.append(
                f"… and {len(self.scans) - DESCRIBED} more ranges of {self.scans[0].table}"
            )
        return [*shown, *self.notes]

    def series_keys(self, tags: Collection[str]) -> list[SeriesKey]:
        """Each combo's series, as :func:`btts.tsdb.points.read_points` keys it: its
        ``tags`` and their values."""
        return [tuple(sorted((t, str(v)) for t, v in c.items() if t in tags)) for c in self.combos]

    def without(self, answered: Collection[SeriesKey]) -> Plan | None:
        """This plan less the series another table answers (``answered``, keyed by the tags
        they name); None when none is left, or the ranges are not one per series (a salt)."""
        if not self.combos or len(self.combos) != len(self.scans):
            return None
        tags = {t for key in answered for t, _ in key}
        keep = [i for i, key in enumerate(self.series_keys(tags)) if key not in answered]
        if not keep:
            return None
        return replace(
            self,
            scans=tuple(self.scans[i] for i in keep),
            combos=tuple(self.combos[i] for i in keep),
        )


@dataclass(frozen=True)
class RollupReads:
    """The reads of a query a rollup table answers: its whole ``hours`` (None when the
    window holds none), the points of the partial hours at the ``edges``, and the points of
    the series the rollup lacks (``uncovered``: landed without ``--hourly_rollup``)."""

    hours: Plan | None
    whole_hours: Window
    edges: tuple[Plan, ...] = ()
    uncovered: Plan | None = None


@dataclass(frozen=True)
class QueryReads:
    """Which tables and key ranges answer one query's filters over its read window
    (:func:`plan_query`): the point table's (``points``) or a rollup table's (``rollup``),
    and what ``showQuery`` says of them."""

    points: Plan | None = None
    rollup: RollupReads | None = None
    described: tuple[str, ...] = ()

    @property
    def series_read(self) -> Plan | None:
        """The reads whose key ranges count the series (the point table's, or the rollup's
        whole hours); None when no whole hour is read."""
        return self.points if self.rollup is None else self.rollup.hours


class Reader:
    """One request's reads: a deadline and a count of the rows read, on this process's
    channel (:func:`rows_stream.shared_reader`: the emulator, or Bigtable's endpoint)."""

    def __init__(
        self,
        target: Target,
        deadline_s: float = 30.0,
        tenant: str | None = None,
        enumerations: TtlLru | None = None,
        index=None,
    ) -> None:
        self.rows = rows_stream.shared_reader()
        self.enumerations = enumerations  # shared across requests: a key field's values
        self.index = index  # the served schemas' series indexes (btts.tsdb.index.SeriesIndex)
        self.target = target
        self.until = time.monotonic() + deadline_s
        self.tenant = tenant
        self.rows_read = 0
        self._lock = threading.Lock()

    def _remaining(self) -> float:
        left = self.until - time.monotonic()
        if left <= 0:
            raise Timeout(LATE)
        return left

    def read(self, table: str, query: ReadRowsQuery | rows_stream.SpanQuery) -> list[ReadRow]:
        """The rows of ``query`` (ReadRows straight from gRPC: :mod:`rows_stream`), counted
        for the request's statistics; a missing table is :class:`MissingTable`, the deadline (or a
        call the server cancelled) a :class:`Timeout`, Bigtable failing :class:`Unavailable`."""
        name = f"projects/{self.target.project}/instances/{self.target.instance}/tables/{table}"
        try:
            rows = self.rows.read(name, query, self._remaining())
        except gexc.NotFound as exc:
            raise MissingTable(f"Table {table} does not exist in {self.target.describe()}") from exc
        except (gexc.DeadlineExceeded, gexc.RetryError, gexc.Cancelled, TimeoutError) as exc:
            raise Timeout(LATE) from exc
        except gexc.GoogleAPICallError as exc:
            raise Unavailable(f"Bigtable did not answer the read of {table}: {exc}") from exc
        with self._lock:
            self.rows_read += len(rows)
        return rows

    def check_deadline(self) -> None:
        """A :class:`Timeout` once the request's time is up (between reads, during the
        arithmetic)."""
        self._remaining()

    def scan(self, scan: Scan, cells: row_filters.RowFilter | None) -> list[ReadRow]:
        query = read_query(scan, cells)
        if query is None:
            return []
        return self.read(scan.table, query)

    def scan_all(self, scans: Sequence[Scan], cells) -> list[list[ReadRow]]:
        """Several scans at once (one per value of a group-by tag, one per salt bucket): one
        multi-range read when they differ only in their key ranges (:mod:`multi_range`), else
        their waits on the network overlap; the results keep the scans' order."""
        if len(scans) < 2:
            return [self.scan(s, cells) for s in scans]
        if multi_range.mergeable(scans):
            return multi_range.read_ranges(self.read, scans, cells)
        with ThreadPoolExecutor(max_workers=min(PARALLEL_SCANS, len(scans))) as pool:
            return list(pool.map(lambda s: self.scan(s, cells), scans))

    def scan_parts(self, scans: Sequence[Scan], cells) -> Iterator[list[list[ReadRow]]]:
        """The rows of the scans, part by part as their reads finish: many ranges of one
        table are a few multi-range reads at once (:func:`multi_range.read_parts`), so the
        caller turns one part into points while the next is read."""
        if len(scans) < 2 or not multi_range.mergeable(scans):
            yield self.scan_all(scans, cells)
            return
        pool = ThreadPoolExecutor(max_workers=PARALLEL_SCANS)
        try:  # a part that fails (the deadline) leaves the others to end on their own
            yield from multi_range.read_parts(self.read, scans, cells, pool, PARALLEL_SCANS)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def distinct(self, decl, prefix: bytes, seg_field: str, at_most: int = 0) -> list[object]:
        """The distinct values of the key segment right after ``prefix``: one keys-only,
        one-row read per value, each skipping past the previous value's rows; kept a while
        in ``enumerations`` when given (the values change far slower than dashboards ask).
        More than ``MAX_DISTINCT`` is :class:`TooLarge`; with ``at_most`` the first that many
        are enough."""
        key = (decl.name, prefix, seg_field, at_most)
        cached = self.enumerations.get(key) if self.enumerations is not None else None
        if cached is not None:
            return list(cached)
        out = self._distinct(decl, prefix, seg_field, at_most)
        if self.enumerations is not None:
            self.enumerations.put(key, tuple(out))
        return out

    def _distinct(self, decl, prefix: bytes, seg_field: str, at_most: int) -> list[object]:
        delim = decl.key.delimiter.encode("utf-8")
        end = keys.prefix_end(prefix) if prefix else b""
        start, out = prefix, []
        while True:
            query = ReadRowsQuery(
                row_ranges=[RowRange(start_key=start or None, end_key=end or None)],
                limit=1,
                row_filter=KEYS_ONLY,
            )
            rows = self.read(decl.name, query)
            if not rows:
                return out
            key = rows[0].key
            text = key[len(prefix) :].split(delim)[0]
            try:
                out.append(key_ranges.split_key(decl, key)[seg_field])
            except ValueError as exc:  # not this declaration's key: say so, do not guess
                raise DataError(f"{decl.name}: {exc}") from exc
            if at_most and len(out) >= at_most:
                return out
            if len(out) > MAX_DISTINCT:
                raise TooLarge(f"More than {MAX_DISTINCT} values of {seg_field}")
            start = keys.prefix_end(prefix + text + delim)


# -- planning ---------------------------------------------------------------------------------


def _by_tag(filters: Sequence[TagFilter]) -> dict[str, list[TagFilter]]:
    out: dict[str, list[TagFilter]] = {}
    for f in filters:
        out.setdefault(f.tagk, []).append(f)
    return out


def _literals(fs: Sequence[TagFilter]) -> list[str] | None:
    for f in fs:
        values = f.literals()
        if values is not None:
            return [v for v in values if all(g.match(v) for g in fs)]
    return None


def missing_tag(source: Source, filters: Sequence[TagFilter], tenant: str | None) -> str | None:
    """The key field before the time that the query leaves open (one to enumerate), or None."""
    given = _by_tag(filters)
    per = source.table.rows_per.name if source.table.rows_per is not None else None
    for seg in source.table.decl.key.segments:
        if seg.kind in table_model.TIME_KINDS or seg.kind == "salt":
            return None
        if not seg.field or seg.field == per or (seg.kind == "tenant" and tenant):
            continue
        if seg.field not in given:
            return seg.field
    return None


def choose(metric: Metric, filters: Sequence[TagFilter], tenant: str | None) -> Source:
    """The point table of ``metric`` whose key serves ``filters`` as ranges (fewest
    enumerations first)."""
    tags = {f.tagk for f in filters}
    fits = [s for s in metric.points if tags <= set(s.tags)]
    if not fits:
        known = ", ".join(metric.tags) or "none"
        raise BadRequest(
            f"{metric.name} has no tag {', '.join(sorted(tags - set(metric.tags)))}; tags: {known}"
        )
    ready = [s for s in fits if missing_tag(s, filters, tenant) is None]
    by_tag = _by_tag(filters)
    # a key field the query leaves open is enumerated from the keys (one keys-only read per
    # value), as a * would be: a metric-only query (a new Grafana panel) reads key ranges too
    return min(
        ready or fits,
        key=lambda s: sum(_literals(by_tag.get(t, [])) is None for t in s.tags),
    )


def plan_query(
    reader: Reader,
    metric: Metric,
    filters: Sequence[TagFilter],
    window: Window,
    rollup: Source | None = None,
) -> QueryReads:
    """The tables and key ranges answering ``filters`` of ``metric`` (its catalog entry) over
    the read ``window``: the ``rollup`` table the planner chose for a downsample of whole
    hours (:func:`_plan_rollup`), else the point table whose key serves the filters
    (:func:`choose`). A tag the metric lacks, or a value no key can hold, is a
    :class:`BadRequest`; too many series a :class:`TooLarge`."""
    if rollup is not None:
        return _plan_rollup(reader, metric, rollup, filters, window)
    source = choose(metric, filters, reader.tenant)
    points = plan(reader, source, filters, window)
    return QueryReads(points=points, described=tuple(points.describe()))


def _plan_rollup(
    reader: Reader, metric: Metric, rollup: Source, filters: Sequence[TagFilter], window: Window
) -> QueryReads:
    """The rollup's whole hours of the read ``window``, the points of any partial hour at its
    edges, and the points of the series the rollup lacks (landed without
    ``--hourly_rollup``: a rollup answers only for what it covers). The rollup is planned
    before the point table is chosen: a refusal of the rollup's reads comes first."""
    whole = whole_hours(window)
    described: list[str] = []
    hours = covered = None
    if whole.start_ms < whole.end_ms:
        planned = plan(reader, rollup, filters, whole)
        covered = set(planned.series_keys(rollup.tags))
        unbounded = tuple(replace(s, start_ms=None, end_ms=None) for s in planned.scans)
        hours = replace(planned, scans=unbounded)
        described += [f"rollup {rollup.name} (hourly sum/count) for whole hours", *hours.describe()]
    parts = RollupReads(hours, whole)
    before, after = Window(window.start_ms, whole.start_ms), Window(whole.end_ms, window.end_ms)
    edges = [edge for edge in (before, after) if edge.start_ms < edge.end_ms]
    if not metric.points:
        if edges:
            described.append("no point table: the partial hours at the edges are left out")
        return QueryReads(rollup=parts, described=tuple(described))
    source = choose(metric, filters, reader.tenant)
    at_edges = tuple(plan(reader, source, filters, edge) for edge in edges)
    for planned in at_edges:
        described += [f"points of the partial hour(s) from {source.name}", *planned.describe()]
    uncovered = None
    if covered is not None:
        uncovered = plan(reader, source, filters, window).without(covered)
    if uncovered is not None:
        described.append(f"{len(uncovered.combos)} series the rollup lacks, from {source.name}")
        described += uncovered.describe()
    parts = replace(parts, edges=at_edges, uncovered=uncovered)
    return QueryReads(rollup=parts, described=tuple(described))


def whole_hours(window: Window) -> Window:
    """``[first whole hour, end of the last whole hour)`` inside the ``window``."""
    first = window.start_ms + (-window.start_ms) % HOUR_MS
    return Window(first, max(first, window.end_ms - window.end_ms % HOUR_MS))


def plan(reader: Reader, source: Source, filters: Sequence[TagFilter], window: Window) -> Plan:
    """The scans of ``source`` for ``filters`` in the ``window`` (``[start_ms, end_ms)``):
    literal tags fix segments, others enumerate, a salt fans out, the time segment bounds each
    range. A tag value no key can hold (a delimiter, text for a number) is a
    :class:`BadRequest`."""
    # a window reaching before the times the key can hold reads from its earliest; one wholly
    # before reads nothing (but still finds the series: a lookup plans over [0, 1))
    start_ms = max(window.start_ms, earliest_ms(source))
    empty = window.end_ms <= start_ms
    try:
        out = _plan(reader, source, filters, Window(start_ms, max(window.end_ms, start_ms + 1)))
    except BadRequest:
        raise
    except ValueError as exc:
        raise BadRequest(f"{source.name}: {exc}") from exc
    return replace(out, scans=()) if empty else out


def earliest_ms(source: Source) -> int:
    """The first time the key of ``source`` can hold: its time field's declared ``earliest``
    (1970 unless declared)."""
    refs = source.schema.field_by_ref()
    for seg in source.table.decl.key.segments:
        if seg.kind in table_model.TIME_KINDS:
            spec = refs.get(seg.field or "")
            return spec.earliest_ms if spec is not None and spec.type == "time" else 0
    return 0


def _open_fields(source: Source, filters: Sequence[TagFilter], tenant: str | None) -> list[str]:
    """The key fields before the time (or a salt) that no literal value or tenant fixes: the
    ones a read must enumerate."""
    given = _by_tag(filters)
    per = source.table.rows_per.name if source.table.rows_per is not None else None
    out = []
    for seg in source.table.decl.key.segments:
        if seg.kind in table_model.TIME_KINDS or seg.kind == "salt":
            break
        if not seg.field or seg.field == per or (seg.kind == "tenant" and tenant):
            continue
        if _literals(given.get(seg.field, [])) is None:
            out.append(seg.field)
    return out


def _plan(reader, source: Source, filters, window: Window) -> Plan:
    """Which series the filters name (the key's fields before the time, one dict per series),
    then their key ranges over the ``window``, planned in one place
    (:mod:`transforms.scans.key_ranges`); a key led by a salt reads every bucket."""
    index = reader.index
    if index is not None and index.covers(source) and _open_fields(source, filters, reader.tenant):
        combos, notes = _indexed_combos(reader, source, filters, window)
    else:
        combos, notes = _key_combos(reader, source, filters)
    decl = source.table.decl
    if combos is not None:
        return Plan(source, tuple(key_ranges.time_scans(decl, combos, window)), combos, notes)
    return Plan(source, key_ranges.salted_scans(decl, window), (), notes)


def _indexed_combos(reader, source: Source, filters, window: Window) -> tuple[tuple, tuple]:
    """The series the index lists for ``filters`` seen in the ``window``: one range each
    (the key's fields before the time), never a read of the data to find them."""
    table = source.table
    found = reader.index.series(reader, source, filters, window, MAX_SERIES + 1)
    if len(found) > MAX_SERIES:
        raise TooLarge(f"More than {MAX_SERIES} series of {source.name} match: narrow the tags")
    per = table.rows_per.name if table.rows_per is not None else None
    before = []
    for seg in table.decl.key.segments:
        if seg.kind in table_model.TIME_KINDS:
            break
        if seg.field:
            before.append(seg.field)
    typed = _typer(source)
    combos = {}
    for tags in found:
        combo = {f: (source.field if f == per else typed(f, tags[f])) for f in before}
        combos.setdefault(tuple(combo.values()), combo)
    note = f"{table.name}: {len(found)} series from the index {reader.index.name(source)}"
    return tuple(combos.values()), (note,)


def _typer(source: Source):
    """A tag's text as its key field's value (cached: a * repeats the same values)."""
    cache: dict = {}
    schema, table = source.schema, source.table.name

    def typed(name: str, text: str):
        key = (name, text)
        if key not in cache:
            cache[key] = engine.typed_values(schema, table, {name: text})[name]
        return cache[key]

    return typed


def _key_combos(reader, source: Source, filters) -> tuple[tuple | None, tuple]:
    """The key fields' values before the time, one dict per series: a literal tag fixes its
    field, the tenant and the rows' field are known, any other field is enumerated from the
    keys. None when a salt leads the key (every bucket is read)."""
    schema, table = source.schema, source.table
    decl = table.decl
    given = _by_tag(filters)
    per = table.rows_per.name if table.rows_per is not None else None
    notes: list[str] = []
    combos: list[dict] = [{}]
    for seg in decl.key.segments:
        if seg.kind == "const":
            continue
        if seg.kind == "salt":
            if combos != [{}]:
                raise BadRequest(f"{table.name}: a salt after key fields cannot be ranged")
            notes.append(f"{table.name}: one range per salt bucket, merged in time order")
            return None, tuple(notes)
        if seg.kind in table_model.TIME_KINDS:
            return tuple(combos), tuple(notes)
        name = seg.field
        if name == per:
            values: list[object] = [source.field]
        elif seg.kind == "tenant" and reader.tenant:
            values = [reader.tenant]
        else:
            literal = _literals(given.get(name, [])) if name in given else None
            if literal is not None:
                typed = engine.typed_values
                values = [typed(schema, table.name, {name: v})[name] for v in literal]
            else:
                values = []
                for combo in combos:
                    prefix = key_ranges.key_prefix(decl, combo)
                    found = reader.distinct(decl, prefix, name)
                    matched = [
                        v for v in found if all(f.match(str(v)) for f in given.get(name, []))
                    ]
                    values += [v for v in matched if v not in values]
                notes.append(f"{table.name}: {len(values)} value(s) of {name} from the keys")
        combos = [{**c, name: v} for c in combos for v in dict.fromkeys(values)]
        if not combos:
            return (), tuple(notes)
    raise BadRequest(f"{table.name}: the key {decl.key.describe()} holds no time")
