"""Scans as the data client's ReadRowsQuery and RowFilter: the cell-time window, newest cell per
column, keys only, key suffixes. Every reader (queries, btts serve, the nightly copy, sales)
builds its requests here, so a scan means the same thing wherever it is read."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from google.cloud.bigtable.data import ReadRowsQuery, RowRange, row_filters

from transforms.scans import key_ranges
from transforms.scans.key_ranges import Scan
from transforms.text import timefmt

__all__ = [
    "COLUMNS_ONLY",
    "KEYS_ONLY",
    "key_suffix_filter",
    "one_column",
    "re2_literal",
    "read_query",
    "row_filter",
]


def row_filter(
    scan: Scan, cells: row_filters.RowFilter | None = None
) -> row_filters.RowFilter | None:
    """The server-side filter of a scan: its cell-time window, then newest cell per column, then
    ``cells`` (the columns a reader wants, e.g. btts serve's one metric)."""
    parts: list[row_filters.RowFilter] = []
    if scan.start_ms is not None or scan.end_ms is not None:
        start, end = scan.cell_window()  # as the table stamps its cells
        parts.append(
            row_filters.TimestampRangeFilter(
                start=_micros_datetime(start) if start is not None else None,
                end=_micros_datetime(end) if end is not None else None,
            )
        )
    if scan.latest_only:
        parts.append(row_filters.CellsColumnLimitFilter(1))
    if cells is not None:
        parts.append(cells)
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else row_filters.RowFilterChain(filters=parts)


def _micros_datetime(micros: int) -> dt.datetime:
    """The datetime the client turns back into ``micros`` (the filter takes datetimes)."""
    return timefmt.EPOCH + dt.timedelta(microseconds=micros)


def read_query(scan: Scan, cells: row_filters.RowFilter | None = None) -> ReadRowsQuery | None:
    """The client query of a scan (with ``cells``, see :func:`row_filter`); None when it
    selects nothing."""
    if not scan.ranges and not scan.row_keys:
        return None
    whole = scan.ranges == (key_ranges.WHOLE_TABLE,)
    if whole and scan.row_keys:
        raise ValueError("a scan reads either the whole table or some rows, not both")
    ranges = None  # with no row keys either: the whole table
    if scan.ranges and not whole:
        ranges = [RowRange(start_key=s or None, end_key=e or None) for s, e in scan.ranges]
    return ReadRowsQuery(
        row_keys=list(scan.row_keys) or None,
        row_ranges=ranges,
        limit=scan.limit,
        row_filter=row_filter(scan, cells),
    )


# Keys only: the first cell of each row, its value stripped.
KEYS_ONLY = row_filters.RowFilterChain(
    filters=[row_filters.CellsRowLimitFilter(1), row_filters.StripValueTransformerFilter(True)]
)
# What a row holds, not what it says: every column's newest cell, without its value.
COLUMNS_ONLY = row_filters.RowFilterChain(
    filters=[row_filters.CellsColumnLimitFilter(1), row_filters.StripValueTransformerFilter(True)]
)


def re2_literal(literal: bytes) -> bytes:
    """``literal`` escaped for a Bigtable RE2 filter: ASCII letters and digits as is, other
    ASCII bytes as ``\\xHH``; non-ASCII text must be valid UTF-8 (RE2 matches it literally)."""
    out = bytearray()
    for byte in literal:
        if byte < 0x80:
            char = chr(byte)
            out += char.encode() if char.isalnum() else b"\\x%02x" % byte
        else:
            out.append(byte)
    try:
        literal.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"cannot match non-UTF-8 bytes literally in RE2: {literal!r}") from None
    return bytes(out)


def one_column(families: Sequence[str], qualifier: bytes) -> row_filters.RowFilter:
    """The cells of the column ``qualifier`` in any of ``families``: a column range from the
    qualifier to itself per family, which selects what a literal qualifier regex does in those
    families without running a regex on every cell (on the emulator the regex cost more than
    reading the cells)."""
    if not families:
        raise ValueError("one_column needs at least one family")
    ranges = [
        row_filters.ColumnRangeFilter(
            family, qualifier, qualifier, inclusive_start=True, inclusive_end=True
        )
        for family in dict.fromkeys(families)
    ]
    return ranges[0] if len(ranges) == 1 else row_filters.RowFilterUnion(filters=ranges)


def key_suffix_filter(suffixes: Sequence[bytes]) -> row_filters.RowKeyRegexFilter:
    """A server-side filter passing rows whose key ends with one of ``suffixes``.

    Bigtable matches a key regex against the whole key; ``\\C`` is RE2's any-byte wildcard (``.``
    would not match a newline byte of a binary key).
    """
    if not suffixes:
        raise ValueError("key_suffix_filter needs at least one suffix")
    alternatives = b"|".join(re2_literal(s) for s in dict.fromkeys(suffixes))
    return row_filters.RowKeyRegexFilter(b"\\C*(?:" + alternatives + b")")
