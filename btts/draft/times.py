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

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from btts.draft import parts
from btts.draft.fields import Column
from transforms.errors import InvalidEvent
from transforms.text import timefmt, timepatterns
from transforms.text.events import Num

__all__ = ["TimeGuess", "guess_times", "hinted", "resolution", "unread_time"]


def _day_orders() -> tuple[str, ...]:
    """Numeric dates in both day orders, day first then month first (a column both read is a
    question: :func:`btts.draft.drafting._time` asks it, and the draft says which it took)."""
    out = []
    for sep in "/-.":
        for year in ("%Y", "%y"):
            for clock in (" %H:%M:%S", " %H:%M", ""):
                out += [f"%d{sep}%m{sep}{year}{clock}", f"%m{sep}%d{sep}{year}{clock}"]
    return tuple(out)


# Text patterns tried in this order (the first of two that both read a column wins).
TEXT_FORMATS = (
    "rfc3339", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S.%f",
    "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "date", "%Y/%m/%d %H:%M:%S",
    "%Y/%m/%d %H:%M", "%Y/%m/%d", *_day_orders(),
    "%d-%b-%y", "%d-%b-%Y", "%d %b %y", "%d %b %Y", "%d %B %Y", "%d-%B-%Y", "%d-%B-%y",
    "%b %d %Y", "%b %d, %Y", "%B %d %Y", "%B %d, %Y", "%b-%d-%Y",
    "%b %Y", "%B %Y", "%b-%Y", "%b-%y", "%Y %b", "%Y %B", "%Y-%b", "%Y-%m", "%Y/%m", "%m/%Y",
    "%Y Q%q", "%YQ%q", "%Y-Q%q", "Q%q %Y", "Q%q-%Y", "%G-W%V", "%GW%V",
    "%Y%m%d%H%M%S", "yyyymmddhhmmssmmm", "%Y%m%d",
)  # fmt: skip
_PRECISION = {
    "ordinal_day": 4,
    "epoch_d": 4,
    "rfc3339": 6,
    "date": 4,
    "year": 2,
    "yyyymmddhhmmssmmm": 6,
    "decimal_year": 3,
}
_HINTS = {
    "time", "timestamp", "ts", "date", "datetime", "day", "month", "year", "when", "at",
    "period", "created", "updated", "epoch", "dt", "yr", "week", "hour", "minute",
}  # fmt: skip
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
    round: str = ""  # decimal_year: the unit its times are rounded to
    needs_year: bool = False  # a month and a day without a year: the user must give it
    date_format: str = ""  # a derived time's date part, when not YYYY-MM-DD
    timezone: str = ""  # the zone of its wall times (another field gives their instants)
    ambiguous: str = ""  # earliest|latest: which of a repeated hour (that other field says)

    @property
    def derived(self) -> bool:
        return bool(self.sources)


def _tokens(name: str) -> set[str]:
    return set(re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()))


def hinted(name: str) -> bool:
    """Whether a field's name says it holds a time (``date``, ``Year``, ``time_hour``…)."""
    return bool(_tokens(name) & _HINTS)


def _read_all(fmt: str, name: str, values: Sequence, unit: str = "") -> list[int] | None:
    parse = timefmt.make_parser(fmt, name, earliest=_EARLY, round_to=unit)
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


def _day_number_formats(column: Column) -> list[str]:
    """``ordinal_day`` or ``epoch_d`` where the column's name says its numbers count days
    (``ordinal_date``, ``epoch_days``): a day number is never guessed from the values alone."""
    words = _tokens(column.name)
    if not column.whole_numbers:
        return []
    if "ordinal" in words:
        return ["ordinal_day"]
    return ["epoch_d"] if "epoch" in words and words & {"day", "days", "d"} else []


def _column_guess(column: Column) -> TimeGuess | None:
    if column.type not in ("text", "integer", "number") or column.optional:
        return None
    numeric = column.type != "text"
    if numeric:
        decimal = _decimal_year(column)
        if decimal is not None:
            return decimal
        formats = _day_number_formats(column) or _numeric_formats(column)
        if column.integral_floats and "year" in formats:
            formats = ["year"]  # 1956.0: read as a whole number (issue 43's integral floats)
    else:
        formats = list(TEXT_FORMATS)
        if not all(len(str(v)) == 17 and str(v).isdigit() for v in column.values):
            formats.remove("yyyymmddhhmmssmmm")  # (whose parser also takes RFC 3339 text)
        if all(len(str(v).strip()) <= 4 for v in column.values):
            formats.append("year")
    readable = _readable(formats, column)
    if not readable and not numeric and hinted(column.name):  # none of ours: a guesser's?
        readable = _readable([f for f in proposed(column.values) if f not in formats], column)
    if not readable:
        return None
    fmt, ms = readable[0]
    named = hinted(column.name) or fmt in timepatterns.DAY_NUMBER_FORMATS
    if numeric and not named and fmt.startswith("epoch_"):
        return None  # a large number named like a count is not a time
    score = _precision(fmt) + (10 if named else 0) + (0 if numeric else 1)
    why = _why(fmt, column, named)
    return TimeGuess(column.name, fmt, ms, score, why, alternatives=[f for f, _ in readable[1:]])


_PROPOSALS = 5  # distinct values a guesser is asked about


def proposed(values: Sequence) -> list[str]:
    """Patterns a well-kept guesser (pandas' ``guess_datetime_format``, day first and month
    first) proposes for a few of ``values``, those the job's parser takes; only proposals: a
    format is drafted when the job's parser reads every value with it. Empty without pandas."""
    try:
        from pandas.tseries.api import guess_datetime_format
    except ImportError:
        return []
    out: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (pandas warns of the day order it was not told)
        for value in list(dict.fromkeys(str(v) for v in values))[:_PROPOSALS]:
            for day_first in (True, False):
                fmt = guess_datetime_format(value, dayfirst=day_first)
                if fmt and fmt not in out and not timefmt.strptime_problem(fmt):
                    out.append(fmt)
    return out


_COUNTED = 200  # values a near-miss format is counted on


def unread_time(columns: Mapping[str, Column]) -> str:
    """Why no field reads as a time when one is named like a time (empty when none is): the
    column, a value and the exact ``format:`` that reads most of its values, or, when none
    does, an example pattern to declare."""
    for column in columns.values():
        if column.type != "text" or not hinted(column.name) or not column.values:
            continue
        values = [str(v) for v in column.values]
        best, count = "", 0
        for fmt in (*TEXT_FORMATS, *proposed(values)):
            read = _count_read(fmt, column.name, values[:_COUNTED])
            if read > count:
                best, count = fmt, read
        if not best:
            return (
                f"field {column.name!r} is named like a time, but no format btts init knows "
                f"reads its values (e.g. {values[0]!r}): declare it as {{type: time, format: "
                '"PATTERN"}, a strptime pattern such as "%d %B %Y %H:%M" (%q: a quarter, '
                "%G-W%V: an ISO week)"
            )
        parse = timefmt.make_parser(best, column.name, earliest=_EARLY)
        odd = next(v for v in values if _count_read(best, column.name, [v], parse) == 0)
        return (
            f"field {column.name!r} reads as a time with format: {best!r} (e.g. "
            f"{next(v for v in values if v != odd)!r}), but not every value does (e.g. "
            f"{odd!r}): write every value one way, or declare {{type: time, format: {best!r}}} "
            "and the others are dead letters"
        )
    return ""


def _count_read(fmt: str, name: str, values: Sequence, parse=None) -> int:
    parse = parse or timefmt.make_parser(fmt, name, earliest=_EARLY)
    read = 0
    for value in values:
        try:
            parse(value)
        except (InvalidEvent, ValueError, OverflowError):
            continue
        read += 1
    return read


def _readable(formats: Sequence[str], column: Column) -> list[tuple[str, list[int]]]:
    """Each of ``formats`` that reads every sampled value, with the times it reads."""
    out = []
    for fmt in formats:
        values = column.values
        if fmt == "year" and column.integral_floats:
            values = [Num(str(v).split(".")[0]) for v in values]
        ms = _read_all(fmt, column.name, values)
        if ms is not None:
            out.append((fmt, ms))
    return out


# A decimal year's unit: the coarsest period whose starts every value lies within this many
# days of (a monthly R ts lies within two days of its month starts, whatever the digits kept).
_GRID_DAYS = 3
_UNIT_DAYS = (("day", 1.0), ("hour", 1 / 24), ("minute", 1 / 1440), ("second", 1 / 86400))


def _decimal_year(column: Column) -> TimeGuess | None:
    """A column of decimal years (R's ``ts`` time: ``1960.25``, ``1969.0833333``): named like a
    time, years 1000..2300 with fractions; its unit the coarsest of year, quarter, month that
    every value lies on (within :data:`_GRID_DAYS`), else the coarsest of day, hour… finer than
    the values' spacing (so that distinct values stay distinct)."""
    low, high = column.low, column.high
    if column.whole_numbers or low is None or high is None or not hinted(column.name):
        return None
    if low < 1000 or high >= 2300 or column.type != "number":
        return None
    values = [str(v) for v in column.values]
    exact = _read_all("decimal_year", column.name, values, "ms")
    if exact is None:
        return None
    for unit in ("year", "quarter", "month", *(u for u, _ in _UNIT_DAYS), "ms"):
        ms = _read_all("decimal_year", column.name, values, unit)
        if ms is None or len(set(ms)) < len(set(exact)):
            continue
        grid = _GRID_DAYS * 86_400_000 if unit in ("year", "quarter", "month") else None
        if grid is None or all(abs(a - b) <= grid for a, b in zip(ms, exact, strict=True)):
            why = (
                f"named like a time, and every value is a decimal year (e.g. {values[0]!r}: R's "
                f"ts time, start + i/frequency) on the {unit}: round: {unit} lands each on its "
                f"{unit}"
            )
            score = _precision("decimal_year") + 10
            return TimeGuess(column.name, "decimal_year", ms, score, why, round=unit)
    return None


def _why(fmt: str, column: Column, hinted: bool) -> str:
    first = column.values[0]
    name = "named like a time, and every value" if hinted else "every value"
    if fmt in timepatterns.DAY_NUMBER_FORMATS:
        name = "named for day numbers, and every value"
    return f"{name} reads as {fmt} (e.g. {str(first)!r}){_order(fmt, column.values)}"


_ORDERS = {"%d": ("%m", "day first"), "%m": ("%d", "month first")}


def _order(fmt: str, values: Sequence) -> str:
    """Why a numeric date is read day first or month first: a value only that order reads."""
    for sep in "/-.":
        head = fmt[:5]
        if head[2:3] != sep or head[:2] not in _ORDERS or head[3:] not in ("%d", "%m"):
            continue
        other, order = _ORDERS[head[:2]]
        swapped = f"{other}{sep}{head[:2]}" + fmt[5:]
        parse = timepatterns.compile_pattern(swapped)
        for value in values:
            try:
                parse(str(value))
            except ValueError:
                return f"; {order}: {str(value)!r} reads only that way"
    return ""


def _derived(columns: Mapping[str, Column], records: Sequence[dict]) -> list[TimeGuess]:
    """Times over several fields (:func:`btts.draft.parts.find_parts`), each as a guess."""
    out = []
    for found in parts.find_parts(columns, records, _date_part_format(columns)):
        what = " and ".join(f"{f} ({role})" for role, f in found.sources.items())
        why = f"the time is spread over {what}: one derived time field reads them together"
        if found.needs_year:
            why = f"the time is a {what}, but no field gives its year"
        roles = set(found.sources)
        name = "at" if "date" in roles else "time" if roles & _FINE else "period"
        guess = TimeGuess(name, "from", found.ms, 10, why, sources=dict(found.sources))
        guess.needs_year = found.needs_year
        guess.date_format = found.date_format
        out.append(guess)
    return out


def _date_part_format(columns: Mapping[str, Column]) -> str:
    """The pattern of the column a time made of parts takes its date from, when it is not
    YYYY-MM-DD (``01/31/1988`` in a TMY file: ``%m/%d/%Y``); "" otherwise."""
    for column in columns.values():
        if parts.role_of(column.name) == "date":
            guess = _column_guess(column)
            if guess and "%" in guess.format and "%H" not in guess.format:
                return guess.format
    return ""


_RESOLUTION = ("year", "month", "day", "hour", "minute", "second", "ms")
_FINE = {"day", "hour", "minute", "second", "time"}  # a made time of these is no period


def _rank(guess: TimeGuess) -> tuple:
    """The order of the ways to read the time: never a coarser time than another reads (the
    finest resolution of the sampled times first), then a field named like a time, a complete
    timestamp before the parts of one, the more precise format."""
    fine = _RESOLUTION.index(resolution(guess.ms)) if guess.ms else 0
    return (not guess.needs_year, fine, guess.score >= 10, not guess.derived, guess.score)


def guess_times(columns: Mapping[str, Column], records: Sequence[dict]) -> list[TimeGuess]:
    """Every way the sample's records carry a time, the most likely first (:func:`_rank`);
    a guess's score says how it ranks (equal scores: a question)."""
    guesses = [g for g in map(_column_guess, columns.values()) if g is not None]
    for guess in _derived(columns, records):
        guess.field = _free_name(guess.field, columns)
        guesses.append(guess)
    ranked = sorted(guesses, key=_rank, reverse=True)
    ranks = sorted({_rank(g) for g in ranked})
    for guess in ranked:
        guess.score = ranks.index(_rank(guess))
    return ranked


def _free_name(name: str, columns: Mapping[str, Column]) -> str:
    taken = {c.lower() for c in columns}
    while name.lower() in taken:
        name = f"event_{name}" if not name.startswith("event_") else f"{name}_time"
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
