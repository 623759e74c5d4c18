"""The game_results job's description (it has no flags of its own): its docstring and what
its ``--help`` says, read without Beam."""

from __future__ import annotations

__all__ = ["DESCRIPTION"]

DESCRIPTION = """\
Game results → GAME_BY_PLAYER and GAME_BY_DATE (docs/patterns.md §5.5), batch from JSON-lines or
CSV.

Two queries need two keys, so every result is written to both tables with the same cells:
``GAME#PLAYER#YYYYMMDD`` (one player's games over a period) and ``GAME#YYYYMMDD#PLAYER`` (every
game over a period). Cell timestamps are midnight UTC of the result's date.

    python -m pipelines.game_results --input 'results/*.jsonl' --create_tables
"""
