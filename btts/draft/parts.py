"""Times spread over several fields: a year and its quarter, week or month, day, hour, minute and
second; a date and a time of day. The finest combination every sampled record reads becomes one
derived time (``{type: time, from: {...}}``); a month and a day with no year is a time that
needs its year from the user (a constant part, ``from: {year: 1973, ...}``).

Each combination is read by the job's own code (:func:`transforms.builder.shaping.made_time`, then
the derived time's parser), so a drafted ``from:`` lands the sample by construction. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from btts.draft.fields import Column
from transforms.builder.shaping import made_time
from transforms.errors import InvalidEvent
from transforms.schema.shape import DERIVED_TIME_FORMAT
from transforms.text import timefmt
from transforms.text.timepatterns import compile_pattern

__all__ = ["find_parts", "role_of"]

# a column is a part of the time when its whole name (lower case, letters and digits) is one of
_NAMES = {
    "year": ("year", "yr", "yyyy"), "quarter": ("quarter", "qtr"), "month": ("month", "mon"),
    "week": ("week", "wk"), "day": ("day", "dd", "mday"), "hour": ("hour", "hr", "hh"),
    "minute": ("minute", "min"), "second": ("second", "sec"), "date": ("date",),
    "time": ("time",),
}  # fmt: skip
# finer parts added one by one, while every record still reads
_CHAINS = (
    ("year", "month", "day", "hour", "minute", "second"),
    ("year", "month", "day", "time"),
    ("year", "quarter"),
    ("year", "week"),
    ("date", "hour", "minute", "second"),
    ("date", "time"),
)
NO_YEAR = 2000  # the year month-and-day times are read in while the user has not given one
_EARLY = timefmt.MIN_EPOCH_MS
_TRIAL = 500  # records a chain of parts is first tried on


class Parts:
    """One way of reading the time from several fields: role → field, and the sampled times."""

    def __init__(
        self, sources: dict[str, str], ms: list[int], needs_year: bool = False, date_format=""
    ):
        self.sources = sources
        self.ms = ms
        self.needs_year = needs_year  # month and day, no year: the user must give it
        self.date_format = date_format if "date" in sources else ""  # the date part's pattern


def _plain(name: str) -> str:
    """The name's letters and digits, lower case, without a unit in brackets (``Time (HH:MM)``,
    ``Date (MM/DD/YYYY)``: how TMY weather files name their parts)."""
    return re.sub(r"[^a-z0-9]", "", re.sub(r"\s*[(\[].*[)\]]\s*\Z", "", name).lower())


def role_of(name: str) -> str:
    """The part of a time a column's name says it holds ("" when none)."""
    plain = _plain(name)
    return next((role for role, names in _NAMES.items() if plain in names), "")


def _roles(columns: Mapping[str, Column]) -> dict[str, str]:
    """role → the first required column named for it."""
    out: dict[str, str] = {}
    for role, names in _NAMES.items():
        for column in columns.values():
            if _plain(column.name) in names and not column.optional and column.present:
                out.setdefault(role, column.name)
    return out


def read_parts(
    records: Sequence[dict],
    sources: Mapping[str, str],
    year: int | None = None,
    date_format: str = "",
):
    """The epoch ms of each record's time made from ``sources`` (role → field), as the job makes
    it (``year``: a constant year; ``date_format``: the date part's pattern); None when a record
    lacks a part or a part does not read."""
    parse = timefmt.make_parser(DERIVED_TIME_FORMAT, "t", earliest=_EARLY)
    read_date = compile_pattern(date_format) if date_format and "date" in sources else None
    out = []
    try:
        for record in records:
            parts = {role: record[name] for role, name in sources.items()}
            if any(v is None or isinstance(v, (dict, list, bool)) for v in parts.values()):
                return None
            if year is not None:
                parts["year"] = year
            out.append(parse(made_time(parts, "t", read_date)))
    except (KeyError, InvalidEvent, ValueError, OverflowError):
        return None
    return out


def find_parts(
    columns: Mapping[str, Column], records: Sequence[dict], date_format: str = ""
) -> list[Parts]:
    """Every finest combination of parts the sample reads (at least two parts each), and a
    month and a day without a year (read in :data:`NO_YEAR`, flagged ``needs_year``).
    ``date_format``: how the ``date`` part is written, when not YYYY-MM-DD."""
    roles = _roles(columns)
    out: list[Parts] = []
    few = records[:: max(1, len(records) // _TRIAL)]  # chains grow on a spread of the sample
    for chain in _CHAINS:
        if chain[0] not in roles:
            continue
        grown = [{chain[0]: roles[chain[0]]}]
        for role in chain[1:]:
            if role not in roles or roles[role] in grown[-1].values():
                break
            trial = {**grown[-1], role: roles[role]}
            if read_parts(few, trial, date_format=date_format) is None:
                break
            grown.append(trial)
        for sources in reversed(grown[1:]):  # the finest that the whole sample reads
            ms = read_parts(records, sources, date_format=date_format)
            if ms is not None:
                if all(set(sources) != set(p.sources) for p in out):
                    out.append(Parts(sources, ms, date_format=date_format))
                break
    if not {"year", "date"} & set(roles) and {"month", "day"} <= set(roles):
        sources = {"month": roles["month"], "day": roles["day"]}
        ms = read_parts(records, sources, year=NO_YEAR)
        if ms is not None:
            out.append(Parts(sources, ms, needs_year=True))
    return out
