"""What the advisor's lint finds: its rules (each with the section of docs/patterns.md it
applies), a finding (open, acknowledged with a reason, or on a documented anti-pattern), which
findings fail a run, and the report ``btts advise lint`` prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from transforms.table_model import TableDecl

__all__ = ["RULES", "SEVERITIES", "Finding", "failing", "format_report", "rules_table"]

SEVERITIES = ("info", "warning", "error")


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    spec: str


RULES = {
    r.id: r
    for r in (
        Rule("HOT-TIME-FIRST", "key starts with a timestamp or another increasing value", "3.5"),
        Rule("HOT-SEQUENTIAL-ID", "key starts with a sequential numeric ID", "3.5, 3.10"),
        Rule("HOT-NARROW-PREFIX", "too few distinct prefixes in front of the time", "3.5"),
        Rule("KEY-UNPADDED-INT", "integer key segment without zero padding", "3.10"),
        Rule("KEY-HASHED", "hashed key (no range scans)", "3.10"),
        Rule("KEY-RAW-BYTES", "raw bytes in the key", "3.10"),
        Rule("KEY-PII", "personal data in a key, family or qualifier name", "3.10"),
        Rule("NAME-LONG", "long family or qualifier name", "3.1"),
        Rule("FAMILIES-TOO-MANY", "more than 100 column families", "3.7"),
        Rule("ROW-TOO-BIG", "rows can outgrow 100 MB", "3.7, 3.2"),
        Rule("VERSIONS-FOR-EVENTS", "column versions used for new events", "3.3"),
        Rule("GC-MISSING", "no GC rule where cells accumulate", "3.8, 4"),
        Rule("TABLES-GROWTH", "tables per day/tenant growing toward 1,000", "3.11, 3.7"),
        Rule("SALT-PROMOTABLE", "salting where field promotion would do", "3.5"),
    )
}


@dataclass(frozen=True)
class Finding:
    table: str
    rule: str
    severity: str
    message: str
    spec: str
    status: str = "open"  # open | acknowledged | anti-pattern
    reason: str = ""

    @property
    def is_open(self) -> bool:
        return self.status == "open"


def failing(findings: Iterable[Finding], fail_on: str = "warning") -> list[Finding]:
    """Open findings at or above ``fail_on`` (``never``: none)."""
    if fail_on == "never":
        return []
    floor = SEVERITIES.index(fail_on)
    return [f for f in findings if f.is_open and SEVERITIES.index(f.severity) >= floor]


def format_report(
    results: dict[str, list[Finding]], decls: Mapping[str, TableDecl], fail_on: str = "warning"
) -> str:
    """The human report: one block per table, acknowledged findings with their reason."""
    lines = []
    for name, findings in results.items():
        decl = decls[name]
        head = f"{name}  key {decl.key.describe()}  [{decl.pattern}]"
        if not findings:
            lines.append(f"ok    {head}")
            continue
        status = "FAIL" if failing(findings, fail_on) else "note"
        lines.append(f"{status}  {head}")
        for f in findings:
            lines.append(
                f"      {f.severity.upper():<7} {f.rule} (docs/patterns.md §{f.spec}): {f.message}"
            )
            if f.status != "open":
                lines.append(f"              [{f.status}] {f.reason}")
    every = [f for fs in results.values() for f in fs]
    bad = failing(every, fail_on)
    counts = {s: sum(1 for f in every if f.is_open and f.severity == s) for s in SEVERITIES}
    lines.append(
        f"{len(results)} tables: {counts['error']} open errors, {counts['warning']} open "
        f"warnings, {sum(1 for f in every if f.status == 'acknowledged')} acknowledged, "
        f"{sum(1 for f in every if f.status == 'anti-pattern')} on documented anti-patterns"
        f" → {'FAIL' if bad else 'pass'} (--fail_on {fail_on})"
    )
    return "\n".join(lines)


def rules_table() -> Sequence[Rule]:
    return tuple(RULES.values())
