"""Where Prometheus' samples live: the ``prometheus`` schema's two tables on one instance, the
builder that turns a sample into their rows, and the senders that write them (the pipelines'
builder, entry encoder and MutateRows transport, so a sample lands byte for byte as a job would
land it).

:meth:`Store.write` returns only once Bigtable has acknowledged every row: an HTTP 2xx after it
means the samples are durable, so a restart of ``btts serve`` loses nothing Prometheus was told
was written. A failure raises :class:`~transforms.errors.Unavailable` (Prometheus retries a 5xx;
every cell has its own timestamp, so the retry rewrites the same cells).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from btts.config import Target
from transforms.bigtable.transport import Batch, open_sender
from transforms.builder import wire
from transforms.builder.builder import Builder
from transforms.errors import Unavailable, UserError
from transforms.schema import Schema

__all__ = ["SAMPLES", "SERIES", "Store", "prometheus_schema"]

SAMPLES, SERIES = "PROM_SAMPLES", "PROM_SERIES"
WRITE_TIMEOUT_S = 60.0  # a write's retries give up after this: a 503, Prometheus retries
ENTRIES_PER_REQUEST = 2000  # rows of one MutateRows request
MUTATIONS_PER_REQUEST = 90_000  # Bigtable's limit is 100,000 per MutateRows request
MESSAGE_BYTES = 9 << 20  # Pub/Sub takes messages of up to 10 MB
PUBLISH_TIMEOUT_S = 60.0
STREAMS = 4  # requests in flight per write
KNOWN_SERIES = 1_000_000  # series ids remembered as indexed (then the memory starts again)


def prometheus_schema(schemas: Sequence[Schema]) -> Schema | None:
    """The served schema holding Prometheus' samples and label index, if any."""
    for schema in schemas:
        names = {t.name for t in schema.tables}
        if SAMPLES in names and SERIES in names:
            return schema
    return None


class Store:
    """The two tables of one instance; thread-safe (requests write concurrently)."""

    def __init__(self, target: Target, schema: Schema, topic: str | None = None) -> None:
        self.target = target
        self.schema = schema
        self.topic = topic  # projects/P/topics/T: publish for the streaming job instead
        self._publisher = None
        self.samples = Builder(schema, [SAMPLES])
        self.series = Builder(schema, [SERIES])
        self.decls = {t.name: t.decl for t in schema.tables}
        self._pool = ThreadPoolExecutor(STREAMS * 2, thread_name_prefix="prom-write")
        self._senders: dict[str, object] = {}
        self._lock = threading.Lock()
        self._known: set[str] = set()  # series whose index row is written

    def table_name(self, table: str) -> str:
        return self.target.table_path(table)

    def _sender(self, table: str):
        with self._lock:
            sender = self._senders.get(table)
            if sender is None:
                t = self.target
                sender, _closer = open_sender(
                    t.project, t.instance, table, self.table_name(table), WRITE_TIMEOUT_S, None
                )
                self._senders[table] = sender
            return sender

    def unknown(self, ids: Sequence[str]) -> list[str]:
        """The series ids whose index row this process has not written yet."""
        with self._lock:
            return [s for s in ids if s not in self._known]

    def remember(self, ids: Sequence[str]) -> None:
        with self._lock:
            if len(self._known) + len(ids) > KNOWN_SERIES:
                self._known.clear()  # written again once: idempotent, bounded memory
            self._known.update(ids)

    def publish(self, lines: list[bytes]) -> None:
        """The events as Pub/Sub messages on :attr:`topic`, returning once Pub/Sub has
        acknowledged every one (stored durably: the streaming job takes it from there); a
        publish that fails is an :class:`Unavailable` (a 5xx: Prometheus sends them again)."""
        from google.api_core import exceptions as gexc
        from google.cloud import pubsub_v1

        with self._lock:
            if self._publisher is None:
                self._publisher = pubsub_v1.PublisherClient()
            publisher = self._publisher
        futures = [publisher.publish(self.topic, data) for data in _messages(lines)]
        try:
            for future in futures:
                future.result(timeout=PUBLISH_TIMEOUT_S)
        except (gexc.GoogleAPICallError, TimeoutError) as exc:
            raise Unavailable(
                f"Pub/Sub did not take the samples ({exc}): not acknowledged"
            ) from exc

    def write(self, rows: dict[str, list[tuple]]) -> int:
        """Every row of ``rows`` (table → builder rows, one key's rows merged into one entry),
        sent in parallel and acknowledged; returns the rows written. A row not written is an
        :class:`Unavailable` naming the table and the first errors."""
        jobs = []
        encode = wire.EntryEncoder()
        for table, table_rows in rows.items():
            head = wire.request_head(self.table_name(table))
            merged = _merged(table_rows)
            sender = self._sender(table)
            for part in _requests(merged):
                batch = Batch(head, [encode(r) for r in part], [r[1] for r in part])
                jobs.append((table, self._pool.submit(sender, batch)))
        errors, written = [], 0
        for table, job in jobs:
            attempt = job.result()
            written += attempt.rows - len(attempt.errors)
            errors += [f"{table}: {e}" for e in attempt.errors]
        if errors:
            shown = "; ".join(errors[:3])
            raise Unavailable(f"{len(errors)} row write(s) failed, nothing acknowledged: {shown}")
        return written


def _messages(lines: list[bytes]) -> list[bytes]:
    """JSON lines cut into Pub/Sub messages of at most :data:`MESSAGE_BYTES` (one event per
    line, as the streaming job reads a message)."""
    out: list[list[bytes]] = [[]]
    size = 0
    for line in lines:
        if out[-1] and size + len(line) + 1 > MESSAGE_BYTES:
            out.append([])
            size = 0
        out[-1].append(line)
        size += len(line) + 1
    return [b"\n".join(part) + b"\n" for part in out if part]


def _requests(rows: list[tuple]) -> list[list[tuple]]:
    """Rows cut into MutateRows requests of at most :data:`ENTRIES_PER_REQUEST` rows and
    :data:`MUTATIONS_PER_REQUEST` cells (Bigtable refuses a request of more mutations whole)."""
    out: list[list[tuple]] = [[]]
    cells = 0
    for row in rows:
        count = len(row[2])
        if out[-1] and (
            len(out[-1]) >= ENTRIES_PER_REQUEST or cells + count > MUTATIONS_PER_REQUEST
        ):
            out.append([])
            cells = 0
        out[-1].append(row)
        cells += count
    return [part for part in out if part]


def _merged(rows: list[tuple]) -> list[tuple]:
    """One row per key, its cells in the order built (a series' samples of one hour become one
    MutateRows entry instead of one each)."""
    by_key: dict[bytes, list] = {}
    order: list[tuple[str, bytes]] = []
    for table, key, cells in rows:
        found = by_key.get(key)
        if found is None:
            by_key[key] = list(cells)
            order.append((table, key))
        else:
            found.extend(cells)
    out = []
    for table, key in order:
        cells = by_key[key]
        if len(cells) > MUTATIONS_PER_REQUEST:
            raise UserError(f"row {key[:60]!r}: more than 90,000 samples of one series and hour")
        out.append((table, key, tuple(cells)))
    return out
