"""The schema's rules run as they are stated: a plain loop over a :class:`BuildPlan`'s closures,
no generated source. The official counterpart of :mod:`transforms.builder.codegen`.

Why keep it: the generated function is a fork of these rules written out for speed (inline
parsing, cached keys, shared cells, request bytes made while building). This loop calls the
same field parsers, order checks, key recipes (the :class:`~transforms.table_model.KeyRecipe`
queries and table creation use) and cell closures, one after another, so it is what the schema
says and nothing else. Tests compare the two over generated records (rows equal, refusals equal);
``BTTS_OFFICIAL=builder`` makes every :class:`~transforms.builder.builder.Builder` run it
(:mod:`transforms.official`); benchmarks/forks.py measures what the generated source buys.
Pure: no Beam, no client.
"""

from __future__ import annotations

from collections.abc import Callable

from transforms.builder.codegen import BuildPlan, TablePlan
from transforms.text.events import check_fields

__all__ = ["build_function"]


def _table_rows(table: TablePlan, values: dict) -> list[tuple]:
    """One table's rows: every listed field's row for an unpivoted table, else one row (its
    cells stamped first, then its key, the order the generated source follows)."""
    if table.spec.rows_per is not None:
        return table.rows(values)
    ts_ms, ts_us = table.stamp(values)
    cells = tuple(table.cells(values, ts_ms, ts_us))
    return [(table.name, table.key(values), cells)]


def build_function(plan: BuildPlan, framed: bool = False) -> Callable:
    """``record → rows`` for ``plan`` (``framed``: ``(record, out, ent) → None`` appending the
    rows and a None entry per row, which the writer encodes), as
    :func:`transforms.builder.codegen.build_function` makes it."""
    required = tuple(f.spec.name for f in plan.fields if not f.spec.optional)
    optional = tuple(f.spec.name for f in plan.fields if f.spec.optional)
    fields = tuple((f.spec.ref, f.spec.name, f.parse, f.spec.optional) for f in plan.fields)
    ordered = plan.ordered
    tables = plan.tables

    def build(record: dict) -> list[tuple]:
        check_fields(record, required, optional)
        parsed: dict = {}
        for ref, name, parse, is_optional in fields:
            if is_optional:  # absent, or a JSON null: no value
                value = record.get(name)
                parsed[ref] = None if value is None else parse(value)
                continue
            parsed[ref] = parse(record[name])
        for check in ordered:
            later, earlier = parsed[check.ref], parsed[check.after]
            if later is not None and later <= earlier:
                check.fail(record)
        values = {ref: value for ref, value in parsed.items() if value is not None}
        out: list[tuple] = []
        for table in tables:
            out += _table_rows(table, values)
        return out

    if not framed:
        return build

    def build_framed(record: dict, out: list, ent: list) -> None:
        rows = build(record)  # raises before anything is appended
        out.extend(rows)
        ent.extend([None] * len(rows))  # no entry made here: the writer encodes each row

    return build_framed
