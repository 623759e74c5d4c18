"""The overwrite check of a batch run, after the build step: its fingerprints
(:mod:`transforms.ingest.fingerprints`, made by ``BuildRows``) grouped by shard over every
worker, the rows whose row id occurs twice read and built again, and compared cell by cell
(:func:`transforms.ingest.overwrites.analyze`).

Counters (namespace ``btts``): ``distinct_rows_<table>`` (exact: each shard counts the distinct
keys it holds, and a key is in one shard), ``overwrite_cells``, ``overwrite_records``,
``duplicate_records``, ``overwrite_check_cpu_us`` (the CPU of the check's own code,
:data:`~transforms.metrics.CHECK_CPU_US`); the first conflict in input order as the name of
one metric in :data:`~transforms.ingest.overwrites.FIRST_NAMESPACE`. Nothing is written anywhere
else.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from transforms.ingest import block_rows, fingerprints, reread
from transforms.ingest.build_rows import CsvAdapter, decoder
from transforms.ingest.overwrites import (
    FIRST_NAMESPACE,
    Findings,
    Place,
    analyze,
    counted,
    duplicates,
    first_metric_name,
)
from transforms.ingest.readers import line_at
from transforms.metrics import CHECK_CPU_US, NAMESPACE
from transforms.text.csv_dialect import DEFAULT, CsvDialect

__all__ = ["CheckOverwrites"]

_LOG = logging.getLogger(__name__)
# Candidate rows compared in one pass; more are compared a share of their row ids at a time
# (every pass reads the candidates' blocks again), so that an input where every record
# overwrites another (a key without its time) is checked in bounded memory.
RESOLVE_ROWS = 200_000


class _RepeatsFn(beam.DoFn):
    """One shard's fingerprints → its distinct rows per table (counters) and its candidates."""

    def process(self, element: tuple[int, Iterable[fingerprints.Prints]]):
        _shard, prints = element
        began = time.thread_time_ns()
        distinct, candidates = fingerprints.repeats(prints)
        Metrics.counter(NAMESPACE, CHECK_CPU_US).inc((time.thread_time_ns() - began) // 1000)
        for table, count in distinct.items():
            Metrics.counter(NAMESPACE, f"distinct_rows_{table}").inc(count)
        if candidates.tables:
            yield None, candidates


class _ResolveFn(beam.DoFn):
    """Every shard's candidates → their records read and built again, compared cell by cell."""

    def __init__(
        self,
        build: Callable[[dict], list],
        csv_adapter: CsvAdapter | None,
        input_format: str,
        tables: Mapping[str, bool],
        dialect: CsvDialect = DEFAULT,
        numbered: str = "",
    ) -> None:
        self._build = build
        self._csv_adapter = csv_adapter
        self._input_format = input_format
        self._tables = dict(tables)
        self._dialect = dialect
        self._numbered = numbered

    def process(self, element: tuple[None, Iterable[fingerprints.Candidates]]) -> None:
        began = time.thread_time_ns()
        try:
            self._resolve(element[1])
        finally:
            spent = (time.thread_time_ns() - began) // 1000
            Metrics.counter(NAMESPACE, CHECK_CPU_US).inc(spent)

    def _resolve(self, candidates: Iterable[fingerprints.Candidates]) -> None:
        wanted, sources = _wanted(candidates)
        rows = sum(map(len, wanted.values()))
        passes = max(1, -(-2 * rows // RESOLVE_ROWS))  # a repeated row id: two rows at least
        found = Findings()
        signatures: dict[Place, int] = {}
        for part in range(passes):  # one share of the row ids at a time: bounded memory
            share = {t: ids[ids % np.uint64(passes) == part] for t, ids in wanted.items()}
            records: dict[Place, list] = {}
            for source, offsets in sorted(sources.items(), key=lambda item: item[0]):
                for block, places in reread.records_again(
                    source, offsets, self._input_format, self._dialect, bool(self._numbered)
                ):
                    self._collect(block, places, share, records, signatures)
            _merge(found, analyze(records.items()))
        found.records = len(found.conflicting)
        found.duplicates = duplicates(signatures, found)
        _LOG.info(
            "overwrite check: %d records read again, %d conflict, %d repeat another",
            len(signatures),
            found.records,
            found.duplicates,
        )
        for name, value in counted(found):
            Metrics.counter(NAMESPACE, name).inc(value)
        if found.first is not None:
            partial = {source for source, offsets in sources.items() if offsets is not None}
            first = found.first
            first = first._replace(
                first=_with_line(first.first, partial), second=_with_line(first.second, partial)
            )
            Metrics.counter(FIRST_NAMESPACE, first_metric_name(first)).inc()

    def _collect(
        self,
        block,
        places: list[Place],
        wanted: dict[str, np.ndarray],
        records: dict[Place, list],
        signatures: dict[Place, int],
    ) -> None:
        """The block's records that write a wanted row: their wanted rows into ``records``, a
        hash of all their rows of checked tables into ``signatures`` (for duplicates). Built as
        the build step built them (the same checks: a dead letter of the run writes nothing
        here either)."""
        decode = decoder(block, self._csv_adapter, self._numbered)
        keep = block_rows.RecordRows(decode, self._build)
        out = block_rows.build_block(
            block.source, block.kind, block.items, keep.decode, keep.build, None, _LOG
        )
        built: list[tuple[int, list]] = []
        by_table: dict[str, list[tuple[int, tuple]]] = {}
        for index, rows in keep.valid(out):
            mine = [row for row in rows if row[0] in self._tables and row[2]]
            if mine:
                built.append((index, mine))
                for row in mine:
                    by_table.setdefault(row[0], []).append((index, row))
        hits: dict[int, list] = {}
        for table, pairs in by_table.items():
            ids = wanted.get(table)
            if ids is None or not len(ids):
                continue
            mask = np.isin(_ids(table, [row for _, row in pairs], self._tables[table]), ids)
            for i in np.flatnonzero(mask).tolist():
                hits.setdefault(pairs[i][0], []).append(pairs[i][1])
        for index, rows in built:
            if index in hits:
                records[places[index]] = hits[index]
                signatures[places[index]] = hash(tuple(rows))


def _merge(found: Findings, part: Findings) -> None:
    """One pass's findings added to the run's (the first conflict: the earliest in input
    order; a record in a conflict in any pass is in one)."""
    found.cells += part.cells
    found.conflicting |= part.conflicting
    if part.first is not None and (
        found.first is None or _order(part.first.second) < _order(found.first.second)
    ):
        found.first = part.first


def _order(place: Place) -> tuple[str, int]:
    return place.source, place.position


def _ids(table: str, rows: list, stamped_by_key: bool) -> np.ndarray:
    """The identities of ``rows`` of ``table``, as the build step fingerprinted them."""
    kh = fingerprints.key_hashes([row[1] for row in rows], fingerprints.table_salt(table))
    stamps = None if stamped_by_key else np.array([row[2][0][3] for row in rows], np.int64)
    return fingerprints.row_ids(kh, stamps) & fingerprints.IDENTITY


def _wanted(
    candidates: Iterable[fingerprints.Candidates],
) -> tuple[dict[str, np.ndarray], dict[str, set[int] | None]]:
    """The candidate row ids per table, and per source the JSON-lines block offsets to read
    again (None: the source whole)."""
    ids: dict[str, list[np.ndarray]] = {}
    sources: dict[str, set[int] | None] = {}
    for one in candidates:
        for table, (rid, loc) in one.tables.items():
            ids.setdefault(table, []).append(rid)
            for value in np.unique(loc).tolist():
                sid, offset = fingerprints.split_loc(value)
                for source in one.sources.get(sid, ()):
                    known = sources.setdefault(source, set())
                    if offset is None or known is None:
                        sources[source] = None
                    else:
                        known.add(offset)  # in place: a copy per block would be quadratic
    return {t: np.unique(np.concatenate(parts)) for t, parts in ids.items()}, sources


def _with_line(place: Place, partial: set[str]) -> Place:
    """A place read at a byte offset, with its line counted (for the report only)."""
    if place.line is None and place.ordinal is None and place.source in partial:
        try:
            return place._replace(line=line_at(place.source, place.position))
        except OSError:
            return place
    return place


class CheckOverwrites(beam.PTransform):
    """BuildRows' fingerprints (``(shard, Prints)``) → the check's counters (see the module
    docstring). ``build``: the job's plain builder (records → rows), to build the candidates
    again; ``tables``: the checked tables, each with whether its key holds its stamp;
    ``dialect``: how the CSV files are written, to read them again as the job did;
    ``numbered``: the field holding each record's number (``from: record_number``), if any."""

    def __init__(
        self,
        build: Callable[[dict], list],
        csv_adapter: CsvAdapter | None,
        input_format: str,
        tables: Mapping[str, bool],
        dialect: CsvDialect = DEFAULT,
        numbered: str = "",
    ) -> None:
        super().__init__()
        self._resolve = _ResolveFn(build, csv_adapter, input_format, tables, dialect, numbered)

    def expand(self, prints: beam.PCollection) -> beam.PCollection:
        return (
            prints
            | "GroupShards" >> beam.GroupByKey()
            | "Repeats" >> beam.ParDo(_RepeatsFn())
            | "GroupCandidates" >> beam.GroupByKey()
            | "Resolve" >> beam.ParDo(self._resolve)
        )
