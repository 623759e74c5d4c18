"""The nightly job's calendar: the days a run copies, the names of the daily tables, and
which of them retention drops. Pure functions (no Beam, no client)."""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Iterable

from btts import errors
from pipelines.flags.nightly import MAX_DATES, SINGLE_TABLE_SUFFIX
from transforms.text import timefmt

__all__ = [
    "DAY",
    "as_day",
    "daily_table",
    "day_label",
    "expired_tables",
    "parse_day",
    "retention_cutoff",
    "run_days",
    "single_table",
    "today",
]

DAY = re.compile(r"[0-9]{8}")
_LOG = logging.getLogger(__name__)


def today(tz: dt.tzinfo) -> dt.date:
    """Today in ``tz`` (the day a run's default, yesterday, is counted from)."""
    return dt.datetime.now(tz).date()


def parse_day(text: str, flag: str = "--date") -> dt.date:
    """A ``YYYYMMDD`` day; anything else is a :class:`errors.ConfigError` naming the flag."""
    if not isinstance(text, str) or not DAY.fullmatch(text):
        raise errors.ConfigError(f"{flag}: expected a day as YYYYMMDD, got {text!r}")
    try:
        return timefmt.parse_day(text, "compact")
    except ValueError:
        raise errors.ConfigError(f"{flag}: {text!r} is not a calendar day") from None


def day_label(day: dt.date) -> str:
    return day.strftime("%Y%m%d")


def day_span(spec: str) -> list[dt.date]:
    """``START..END`` → every day from START to END inclusive.
    Raises ConfigError (a UserError: one line naming what to change)."""
    start_text, sep, end_text = spec.partition("..")
    if not sep:
        raise errors.ConfigError(f"--dates: expected START..END (YYYYMMDD..YYYYMMDD), got {spec!r}")
    start, end = parse_day(start_text, "--dates"), parse_day(end_text, "--dates")
    if end < start:
        raise errors.ConfigError(f"--dates: {end_text} is before {start_text}")
    count = (end - start).days + 1
    if count > MAX_DATES:
        raise errors.ConfigError(
            f"--dates: {count} days is more than {MAX_DATES} per run; split the backfill"
        )
    return [start + dt.timedelta(days=n) for n in range(count)]


def run_days(date: str | None, dates: str | None, today: dt.date) -> list[dt.date]:
    """The days this run copies: --date, --dates or yesterday. Days after ``today`` are refused
    (their rows do not exist yet)."""
    if date and dates:
        raise errors.ConfigError("pass either --date or --dates, not both")
    if dates:
        days = day_span(dates)
    elif date:
        days = [parse_day(date)]
    else:
        days = [today - dt.timedelta(days=1)]
    late = [d for d in days if d > today]
    if late:
        raise errors.ConfigError(
            f"{day_label(late[0])} is after today ({day_label(today)}): nothing to copy yet"
        )
    if today in days:
        _LOG.warning("copying today (%s): the day is not over, its table will be partial", today)
    return days


def daily_table(source: str, day: str) -> str:
    return f"{source}_{day}"


def single_table(source: str) -> str:
    return f"{source}_{SINGLE_TABLE_SUFFIX}"


def as_day(text: str) -> dt.date | None:
    """The day ``YYYYMMDD`` names, or None when it is not exactly that."""
    try:
        return parse_day(text)
    except errors.ConfigError:
        return None


def daily_table_day(name: str, source: str) -> dt.date | None:
    """The day of a per-day table name ``<source>_YYYYMMDD``; None for any other name
    (the source itself, other tables, malformed or impossible dates)."""
    prefix = f"{source}_"
    return as_day(name[len(prefix) :]) if name.startswith(prefix) else None


def retention_cutoff(run_day: dt.date, keep_days: int) -> dt.date:
    """The oldest day kept: ``keep_days`` days ending with ``run_day``.
    Raises ConfigError (a UserError: one line naming what to change)."""
    if keep_days < 1:
        raise errors.ConfigError(f"--keep_days must be at least 1, got {keep_days}")
    return run_day - dt.timedelta(days=keep_days - 1)


def expired_tables(
    names: Iterable[str], source: str, run_day: dt.date, keep_days: int, protect: Iterable[str] = ()
) -> list[str]:
    """The per-day tables retention drops: well-formed ``<source>_YYYYMMDD`` names whose day is
    before the cutoff, except the ``protect`` ed ones (the tables this run writes)."""
    cutoff = retention_cutoff(run_day, keep_days)
    keep = set(protect)
    days = ((name, daily_table_day(name, source)) for name in names if name not in keep)
    return sorted(name for name, day in days if day is not None and day < cutoff)
