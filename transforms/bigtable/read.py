"""Reading Bigtable rows in parallel with the Python data client, as a Beam transform.

Beam's Python ``ReadFromBigtable`` is a cross-language transform that needs a Java expansion
service; this one runs on the Python client alone, on every runner:

    Create(requested ranges) → split at sampled keys → Reshuffle → read each range

The split step calls the data client's ``sample_row_keys`` once (keys that cut the table into
pieces of roughly equal size) and cuts each requested range ``[start, end)`` at the sampled keys
that fall strictly inside it, so the pieces are contiguous and never overlap: every row of a
requested range is read exactly once. ``Reshuffle`` spreads the pieces over workers, and each piece
is one ``ReadRows`` stream, read by :mod:`transforms.bigtable.rows_stream` (C protobuf, chunks
merged straight into rows; it resumes after the last row it returned when it retries, so a retry
never repeats or skips a row).

Row filters (``google.cloud.bigtable.data.row_filters``) run on the server: filtered-out rows never
travel to the client. Rows come out as client-neutral :class:`RowMutation` tuples (one
:class:`Cell` per stored cell version, timestamps as stored) that pickle cheaply and that
:class:`transforms.bigtable.write.WriteRows` writes back, e.g. to another table after
``row._replace(table=...)``.

Counters (namespace ``btts``, ``<label>`` defaults to the table name): ``read_ranges_<label>``
(pieces read), ``read_rows_<label>``, ``read_cells_<label>`` and ``read_bytes_<label>`` (keys,
family names, qualifiers and values as transferred after server-side filtering).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import apache_beam as beam
from apache_beam import pvalue
from apache_beam.metrics import Metrics
from google.cloud.bigtable.data import BigtableDataClient, ReadRowsQuery, RowRange, row_filters

from transforms.bigtable import rows_stream
from transforms.metrics import NAMESPACE, WorkerTally
from transforms.mutations import RowMutation
from transforms.scans.key_ranges import WHOLE_TABLE, KeyRange, prefix_range

__all__ = ["ReadFromBigtableRows"]

READ_TIMEOUT_S = 600.0  # one piece's read, retries included (the data client's default)


def _check_range(key_range: KeyRange) -> KeyRange:
    start, end = key_range
    if not isinstance(start, bytes) or not isinstance(end, bytes):
        raise TypeError(f"key range bounds must be bytes, got {key_range!r}")
    if end and start > end:
        raise ValueError(f"key range start {start!r} is after its end {end!r}")
    return start, end


def split_ranges(
    split_keys: Iterable[bytes], start: bytes = b"", end: bytes = b""
) -> list[KeyRange]:
    """``[start, end)`` cut at every split key strictly inside it, in key order.

    The pieces are contiguous and do not overlap: the first starts at ``start``, each next one
    starts where the previous one ends, the last ends at ``end`` (``b""`` = unbounded). Empty
    split keys (``sample_row_keys`` ends with one meaning "end of table"), duplicates and keys
    outside the range are ignored. An empty range (``start == end != b""``) gives no piece.
    """
    start, end = _check_range((start, end))
    if end and start == end:
        return []
    cuts = sorted({k for k in split_keys if k and k > start and (not end or k < end)})
    bounds = [start, *cuts, end]
    return list(itertools.pairwise(bounds))


def merge_ranges(ranges: Iterable[KeyRange]) -> list[KeyRange]:
    """Sorted ranges with overlapping or touching ones merged, so no row is read twice when the
    caller asks for overlapping ranges or prefixes."""
    # by start, then end, the empty end (unbounded) after every key
    ordered = sorted((_check_range(r) for r in ranges), key=lambda r: (r[0], not r[1], r[1]))
    merged: list[KeyRange] = []
    for start, end in ordered:
        if end and start == end:
            continue  # empty
        if merged:
            last_start, last_end = merged[-1]
            if not last_end or start <= last_end:  # overlaps or touches the previous one
                new_end = b"" if not last_end or not end else max(last_end, end)
                merged[-1] = (last_start, new_end)
                continue
        merged.append((start, end))
    return merged


def requested_ranges(
    key_ranges: Sequence[KeyRange] | None = None, prefixes: Sequence[bytes] | None = None
) -> list[KeyRange]:
    """The union of the given ranges and prefixes, merged; the whole table when neither is
    given. An empty list given explicitly means "nothing" (no rows are read)."""
    if key_ranges is None and prefixes is None:
        return [WHOLE_TABLE]
    ranges = [tuple(r) for r in (key_ranges or ())]
    ranges += [prefix_range(p) for p in (prefixes or ())]
    return merge_ranges(ranges)


class _ClientDoFn(beam.DoFn):
    """Holds one data client per DoFn instance: opened in setup, closed in teardown."""

    def __init__(self, project: str, instance: str, table: str, app_profile_id: str | None):
        self._project = project
        self._instance = instance
        self._table_id = table
        self._app_profile_id = app_profile_id
        self._client = None
        self._table = None

    def setup(self) -> None:
        self._client = BigtableDataClient(project=self._project)
        kwargs = {"app_profile_id": self._app_profile_id} if self._app_profile_id else {}
        self._table = self._client.get_table(self._instance, self._table_id, **kwargs)

    def teardown(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
            self._table = None


class _SplitFn(_ClientDoFn):
    """All requested ranges (one element) → their pieces, cut at the table's sampled keys."""

    def __init__(self, project, instance, table, app_profile_id, split_keys, sample, label):
        super().__init__(project, instance, table, app_profile_id)
        self._split_keys = tuple(split_keys)
        self._sample = sample
        self._label = label

    def setup(self) -> None:
        super().setup()
        self._pieces = Metrics.counter(NAMESPACE, f"read_ranges_{self._label}")

    def process(self, ranges: Sequence[KeyRange], *_wait_for):
        # ``_wait_for`` is the optional wait_for side input: it only orders this step after it.
        if not ranges:
            return
        keys = list(self._split_keys)
        if self._sample:
            keys += [key for key, _offset in self._table.sample_row_keys()]
        for start, end in ranges:
            for piece in split_ranges(keys, start, end):
                self._pieces.inc()
                yield piece


class _ReadRangeFn(_ClientDoFn):
    """One piece ``[start, end)`` → its rows, with the row filter applied on the server."""

    def __init__(self, project, instance, table, app_profile_id, row_filter, label, out_table):
        super().__init__(project, instance, table, app_profile_id)
        self._row_filter = row_filter
        self._label = label
        self._out_table = out_table

    def setup(self) -> None:
        super().setup()
        self._rows = Metrics.counter(NAMESPACE, f"read_rows_{self._label}")
        self._cells = Metrics.counter(NAMESPACE, f"read_cells_{self._label}")
        self._bytes = Metrics.counter(NAMESPACE, f"read_bytes_{self._label}")
        # the reads: a channel of this DoFn's own, to the client's endpoint (closed in teardown)
        endpoint = self._client.api_endpoint
        self._reader = rows_stream.RowReader(rows_stream.open_channel(endpoint), endpoint)
        self._tally = WorkerTally("read")  # rows per worker process, when asked for

    def finish_bundle(self) -> None:
        self._tally.flush()

    def teardown(self) -> None:
        reader = getattr(self, "_reader", None)
        if reader is not None:
            reader.close()
            self._reader = None
        super().teardown()

    def process(self, piece: KeyRange):
        start, end = piece
        query = ReadRowsQuery(
            row_ranges=RowRange(start_key=start or None, end_key=end or None),
            row_filter=self._row_filter,
        )
        request = rows_stream.request_of(self._table.table_name, query, self._app_profile_id or "")
        rows = cells = size = 0  # counted once per piece, not three counter calls per row
        try:
            for row in self._reader.stream(request, READ_TIMEOUT_S):
                rows += 1
                cells += len(row.cells)
                size += len(row.key)
                for cell in row.cells:
                    size += len(cell.family) + len(cell.qualifier) + len(cell.value)
                yield RowMutation(self._out_table, row.key, row.cells)
        finally:
            self._tally.add(rows)
            self._rows.inc(rows)
            self._cells.inc(cells)
            self._bytes.inc(size)


class ReadFromBigtableRows(beam.PTransform):
    """Read rows of one table in parallel → a PCollection of :class:`RowMutation`.

    ``key_ranges`` (``[start, end)`` byte pairs, ``b""`` = unbounded) and ``prefixes`` select rows
    (their union; the whole table when neither is given); ``row_filter`` is applied by the server.
    ``split_keys`` adds split points to the sampled ones (``sample=False`` uses only those).
    ``label`` names the counters (default: the table); ``out_table`` sets ``RowMutation.table``
    (default: the table read). ``wait_for``: PCollection(s) that must be complete before reading
    starts, e.g. the output of a write whose result is read back.
    """

    def __init__(
        self,
        project: str,
        instance: str,
        table: str,
        key_ranges: Sequence[KeyRange] | None = None,
        prefixes: Sequence[bytes] | None = None,
        row_filter: row_filters.RowFilter | None = None,
        *,
        split_keys: Sequence[bytes] = (),
        sample: bool = True,
        label: str | None = None,
        out_table: str | None = None,
        app_profile_id: str | None = None,
        wait_for: beam.PCollection | Sequence[beam.PCollection] | None = None,
    ) -> None:
        super().__init__()
        self._ranges = requested_ranges(key_ranges, prefixes)
        client = (project, instance, table, app_profile_id)
        label = label or table
        self._split = _SplitFn(*client, split_keys, sample, label)
        self._read = _ReadRangeFn(*client, row_filter, label, out_table or table)
        if isinstance(wait_for, beam.PCollection):
            wait_for = [wait_for]
        self._wait_for = list(wait_for or [])

    def expand(self, begin: pvalue.PBegin) -> beam.PCollection:
        side = []
        if self._wait_for:
            done = (
                self._wait_for[0]
                if len(self._wait_for) == 1
                else tuple(self._wait_for) | "JoinWaitFor" >> beam.Flatten()
            )
            side = [pvalue.AsList(done)]
        return (
            begin
            | "Ranges" >> beam.Create([tuple(self._ranges)])
            | "SplitRanges" >> beam.ParDo(self._split, *side)
            | "SpreadRanges" >> beam.Reshuffle()
            | "ReadRanges" >> beam.ParDo(self._read)
        )
