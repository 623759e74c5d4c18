"""Which series of a table without a series index hold a metric (``/api/search/lookup`` on a
schema without ``index:``, where the keys give the series but not their metrics).

A row key names a series' tags, never its metrics: a row holds the metrics its columns say, as
an index build folds rows (:class:`transforms.scans.series_index.TableSeries`). So each series
the keys list is checked by one read of at most one row of its key prefix, filtered on the
server to the cells that prove the metric (its column, its map entry's qualifier, a JSON blob
column whose value has the optional field's ``"name":``; a ``rows_per`` key fixes the metric in
the prefix itself), values stripped: keys and qualifiers travel, never values. The checks run
:data:`PARALLEL` at once, in key order, until ``wanted`` series hold the metric; at most
:data:`MAX_CHECKED` per lookup, within its deadline. Beyond either the lookup is refused
(:class:`~btts.tsdb.errors.TooLarge`, :class:`~transforms.errors.Timeout`) naming
``btts index rebuild``, never answered with series that may not hold the metric.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from google.cloud.bigtable.data import row_filters

from btts.tsdb import reads
from btts.tsdb.catalog import Source
from btts.tsdb.errors import BadRequest, TooLarge
from transforms import table_model
from transforms.bigtable.filters import KEYS_ONLY, one_column, re2_literal
from transforms.errors import Timeout
from transforms.scans import key_ranges
from transforms.scans.series_index import TableSeries

__all__ = ["INDEX_HINT", "held"]

INDEX_HINT = "declare `index:` in the schema and run `btts index rebuild`"
MAX_CHECKED = 10_000  # series one lookup may check, one read each (as many as key values)
PARALLEL = reads.PARALLEL_SCANS  # checks at once, as many as a read's scans at once
BATCH = PARALLEL * 4  # checks started before looking whether enough series hold the metric


def proof(source: Source) -> row_filters.RowFilter:
    """The server-side filter keeping at most one cell of a row, one that proves the row holds
    the metric of ``source``, its value stripped (keys-only for a ``rows_per`` key, whose
    prefix names the metric). A :class:`BadRequest` naming the index when the layout cannot
    say it without reading values (a ``rows_per`` name after the time)."""
    shape = TableSeries(source.schema, source.table)
    if shape.per >= 0:
        segments = source.table.decl.key.segments
        if any(s.kind in table_model.TIME_KINDS for s in segments[: shape.per]):
            raise BadRequest(
                f"{source.name} names its metric after the time in its key, so its series' "
                f"metrics cannot be listed from its keys: {INDEX_HINT}"
            )
        return KEYS_ONLY
    metric = (source.field, source.entry)
    parts: list[row_filters.RowFilter] = []
    for family, columns in shape.literal.items():
        for qualifier, metrics in columns.items():
            required, optional = shape.blobs.get((family, qualifier), ((), ()))
            optional = dict(optional)  # a blob's optional field: its "name": in the value
            if metric in metrics or (not source.entry and source.field in required):
                parts.append(one_column([family], qualifier))
            elif not source.entry and source.field in optional:
                needle = b"\\C*" + re2_literal(optional[source.field]) + b"\\C*"
                in_value = row_filters.ValueRegexFilter(needle)
                parts.append(
                    row_filters.RowFilterChain(filters=[one_column([family], qualifier), in_value])
                )
    families = [f for f, fields in shape.maps.items() if source.field in fields]
    if source.entry and families:
        parts.append(one_column(families, source.entry.encode("utf-8")))
    if not parts:  # no column can hold it: no row does
        return row_filters.BlockAllFilter(True)
    cells = parts[0] if len(parts) == 1 else row_filters.RowFilterUnion(filters=parts)
    return row_filters.RowFilterChain(
        filters=[
            cells,
            row_filters.CellsRowLimitFilter(1),
            row_filters.StripValueTransformerFilter(True),
        ]
    )


def held(
    reader: reads.Reader,
    source: Source,
    combos: Sequence[dict],
    wanted: int,
    keep: Callable[[dict], bool],
) -> list[dict]:
    """The first ``wanted`` of ``combos`` (each a series of ``source``: its key fields before
    the time, as :func:`reads.plan` lists them) that ``keep`` keeps and whose rows hold the
    metric, in their order. More than :data:`MAX_CHECKED` to check is :class:`TooLarge`, the
    deadline passing a :class:`Timeout`, both naming the index."""
    cells = proof(source)
    decl = source.table.decl

    def holds(combo: dict) -> bool:
        scan = replace(key_ranges.prefix_scan(decl, combo), limit=1)
        return bool(reader.scan(scan, cells))

    candidates = [c for c in combos if keep(c)]
    out: list[dict] = []
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        for start in range(0, len(candidates), BATCH):
            if start >= MAX_CHECKED:
                raise TooLarge(
                    f"More than {MAX_CHECKED} series of {source.name} to check for the metric "
                    f"{source.metric}: narrow the tags, or {INDEX_HINT}"
                )
            batch = candidates[start : start + BATCH]
            try:
                verdicts = list(pool.map(holds, batch))
            except Timeout as exc:
                raise Timeout(
                    f"Listing the series of {source.name} holding {source.metric} took "
                    f"longer than the deadline: narrow the tags, or {INDEX_HINT}"
                ) from exc
            out += [c for c, ok in zip(batch, verdicts, strict=True) if ok]
            if len(out) >= wanted:
                break
    return out[:wanted]
