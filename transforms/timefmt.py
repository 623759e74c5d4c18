"""Event-time parsing and time-bucket labels. Pure and exact: integer milliseconds throughout,
never a float round trip, so a key or a cell timestamp never drifts by a millisecond."""

from __future__ import annotations

import calendar
import datetime as dt
import re
from functools import lru_cache

from transforms.errors import InvalidEvent
from transforms.events import CsvText, describe

UTC = dt.timezone.utc
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
_MS = dt.timedelta(milliseconds=1)
# 13-digit epoch milliseconds is the guidance's key format; beyond it keys stop sorting.
MAX_EPOCH_MS = 9_999_999_999_999


def parse_event_time(value: object, field: str = "timestamp") -> int:
    """Epoch milliseconds from an RFC 3339 string with an offset (``2015-03-16T19:53:32.045Z``)
    or from an integer of epoch milliseconds. Sub-millisecond digits are truncated (Bigtable
    stores milliseconds); a time without an offset is refused rather than guessed."""
    if type(value) is str and len(value) <= 40:  # the common case first: one C call
        try:
            moment = dt.datetime.fromisoformat(value)
        except ValueError:
            pass  # the general path below says what is wrong
        else:
            if moment.tzinfo is not None:
                ms = (moment - _EPOCH) // _MS
                if 0 <= ms <= MAX_EPOCH_MS:
                    return ms
    if isinstance(value, str) and not value.isdigit():
        text = value.strip()
        if not text or len(text) > 40:
            raise InvalidEvent(f"field {field!r}: not an RFC 3339 time: {value[:60]!r}")
        try:
            moment = dt.datetime.fromisoformat(text)
        except ValueError:
            raise InvalidEvent(f"field {field!r}: not an RFC 3339 time: {value!r}") from None
        if moment.tzinfo is None:
            raise InvalidEvent(f"field {field!r}: time {value!r} has no UTC offset (add 'Z')")
        ms = (moment - _EPOCH) // _MS
    elif isinstance(value, str):  # a JSON integer kept as its text, or digits in a string
        ms = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        ms = value
    else:
        raise InvalidEvent(
            f"field {field!r}: expected an RFC 3339 time or epoch milliseconds, "
            f"got {type(value).__name__}"
        )
    if not 0 <= ms <= MAX_EPOCH_MS:
        raise InvalidEvent(f"field {field!r}: {value!r} is outside 1970-01-01..2286-11-20")
    return ms


_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
_EPOCH_DAY = dt.date(1970, 1, 1).toordinal()
_DAY_MS = 86_400_000
_COMPACT_DIGITS = 17  # YYYYMMDDHHMMSSmmm; epoch milliseconds have at most 13


def parse_date(value: object, field: str = "date") -> int:
    """A calendar date ``YYYY-MM-DD`` → epoch milliseconds of its midnight UTC. Anything else
    (a time, another layout, an impossible day) is refused."""
    if type(value) is not str and type(value) is not CsvText:  # a JSON number is no date
        raise InvalidEvent(f"field {field!r}: expected a date YYYY-MM-DD, got {describe(value)}")
    if not _DATE.match(value):
        raise InvalidEvent(f"field {field!r}: {value[:40]!r} is not a date YYYY-MM-DD")
    try:
        day = dt.date.fromisoformat(value)
    except ValueError as err:
        raise InvalidEvent(f"field {field!r}: {value!r} is not a real date ({err})") from None
    ms = (day.toordinal() - _EPOCH_DAY) * _DAY_MS
    if not 0 <= ms <= MAX_EPOCH_MS:
        raise InvalidEvent(f"field {field!r}: {value!r} is outside 1970-01-01..2286-11-20")
    return ms


def parse_compact_time(value: object, field: str = "timestamp") -> int:
    """``YYYYMMDDHHMMSSmmm`` (17 digits, UTC) → epoch ms; anything else as
    :func:`parse_event_time` takes it (RFC 3339 or epoch milliseconds)."""
    if isinstance(value, str) and len(value) == _COMPACT_DIGITS and value.isdigit():
        try:
            moment = dt.datetime.strptime(value[:14], "%Y%m%d%H%M%S")
        except ValueError:
            raise InvalidEvent(
                f"field {field!r}: {value!r} is not a valid YYYYMMDDHHMMSSmmm time"
            ) from None
        return parse_event_time(calendar.timegm(moment.timetuple()) * 1000 + int(value[14:]), field)
    return parse_event_time(value, field)


def to_datetime(ms: int, tz: dt.tzinfo = UTC) -> dt.datetime:
    return (_EPOCH + ms * _MS).astimezone(tz)


def micros(ms: int) -> int:
    """Bigtable's cell timestamp unit (microseconds, millisecond granularity)."""
    return ms * 1000


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


def _label(ms: int, tz: dt.tzinfo, which: int) -> str:
    # Labels are the hot path: in UTC every label of an hour comes from one cached lookup.
    # Other zones (some with sub-hour offsets) convert exactly.
    if tz is UTC:
        return _utc_labels(ms // 3_600_000)[which]
    return _FORMATS[which](*_parts(ms, tz))


_HHMM = tuple(f"{minute // 60:02d}{minute % 60:02d}" for minute in range(1440))


def hour_label(ms: int, tz: dt.tzinfo = UTC) -> str:
    return _label(ms, tz, 0)


def day_label(ms: int, tz: dt.tzinfo = UTC) -> str:
    return _label(ms, tz, 1)


def iso_week_label(ms: int, tz: dt.tzinfo = UTC) -> str:
    """ISO-8601 week (``2021-W09``): sorts, and unlike the docs' ``week9`` never repeats."""
    return _label(ms, tz, 2)


def month_label(ms: int, tz: dt.tzinfo = UTC) -> str:
    return _label(ms, tz, 3)


def minute_label(ms: int, tz: dt.tzinfo = UTC) -> str:
    """``2021-03-05-1200``: the single-timestamp balloon rows."""
    moment = to_datetime(ms, tz)
    return f"{moment:%Y-%m-%d-%H%M}"


def compact_day(ms: int, tz: dt.tzinfo = UTC) -> str:
    """``YYYYMMDD`` (SENSOR, game and garden keys)."""
    return _label(ms, tz, 4)


def compact_month(ms: int, tz: dt.tzinfo = UTC) -> str:
    return _label(ms, tz, 5)


def compact_millis(ms: int, tz: dt.tzinfo = UTC) -> str:
    """``YYYYMMDDHHMMSSmmm`` (the battery keys)."""
    moment = to_datetime(ms, tz)
    return f"{moment:%Y%m%d%H%M%S}{ms % 1000:03d}"


def time_of_day(ms: int, tz: dt.tzinfo = UTC) -> str:
    """``HHMM``: the smart-meter reading columns."""
    if tz is UTC:  # the hot path: a table lookup, no datetime
        return _HHMM[ms // 60_000 % 1440]
    moment = to_datetime(ms, tz)
    return f"{moment:%H%M}"


BUCKETS = {
    "hour": hour_label,
    "day": day_label,
    "week": iso_week_label,
    "month": month_label,
}


def bucket_label(ms: int, bucket: str, tz: dt.tzinfo = UTC) -> str:
    try:
        return BUCKETS[bucket](ms, tz)
    except KeyError:
        raise ValueError(f"unknown time bucket {bucket!r}; use one of {sorted(BUCKETS)}") from None
