"""Data rows folded into series index rows (what the index holds:
:mod:`transforms.scans.series_index`), for the ingest jobs' bundles and for a rebuild's scan:
a dictionary update per row, then once per distinct series the index rows it lists (pure: no
Beam, no client)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from operator import itemgetter

from transforms.mutations import table_parts, take
from transforms.scans.series_index import TableSeries, metric_key

__all__ = ["fold", "fold_built", "index_rows", "spans", "widen"]


def widen(acc: dict, key: object, lo: int, hi: int) -> None:
    """``acc[key]``, a ``[first, last]`` span, widened to take in ``lo`` and ``hi``."""
    span = acc.get(key)
    if span is None:
        acc[key] = [lo, hi]
    else:
        if lo < span[0]:
            span[0] = lo
        if hi > span[1]:
            span[1] = hi


def fold(acc: dict[tuple, list[int]], series: TableSeries, key: bytes, row_cells: Sequence) -> bool:
    """Fold one data row into ``acc``; False when the key is not the table's shape. A row whose
    cells share one time (an event's row) is kept as its key's head and its columns, sorted
    out once per distinct head and column set (:func:`spans`): a dictionary update per row.
    Any other row at once as ``(tag values, metric) → [first, last]``."""
    if series.quick and row_cells:
        if len(row_cells) == 1:
            lo = hi = row_cells[0][3]
            columns: tuple | None = (row_cells[0][:2],)
        else:
            stamps = [c[3] for c in row_cells]
            lo, hi = min(stamps), max(stamps)
            columns = tuple([c[:2] for c in row_cells]) if lo == hi else None
        if columns is not None:
            widen(acc, (series.head(key), columns), lo, hi)
            return True
    found = series.tag_values(key)
    if found is None:
        return False
    values, parts = found
    for metric, (lo, hi) in series.metrics_of(parts, row_cells).items():
        widen(acc, (values, metric), lo, hi)
    return True


def fold_built(accs: dict[str, dict], series: Mapping[str, TableSeries], rows: Sequence) -> int:
    """Fold a batch of the rows a job built (of any tables) into ``accs`` (table → the
    accumulator of :func:`fold`); how many were not their table's key shape.

    Why not :func:`fold` per row: the index rides on every ingest job, and a call per row cost
    the job a third of its CPU. A builder stamps every cell of a row with one time, so a row of
    a :attr:`TableSeries.built` table folds as its key's head, its qualifiers and its first
    cell's time: a slice, a tuple and one dictionary update, inline. A batch's rows of each
    table are cut out in C (a builder's batch repeats its tables in one order: a stride). Heads
    and qualifiers become series once per distinct pair, when the bundle ends (:func:`spans`)."""
    if not rows:
        return 0
    skipped = 0
    for name, where in table_parts(list(map(_TABLE, rows))):
        spec = series.get(name)
        if spec is None:
            continue
        mine = take(rows, where)
        acc = accs.get(name)
        if acc is None:
            acc = accs[name] = {}
        if spec.built:
            _fold_heads(acc, spec, mine)
        else:
            skipped += sum(not fold(acc, spec, row[1], row[2]) for row in mine)
    return skipped


def _fold_heads(acc: dict, spec: TableSeries, rows: Sequence) -> None:
    """:func:`fold_built`'s inner loop over one table's rows: per row a head, its columns and
    one dictionary update (a row without a cell holds no value)."""
    get, columns_of, delimiter = acc.get, spec.columns_of, spec.delimiter
    cut = spec.time_last
    for _, key, cells in rows:
        if not cells:
            continue
        folded = (key.rpartition(delimiter)[0] if cut else key, tuple(map(columns_of, cells)))
        stamp = cells[0][3]
        span = get(folded)
        if span is None:
            acc[folded] = [stamp, stamp]
        elif stamp > span[1]:
            span[1] = stamp
        elif stamp < span[0]:
            span[0] = stamp


_TABLE = itemgetter(0)


def spans(series: TableSeries, acc: Mapping[tuple, Sequence[int]]) -> tuple[dict, int]:
    """``acc`` of :func:`fold` as ``(tag values, metric) → [first, last]``, and how many of
    its key heads were not the table's key shape."""
    out: dict[tuple, list[int]] = {}
    bad = 0
    head_values, metrics_for = series.head_values, series.metrics_for
    for (first, second), (lo, hi) in acc.items():
        if type(first) is not bytes:
            widen(out, (first, second), lo, hi)
            continue
        values = head_values(first)
        if values is None:
            bad += 1
            continue
        for metric in metrics_for(second):
            widen(out, (values, metric), lo, hi)
    return out, bad


def index_rows(
    series: TableSeries, acc: Mapping[tuple, Sequence[int]], rows: dict | None = None
) -> dict[bytes, list[int]]:
    """The index rows (key → [first, last]) of one table's folded series, added to ``rows``:
    the series rows, the metric rows and the tag-value rows, each scoped globally and, for a
    tenant-keyed table, per tenant; and the directory rows of those sampled (:func:`sampled`).

    Per folded head, not per series (a bundle lists every series it saw): its span widens its
    series' rows, its tag set's span and its column set's (the metrics it holds, listed once
    per distinct set, widen the metric rows at the end)."""
    rows = {} if rows is None else rows
    series_keys, tenant = series.series_keys, series.tenant
    tags: dict[tuple, list[int]] = {}  # tag values → their span over every metric
    held: dict[tuple, list[int]] = {}  # (tenant or "", metrics of a column set) → span
    for values, metrics, lo, hi in _heads(series, acc):
        widen(tags, values, lo, hi)
        widen(held, (values[0] if tenant and values else "", metrics), lo, hi)
        for key in series_keys(values, metrics):
            widen(rows, key, lo, hi)
    scoped: dict[tuple, list[int]] = {}  # (scope, tag value) → span
    for values, (lo, hi) in tags.items():
        for scope in ("", values[0]) if tenant and values else ("",):
            for value in values:
                widen(scoped, (scope, value), lo, hi)
    for (scope, value), (lo, hi) in scoped.items():
        for key in series.value_keys(scope, value):
            widen(rows, key, lo, hi)
    by_metric: dict[tuple, list[int]] = {}  # (tenant or "", metric) → span
    for (owner, metrics), (lo, hi) in held.items():
        for metric in metrics:
            widen(by_metric, (owner, metric), lo, hi)
    name = series.table.name
    for (owner, metric), (lo, hi) in by_metric.items():
        for scope in ("", owner) if owner else ("",):
            widen(rows, metric_key(name, scope, metric), lo, hi)
    return rows


def _heads(series: TableSeries, acc: Mapping[tuple, Sequence[int]]) -> Iterator[tuple]:
    """``acc`` of :func:`fold` as ``(tag values, metrics, first, last)`` per entry that holds a
    metric: a head and its columns once sorted out (cached per distinct columns), a series
    folded at once as itself (its key heads not the table's key shape are left out)."""
    head_values, metrics_for = series.head_values, series.metrics_for
    for (first, second), (lo, hi) in acc.items():
        if type(first) is not bytes:
            yield first, (second,), lo, hi
            continue
        values = head_values(first)
        if values is not None:
            metrics = metrics_for(second)
            if metrics:
                yield values, metrics, lo, hi
