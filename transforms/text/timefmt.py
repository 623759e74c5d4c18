"""Event-time parsing and time-bucket labels. Pure and exact: integer milliseconds throughout,
never a float round trip, so a key or a cell timestamp never drifts by a millisecond."""

from __future__ import annotations

import calendar
import datetime as dt
import re
import zoneinfo
from collections.abc import Callable
from functools import lru_cache

from transforms.errors import InvalidEvent
from transforms.text import decimal_year, timepatterns
from transforms.text.events import CsvText, Num, describe, integral_text
from transforms.text.isotime import fromisoformat

__all__ = [
    "DST_CHOICES",
    "EPOCH",
    "HHMM_BYTES",
    "MAX_EPOCH_MS",
    "MILLISECOND",
    "MIN_EPOCH_MS",
    "NAMED_FORMATS",
    "UTC",
    "YEAR_ONE_MS",
    "compact_day",
    "compact_millis",
    "compact_month",
    "day_bounds",
    "day_label",
    "day_ms",
    "has_offset",
    "hour_label",
    "iso",
    "iso_week_label",
    "local_to_ms",
    "make_parser",
    "minute_label",
    "month_bounds",
    "month_label",
    "parse_day",
    "parse_event_time",
    "parse_month",
    "span_warning",
    "strptime_problem",
    "time_of_day",
    "to_datetime",
    "zone",
]

UTC = dt.timezone.utc
# Epoch milliseconds of an aware datetime: ``(moment - EPOCH) // MILLISECOND`` (exact, no float).
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
MILLISECOND = dt.timedelta(milliseconds=1)
# 13-digit epoch milliseconds is the guidance's key format; beyond it keys stop sorting.
MAX_EPOCH_MS = 9_999_999_999_999
# The first instant a datetime holds, 0001-01-01T00:00Z: the origin of offset cell timestamps.
YEAR_ONE_MS = -62_135_596_800_000
# The earliest time any field may declare (``earliest:``): a day later, so every zone's local
# time of it exists and an offset cell timestamp of it is > 0. Times before 1970 land only where
# a field declares them (docs/user-guide.md "Times and their formats"): epoch keys and
# Bigtable's cell timestamps cannot hold them as they are.
MIN_EPOCH_MS = YEAR_ONE_MS + 86_400_000


def parse_event_time(
    value: object, field: str = "timestamp", earliest: int = 0, advice: str = ""
) -> int:
    """Epoch milliseconds from an RFC 3339 string with an offset (``2015-03-16T19:53:32.045Z``)
    or from an integer of epoch milliseconds. Sub-millisecond digits are truncated (Bigtable
    stores milliseconds); a time without an offset is refused rather than guessed, and so is a
    time before ``earliest`` (epoch ms; ``advice``: how to land it, see :func:`range_problem`)."""
    if type(value) is str and len(value) <= 40:  # the common case first: one C call
        try:
            moment = fromisoformat(value)
        except ValueError:
            pass  # the general path below says what is wrong
        else:
            if moment.tzinfo is not None:
                ms = (moment - EPOCH) // MILLISECOND
                if earliest <= ms <= MAX_EPOCH_MS:
                    return ms
    if earliest < 0 and isinstance(value, str) and value[:1] == "-" and value[1:].isdigit():
        ms = plausible_epoch_ms(int(value), field, earliest)  # epoch ms before 1970, declared
    elif isinstance(value, str) and not value.isdigit():
        text = value.strip()
        if not text or len(text) > 40:
            raise InvalidEvent(f"field {field!r}: not an RFC 3339 time: {value[:60]!r}")
        try:
            moment = fromisoformat(text)
        except ValueError:
            raise InvalidEvent(f"field {field!r}: not an RFC 3339 time: {value!r}") from None
        if moment.tzinfo is None:
            raise InvalidEvent(f"field {field!r}: time {value!r} has no UTC offset (add 'Z')")
        ms = (moment - EPOCH) // MILLISECOND
    elif isinstance(value, str):  # a JSON integer kept as its text, or digits in a string
        ms = plausible_epoch_ms(int(value), field, earliest)
    elif isinstance(value, int) and not isinstance(value, bool):
        ms = plausible_epoch_ms(value, field, earliest)
    else:
        raise InvalidEvent(
            f"field {field!r}: expected an RFC 3339 time or epoch milliseconds, "
            f"got {type(value).__name__}"
        )
    return _in_range(ms, field, value, earliest, advice)


# The smallest number taken for epoch milliseconds without a declared format: 1973-03-03. Below
# it a number is far likelier a year (1956) or epoch seconds than a time in the early 1970s.
MIN_GUESSED_EPOCH_MS = 10**11


def plausible_epoch_ms(number: int, field: str = "timestamp", earliest: int = 0) -> int:
    """``number``, when it can pass for epoch milliseconds with no format declared; otherwise a
    dead letter that says what it looks like and which format to declare. A negative number is
    a time before 1970: the range check refuses it unless the field declares such times, and
    then it must be as far from 1970 as a positive one."""
    if number >= MIN_GUESSED_EPOCH_MS or number <= -MIN_GUESSED_EPOCH_MS:
        return number
    if number < 0:
        if earliest >= 0:
            return number  # the range check says why
        raise InvalidEvent(
            f"field {field!r}: the number {number} is too close to 1970 to be epoch "
            "milliseconds; declare format: epoch_ms if it is one"
        )
    if 1 <= number <= 9999:
        looks = "looks like a year; declare format: year"
    elif number >= 10**8:
        looks = "looks like epoch seconds; declare format: epoch_s"
    else:
        looks = "is too small to be epoch milliseconds; declare format: epoch_ms if it is one"
    raise InvalidEvent(f"field {field!r}: the number {number} {looks}")


def _in_range(ms: int, field: str, raw: object, earliest: int = 0, advice: str = "") -> int:
    """``ms``, if it is inside the field's range (``raw``: what the event said)."""
    if not earliest <= ms <= MAX_EPOCH_MS:
        raise InvalidEvent(range_problem(ms, f"field {field!r}: {raw!r}", earliest, advice))
    return ms


def range_problem(ms: int, what: str, earliest: int = 0, advice: str = "") -> str:
    """Why ``ms`` is refused: outside ``earliest``..2286-11-20 (2286: the last time 13-digit
    epoch-millisecond keys hold). ``advice`` follows for a time before ``earliest``: how to land
    it, where ``{earliest}`` stands for the first day of its year (the schema's author knows
    which tables hold early times; the parser does not)."""
    low = iso(earliest)[:10]
    text = f"{what} is outside {low}..2286-11-20"
    if ms < earliest and advice:
        year = to_datetime(max(ms, MIN_EPOCH_MS)).year
        text += advice.replace("{earliest}", f"{year:04d}-01-01")
    return text


_DAY_OF_1970_MS = 86_400_000


def span_warning(earliest: int, latest: int, events: int) -> str:
    """Why the event times a run landed look misread (empty: they do not): every one the same
    instant, or all within a day of 1970-01-01 (numbers of seconds or years read as epoch
    milliseconds). ``earliest``/``latest``: epoch ms."""
    if events >= 2 and earliest == latest:
        return (
            f"all {events:,} valid events have the same time, {iso(earliest)}; if the "
            "source's times differ, check how the time field is read (its format)"
        )
    if events and earliest >= 0 and latest < _DAY_OF_1970_MS:
        return (
            f"every event time is within a day of 1970-01-01 ({iso(earliest)} .. "
            f"{iso(latest)}): numbers read as epoch milliseconds? declare the time field's "
            "format (year, epoch_s, …)"
        )
    return ""


# A day as ``YYYY-MM-DD`` or ``YYYYMMDD`` (both dashes or none): the one pattern every day parser
# (event values, a schema's ``earliest``, the query flags, the nightly job's dates) reads with.
_DAY = re.compile(r"([0-9]{4})(-?)([0-9]{2})\2([0-9]{2})\Z")
DAY_LAYOUTS = {"dashed": "YYYY-MM-DD", "compact": "YYYYMMDD", "either": "YYYY-MM-DD or YYYYMMDD"}
_EPOCH_DAY = dt.date(1970, 1, 1).toordinal()
_DAY_MS = 86_400_000
_COMPACT_DIGITS = 17  # YYYYMMDDHHMMSSmmm; epoch milliseconds have at most 13


def parse_date(value: object, field: str = "date", earliest: int = 0, advice: str = "") -> int:
    """A calendar date ``YYYY-MM-DD`` → epoch milliseconds of its midnight UTC. Anything else
    (a time, another layout, an impossible day, a day before ``earliest``) is refused."""
    if type(value) is not str and type(value) is not CsvText:  # a JSON number is no date
        raise InvalidEvent(f"field {field!r}: expected a date YYYY-MM-DD, got {describe(value)}")
    match = _DAY.match(value)
    if not match or not match.group(2):
        raise InvalidEvent(f"field {field!r}: {value[:40]!r} is not a date YYYY-MM-DD")
    try:
        day = dt.date.fromisoformat(value)
    except ValueError as err:
        raise InvalidEvent(f"field {field!r}: {value!r} is not a real date ({err})") from None
    return _in_range((day.toordinal() - _EPOCH_DAY) * _DAY_MS, field, value, earliest, advice)


def parse_day(text: str, layout: str = "either") -> dt.date:
    """A day written ``YYYY-MM-DD`` (``layout="dashed"``), ``YYYYMMDD`` (``"compact"``) or either;
    a ValueError naming the layout otherwise, or for a day the calendar does not have."""
    match = _DAY.match(text) if isinstance(text, str) else None
    dashed = bool(match and match.group(2))
    if not match or (layout == "dashed" and not dashed) or (layout == "compact" and dashed):
        wanted = DAY_LAYOUTS[layout]
        raise ValueError(f"{text!r} is not a day {wanted if layout == 'dashed' else f'({wanted})'}")
    year, _, month, day = match.groups()
    return dt.date(int(year), int(month), int(day))


def date_ms(day: dt.date) -> int:
    """Epoch ms of midnight UTC of ``day`` (any year from 0001), in integers only."""
    return (day.toordinal() - _EPOCH_DAY) * _DAY_MS


def day_ms(text: str) -> int:
    """Epoch ms of midnight UTC of a day ``YYYY-MM-DD`` (any year from 0001; ValueError
    otherwise): a field's declared ``earliest``."""
    return date_ms(parse_day(text, "dashed"))


def parse_compact_time(
    value: object, field: str = "timestamp", earliest: int = 0, advice: str = ""
) -> int:
    """``YYYYMMDDHHMMSSmmm`` (17 digits, UTC) → epoch ms; anything else as
    :func:`parse_event_time` takes it (RFC 3339 or epoch milliseconds)."""
    if isinstance(value, str) and len(value) == _COMPACT_DIGITS and value.isdigit():
        try:
            moment = dt.datetime.strptime(value[:14], "%Y%m%d%H%M%S")
        except ValueError:
            raise InvalidEvent(
                f"field {field!r}: {value!r} is not a valid YYYYMMDDHHMMSSmmm time"
            ) from None
        ms = calendar.timegm(moment.timetuple()) * 1000 + int(value[14:])
        return _in_range(ms, field, ms, earliest, advice)
    return parse_event_time(value, field, earliest, advice)


def to_datetime(ms: int, tz: dt.tzinfo = UTC) -> dt.datetime:
    return (EPOCH + ms * MILLISECOND).astimezone(tz)


def iso(ms: int) -> str:
    """Epoch ms as RFC 3339 in UTC with milliseconds (``2015-03-01T00:00:00.000Z``)."""
    return to_datetime(ms).isoformat(timespec="milliseconds").replace("+00:00", "Z")


Parts = tuple[int, int, int, int, int, int]  # year, month, day, hour, ISO year, ISO week

# The hour-granular labels, by position: hour, day, ISO week, month, YYYYMMDD, YYYYMM.
_FORMATS = (
    lambda y, m, d, h, iy, iw: f"{y:04d}-{m:02d}-{d:02d}-{h:02d}",
    lambda y, m, d, h, iy, iw: f"{y:04d}-{m:02d}-{d:02d}",
    lambda y, m, d, h, iy, iw: f"{iy:04d}-W{iw:02d}",
    lambda y, m, d, h, iy, iw: f"{y:04d}-{m:02d}",
    lambda y, m, d, h, iy, iw: f"{y:04d}{m:02d}{d:02d}",
    lambda y, m, d, h, iy, iw: f"{y:04d}{m:02d}",
)


def _parts(ms: int, tz: dt.tzinfo) -> Parts:
    moment = to_datetime(ms, tz)
    iso = moment.isocalendar()
    return moment.year, moment.month, moment.day, moment.hour, iso[0], iso[1]


@lru_cache(maxsize=4096)
def _utc_labels(hour_index: int) -> tuple[str, ...]:
    parts = _parts(hour_index * 3_600_000, UTC)
    return tuple(fmt(*parts) for fmt in _FORMATS)


def _hourly(which: int) -> Callable[..., str]:
    """``(ms, tz=UTC) -> label`` of ``_FORMATS[which]``."""
    fmt = _FORMATS[which]

    def label(ms: int, tz: dt.tzinfo = UTC) -> str:
        # Labels are the hot path: in UTC every label of an hour comes from one cached lookup.
        # Other zones (some with sub-hour offsets) convert exactly.
        if tz is UTC:
            return _utc_labels(ms // 3_600_000)[which]
        return fmt(*_parts(ms, tz))

    return label


# The ISO-8601 week (``2021-W09``) sorts, and unlike the docs' ``week9`` never repeats;
# ``YYYYMMDD`` is the day of the SENSOR, game and garden keys.
hour_label, day_label, iso_week_label, month_label, compact_day, compact_month = map(
    _hourly, range(len(_FORMATS))
)
_HHMM = tuple(f"{minute // 60:02d}{minute % 60:02d}" for minute in range(1440))
HHMM_BYTES = tuple(hhmm.encode("ascii") for hhmm in _HHMM)  # the same as qualifiers


def minute_label(ms: int, tz: dt.tzinfo = UTC) -> str:
    """``2021-03-05-1200``: the single-timestamp balloon rows."""
    return f"{to_datetime(ms, tz):%Y-%m-%d-%H%M}"


def compact_millis(ms: int, tz: dt.tzinfo = UTC) -> str:
    """``YYYYMMDDHHMMSSmmm`` (the battery keys)."""
    return f"{to_datetime(ms, tz):%Y%m%d%H%M%S}{ms % 1000:03d}"


def time_of_day(ms: int, tz: dt.tzinfo = UTC) -> str:
    """``HHMM``: the smart-meter reading columns."""
    if tz is UTC:  # the hot path: a table lookup, no datetime
        return _HHMM[ms // 60_000 % 1440]
    return f"{to_datetime(ms, tz):%H%M}"


# -- time formats people write ------------------------------------------------------------------

NAMED_FORMATS = (
    "auto",
    "rfc3339",
    "epoch_s",
    "epoch_ms",
    "epoch_us",
    "date",
    "year",
    "yyyymmddhhmmssmmm",
    "decimal_year",
    *timepatterns.DAY_NUMBER_FORMATS,
)
DST_CHOICES = ("error", "earliest", "latest")
_EPOCH_DIVISORS = {"epoch_s": None, "epoch_ms": 1, "epoch_us": 1000}
_NUMERIC = re.compile(r"[0-9]+(\.[0-9]+)?\Z")


def zone(name: str) -> dt.tzinfo | None:
    """The zone of an IANA name (``UTC`` is the fixed UTC); None for an unknown name."""
    if name.upper() == "UTC":
        return UTC
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None


def strptime_problem(fmt: str) -> str | None:
    """Why ``fmt`` is not a usable pattern (None when it is): it must hold a ``%`` directive
    and read back a time it wrote (strptime's directives, and ``%q`` for a quarter or ``%G-W%V``
    for an ISO week: :mod:`.timepatterns`)."""
    return timepatterns.pattern_problem(fmt)


def has_offset(fmt: str) -> bool:
    """Whether times written in ``fmt`` carry their own UTC offset."""
    return fmt in ("auto", "rfc3339") or fmt.startswith("epoch_") or "%z" in fmt


def local_to_ms(
    local: dt.datetime,
    tz: dt.tzinfo,
    field: str,
    ambiguous: str = "error",
    raw: object = "",
    earliest: int = 0,
    advice: str = "",
) -> int:
    """Epoch ms of a wall-clock time in ``tz``. The repeated hour of a DST change is refused
    unless ``ambiguous`` picks ``earliest`` or ``latest``; a wall time the change skips is
    always refused: no silent shift either way."""
    first = local.replace(tzinfo=tz, fold=0)
    second = local.replace(tzinfo=tz, fold=1)
    if first.utcoffset() != second.utcoffset():
        exists = [
            moment
            for moment in (first, second)
            if moment.astimezone(UTC).astimezone(tz).replace(tzinfo=None) == local
        ]
        if not exists:
            raise InvalidEvent(
                f"field {field!r}: {raw!r} does not exist in {tz} (the clocks skip it at a "
                "daylight-saving change)"
            )
        if len(exists) == 2:
            if ambiguous == "error":
                raise InvalidEvent(
                    f"field {field!r}: {raw!r} happens twice in {tz} (daylight-saving change); "
                    "declare ambiguous: earliest or latest"
                )
            first = first if ambiguous == "earliest" else second
    return _in_range((first - EPOCH) // MILLISECOND, field, raw, earliest, advice)


# strptime formats whose every value of fixed-width digits is read here as strptime would (same
# fields, same range checks: datetime's), at a tenth of its cost: a time made from parts
# (transforms/builder/shaping.py) is written this way for each record
_FIXED_WIDTH = {
    "%Y-%m-%dT%H:%M:%S.%f": re.compile(
        r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{6})"
    ),
}


def _compile_reader(fmt: str) -> Callable[[str], dt.datetime]:
    """``text → naive datetime`` for ``fmt`` (ValueError: a value it does not read); a value
    spelled as :data:`_FIXED_WIDTH` says by its regex, looked up once here, not per value."""
    general = timepatterns.compile_pattern(fmt)
    fixed = _FIXED_WIDTH.get(fmt)
    if fixed is None:
        return general
    match = fixed.fullmatch

    def read(value: str) -> dt.datetime:
        digits = match(value)
        return dt.datetime(*map(int, digits.groups())) if digits else general(value)

    return read


def make_parser(
    fmt: str = "auto",
    field: str = "timestamp",
    tz: dt.tzinfo | None = None,
    ambiguous: str = "error",
    earliest: int = 0,
    advice: str = "",
    round_to: str = "",
):
    """``value → epoch ms`` for one declared time format: a named one (:data:`NAMED_FORMATS`)
    or any strptime pattern. ``tz`` is the zone of times written without an offset (none: such
    a time is refused rather than guessed). Times before ``earliest`` (epoch ms; 1970 unless
    the field declares older times) are refused, ``advice`` saying how to land them.
    ``round_to``: the unit a ``decimal_year`` is rounded to (:mod:`.decimal_year`)."""
    if fmt in _EPOCH_DIVISORS:
        return _epoch_parser(fmt, field, earliest, advice)
    if fmt == "date":
        return lambda value: parse_date(value, field, earliest, advice)
    if fmt in timepatterns.DAY_NUMBER_FORMATS:
        return _day_number_parser(fmt, field, earliest, advice)
    if fmt == "year":
        return _year_parser(field, tz or UTC, ambiguous, earliest, advice)
    if fmt == "decimal_year":
        return _decimal_year_parser(field, round_to, tz or UTC, ambiguous, earliest, advice)
    if fmt == "yyyymmddhhmmssmmm":
        return lambda value: parse_compact_time(value, field, earliest, advice)
    if fmt in ("auto", "rfc3339"):
        return _iso_parser(fmt, field, tz, ambiguous, earliest, advice)
    offset = "%z" in fmt
    read = _compile_reader(fmt)  # once: the hot path only reads

    def pattern(value: object) -> int:
        if type(value) is Num and value.isdigit():  # 20240501 as a JSON number: its digits
            value = str(value)
        elif type(value) is not str and type(value) is not CsvText:
            raise InvalidEvent(f"field {field!r}: expected a time {fmt!r}, got {describe(value)}")
        try:
            moment = read(value)
        except ValueError:
            raise InvalidEvent(
                f"field {field!r}: {value[:60]!r} does not match format {fmt} (declare the "
                "file's format with format: or --time_format)"
            ) from None
        if offset:
            return _in_range((moment - EPOCH) // MILLISECOND, field, value, earliest, advice)
        return local_to_ms(moment, tz or UTC, field, ambiguous, value, earliest, advice)

    return pattern


def _iso_parser(
    fmt: str, field: str, tz: dt.tzinfo | None, ambiguous: str, earliest: int, advice: str
):
    """``auto`` or ``rfc3339``: RFC 3339 (``auto``: or epoch ms); a time without an offset
    only where ``tz`` says its zone."""

    def iso(value: object) -> int:
        if fmt == "rfc3339" and not (isinstance(value, str) and not value.isdigit()):
            raise InvalidEvent(f"field {field!r}: expected an RFC 3339 time, got {value!r}")
        if tz is not None and isinstance(value, str) and not value.isdigit():
            try:
                moment = fromisoformat(value.strip())
            except ValueError:
                pass  # parse_event_time says what is wrong
            else:
                if moment.tzinfo is None:
                    return local_to_ms(moment, tz, field, ambiguous, value, earliest, advice)
        return parse_event_time(value, field, earliest, advice)

    return iso


def _day_number_parser(fmt: str, field: str, earliest: int, advice: str):
    """Whole days (``epoch_d``: since 1970-01-01; ``ordinal_day``: proleptic Gregorian, 1 =
    0001-01-01), a number or its text → midnight UTC of that day."""

    def day_number(value: object) -> int:
        if type(value) is bool or not isinstance(value, (str, int)):
            raise InvalidEvent(f"field {field!r}: expected a day number, got {describe(value)}")
        try:
            day = timepatterns.day_number_date(str(value), fmt)
        except ValueError as err:
            raise InvalidEvent(f"field {field!r}: {err} ({fmt})") from None
        return _in_range(date_ms(day), field, value, earliest, advice)

    return day_number


_YEAR = re.compile(r"[0-9]{1,4}\Z")


def _year_parser(field: str, tz: dt.tzinfo, ambiguous: str, earliest: int, advice: str):
    """A year, as a JSON number or text (``1956``, ``"1956"``) → the start of its 1 January in
    ``tz``."""

    def year(value: object) -> int:
        text = str(value) if type(value) is int else value.strip() if isinstance(value, str) else ""
        text = integral_text(text)  # 1956.0: a year column written as floats
        if not _YEAR.match(text) or int(text) == 0:
            raise InvalidEvent(f"field {field!r}: expected a year such as 1956, got {value!r}")
        moment = dt.datetime(int(text), 1, 1)
        return local_to_ms(moment, tz, field, ambiguous, value, earliest, advice)

    return year


def _decimal_year_parser(
    field: str, unit: str, tz: dt.tzinfo, ambiguous: str, earliest: int, advice: str
):
    """A decimal year (``1960.25``, a JSON number or text) → the start of the ``unit`` nearest
    that fraction of the year, in ``tz`` (:func:`decimal_year.wall_time` says exactly)."""
    unit = unit or "day"

    def decimal(value: object) -> int:
        if not isinstance(value, str):  # Num and CsvText are str; a JSON bool or null is not
            raise InvalidEvent(
                f"field {field!r}: expected a decimal year such as 1960.25, got {describe(value)}"
            )
        try:
            moment = decimal_year.wall_time(value, unit)
        except ValueError as err:
            raise InvalidEvent(f"field {field!r}: {err}") from None
        return local_to_ms(moment, tz, field, ambiguous, value, earliest, advice)

    return decimal


def _epoch_parser(fmt: str, field: str, earliest: int, advice: str):
    divisor = _EPOCH_DIVISORS[fmt]
    unit = {"epoch_s": "seconds", "epoch_ms": "milliseconds", "epoch_us": "microseconds"}[fmt]

    def epoch(value: object) -> int:
        # a JSON number (or a CSV cell): a JSON string of digits is a mistake, not a time
        text = str(value) if type(value) is Num or type(value) is CsvText else ""
        negative = earliest < 0 and text.startswith("-")  # before 1970, where declared
        digits = text[1:] if negative else text
        if not _NUMERIC.match(digits) or (divisor is not None and "." in digits):
            raise InvalidEvent(f"field {field!r}: expected epoch {unit}, got {describe(value)}")
        sign = -1 if negative else 1
        if divisor is None:  # seconds, with up to millisecond decimals kept exactly
            whole, _, frac = digits.partition(".")
            ms = sign * (int(whole) * 1000 + int((frac + "000")[:3]))
        else:  # microseconds: floored to the millisecond, as the cell timestamp is
            ms = sign * int(digits) // divisor
        if not earliest <= ms <= MAX_EPOCH_MS:
            raise InvalidEvent(range_problem(ms, f"field {field!r}: {text}", earliest, advice))
        return ms

    return epoch


_MONTH = re.compile(r"([0-9]{4})-?([0-9]{2})\Z")


def _epoch_ms(moment: dt.datetime) -> int:
    return (moment - EPOCH) // MILLISECOND


def parse_month(text: str) -> tuple[int, int]:
    """``YYYY-MM`` or ``YYYYMM`` → (year, month)."""
    match = _MONTH.match(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a month (YYYY-MM or YYYYMM)")
    year, month = map(int, match.groups())
    if not 1 <= month <= 12:
        raise ValueError(f"{text!r}: month {month} is not 1..12")
    return year, month


def day_bounds(day: dt.date, tz: dt.tzinfo = UTC) -> tuple[int, int]:
    """Epoch ms of ``[midnight, next midnight)`` of ``day`` in ``tz``."""
    start = dt.datetime(day.year, day.month, day.day, tzinfo=tz)
    end = start.replace(tzinfo=None) + dt.timedelta(days=1)
    return _epoch_ms(start), _epoch_ms(end.replace(tzinfo=tz))


def month_bounds(year: int, month: int, tz: dt.tzinfo = UTC) -> tuple[int, int]:
    """Epoch ms of ``[first instant, first instant of the next month)`` in ``tz``."""
    following = (year + month // 12, month % 12 + 1)
    start = dt.datetime(year, month, 1, tzinfo=tz)
    end = dt.datetime(*following, 1, tzinfo=tz)
    return _epoch_ms(start), _epoch_ms(end)
