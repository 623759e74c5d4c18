"""Time patterns as people write them, compiled once into a reader: strptime's directives plus
the two that strptime lacks, a quarter (``%q``: ``1970 Q1``, ``1970Q1``, ``1970-Q1``) and an ISO
week without a weekday (``%G-W%V``: ``2020-W05``, its Monday), and the day numbers named formats
read (``epoch_d``: days since 1970-01-01; ``ordinal_day``: the proleptic Gregorian ordinal,
Python's ``date.toordinal``, 1 = 0001-01-01).

A reader is made once per field (:func:`compile_pattern`), so the ingest's hot path does one
match per value, never a guess. Pure; a value that does not read raises ValueError (the caller
turns it into the field's dead letter).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

__all__ = ["DAY_NUMBER_FORMATS", "compile_pattern", "day_number_date", "pattern_problem"]

Reader = Callable[[str], dt.datetime]

# The named formats that are whole days counted from an origin, and the ordinal of that origin.
DAY_NUMBER_FORMATS = {"epoch_d": dt.date(1970, 1, 1).toordinal(), "ordinal_day": 0}
_MAX_ORDINAL = dt.date.max.toordinal()
_MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
_MONTH_NUMBER = {
    **{name: i for i, name in enumerate(_MONTHS, 1)},
    **{name[:3]: i for i, name in enumerate(_MONTHS, 1)},
    "sept": 9,
}
# What each directive a quarter or week pattern may hold matches, as a named group.
_GROUPS = {
    "Y": r"(?P<Y>[0-9]{4})",
    "y": r"(?P<y>[0-9]{2})",
    "G": r"(?P<G>[0-9]{4})",
    "q": r"(?P<q>[1-4])",
    "V": r"(?P<V>[0-9]{1,2})",
    "m": r"(?P<m>[0-9]{1,2})",
    "b": r"(?P<b>[A-Za-z]{3,9}\.?)",
    "%": "%",
}
_GROUPS["B"] = _GROUPS["b"].replace("P<b>", "P<B>")
_DIRECTIVE = re.compile(r"%(.)")


def _own(fmt: str) -> bool:
    """Whether ``fmt`` needs this module's reader: a quarter, or an ISO week with no weekday."""
    return "%q" in fmt or ("%V" in fmt and not any(d in fmt for d in ("%u", "%a", "%A", "%w")))


def compile_pattern(fmt: str) -> Reader:
    """``text → naive datetime`` for ``fmt``: strptime's own reader, or for a quarter or a
    weekless ISO week a regex made once. ValueError for a value the pattern does not read."""
    if not _own(fmt):
        strptime = dt.datetime.strptime

        def read_strptime(text: str) -> dt.datetime:
            return strptime(text, fmt)

        return read_strptime
    parts, seen = [], set()
    position = 0
    for match in _DIRECTIVE.finditer(fmt):
        parts.append(_literal(fmt[position : match.start()]))
        name = match.group(1)
        if name not in _GROUPS or (name in seen and name != "%"):
            raise ValueError(f"%{name} cannot be combined with %q or a weekless %V")
        seen.add(name)
        parts.append(_GROUPS[name])
        position = match.end()
    parts.append(_literal(fmt[position:]))
    if "q" in seen and not seen & {"Y", "y"}:
        raise ValueError("a quarter (%q) needs its year (%Y or %y)")
    if "V" in seen and "G" not in seen:
        raise ValueError("an ISO week (%V) needs its ISO year (%G)")
    matcher = re.compile("".join(parts) + r"\Z", re.IGNORECASE).match

    def read(text: str) -> dt.datetime:
        found = matcher(text.strip())
        if found is None:
            raise ValueError(f"{text!r} does not match {fmt!r}")
        return _moment(found.groupdict())

    return read


def _literal(text: str) -> str:
    """A pattern's literal text as a regex; any whitespace in it reads any run of whitespace,
    as strptime's does."""
    return r"\s+".join(re.escape(word) for word in re.split(r"\s+", text))


def _moment(groups: dict[str, str]) -> dt.datetime:
    if "V" in groups:
        return dt.datetime.combine(
            dt.date.fromisocalendar(int(groups["G"]), int(groups["V"]), 1), dt.time()
        )
    year = int(groups["Y"]) if "Y" in groups else _two_digit(int(groups["y"]))
    if "q" in groups:
        return dt.datetime(year, 3 * int(groups["q"]) - 2, 1)
    name = (groups.get("b") or groups.get("B") or "").lower().rstrip(".")
    month = _MONTH_NUMBER[name] if name in _MONTH_NUMBER else int(groups.get("m") or 1)
    if name and name not in _MONTH_NUMBER:
        raise ValueError(f"{name!r} is not a month")
    return dt.datetime(year, month, 1)


def _two_digit(year: int) -> int:
    """strptime's rule for ``%y``: 69..99 are 1969..1999, 00..68 are 2000..2068."""
    return year + (1900 if year >= 69 else 2000)


def write(moment: dt.datetime, fmt: str) -> str:
    """``moment`` written in ``fmt`` (strftime, and ``%q`` as the quarter's digit): what
    :func:`compile_pattern`'s reader reads back."""
    quarter = str((moment.month - 1) // 3 + 1)
    pieces = fmt.split("%%")
    return "%".join(moment.strftime(p.replace("%q", quarter)) for p in pieces)


def pattern_problem(fmt: str) -> str | None:
    """Why ``fmt`` is not a usable pattern (None when it is): it must hold a ``%`` directive
    and read back a time it wrote."""
    if "%" not in fmt:
        return "a strptime pattern holds % directives (e.g. %Y/%m/%d %H:%M)"
    sample = dt.datetime(2001, 2, 3, 4, 5, 6, 789000, tzinfo=dt.timezone.utc)
    try:
        compile_pattern(fmt)(write(sample, fmt))
    except ValueError as err:
        return f"it cannot read back what it writes ({err})"
    return None


def day_number_date(text: str, fmt: str) -> dt.date:
    """The day a day number names in ``fmt`` (:data:`DAY_NUMBER_FORMATS`): whole digits, a
    ``.0`` tolerated (a column of floats), a minus sign for ``epoch_d`` before 1970."""
    whole = text.strip()
    if whole.endswith(".0"):
        whole = whole[:-2]
    digits = whole[1:] if whole.startswith("-") and fmt == "epoch_d" else whole
    if not digits.isdigit() or not digits.isascii():
        raise ValueError(f"{text!r} is not a whole number of days")
    ordinal = int(whole) + DAY_NUMBER_FORMATS[fmt]
    if not 1 <= ordinal <= _MAX_ORDINAL:
        raise ValueError(f"{text!r} is not a day from 0001-01-01 to 9999-12-31")
    return dt.date.fromordinal(ordinal)
