"""The market_data job's description (it has no flags of its own): its docstring and what
its ``--help`` says, read without Beam."""

from __future__ import annotations

__all__ = ["DESCRIPTION"]

DESCRIPTION = """\
Financial market data → QUOTE and TRADE (docs/patterns.md §5.1), batch from JSON-lines or CSV
files.

Every message is split into a QUOTE row keyed ``EXCHANGE#SYMBOL#QUOTETIME`` and a TRADE row keyed
``EXCHANGE#SYMBOL#TRADETIME`` (exchange space-padded to 6, symbol to 5, 13-digit epoch ms); each
row's cells carry its own time. Prices and sizes keep the source's decimal text.

    python -m pipelines.market_data --input 'ticks/*.jsonl' --create_tables
"""
