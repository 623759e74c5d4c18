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
read as one range per bucket, merged in time order. Parsed with line numbers by the checker of
:mod:`transforms.schema_file` (this module holds only the ``queries:`` rules).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from transforms.key_ranges import TIME_KINDS

READS = ("time", "prefix", "row", "table")
_QUERY_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
_ALLOWED = ("name", "table", "doc", "select", "read", "latest", "limit", "per")


@dataclass(frozen=True)
class QuerySpec:
    """One declared query: see the module docstring for the meaning of each field."""

    name: str
    table: str
    select: tuple[str, ...] = ()
    read: str = "prefix"
    latest: bool = False
    limit: int | None = None
    per: str = ""
    doc: str = ""
    line: int = field(default=0, compare=False)


def parse(checker, node: object, line: int, tables: Sequence) -> tuple[QuerySpec, ...]:
    """The queries of a ``queries:`` node; problems go to ``checker.bad`` with their line.
    ``tables`` are the file's parsed :class:`~transforms.schema_file.TableSpec` s."""
    items = checker.sequence(node, "queries", line)
    if items is None:
        return ()
    by_table: Mapping = {t.name: t for t in tables}
    out: list[QuerySpec] = []
    for item, item_line in zip(items, items.lines, strict=True):
        spec = _one(checker, item, item_line, by_table)
        if spec is None:
            continue
        if any(q.name == spec.name for q in out):
            checker.bad(spec.line, f"query {spec.name}: declared more than once in this file")
            continue
        out.append(spec)
    return tuple(out)


def _one(checker, item: object, line: int, tables: Mapping) -> QuerySpec | None:
    node = checker.mapping(item, "query", line)
    if node is None:
        return None
    lines = node.lines
    checker.keys(node, _ALLOWED, "query")
    name = checker.text(node, "name", "query", required=True)
    what = f"query {name or '?'}"
    if name and not _QUERY_NAME.match(name):
        checker.bad(lines.get("name", line), f"{what}: use lower-case letters, digits and _")
    table_name = checker.text(node, "table", what, required=True)
    if not table_name:
        return None
    table = tables.get(table_name)
    if table is None:
        checker.bad(
            lines.get("table", line),
            f"{what}: table {table_name!r} is not declared in 'tables:'; "
            f"declared: {', '.join(tables) or 'none'}",
        )
        return None
    segments = table.decl.key.segments
    # (field, kind) of the segments a caller can give, in key order (no constants or salt)
    key_fields = [(s.field, s.kind) for s in segments if s.kind not in ("const", "salt")]
    salted = any(s.kind == "salt" for s in segments)
    select_node = node.get("select", [])
    if isinstance(select_node, str):
        select_node = [select_node]
    if not isinstance(select_node, list) or not all(isinstance(s, str) for s in select_node):
        checker.bad(lines.get("select", line), f"{what}: select lists key field names")
        return None
    select = tuple(select_node)
    per = checker.text(node, "per", what)
    fixed = select + ((per,) if per else ())
    names = [f for f, _ in key_fields]
    if list(fixed) != names[: len(fixed)]:
        checker.bad(
            lines.get("select", line),
            f"{what}: select (then per) must be the leading key fields of {table_name} in key "
            f"order (a prefix of {names})",
        )
        return None
    time_follows = len(fixed) < len(key_fields) and key_fields[len(fixed)][1] in TIME_KINDS
    default = "time" if time_follows else "prefix"
    if len(fixed) == len(key_fields) and fixed:
        default = "row"
    read = checker.text(node, "read", what, default=default)
    if read not in READS:
        checker.bad(lines.get("read", line), f"{what}: read must be one of {', '.join(READS)}")
        return None
    if read == "time" and not salted and not time_follows:
        checker.bad(
            lines.get("read", line),
            f"{what}: read: time needs a time segment right after {list(select) or 'the start'}"
            f" in {table_name}'s key",
        )
    if read == "time" and salted and select:
        checker.bad(lines.get("select", line), f"{what}: a salted time read selects no field")
    if read == "row" and len(select) != len(key_fields):
        checker.bad(lines.get("read", line), f"{what}: read: row needs every key field")
    if read == "table" and select:
        checker.bad(lines.get("select", line), f"{what}: read: table selects no field")
    latest = node.get("latest", False)
    if not isinstance(latest, bool):
        checker.bad(lines.get("latest", line), f"{what}: latest must be true or false")
        latest = False
    limit = checker.integer(node, "limit", what)
    if per and (table.rows_per is None or table.rows_per.name != per):
        checker.bad(
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
        doc=checker.text(node, "doc", what),
        line=line,
    )
