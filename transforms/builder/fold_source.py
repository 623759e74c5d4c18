"""The series index folded while building: the generated framed builder
(:func:`transforms.builder.codegen.build_function` with ``fold``) adds each valid record's rows
of the chosen tables to a per-table accumulator, in the same pass as their cells and entries.

Why: folding a job's rows again after building (a loop over every row, a key split and a tuple
of its qualifiers each) cost the series index a tenth of the job's CPU. The generated source
already holds what a row's series are made of: its key's text before the time (a field's text or
the cached prefix), its stamp, and its columns, which are constant for a table of fixed cells
and otherwise the map's qualifiers (one cached tuple per name list, from the field's parser) and
whether each optional field is there. So a row costs one dictionary subscript by its head as
the source has it and its span widened in place, its columns tested by identity where they are
the parser's cached tuple (:attr:`TableFold.acc`); a bundle's few distinct keys become
:mod:`transforms.scans.series_fold`'s ``(head bytes, columns) → [first, last]`` when it ends
(:meth:`TableFold.drain`), the form a rebuild and the job's other folds produce.

The lines run last, when nothing can raise any more: a bad record folds nothing. No text of the
schema file is in the source: the accumulators and delimiters are bound constants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from transforms.builder.key_source import Head
from transforms.builder.source import SourceWriter
from transforms.table_model import TIME_KINDS

__all__ = ["FoldSource", "TableFold"]


@dataclass
class TableFold:
    """One table's rows folded by the generated builder. ``acc`` maps a row's head (as the
    source had it) to ``[first, last]`` cell timestamp, and, for a table whose columns vary, to
    ``[first, last, columns]`` of the head's latest columns (what varies of them: a map's
    qualifiers, which optional fields are there), its other columns' spans in ``more`` under
    ``(head, columns)``; ``convert`` turns ``(head, columns)`` into series_fold's ``(head
    bytes, columns)`` (None: a row without a cell)."""

    table: str
    varying: bool = False
    acc: dict = field(default_factory=dict)
    more: dict = field(default_factory=dict)
    convert: Callable[[object, object], tuple | None] = lambda head, columns: None

    def drain(self) -> dict[tuple, list[int]]:
        """The folds so far as :mod:`transforms.scans.series_fold` keys them, then forgotten
        (the dictionaries stay the ones the builder's function holds)."""
        out: dict[tuple, list[int]] = {}
        if self.varying:
            spans = [((h, s[2]), s) for h, s in self.acc.items()] + list(self.more.items())
        else:
            spans = [((h, None), s) for h, s in self.acc.items()]
        for (head, columns), span in spans:
            got = self.convert(head, columns)
            if got is not None:
                _widen(out, got, span[0], span[1])
        self.acc.clear()
        self.more.clear()
        return out


def _widen(acc: dict, key: object, lo: int, hi: int) -> None:
    span = acc.get(key)
    if span is None:
        acc[key] = [lo, hi]
    else:
        span[0], span[1] = min(span[0], lo), max(span[1], hi)


_NEW_HEAD = (0, 0, object())  # the span a new head's line finds: columns equal to no row's


def _other_columns(acc: dict, more: dict, head: object, columns: object, stamp: int) -> None:
    """A row whose head is new, or whose columns are not its head's latest (the same object,
    the generated line's test for a map's qualifiers): equal ones widen its span and become
    the object tested, other ones' span goes to ``more``, this row's columns (with their span
    there, if any) become its head's latest."""
    span = acc.get(head)
    if span is not None:
        if span[2] == columns:  # equal, not the same tuple (a name list the parser's cache
            span[2] = columns  # did not keep): the next row of this list takes the line
            span[0], span[1] = min(span[0], stamp), max(span[1], stamp)
            return
        _widen(more, (head, span[2]), span[0], span[1])
    kept = more.pop((head, columns), None)
    if kept is None:
        acc[head] = [stamp, stamp, columns]
    else:
        acc[head] = [min(kept[0], stamp), max(kept[1], stamp), columns]


class FoldSource:
    """The fold's lines of one generated builder: which tables it folds (of ``tables``, those
    whose every column is a literal one or a map's), the map fields whose qualifiers it needs,
    and, per table, the lines that run once the record is whole (:meth:`emit`)."""

    def __init__(self, src: SourceWriter, tables: frozenset[str]) -> None:
        self._src = src
        self._tables = tables
        self._lines: list[str] = []
        self.folds: list[TableFold] = []

    def wanted(self, table) -> bool:
        """Does this builder fold ``table`` (a codegen TablePlan whose cells are written out)?"""
        if table.name not in self._tables or table.spec.rows_per is not None:
            return False
        return all(col.each or isinstance(col.qualifier, str) for col in table.spec.columns)

    def maps(self, tables) -> set[str]:
        """The map fields whose qualifiers the folded ones of ``tables`` key series by."""
        return {col.each for t in tables if self.wanted(t) for col in t.spec.columns if col.each}

    def table(self, table, key: str, head: Head | None, stamp: str, local: dict, optional: set):
        """Fold ``table``'s row: its key in local ``key`` (``head``: its text before the time,
        when the source has it), its cells stamped ``stamp``."""
        src, spec = self._src, table.spec
        segments = spec.decl.key.segments
        time_last = bool(segments) and segments[-1].kind in TIME_KINDS
        delimiter = spec.decl.key.delimiter.encode("utf-8")
        if head is not None:
            head_expr = head[0]
        elif time_last:
            head_expr = f"{key}.rpartition({src.const(delimiter, 'D')})[0]"
        else:
            head_expr = key
        varying, layout = _varying(spec, local, optional)
        single = len({f.name for f in spec.decl.families}) == 1
        strip = head[1] if head is not None else 0
        fold = TableFold(table.name, bool(varying), convert=_converter(layout, single, strip))
        acc = src.const(fold.acc, "FA")
        n = len(self.folds)
        self.folds.append(fold)
        if not head_expr.isidentifier():
            self._lines.append(f"fh{n} = {head_expr}")
            head_expr = f"fh{n}"
        # a head seen before (nearly every row): a subscript, no call and no test for None
        self._lines += ["try:", f"    fs{n} = {acc}[{head_expr}]", "except KeyError:"]
        if not varying:
            self._lines.append(f"    fs{n} = {acc}[{head_expr}] = [{stamp}, {stamp}]")
            self._lines += self._widened(n, stamp)
            return
        self._lines.append(f"    fs{n} = {src.const(_NEW_HEAD, 'FN')}")  # its columns are no row's
        if varying.isidentifier():  # a map's qualifiers: the parser's cached tuple, as last time
            columns, same = varying, f"fs{n}[2] is {varying}"
        else:  # made per record: compared by value
            columns, same = f"fc{n}", f"fs{n}[2] == fc{n}"
            self._lines.append(f"fc{n} = {varying}")
        self._lines.append(f"if {same}:")
        self._lines += ["    " + line for line in self._widened(n, stamp)]
        other, more = src.const(_other_columns, "FO"), src.const(fold.more, "FM")
        self._lines += ["else:", f"    {other}({acc}, {more}, {head_expr}, {columns}, {stamp})"]

    @staticmethod
    def _widened(n: int, stamp: str) -> list[str]:
        """The lines widening span ``fs{n}`` to take in ``stamp``."""
        return [
            f"if {stamp} > fs{n}[1]:",
            f"    fs{n}[1] = {stamp}",
            f"elif {stamp} < fs{n}[0]:",
            f"    fs{n}[0] = {stamp}",
        ]

    def emit(self) -> None:
        """The folds' lines, at the end of the function."""
        for line in self._lines:
            self._src.add(line)


def _varying(spec, local: dict, optional: set) -> tuple[str, list[tuple]]:
    """The expression of what varies of a table's columns ("": nothing): a map's qualifiers
    (its ``…q`` local), which optional fields are there (bits of an int), or a tuple of those;
    and per column ``(kind, family, qualifier)``, kind "fixed", "optional" or "each"."""
    parts, bits, layout = [], [], []
    for col in spec.columns:
        if col.each:
            parts.append(f"{local[col.each]}q")
            layout.append(("each", col.family, None))
        elif col.value[1] in optional:
            bits.append(f"({local[col.value[1]]} is not None) << {len(bits)}")
            layout.append(("optional", col.family, col.qualifier.encode("utf-8")))
        else:
            layout.append(("fixed", col.family, col.qualifier.encode("utf-8")))
    if bits:
        parts.append(f"({' | '.join(bits)})")
    return (parts[0] if len(parts) == 1 else f"({', '.join(parts)})") if parts else "", layout


def _converter(layout: list[tuple], single: bool, strip: int) -> Callable[..., tuple | None]:
    """``(head, columns)`` → ``(head bytes, columns)`` as
    :func:`transforms.scans.series_fold.fold` keys a row: its key without the time (the whole
    key when the time is not last; a head kept as text is encoded, less ``strip`` bytes of
    delimiter) and its cells' ``(family, qualifier)`` in order, or qualifiers alone for a
    table of one family. ``columns`` is what :func:`_varying`'s expression gave."""
    maps = sum(kind == "each" for kind, _, _ in layout)
    bits = any(kind == "optional" for kind, _, _ in layout)
    known: dict[object, tuple] = {}

    def columns_of(varying: object) -> tuple:
        found = known.get(varying)
        if found is None:
            given = (varying,) if maps + bits == 1 else (varying or ())
            qualifiers = iter(given[:maps])
            mask, bit = (given[maps] if bits else 0), 0
            pairs: list[tuple] = []
            for kind, family, qualifier in layout:
                if kind == "each":
                    pairs += [(family, q) for q in next(qualifiers)]
                elif kind == "fixed":
                    pairs.append((family, qualifier))
                else:
                    if mask >> bit & 1:
                        pairs.append((family, qualifier))
                    bit += 1
            found = tuple(q for _, q in pairs) if single else tuple(pairs)
            if len(known) < 10_000:
                known[varying] = found
        return found

    def convert(head: object, varying: object) -> tuple | None:
        if type(head) is str:
            head = head.encode("utf-8")
            if strip:
                head = head[:-strip]
        columns = columns_of(varying)
        return (head, columns) if columns else None

    return convert
