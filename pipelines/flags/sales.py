"""The sales job's own flag: re-running months safely (AddToCell is not
idempotent)."""

from __future__ import annotations

from pipelines.flags.spec import Flag, Group

__all__ = ["GROUP"]

GROUP = Group.of(
    "replace",
    "Re-runs",
    Flag(
        "--replace_months",
        help="Comma-separated months YYYYMM (in --timezone) that this input rebuilds: their "
        "SALES_MONTHLY rows (every employee) are deleted before anything is written, and "
        "sales of other months go to the dead letters. Makes a re-run (after a failure or "
        "a retried bundle) exact.",
    ),
)
