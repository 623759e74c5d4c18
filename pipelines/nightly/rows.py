"""What the nightly job reads and compares: day keys, the server-side filters of the source
scan, retargeted rows, and the per-day digests (row count and content checksum) that
verification compares. Pure functions (no Beam)."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from google.cloud.bigtable.data import row_filters

from pipelines.nightly.dates import DAY, daily_table, single_table
from transforms.bigtable.filters import key_suffix_filter, re2_literal
from transforms.mutations import RowMutation
from transforms.table_model import TableDecl

__all__ = [
    "EMPTY",
    "Digest",
    "add_digests",
    "copy_day",
    "destination_row",
    "row_digest",
    "source_filter",
]


def key_day(key: bytes) -> str:
    """The ``YYYYMMDD`` a source key ends with (``...#YYYYMMDD``)."""
    _, sep, day = key.rpartition(b"#")
    if not sep or not DAY.fullmatch(day.decode("ascii", "replace")):
        raise ValueError(f"row key {key!r} does not end with #YYYYMMDD")
    return day.decode("ascii")


def single_table_key(key: bytes) -> bytes:
    """``METER#YYYYMMDD`` → ``YYYYMMDD#METER`` (the single-table layout's key)."""
    head, _, day = key.rpartition(b"#")
    key_day(key)
    return day + b"#" + head


def day_filter(days: Sequence[str]) -> row_filters.RowKeyRegexFilter:
    """Server-side filter: keys ending with ``#YYYYMMDD`` of one of ``days``."""
    return key_suffix_filter([b"#" + d.encode("ascii") for d in days])


def live_cells_filter(decl: TableDecl) -> row_filters.RowFilter | None:
    """Server-side filter dropping cell versions the families' ``max_versions`` GC rules have
    already condemned (Bigtable collects them lazily, so reads may still return them). Copying
    them would make the copy differ from the source once either side is collected."""
    limits = {f.name: f.max_versions for f in decl.families}
    if not any(limits.values()):
        return None
    if len(set(limits.values())) == 1:
        return row_filters.CellsColumnLimitFilter(next(iter(limits.values())))
    return row_filters.RowFilterUnion(
        [
            row_filters.RowFilterChain(
                [
                    row_filters.FamilyNameRegexFilter(re2_literal(name.encode("utf-8"))),
                    row_filters.CellsColumnLimitFilter(limit)
                    if limit
                    else row_filters.PassAllFilter(True),
                ]
            )
            for name, limit in limits.items()
        ]
    )


def source_filter(plan_days: Sequence[str], decl: TableDecl) -> row_filters.RowFilter:
    """The source scan's filter: the days' keys, and only the live versions of each column."""
    live = live_cells_filter(decl)
    days = day_filter(plan_days)
    return days if live is None else row_filters.RowFilterChain([days, live])


def destination_row(row: RowMutation, source: str, layout: str) -> RowMutation:
    """A source row retargeted to its destination: same cells; per-day table, or re-keyed."""
    if layout == "single_table":
        return row._replace(table=single_table(source), key=single_table_key(row.key))
    return row._replace(table=daily_table(source, key_day(row.key)))


def copy_day(row: RowMutation, layout: str) -> str:
    """The day of a destination row (from its table name, or its key's date prefix)."""
    if layout == "single_table":
        return row.key[:8].decode("ascii")
    return row.table[-8:]


class Digest(NamedTuple):
    """Row count and content checksum of a set of rows."""

    rows: int
    checksum: int

    @property
    def hex(self) -> str:
        return f"{self.checksum:064x}"

    def describe(self) -> str:
        return f"{self.rows:,} rows (checksum {self.hex[:16]})"


EMPTY = Digest(0, 0)
_MOD = 1 << 256


def _canonical(cell) -> tuple:
    return (cell.family, cell.qualifier, -cell.timestamp_us, cell.value)


_FAMILY = struct.Struct(">H")  # length prefixes of the digest's fields
_LENGTH = struct.Struct(">I")
_STAMP_AND_LENGTH = struct.Struct(">qI")


def row_digest(row: RowMutation) -> Digest:
    """One row's :class:`Digest`: SHA-256 of its key and cells in a canonical order (family,
    qualifier, newest first), every field length-prefixed so no two different rows encode alike.
    Verification digests every row twice (as copied, as read back): the bytes are joined and
    hashed once per row, and a family's prefix is encoded once per row."""
    parts = [_LENGTH.pack(len(row.key)), row.key]
    add = parts.extend
    heads: dict[str, bytes] = {}
    for family, qualifier, value, stamp in sorted(row.cells, key=_canonical):
        head = heads.get(family)
        if head is None:
            name = family.encode("utf-8")
            head = heads[family] = _FAMILY.pack(len(name)) + name
        add(
            (
                head,
                _LENGTH.pack(len(qualifier)),
                qualifier,
                _STAMP_AND_LENGTH.pack(stamp, len(value)),
                value,
            )
        )
    return Digest(1, int.from_bytes(hashlib.sha256(b"".join(parts)).digest(), "big"))


def add_digests(digests: Iterable[Digest]) -> Digest:
    """The :class:`Digest` of disjoint sets of rows together. Counts and checksums add in any
    order, so Beam may combine partial digests as it likes (``beam.CombinePerKey``)."""
    rows, checksum = 0, 0
    for digest in digests:
        rows += digest.rows
        checksum += digest.checksum
    return Digest(rows, checksum % _MOD)
