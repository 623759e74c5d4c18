"""The AddToCell writer's bookkeeping, free of Beam and the client: entries grouped into
requests within Bigtable's limits, and what a partly failed request means (what was applied,
what to tell the user). :mod:`transforms.bigtable.write_aggregates` sends the requests."""

from __future__ import annotations

from collections.abc import Sequence

from transforms.mutations import MAX_MUTATIONS_PER_REQUEST

__all__ = ["EntryBatches", "partial_failure"]


class EntryBatches:
    """Entries gathered into requests of at most ``max_entries`` entries and
    ``max_cells`` mutations (Bigtable refuses a request of more than 100,000)."""

    def __init__(self, max_entries: int, max_cells: int = MAX_MUTATIONS_PER_REQUEST) -> None:
        self._max_entries = max_entries
        self._max_cells = max_cells
        self._entries: list = []
        self._cells = 0

    def add(self, entry: object, cells: int) -> list[tuple[list, int]]:
        """Add an entry of ``cells`` mutations; returns the ``(entries, cells)`` requests that
        are full and must be sent now, oldest first (none, one or two)."""
        ready = []
        if self._cells + cells > self._max_cells:
            ready.append(self.take())
        self._entries.append(entry)
        self._cells += cells
        if len(self._entries) >= self._max_entries:
            ready.append(self.take())
        return [batch for batch in ready if batch[0]]

    def take(self) -> tuple[list, int]:
        """The request gathered so far (possibly empty), and a fresh one started."""
        taken = self._entries, self._cells
        self._entries, self._cells = [], 0
        return taken


class PartialFailure:
    """A request some of whose entries failed: the rows and cells known to be applied (None
    when a failure does not say which entry it was), and the error's message."""

    def __init__(self, applied_rows: int | None, applied_cells: int | None, message: str) -> None:
        self.applied_rows = applied_rows
        self.applied_cells = applied_cells
        self.message = message


def partial_failure(
    table: str,
    cells_per_entry: Sequence[int],
    failed: Sequence[tuple[bytes | None, str]],
    failed_indices: set[int],
) -> PartialFailure:
    """What to count and say when ``failed`` (row key, cause) of a request's entries failed;
    ``failed_indices``: the entries the failures name. AddToCell adds, so the message warns
    that a retry adds the applied ones again."""
    applied_rows = applied_cells = None
    if len(failed_indices) == len(failed):  # every failure names its entry: count the rest
        ok = [n for i, n in enumerate(cells_per_entry) if i not in failed_indices]
        applied_rows, applied_cells = len(ok), sum(ok)
    shown = "; ".join(f"{key!r}: {cause}" for key, cause in failed[:5])
    more = f" (and {len(failed) - 5} more)" if len(failed) > 5 else ""
    total = len(cells_per_entry)
    applied = total - len(failed)
    note = (
        f" The other {applied} were applied; AddToCell is not idempotent, so a retry of "
        "this bundle adds them again."
        if applied > 0
        else ""
    )
    message = f"{len(failed)} of {total} AddToCell entries to {table} failed: {shown}{more}.{note}"
    return PartialFailure(applied_rows, applied_cells, message)
