"""The smart_meters job's description (it has no flags of its own): its docstring and what
its ``--help`` says, read without Beam."""

from __future__ import annotations

__all__ = ["DESCRIPTION"]

DESCRIPTION = """\
Smart-meter readings → SENSOR (docs/patterns.md §5.3), batch from JSON-lines or CSV files.

Each reading lands in its meter's day row ``METER#YYYYMMDD`` (meter id zero-padded to 10 digits)
as a column named by its time of day ``HHMM``, beside ``ID`` (the meter id). The day boundary and
the ``HHMM`` names follow --timezone (default UTC); cell timestamps are the event times.

    python -m pipelines.smart_meters --input 'readings/*.jsonl' --timezone Europe/Paris
    python -m pipelines.smart_meters --input_subscription projects/P/subscriptions/S \\
        --dead_letter_topic projects/P/topics/T --hourly_rollup   # streaming, with SENSOR_HOURLY
"""
