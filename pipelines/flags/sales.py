"""The sales job's own flag: re-running months safely (AddToCell is not idempotent)."""

from __future__ import annotations

import argparse

__all__ = ["replace"]


def replace(parser: argparse.ArgumentParser) -> None:
    """--replace_months."""
    group = parser.add_argument_group("Re-runs")
    group.add_argument(
        "--replace_months",
        help="Comma-separated months YYYYMM (in --timezone) that this input rebuilds: their "
        "SALES_MONTHLY rows (every employee) are deleted before anything is written, and "
        "sales of other months go to the dead letters. Makes a re-run (after a failure or "
        "a retried bundle) exact.",
    )
