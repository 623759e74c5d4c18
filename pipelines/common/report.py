"""What a run did: the :class:`RunReport` every job's ``run()`` returns, the counters and
dead-letter reasons it is made of, the end-of-run summary, when a finished run failed (its
:class:`Limits`), and what a dry run says instead."""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from apache_beam.metrics.metric import MetricsFilter
from apache_beam.runners.runner import PipelineResult

from btts import config
from pipelines.common.remote import Runner
from transforms.errors import RunFailed
from transforms.ingest.overwrites import FIRST_NAMESPACE, first_from_metric_name
from transforms.metrics import (
    DUPLICATE_RECORDS,
    EVENT_TIMES,
    NAMESPACE,
    OVERWRITE_CELLS,
    OVERWRITE_RECORDS,
    REASONS_NAMESPACE,
    split_reason_metric_name,
)
from transforms.text import timefmt

__all__ = [
    "BadRecordLimit",
    "JobFailed",
    "Limits",
    "RunReport",
    "conclude",
    "counters",
    "dead_letter_reasons",
    "dry_run_report",
    "first_overwrite",
    "parse_bad_records",
]


def counters(result: PipelineResult) -> dict[str, int]:
    """This run's btts counters (committed where the runner has them, else attempted); empty
    for a Dataflow flex-template launch, which only writes the job spec: no job to ask yet."""
    if getattr(result, "has_job", True) is False:
        return {}
    out: dict[str, int] = {}
    metrics = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))
    for counter in metrics["counters"]:
        name = counter.key.metric.name
        out[name] = out.get(name, 0) + int(_metric_value(counter) or 0)
    for dist in metrics["distributions"]:  # the span of event times landed
        value = _metric_value(dist)
        if dist.key.metric.name == EVENT_TIMES and value is not None and value.count:
            low, high = out.get("earliest_event_ms"), out.get("latest_event_ms")
            out["earliest_event_ms"] = value.min if low is None else min(low, value.min)
            out["latest_event_ms"] = value.max if high is None else max(high, value.max)
    return out


@dataclass(frozen=True)
class Reason:
    """One kind of dead letter in a run: how many, and where it first happened."""

    kind: str
    count: int
    source: str
    line: int | None  # first line number in ``source``, when the reader knows lines


def dead_letter_reasons(result: PipelineResult) -> list[Reason]:
    """This run's dead letters by reason kind, most frequent first (from BuildRows' metrics)."""
    if getattr(result, "has_job", True) is False:
        return []
    counts: dict[str, int] = {}
    firsts: dict[str, str] = {}  # each kind's first source (by name) when no line is known
    query = result.metrics().query(MetricsFilter().with_namespace(REASONS_NAMESPACE))
    for counter in query["counters"]:
        kind, source = split_reason_metric_name(counter.key.metric.name)
        counts[kind] = counts.get(kind, 0) + int(_metric_value(counter) or 0)
        firsts[kind] = min(firsts.get(kind, source), source)
    lines: dict[tuple[str, str], int] = {}
    for dist in query["distributions"]:
        value = _metric_value(dist)
        if value is not None and value.count:
            lines[split_reason_metric_name(dist.key.metric.name)] = int(value.min)
    out = []
    for kind, count in counts.items():
        known = sorted((src, line) for (k, src), line in lines.items() if k == kind)
        source, line = known[0] if known else (firsts[kind], None)
        out.append(Reason(kind, count, source, line))
    return sorted(out, key=lambda r: (-r.count, r.kind))


def first_overwrite(result: PipelineResult) -> str | None:
    """The run's first overwrite in input order (two records, the cell, both values), as one
    line; None when there was none (or no job to ask)."""
    if getattr(result, "has_job", True) is False:
        return None
    query = result.metrics().query(MetricsFilter().with_namespace(FIRST_NAMESPACE))
    names = sorted(c.key.metric.name for c in query["counters"] if _metric_value(c))
    return first_from_metric_name(names[0]) if names else None


def _metric_value(result):
    try:
        value = result.committed
    except Exception:  # runners without committed metrics raise here
        value = None
    return result.attempted if value is None else value


def summary(
    job: str,
    totals: Mapping[str, int],
    seconds: float,
    target: config.Target | None,
    reasons: Sequence[Reason] = (),
    top: int = 5,
    dead_letters: str | None = None,
    samples: Mapping[str, str] | None = None,
    overwrite: str | None = None,
    accepted: bool = False,
) -> str:
    """The end-of-run summary; its last line is :func:`landed_line`. ``samples``: reason kind
    → its first offending line as read (:func:`sample_lines`); ``overwrite``: the first
    overwrite (:func:`first_overwrite`), ``accepted`` with ``--accept_overwrites``."""
    events = totals.get("events_valid", 0)
    where = f"into {target.describe()}" if target else "(validate only: nothing written)"
    lines = [
        f"{job}: done in {seconds:.1f}s {where}",
        f"  lines read      {totals.get('lines_read', 0):>12,}",
        f"  valid events    {events:>12,}   ({events / max(seconds, 1e-9):,.0f} events/s)",
        f"  dead letters    {totals.get('dead_letters', 0):>12,}",
    ]
    if totals.get("blank_lines"):
        lines.append(f"  blank lines     {totals['blank_lines']:>12,}")
    if totals.get("empty_cells"):  # see transforms.metrics.EMPTY_CELLS
        lines.append(
            f"  empty cells     {totals['empty_cells']:>12,}   (unpivoted columns without a "
            "value: no event)"
        )
    if totals.get("empty_rows"):  # see transforms.metrics.EMPTY_ROWS
        lines.append(
            f"  rows not written{totals['empty_rows']:>12,}   (no value for the table: no cell)"
        )
    lines += table_lines(totals)
    lines += overwrite_lines(totals, overwrite, accepted)
    if "earliest_event_ms" in totals:
        warning = timefmt.span_warning(  # judged on the rows whose times were seen
            totals["earliest_event_ms"], totals["latest_event_ms"], totals.get("timed_rows", events)
        )
        if warning:
            lines.append(f"  warning: {warning}")
    if reasons:
        lines.append("  top dead-letter reasons:")
        for reason in reasons[:top]:
            at = f"{reason.source}:{reason.line}" if reason.line else reason.source
            lines.append(f"  {reason.count:>14,}  {reason.kind}  (first: {at})")
            if reason.kind in (samples or {}):
                lines.append(f"{'':18}line {reason.line}: {samples[reason.kind]}")
        if len(reasons) > top:
            rest = sum(r.count for r in reasons[top:])
            lines.append(f"  {rest:>14,}  ({len(reasons) - top} other reasons)")
    if dead_letters:
        lines.append(f"  dead letters to {dead_letters}")
    lines.append(f"{job}: {landed_line(totals, written=target is not None)}")
    return "\n".join(lines)


SAMPLE_CHARS = 160


def sample_lines(reasons: Sequence[Reason], top: int = 5) -> dict[str, str]:
    """Each top reason's first offending line, read again from its file: what the user must
    look at, beside the generalised reason. Plain local text files only (a compressed,
    columnar or remote file is left to the dead letters), cut at SAMPLE_CHARS."""
    out = {}
    for reason in reasons[:top]:
        if not reason.line or not os.path.isfile(reason.source):
            continue
        try:
            with open(reason.source, "rb") as f:
                if f.read(4)[:2] in (b"\x1f\x8b", b"BZ", b"PA"):  # gzip, bzip2, Parquet
                    continue
                f.seek(0)
                raw = next(itertools.islice(f, reason.line - 1, None), b"")
        except OSError:
            continue
        text = raw.decode("utf-8", "backslashreplace").rstrip("\r\n")
        out[reason.kind] = text if len(text) <= SAMPLE_CHARS else text[:SAMPLE_CHARS] + "…"
    return out


def records_read(totals: Mapping[str, int]) -> int:
    """Records read: lines (or array elements, or columnar records) less blank lines."""
    return totals.get("lines_read", 0) - totals.get("blank_lines", 0)


def table_lines(totals: Mapping[str, int]) -> list[str]:
    """Rows and cells written per table, and into how many distinct rows when fewer (counted
    over the whole run by the overwrite check: exact, whatever the workers)."""
    lines = []
    for table in sorted(name[5:] for name in totals if name.startswith("rows_")):
        rows = totals["rows_" + table]
        line = f"  rows {table:<15}{rows:>8,}   cells {totals.get('cells_' + table, 0):,}"
        distinct = totals.get("distinct_rows_" + table)
        if distinct and distinct < rows:
            plural = "s" if distinct > 1 else ""
            line += f"   ({rows:,} row writes into {distinct:,} distinct row{plural})"
        lines.append(line)
    return lines


def overwrite_lines(
    totals: Mapping[str, int], first: str | None = None, accepted: bool = False
) -> list[str]:
    """The summary's lines on records of the run writing one cell: those that wrote a cell
    another record wrote with another value (each may have lost it), and those that repeat
    another record exactly (written again, nothing changed)."""
    lines = []
    records, cells = totals.get(OVERWRITE_RECORDS, 0), totals.get(OVERWRITE_CELLS, 0)
    if records:
        lines.append(
            f"  overwrites      {records:>12,}   records wrote {cells:,} cell{'s' * (cells != 1)} "
            "that another record of this run wrote with another value"
        )
        if first:
            lines.append(f"{'':18}first: {first}")
        kept = (
            "accepted (--accept_overwrites): the last write to arrive wins"
            if accepted
            else "Bigtable keeps one value per cell (the last write to arrive)"
        )
        lines.append(f"{'':18}{kept}; which record's it is, the job cannot know")
    duplicates = totals.get(DUPLICATE_RECORDS, 0)
    if duplicates:
        lines.append(
            f"  repeated        {duplicates:>12,}   records repeat another record of this run "
            "exactly (idempotent: landed, nothing changed)"
        )
    return lines


def landed_line(totals: Mapping[str, int], written: bool = True) -> str:
    """The summary's last line: how much of the input landed, so a partial load is seen by a
    person and by a log scraper alike (also when nothing was dead-lettered). A record that
    wrote a cell another record of the run wrote with another value is not counted as
    landed: Bigtable kept one of their values, and which one the job cannot know."""
    records = records_read(totals)
    valid = totals.get("events_valid", 0)
    dead = totals.get("dead_letters", 0)
    share = dead / records if records > 0 else 0.0
    clashed = totals.get(OVERWRITE_RECORDS, 0)
    if not written:
        verb = "valid (validate only: nothing written)"
        said = f"; {clashed:,} of them would overwrite one another" if clashed else ""
    else:
        verb = "landed"
        valid -= clashed
        said = f"; {clashed:,} overwrote one another" if clashed else ""
    return f"{valid:,} of {records:,} records {verb} ({dead:,} dead letters, {share:.2%}{said})"


@dataclass(frozen=True)
class BadRecordLimit:
    """How many dead letters a run may have and still succeed: a count, or a share of the
    records read (``share`` from 0 to 1). ``text`` is the value as the user wrote it."""

    count: int | None = None
    share: float | None = None
    text: str = "10%"

    def exceeded(self, dead: int, records: int) -> bool:
        if self.count is not None:
            return dead > self.count
        return records > 0 and self.share is not None and dead / records > self.share


# Why 10% by default: a load job that drops most of its input must not exit 0 (BigQuery's
# fails on the first bad record); the demo's few deliberate bad lines stay far below it.
DEFAULT_MAX_BAD_RECORDS = BadRecordLimit(share=0.10, text="10%")


def parse_bad_records(text: str) -> BadRecordLimit:
    """``--max_bad_records``: a count ``N`` or a share ``P%``; ValueError saying what it takes."""
    value = text.strip()
    try:
        if value.endswith("%"):
            share = float(value[:-1]) / 100
            if not 0 <= share <= 1:
                raise ValueError
            return BadRecordLimit(share=share, text=value)
        count = int(value)
        if count < 0:
            raise ValueError
        return BadRecordLimit(count=count, text=value)
    except ValueError:
        raise ValueError(
            f"--max_bad_records: {text!r} is neither a count (e.g. 100) nor a share from 0% to "
            "100% (e.g. 5%)"
        ) from None


@dataclass(frozen=True)
class Limits:
    """What a finished run must meet not to fail, as its flags set it: ``bad_records``
    (``--max_bad_records``), ``max_dead_letter_ratio`` (which replaces it when given) and
    ``accept_overwrites``."""

    bad_records: BadRecordLimit = DEFAULT_MAX_BAD_RECORDS
    max_dead_letter_ratio: float | None = None
    accept_overwrites: bool = False


def failure(
    totals: Mapping[str, int],
    reasons: Sequence[Reason],
    max_ratio: float | None,
    limit: BadRecordLimit = DEFAULT_MAX_BAD_RECORDS,
    overwrite: str | None = None,
    accept_overwrites: bool = False,
) -> str | None:
    """Why a finished batch run failed its purpose, or None: input but no valid event, more
    dead letters than ``max_ratio`` of the records read (when given) or than ``limit``, or
    records that overwrote one another (unless ``accept_overwrites``; ``overwrite``: the
    first, named)."""
    why = _dead_letter_failure(totals, reasons, max_ratio, limit)
    clashed = totals.get(OVERWRITE_RECORDS, 0)
    if why or not clashed or accept_overwrites:
        return why
    cells = totals.get(OVERWRITE_CELLS, 0)
    first = f" (first: {overwrite})" if overwrite else ""
    return (
        f"{clashed:,} records wrote {cells:,} cell{'s' * (cells != 1)} that another record of "
        f"this run wrote with another value; Bigtable keeps one value per cell{first}. Make "
        "the row key or the time tell such records apart (a finer time, the field that "
        "separates them), or pass --accept_overwrites to let the last write win"
    )


def _dead_letter_failure(
    totals: Mapping[str, int],
    reasons: Sequence[Reason],
    max_ratio: float | None,
    limit: BadRecordLimit,
) -> str | None:
    records = records_read(totals)
    dead = totals.get("dead_letters", 0)
    if records <= 0:
        return None
    top = f"; top reason: {reasons[0].kind}" if reasons else ""
    if totals.get("events_valid", 0) == 0:
        return f"no valid event in {records:,} records read, nothing written{top}"
    share = f"{dead:,} dead letters in {records:,} records ({dead / records:.2%})"
    if max_ratio is not None:
        if dead / records > max_ratio:
            return f"{share}, over --max_dead_letter_ratio {max_ratio:g}{top}"
        return None
    if limit.exceeded(dead, records):
        return (
            f"{share}, over --max_bad_records {limit.text}; top reasons: "
            f"{_top_reasons(reasons)}; pass --max_bad_records 100% to keep such a partial load"
        )
    return None


def _top_reasons(reasons: Sequence[Reason], top: int = 3) -> str:
    """The commonest reasons, each with its count and first place, for a one-line error."""
    said = []
    for reason in reasons[:top]:
        at = f"{reason.source}:{reason.line}" if reason.line else reason.source
        said.append(f"{reason.kind} ({reason.count:,}, first at {at})")
    return " | ".join(said) or "see the dead letters"


@dataclass(frozen=True)
class RunReport:
    """What one run of a job did, as a value: its counters, dead-letter reasons and where the
    dead letters went, the tables written, the time taken, the nightly plan where there is
    one, and the runner's result (for its state; ``None`` only when no pipeline ran)."""

    job: str
    counters: Mapping[str, int]
    seconds: float = 0.0
    tables: tuple[str, ...] = ()
    target: config.Target | None = None
    reasons: tuple[Reason, ...] = ()
    dead_letters: str | None = None  # a file pattern or a topic; None: nothing written
    overwrite: str | None = None  # the first two records that wrote one cell differently
    plan: Any = None  # the nightly job's pipelines.nightly.Plan
    dry_run: bool = False
    result: PipelineResult | None = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def state(self) -> str | None:
        """The runner's final state (e.g. ``DONE``), when a pipeline ran."""
        return None if self.result is None else self.result.state

    @property
    def records(self) -> int:
        return records_read(self.counters)

    @property
    def landed(self) -> str:
        """The summary's last line (see :func:`landed_line`)."""
        return landed_line(self.counters, self.target is not None)


class JobFailed(RunFailed):
    """The job ran but did not do its work (nothing valid, too many dead letters, records
    overwriting each other): the records as a whole, after the summary; the command line ends
    with the reason (:mod:`btts.exits`). ``report`` is the finished run's, ``command`` the one
    that started it."""

    def __init__(self, message: str, report: RunReport, command: str) -> None:
        super().__init__(message)
        self.report = report
        self.command = command


def conclude(report: RunReport, label: str, limits: Limits, command: str) -> None:
    """The end of a finished run: its summary printed (under ``label``, the job as the user
    knows it); a run over its dead-letter limit, or whose records overwrote one another, then
    fails (after it wrote what was valid), naming the top reasons or the first overwrite and
    the flag that accepts them, under ``command``, the one the user typed.
    Raises JobFailed (a RunFailed: the records as a whole)."""
    reasons = report.reasons
    print(
        summary(
            label,
            report.counters,
            report.seconds,
            report.target,
            reasons,
            dead_letters=report.dead_letters,
            samples=sample_lines(reasons),
            overwrite=report.overwrite,
            accepted=limits.accept_overwrites,
        ),
        flush=True,
    )
    why = failure(
        report.counters,
        reasons,
        limits.max_dead_letter_ratio,
        limits.bad_records,
        report.overwrite,
        limits.accept_overwrites,
    )
    if why:
        if report.dead_letters:
            why += f" (dead letters: {report.dead_letters})"
        raise JobFailed(why, report, command)


def dry_run_report(name: str, runner: Runner, what: str) -> str:
    """What a dry run would have launched on ``runner`` (the run's, as decided once), instead
    of a summary of what it did."""
    where = ", ".join(
        f"{label} {value}"
        for label, value in (("project", runner.project), ("region", runner.region))
        if value
    )
    mode = "streaming" if runner.streaming else "batch"
    return (
        f"{name}: dry run: the {mode} job translated for {runner.label}"
        f"{f' ({where})' if where else ''}; it would {what}. Nothing was launched or written."
    )
