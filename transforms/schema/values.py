"""Values a schema file writes as text: durations (``30d``) and event rates (``100 per 5s``)."""

from __future__ import annotations

import datetime as dt
import re

__all__ = ["advisor_rate", "parse_duration", "positive_number"]

_DURATION = re.compile(r"\s*([0-9]+)\s*([smhdw])\s*\Z")
_DURATION_UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_ADVISOR_RATE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s+per\s+([0-9]+\s*[smhdw])\s*\Z")


def parse_duration(value: object) -> dt.timedelta | None:
    """``30d``, ``12h``, ``90m``, ``3600s``, ``2w`` (or a number of seconds) → a positive
    duration; None when it is not one."""
    if type(value) is int and value > 0:
        return dt.timedelta(seconds=value)
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match and int(match.group(1)) > 0:
            return dt.timedelta(seconds=int(match.group(1)) * _DURATION_UNITS[match.group(2)])
    return None


def positive_number(value: object) -> bool:
    """Whether ``value`` is an int or float (not a bool) above zero."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def advisor_rate(value: object) -> float | None:
    """An ``events_per_second`` value: a number, or ``N per DURATION`` (``100000 per 5s``,
    ``10000000 per 15m``) so a rate reads as the workload says it; None when it is neither."""
    if positive_number(value):
        return float(value)
    if isinstance(value, str):
        match = _ADVISOR_RATE.match(value)
        if match:
            count = float(match.group(1))
            every = parse_duration(match.group(2).replace(" ", ""))
            if count > 0 and every is not None:
                return count / every.total_seconds()
    return None
