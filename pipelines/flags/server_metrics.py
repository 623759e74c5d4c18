"""The server_metrics job's description (it has no flags of its own): its docstring and what
its ``--help`` says, read without Beam."""

from __future__ import annotations

__all__ = ["DESCRIPTION"]

DESCRIPTION = """\
Server metrics → METRIC and CURRENT_METRIC (docs/patterns.md §5.2), batch from JSON-lines files.

Every event fans out to both tables from the same cells: METRIC keyed ``HOSTNAME#TS`` for a
host's history, CURRENT_METRIC keyed ``HOSTNAME`` for the fleet's latest values. Cell timestamps
are event times and CURRENT_METRIC keeps one version, so a late reading never wins.

    python -m pipelines.server_metrics --input 'metrics/*.jsonl' --create_tables
    python -m pipelines.server_metrics --input_subscription projects/P/subscriptions/S \\
        --dead_letter_topic projects/P/topics/T --hourly_rollup   # streaming, with METRIC_HOURLY
"""
