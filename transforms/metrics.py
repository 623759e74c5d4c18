"""The names of the counters the steps write and the job's report reads: one namespace, dead letters
by reason and source, the landed event-time span; and, for tests and benchmarks, which worker
process did what (:class:`WorkerTally`)."""

from __future__ import annotations

import os
import time
from typing import NamedTuple

__all__ = [
    "CHECKED_ROWS",
    "CHECK_CPU_US",
    "DUPLICATE_RECORDS",
    "EMPTY_CELLS",
    "EMPTY_ROWS",
    "EVENT_TIMES",
    "INDEX_CPU_US",
    "MAX_REASON_KINDS",
    "NAMESPACE",
    "OTHER_REASONS",
    "OVERWRITE_CELLS",
    "OVERWRITE_RECORDS",
    "REASONS_NAMESPACE",
    "TIMED_ROWS",
    "WorkerTally",
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
# The CPU the check's own code spent, in microseconds of its threads, on every worker: the build
# step's fingerprints (their stamps too, which the step's event spans then reuse), each shard's
# pass, and the reading again of the rows whose row id repeats. What the runner spends moving the
# fingerprints (8 bytes a row) between the steps is not in it.
CHECK_CPU_US = "overwrite_check_cpu_us"
# The CPU the batch build step's series index spent outside the builder, in microseconds of its
# threads: folding the rows the builder did not fold, and each bundle's drain into index rows.
# The builder's own fold runs per event inside the generated source, where a clock read would
# cost more than the fold: ``make bench`` measures it apart (benchmarks.cases ``fold``).
INDEX_CPU_US = "series_index_cpu_us"


# -- which worker did what ----------------------------------------------------------------------

# A directory named here makes the read and write steps append, per bundle, how many records
# (rows) their worker process handled: lines ``<pid> <step> <count> <cpu_s> <start> <end>`` in
# ``<dir>/<pid>.tally`` (the process's CPU seconds so far; the bundle's first and last item,
# epoch seconds).
WORKER_TALLY_ENV = "BTTS_WORKER_TALLY"


class WorkerShare(NamedTuple):
    """One worker process's share of a step: items, CPU seconds (the whole process's, at its
    last bundle) and the span from its first item to its last bundle's end (epoch seconds)."""

    items: int
    cpu_s: float
    start: float
    end: float


class WorkerTally:
    """How many items one step handled in this worker process, appended to a file once per
    bundle when :data:`WORKER_TALLY_ENV` names a directory (else nothing is written).

    Why: Beam's counters are summed over workers, so they cannot show that a run spread its
    work over several of them; the runner tests and the one-file benchmark read these files to
    prove that each worker process read and wrote, and when. Made in a DoFn's ``setup`` (on the
    worker, whose environment it reads)."""

    def __init__(self, step: str) -> None:
        self._step = step
        self._dir = os.environ.get(WORKER_TALLY_ENV) or None
        self.count = 0
        self._start = 0.0

    def add(self, count: int) -> None:
        if not self.count and self._dir:
            self._start = time.time()
        self.count += count

    def flush(self) -> None:
        """Append this bundle's count (one line, one write: whole lines even when several
        threads of one worker flush at once) and start again from zero."""
        if self._dir and self.count:
            pid = os.getpid()
            line = f"{pid} {self._step} {self.count} {time.process_time():.3f} "
            line += f"{self._start:.3f} {time.time():.3f}\n"
            with open(os.path.join(self._dir, f"{pid}.tally"), "a", encoding="ascii") as out:
                out.write(line)
        self.count = 0


def read_worker_tallies(directory: str) -> dict[str, dict[int, WorkerShare]]:
    """What :class:`WorkerTally` wrote under ``directory``: step → worker pid → its share."""
    out: dict[str, dict[int, WorkerShare]] = {}
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".tally"):
            continue
        with open(os.path.join(directory, name), encoding="ascii") as lines:
            for line in lines:
                pid, step, count, cpu, start, end = line.split()
                per_pid = out.setdefault(step, {})
                was = per_pid.get(int(pid))
                share = WorkerShare(int(count), float(cpu), float(start), float(end))
                if was is not None:
                    share = WorkerShare(
                        was.items + share.items,
                        max(was.cpu_s, share.cpu_s),
                        min(was.start, share.start),
                        max(was.end, share.end),
                    )
                per_pid[int(pid)] = share
    return out
