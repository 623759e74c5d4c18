"""Financial market data → QUOTE and TRADE (docs/patterns.md §5.1), batch from JSON-lines or CSV
files.

Every message is split into a QUOTE row keyed ``EXCHANGE#SYMBOL#QUOTETIME`` and a TRADE row keyed
``EXCHANGE#SYMBOL#TRADETIME`` (exchange space-padded to 6, symbol to 5, 13-digit epoch ms); each
row's cells carry its own time. Prices and sizes keep the source's decimal text.

    python -m pipelines.market_data --input 'ticks/*.jsonl' --create_tables
"""

from __future__ import annotations

from pipelines import common

__all__ = ["JOB", "OPTION_CLASSES", "build", "run"]

JOB = common.builtin_job("market_data", __doc__)


# What run() parses and --help shows.
OPTION_CLASSES = common.option_classes("market_data")


ENTRY = common.IngestEntry(JOB.name, __doc__, OPTION_CLASSES, JOB)
build, run = ENTRY.build, ENTRY.run

if __name__ == "__main__":
    ENTRY.main()
