"""What the nightly job prints when it is done."""

from __future__ import annotations

from collections.abc import Mapping

from pipelines.nightly.plan import Plan

__all__ = ["NAME", "summary"]

NAME = "nightly"


def summary(plan: Plan, totals: Mapping[str, int], seconds: float) -> str:
    """The end-of-run summary: rows scanned, copied per destination, and verified."""
    scanned = totals.get(f"read_rows_{plan.source.name}", 0)
    lines = [
        f"{NAME}: {plan.source.name} → {', '.join(plan.destinations)} ({plan.layout}) "
        f"done in {seconds:.1f}s into {plan.target.describe()}",
        f"  rows scanned    {scanned:>12,}   (rows of {len(plan.days)} day(s) returned by the "
        "server-side key filter)",
    ]
    for name in plan.destinations:
        lines.append(
            f"  rows copied     {totals.get('rows_' + name, 0):>12,}   "
            f"cells {totals.get('cells_' + name, 0):,} into {name}"
        )
    if plan.verify:
        lines.append(
            f"  verified        {totals.get('verified_rows', 0):>12,}   rows in "
            f"{totals.get('verified_days', 0)} day(s): counts and checksums match"
        )
    else:
        lines.append("  verification skipped (--no_verify)")
    return "\n".join(lines)
