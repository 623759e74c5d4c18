"""The ``queries:`` section of a schema file: named reads a user runs with ``btts query``.

A query names a table and which of its key fields the caller gives (``select``); how the rest
of the key is read follows from the table's key recipe, so the reads use the same recipe that
built the keys at write time::

    queries:
      - name: host_metrics
        table: METRIC
        select: [host]        # flags of the command: --host
        read: time            # time | prefix | row | table (default: time when a time follows)
        latest: false         # newest cell of each column only
        limit: 10             # at most this many rows
        per: metric           # TB-COL: one range per unpivoted field (the table's rows_per name)

``read: time`` takes ``--start``/``--end``: the time segment after the selected ones becomes a
key range (epoch ms, reversed timestamp or calendar bucket), and cells are also filtered by
timestamp on the server so that a coarse bucket still gives an exact answer. A salted table is
read as one range per bucket, merged in time order. Checked with line numbers
like the rest of the file (:mod:`transforms.schema`); this module holds only the ``queries:``
rules, and the declared queries are :class:`~transforms.schema.model.QuerySpec` values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from transforms.schema.model import QuerySpec, TableSpec
from transforms.schema.problems import Problems
from transforms.table_model import TIME_KINDS

__all__ = ["parse"]

READS = ("time", "prefix", "row", "table")
_QUERY_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
_ALLOWED = ("name", "table", "doc", "select", "read", "latest", "limit", "per")


def parse(
    problems: Problems, node: object, line: int, tables: Sequence[TableSpec]
) -> tuple[QuerySpec, ...]:
    """The queries of a ``queries:`` node (on ``line``); every mistake goes to ``problems``
    with its line. ``tables`` are the file's checked tables."""
    items = problems.sequence(node, "queries", line)
    if items is None:
        return ()
    by_table: Mapping = {t.name: t for t in tables}
    out: list[QuerySpec] = []
    for item, item_line in zip(items, items.lines, strict=True):
        spec = _one(problems, item, item_line, by_table)
        if spec is None:
            continue
        if any(q.name == spec.name for q in out):
            problems.bad(spec.line, f"query {spec.name}: declared more than once in this file")
            continue
        out.append(spec)
    return tuple(out)


def _one(problems: Problems, item: object, line: int, tables: Mapping) -> QuerySpec | None:
    node = problems.mapping(item, "query", line)
    if node is None:
        return None
    lines = node.lines
    problems.keys(node, _ALLOWED, "query")
    name = problems.text(node, "name", "query", required=True)
    what = f"query {name or '?'}"
    if name and not _QUERY_NAME.match(name):
        problems.bad(lines.get("name", line), f"{what}: use lower-case letters, digits and _")
    table_name = problems.text(node, "table", what, required=True)
    if not table_name:
        return None
    table = tables.get(table_name)
    if table is None:
        problems.bad(
            lines.get("table", line),
            f"{what}: table {table_name!r} is not declared in 'tables:'; "
            f"declared: {', '.join(tables) or 'none'}",
        )
        return None
    segments = table.decl.key.segments
    # (field, kind) of the segments a caller can give, in key order (no constants or salt)
    key_fields = [(s.field, s.kind) for s in segments if s.kind not in ("const", "salt")]
    chosen = _select_per(problems, node, line, what, table_name, key_fields)
    if chosen is None:
        return None
    select, per = chosen
    read = _read(problems, node, line, what, table, key_fields, select, per)
    if read is None:
        return None
    latest = node.get("latest", False)
    if not isinstance(latest, bool):
        problems.bad(lines.get("latest", line), f"{what}: latest must be true or false")
        latest = False
    limit = problems.integer(node, "limit", what)
    if per and (table.rows_per is None or table.rows_per.name != per):
        problems.bad(
            lines.get("per", line),
            f"{what}: per names the unpivoted field of a table with rows_per "
            f"({table_name} has {table.rows_per.name if table.rows_per else 'none'})",
        )
    return QuerySpec(
        name=name,
        table=table_name,
        select=select,
        read=read,
        latest=latest,
        limit=limit,
        per=per,
        doc=problems.text(node, "doc", what),
        line=line,
    )


def _select_per(
    problems: Problems, node, line: int, what: str, table_name: str, key_fields: list
) -> tuple[tuple[str, ...], str | None] | None:
    """``select`` and ``per``: together the leading key fields, as a caller fixes them first;
    None when they are not (the query cannot be read)."""
    lines = node.lines
    select_node = node.get("select", [])
    if isinstance(select_node, str):
        select_node = [select_node]
    if not isinstance(select_node, list) or not all(isinstance(s, str) for s in select_node):
        problems.bad(lines.get("select", line), f"{what}: select lists key field names")
        return None
    select = tuple(select_node)
    per = problems.text(node, "per", what)
    fixed = select + ((per,) if per else ())
    names = [f for f, _ in key_fields]
    if list(fixed) != names[: len(fixed)]:
        problems.bad(
            lines.get("select", line),
            f"{what}: select (then per) must be the leading key fields of {table_name} in key "
            f"order (a prefix of {names})",
        )
        return None
    return select, per


def _read(
    problems: Problems,
    node,
    line: int,
    what: str,
    table,
    key_fields: list,
    select: tuple[str, ...],
    per: str | None,
) -> str | None:
    """How the query reads (``read:``, by default what the fixed fields allow: a time range
    when a time segment follows them, one row when they are the whole key, else a prefix)."""
    lines = node.lines
    fixed = select + ((per,) if per else ())
    salted = any(s.kind == "salt" for s in table.decl.key.segments)
    time_follows = len(fixed) < len(key_fields) and key_fields[len(fixed)][1] in TIME_KINDS
    default = "time" if time_follows else "prefix"
    if len(fixed) == len(key_fields) and fixed:
        default = "row"
    read = problems.text(node, "read", what, default=default)
    if read not in READS:
        problems.bad(lines.get("read", line), f"{what}: read must be one of {', '.join(READS)}")
        return None
    if read == "time" and not salted and not time_follows:
        problems.bad(
            lines.get("read", line),
            f"{what}: read: time needs a time segment right after {list(select) or 'the start'}"
            f" in {table.name}'s key",
        )
    if read == "time" and salted and select:
        problems.bad(lines.get("select", line), f"{what}: a salted time read selects no field")
    if read == "row" and len(select) != len(key_fields):
        problems.bad(lines.get("read", line), f"{what}: read: row needs every key field")
    if read == "table" and select:
        problems.bad(lines.get("select", line), f"{what}: read: table selects no field")
    return read
