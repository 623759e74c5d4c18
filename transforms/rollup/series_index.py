"""The series index written beside the rows (:mod:`transforms.scans.series_index` says what it
holds): batches of a job's rows in, batches of index rows out, for the job's SetCell sink.

Each bundle's rows are folded into one span (first, last) per series, metric and tag value, and
written once when the bundle ends: the index costs a key slice and a dictionary update per row
(:func:`~transforms.scans.series_fold.fold_built`) and a few cells per series and bundle, not
a write per event. Its cells are idempotent (the newest timestamp of a column wins), so a
retried bundle, a re-run or another worker's bundle of the same series leaves the index exact.

A batch job's own rows are folded by its build step instead, as they are built
(:mod:`transforms.ingest.index_fold`); this step folds a stream's rows (per window) and the
hourly rollup's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.utils.windowed_value import WindowedValue

from transforms import schema as schema_lib
from transforms.ingest import batches  # noqa: F401 (registers the coder of FramedRows)
from transforms.metrics import NAMESPACE
from transforms.mutations import FramedRows
from transforms.scans import series_fold, series_index

__all__ = ["IndexSeries"]


class _FoldSeries(beam.DoFn):
    """Rows folded per bundle (and window) into index rows, emitted when the bundle ends."""

    def __init__(self, schema: schema_lib.Schema, index_table: str, tables: Sequence[str]) -> None:
        self._text = schema.text
        self._source = schema.source
        self._proto_modules = schema.proto_modules
        self._index_table = index_table
        self._tables = tuple(tables)

    def setup(self) -> None:
        schema = schema_lib.loads(self._text, self._source, self._proto_modules)
        self._series = {t: series_index.TableSeries(schema, schema.table(t)) for t in self._tables}
        self._skipped = Metrics.counter(NAMESPACE, "series_index_rows_skipped")

    def start_bundle(self) -> None:
        self._acc: dict = {}  # window → table → (tag values, metric) → [first, last]

    def process(self, batch: list, window=beam.DoFn.WindowParam) -> Iterable[None]:
        rows = batch if isinstance(batch, list) else (batch,)
        accs = self._acc.get(window)
        if accs is None:
            accs = self._acc[window] = {}
        skipped = series_fold.fold_built(accs, self._series, rows)
        if skipped:
            self._skipped.inc(skipped)
        return ()

    def finish_bundle(self) -> Iterable[WindowedValue]:
        for window, by_table in self._acc.items():
            rows: dict = {}
            for table, acc in by_table.items():
                series_fold.index_rows(self._series[table], acc, rows)
            if rows:
                batch = series_index.mutations(self._index_table, rows)
                yield WindowedValue(batch, window.max_timestamp(), [window])
        self._acc = {}


class IndexSeries(beam.PTransform):
    """Batches of a job's rows → batches of the index rows of ``tables`` (the schema's tables
    the index lists that this job writes), for ``index_table``."""

    def __init__(self, schema: schema_lib.Schema, index_table: str, tables: Sequence[str]) -> None:
        super().__init__()
        self._fn = _FoldSeries(schema, index_table, tables)

    def expand(self, rows: beam.PCollection) -> beam.PCollection:
        # typed: the runner sizes a batch of FramedRows from its first row (RowBatchCoder); an
        # untyped output is sized by encoding all of it, a bundle's every index row
        return rows | "FoldSeries" >> beam.ParDo(self._fn).with_output_types(FramedRows)
