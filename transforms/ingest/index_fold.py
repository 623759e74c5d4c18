"""The series index of a batch job's rows, made in its build step: each bundle's rows folded
as they are built, and the bundle's index rows handed on when it ends (pure: no Beam).

Why here: a step of its own folded every row again after building it (a loop over the rows, a
key split and a tuple of qualifiers each), which cost the job a tenth of its CPU. The compiled
builder folds the rows of the tables it writes out as it builds them
(:meth:`~transforms.builder.builder.Builder.folding_framer`). What it does not fold (tables
whose cells come from the general closures, shaped records, a builder with its own checks
wrapped around it, a record built apart for the limits check once it passed) is folded from
the block's rows (:func:`~transforms.scans.series_fold.fold_built`). Both end in the one
accumulator per table that :func:`~transforms.scans.series_fold.index_rows` lists, as the step
of its own did (:mod:`transforms.rollup.series_index`, which still folds a stream's rows and
the hourly rollup's), so the index is the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from transforms import schema as schema_lib
from transforms.mutations import FramedRows, check_limits
from transforms.scans import series_fold, series_index

__all__ = ["BundleIndex", "IndexPlan"]


class IndexPlan(NamedTuple):
    """What the build step indexes (picklable): the schema (as its text), the index table and
    the tables of the job's rows whose series it lists."""

    text: str
    source: str
    proto_modules: tuple[str, ...]
    index_table: str
    tables: tuple[str, ...]

    @classmethod
    def of(cls, schema: schema_lib.Schema, tables: Sequence[str]) -> IndexPlan:
        return cls(
            schema.text, schema.source, schema.proto_modules, schema.index.table, tuple(tables)
        )


class BundleIndex:
    """One build step's index: :attr:`frame` builds and folds (the builder's own framer
    ``frame`` of ``owner``, a schema :class:`~transforms.builder.builder.Builder`, made to
    fold too, its rows of ``lean`` tables lean but for those it leaves to :meth:`add`, which
    folds from cells; else ``frame`` as it is), :meth:`add` folds what it did not,
    :meth:`drain` gives a bundle's index rows."""

    def __init__(
        self,
        plan: IndexPlan,
        owner: object | None,
        frame: Callable | None,
        lean: frozenset[str] = frozenset(),
    ) -> None:
        schema = getattr(owner, "schema", None)  # the builder's, parsed already (a file of
        made = (plan.text, plan.source, plan.proto_modules)  # one text is one schema)
        if schema is None or (schema.text, schema.source, schema.proto_modules) != made:
            schema = schema_lib.loads(*made)
        self._table = plan.index_table
        self._series = {t: series_index.TableSeries(schema, schema.table(t)) for t in plan.tables}
        self._plain = frame
        self.frame = frame
        self._folds: list = []
        if owner is not None and frame is not None:
            built = [t for t, s in self._series.items() if s.built]
            lean = lean.difference(t for t, s in self._series.items() if not s.built)
            self.frame, self._folds = owner.folding_framer(built, lean)
            self._plain = owner.framer()  # a record built apart is folded from its cells
        folded = {f.table for f in self._folds}
        self._rest = {t: s for t, s in self._series.items() if t not in folded}
        self._folded = {t: s for t, s in self._series.items() if t in folded}
        self._accs: dict[str, dict] = {}
        self._checked: list = []  # rows built apart and checked, the builder's fold skipped

    @property
    def checked(self) -> Callable[[dict, list, list], None] | None:
        """The framed builder of a record whose rows are checked against Bigtable's limits
        (:func:`~transforms.ingest.block_rows.build_block`): built apart without folding,
        checked (InvalidEvent, a DataError, before anything is kept), then kept and folded."""
        return self._build_checked if self._folds else None

    def _build_checked(self, record: dict, rows: list, entries: list) -> None:
        mine: list = []
        made: list = []
        self._plain(record, mine, made)
        check_limits(mine)
        rows += mine
        entries += made
        self._checked += mine

    def add(self, batch: Sequence) -> int:
        """Fold a block's valid rows of the tables the builder did not fold (and the rows it
        built apart); how many were not their table's key shape."""
        skipped = series_fold.fold_built(self._accs, self._rest, batch) if self._rest else 0
        if self._checked:
            skipped += series_fold.fold_built(self._accs, self._folded, self._checked)
            self._checked = []
        return skipped

    def drain(self) -> FramedRows | None:
        """The index rows of everything folded since the last drain (None: none)."""
        for fold in self._folds:
            drained, acc = fold.drain(), self._accs.get(fold.table)
            if not acc:  # the usual case: the builder folded all of the table's rows
                self._accs[fold.table] = drained
                continue
            for key, (lo, hi) in drained.items():
                series_fold.widen(acc, key, lo, hi)
        rows: dict = {}
        for table, acc in self._accs.items():
            series_fold.index_rows(self._series[table], acc, rows)
        self._accs = {}
        self._checked = []
        return series_index.mutations(self._table, rows) if rows else None
