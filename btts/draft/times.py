"""Which fields of a sample are times, and in which format the job reads them.

A format is a candidate for a column only when the job's own parser
(:func:`transforms.text.timefmt.make_parser`) reads every sampled value with it, so a drafted
format lands the sample by construction. Candidates are ranked by what the column's name says
(``date``, ``time``, ``year``…) and how precise the format is (a full time before a date, a date
before a year); a number is read as a year or an epoch only where its range makes that
plausible. Times spread over several fields (a year and a quarter, a year and a month, a date
and a time of day) become one derived time (``{type: time, from: {...}}``). Pure.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from btts.draft.fields import Column
from transforms.errors import InvalidEvent
from transforms.text import isotime, timefmt
from transforms.text.events import Num

__all__ = ["TimeGuess", "guess_times", "resolution"]

# Text patterns tried in this order (the first of two that both read a column wins, so the
# day-first reading of 03/04/2020 comes before the month-first one: the question says so).
TEXT_FORMATS = (
    "rfc3339", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S.%f",
    "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "date", "%Y/%m/%d %H:%M:%S",
    "%Y/%m/%d %H:%M", "%Y/%m/%d", "%d/%m/%Y %H:%M:%S", "%m/%d/%Y %H:%M:%S", "%d/%m/%Y %H:%M",
    "%m/%d/%Y %H:%M", "%d/%m/%Y", "%m/%d/%Y", "%d.%m.%Y", "%b %d %Y", "%d %b %Y", "%B %d %Y",
    "%d %B %Y", "%b %Y", "%B %Y", "%Y-%m", "%Y%m%d%H%M%S", "yyyymmddhhmmssmmm", "%Y%m%d",
)  # fmt: skip
_PRECISION = {"rfc3339": 6, "date": 4, "year": 2, "yyyymmddhhmmssmmm": 6}
_HINTS = {
    "time", "timestamp", "ts", "date", "datetime", "day", "month", "year", "when", "at",
    "period", "created", "updated", "epoch", "dt", "yr", "week", "hour", "minute",
}  # fmt: skip
_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m} | {
    m.lower(): i for i, m in enumerate(calendar.month_abbr) if m
}
_TIME_OF_DAY = re.compile(r"([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\.[0-9]{1,3})?)?\Z")
_EARLY = timefmt.MIN_EPOCH_MS


@dataclass
class TimeGuess:
    """A way to read the event time from a record: one field's format, or a derived time."""

    field: str
    format: str
    ms: list[int]  # the sampled times, one per record that has them
    score: int
    why: str
    sources: dict[str, str] = field(default_factory=dict)  # role → field, for `from:`
    alternatives: list[str] = field(default_factory=list)  # other formats that read it too

    @property
    def derived(self) -> bool:
        return bool(self.sources)


def _tokens(name: str) -> set[str]:
    return set(re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()))


def _hinted(name: str) -> bool:
    return bool(_tokens(name) & _HINTS)


def _read_all(fmt: str, name: str, values: Sequence) -> list[int] | None:
    parse = timefmt.make_parser(fmt, name, earliest=_EARLY)
    try:
        return [parse(v) for v in values]
    except (InvalidEvent, ValueError, OverflowError):
        return None


def _precision(fmt: str) -> int:
    if fmt in _PRECISION:
        return _PRECISION[fmt]
    if "%H" in fmt or "%S" in fmt:
        return 5
    return 4 if "%d" in fmt else 3


def _numeric_formats(column: Column) -> list[str]:
    """Number formats whose range the column's numbers fall in."""
    low, high = column.low, column.high
    if low is None or high is None or low < 0:
        return []
    out = []
    if column.whole_numbers and low >= 1000 and high <= 2300:
        out.append("year")
    for fmt, floor, ceiling in (
        ("%Y%m%d", 10000101, 99991231), ("%Y%m%d%H%M%S", 10000101000000, 99991231235959),
        ("yyyymmddhhmmssmmm", 10000101000000000, 99991231235959999),
    ):  # fmt: skip
        if column.whole_numbers and floor <= low and high <= ceiling:
            out.append(fmt)
    for fmt, floor, ceiling in (
        ("epoch_s", 10**8, 10**10), ("epoch_ms", 10**11, 10**13), ("epoch_us", 10**14, 10**16)
    ):  # fmt: skip
        if floor <= low and high < ceiling and (fmt == "epoch_s" or "integer" in column.kinds):
            out.append(fmt)
    return out


def _column_guess(column: Column) -> TimeGuess | None:
    if column.type not in ("text", "integer", "number") or column.optional:
        return None
    numeric = column.type != "text"
    if numeric:
        formats = _numeric_formats(column)
        if column.integral_floats and "year" in formats:
            formats = ["year"]  # 1956.0: read as a whole number (issue 43's integral floats)
    else:
        formats = list(TEXT_FORMATS)
        if not all(len(str(v)) == 17 and str(v).isdigit() for v in column.values):
            formats.remove("yyyymmddhhmmssmmm")  # (whose parser also takes RFC 3339 text)
        if all(len(str(v).strip()) <= 4 for v in column.values):
            formats.append("year")
    readable = []
    for fmt in formats:
        values = column.values
        if fmt == "year" and column.integral_floats:
            values = [Num(str(v).split(".")[0]) for v in values]
        ms = _read_all(fmt, column.name, values)
        if ms is not None:
            readable.append((fmt, ms))
    if not readable:
        return None
    fmt, ms = readable[0]
    hinted = _hinted(column.name)
    if numeric and not hinted and fmt.startswith("epoch_"):
        return None  # a large number named like a count is not a time
    score = _precision(fmt) + (10 if hinted else 0) + (0 if numeric else 1)
    why = _why(fmt, column, hinted)
    return TimeGuess(column.name, fmt, ms, score, why, alternatives=[f for f, _ in readable[1:]])


def _why(fmt: str, column: Column, hinted: bool) -> str:
    first = column.values[0]
    name = "named like a time, and every value" if hinted else "every value"
    return f"{name} reads as {fmt} (e.g. {str(first)!r})"


def _derived(columns: Mapping[str, Column], records: Sequence[dict]) -> list[TimeGuess]:
    """Times over two fields: year + quarter, year + month, date + time of day."""
    out = []
    by_token = {}
    for column in columns.values():
        for token in _tokens(column.name):
            by_token.setdefault(token, column)
    year, quarter = by_token.get("year"), by_token.get("quarter") or by_token.get("qtr")
    month = by_token.get("month")
    if year and year.whole_numbers and quarter and quarter.whole_numbers:
        out += _combined("period", {"year": year.name, "quarter": quarter.name}, records)
    if year and year.whole_numbers and month and month.name != year.name:
        out += _combined("period", {"year": year.name, "month": month.name}, records)
    day = by_token.get("date") or by_token.get("day")
    clock = by_token.get("time")
    if day and clock and day.name != clock.name:
        out += _combined("at", {"date": day.name, "time": clock.name}, records)
    return out


def combine(parts: Mapping[str, object]) -> int:
    """Epoch ms (UTC) of a time given by roles (year, quarter, month, day, date, time); a
    ValueError when a part is not what its role reads."""
    if "date" in parts:
        ms = timefmt.parse_date(str(parts["date"]), "date", _EARLY)
        day = timefmt.to_datetime(ms)
    else:
        month = _month(parts.get("month"), parts.get("quarter"))
        day = dt.datetime(_whole(parts["year"]), month, _whole(parts.get("day", 1)))
        day = day.replace(tzinfo=dt.timezone.utc)
    if "time" in parts:
        text = str(parts["time"])
        if not _TIME_OF_DAY.match(text):
            raise ValueError(f"{text!r} is not a time of day")
        clock = isotime.fromisoformat(f"1970-01-01T{text}")  # 3.10's time() reads less
        day = day.replace(hour=clock.hour, minute=clock.minute, second=clock.second,
                          microsecond=clock.microsecond // 1000 * 1000)  # fmt: skip
    return (day - timefmt.EPOCH) // timefmt.MILLISECOND


def _whole(value: object) -> int:
    text = str(value)
    whole, _, frac = text.partition(".")
    if frac.strip("0") or not whole.lstrip("-").isdigit():
        raise ValueError(f"{text!r} is not a whole number")
    return int(whole)


def _month(month: object, quarter: object) -> int:
    if quarter is not None:
        q = _whole(quarter)
        if not 1 <= q <= 4:
            raise ValueError(f"quarter {q}")
        return 3 * q - 2
    if month is None:
        return 1
    text = str(month).strip().lower()
    number = _MONTHS.get(text) or _whole(text)
    if not 1 <= number <= 12:
        raise ValueError(f"month {number}")
    return number


def _combined(name: str, sources: dict[str, str], records: Sequence[dict]) -> list[TimeGuess]:
    try:
        ms = [combine({role: r[f] for role, f in sources.items()}) for r in records]
    except (KeyError, ValueError, InvalidEvent, OverflowError):
        return []
    what = " and ".join(f"{f} ({role})" for role, f in sources.items())
    why = f"the time is spread over {what}: one derived time field reads them together"
    return [TimeGuess(name, "from", ms, 20, why, sources=dict(sources))]


def guess_times(columns: Mapping[str, Column], records: Sequence[dict]) -> list[TimeGuess]:
    """Every way the sample's records carry a time, the most likely first."""
    guesses = [g for g in map(_column_guess, columns.values()) if g is not None]
    derived = _derived(columns, records)
    for guess in derived:
        used = set(guess.sources.values())
        taken = {g.field for g in guesses if g.field in used}
        guess.score += sum(g.score for g in guesses if g.field in used) - 10 * len(taken)
        guess.field = _free_name(guess.field, columns)
    return sorted(guesses + derived, key=lambda g: -g.score)


def _free_name(name: str, columns: Mapping[str, Column]) -> str:
    while name in columns:
        name = f"{name}_time"
    return name


def resolution(ms: Sequence[int]) -> str:
    """The finest unit the times differ in: ``year``, ``month``, ``day``, ``hour``, ``minute``,
    ``second`` or ``ms`` (what a calendar key label must keep apart)."""
    units = [("ms", 1000), ("second", 60_000), ("minute", 3_600_000), ("hour", 86_400_000)]
    for unit, step in units:
        if any(m % step for m in ms):
            return unit
    days = [timefmt.to_datetime(m) for m in ms]
    if any(d.day != 1 for d in days):
        return "day"
    return "month" if any(d.month != 1 for d in days) else "year"
