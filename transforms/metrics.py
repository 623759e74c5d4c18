"""The names of the counters the steps write and the job's report reads: one namespace, dead letters
by reason and source, the landed event-time span."""

from __future__ import annotations

__all__ = [
    "CHECKED_ROWS",
    "DUPLICATE_RECORDS",
    "EMPTY_CELLS",
    "EMPTY_ROWS",
    "EVENT_TIMES",
    "MAX_REASON_KINDS",
    "NAMESPACE",
    "OTHER_REASONS",
    "OVERWRITE_CELLS",
    "OVERWRITE_RECORDS",
    "REASONS_NAMESPACE",
    "TIMED_ROWS",
    "reason_metric_name",
    "split_reason_metric_name",
]


NAMESPACE = "btts"


# Dead letters by reason (generalised, see errors.reason_kind) and source: a counter each, and a
# distribution of line numbers whose minimum is the first line with that reason.
REASONS_NAMESPACE = "btts.dead_letter_reasons"


MAX_REASON_KINDS = 50  # per worker; rarer kinds beyond it count as OTHER_REASONS


OTHER_REASONS = "other reasons"


# The earliest and latest event time landed (a distribution: its min and max), from the cells of
# each valid event's first row, for the summary's warning when the times look misread.
EVENT_TIMES = "event_ms"


def reason_metric_name(kind: str, source: str) -> str:
    """One metric per (reason kind, source); kinds hold no tab (errors.reason_kind)."""
    return f"{kind}\t{source}"


def split_reason_metric_name(name: str) -> tuple[str, str]:
    kind, _, source = name.partition("\t")
    return kind, source


# Rows a builder made without a cell (an optional value absent): never sent, since Bigtable
# refuses a MutateRows entry without mutations; counted under this name.
EMPTY_ROWS = "empty_rows"
TIMED_ROWS = "timed_rows"  # rows whose event times make the span (EVENT_TIMES) of a run
EMPTY_CELLS = "empty_cells"  # unpivoted columns without a value: no event, not a dead letter


# The overwrite check's counters (transforms.ingest.overwrites): records that wrote a cell another
# record of the run wrote with another value, how many such cells, records that repeat another
# exactly, and the rows the check compared (present: the check ran).
OVERWRITE_RECORDS = "overwrite_records"
OVERWRITE_CELLS = "overwrite_cells"
DUPLICATE_RECORDS = "duplicate_records"
CHECKED_ROWS = "overwrite_checked_rows"
