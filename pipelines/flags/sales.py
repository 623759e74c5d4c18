"""The sales job's description and own flag: re-running months safely (AddToCell is not
idempotent)."""

from __future__ import annotations

from pipelines.flags.spec import Flag, Group

__all__ = ["DESCRIPTION", "GROUP"]

DESCRIPTION = """\
Sales → SALES_MONTHLY aggregate cells (docs/patterns.md §3 rule 13, §5.6), batch from files.

Each sale adds its amount (integer cents) to ``sum:AMOUNT`` and 1 to ``sum:COUNT`` of the row
``EMPLOYEE#YYYYMM`` with ``AddToCell``, at the month's start as cell timestamp, so Bigtable keeps
one running sum per employee and month instead of one row per sale. Months follow --timezone
(default UTC).

NOT IDEMPOTENT: AddToCell adds, so running the same input twice doubles the sums (and a bundle
retried after a partial write failure re-adds what had succeeded). To re-run safely, name the
months the input covers with --replace_months: before anything is written, every row of those
months is deleted (all employees), and a sale of any other month goes to the dead letters, so
the months are rebuilt from this input alone. Re-run the same command after a failed or
suspect run (a retried bundle): the result is exact again.

    python -m pipelines.sales --input 'sales/*.jsonl' --create_tables
    python -m pipelines.sales --input 'sales/2015-03.jsonl' --replace_months 201503
"""

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
