"""Event-time parsing and time-bucket labels. Pure and exact: integer milliseconds throughout,
never a float round trip, so a key or a cell timestamp never drifts by a millisecond."""

from __future__ import annotations

import datetime as dt
from functools import lru_cache

from transforms.errors import InvalidEvent

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


def to_datetime(ms: int, tz: dt.tzinfo = UTC) -> dt.datetime:
    return (_EPOCH + ms * _MS).astimezone(tz)


def micros(ms: int) -> int:
    """Bigtable's cell timestamp unit (microseconds, millisecond granularity)."""
    return ms * 1000


@lru_cache(maxsize=4096)
def _hour_parts(hour_index: int, tz: dt.tzinfo) -> tuple[int, int, int, int, int, int]:
    moment = to_datetime(hour_index * 3_600_000, tz)
    iso = moment.isocalendar()
    return moment.year, moment.month, moment.day, moment.hour, iso[0], iso[1]


@lru_cache(maxsize=4096)
def _utc_labels(hour_index: int) -> tuple[str, str, str, str, str, str]:
    """Every hour-granular label of one UTC hour: hour, day, week, month, YYYYMMDD, YYYYMM."""
    y, m, d, h, iso_year, iso_week = _hour_parts(hour_index, UTC)
    return (
        f"{y:04d}-{m:02d}-{d:02d}-{h:02d}",
        f"{y:04d}-{m:02d}-{d:02d}",
        f"{iso_year:04d}-W{iso_week:02d}",
        f"{y:04d}-{m:02d}",
        f"{y:04d}{m:02d}{d:02d}",
        f"{y:04d}{m:02d}",
    )


_HHMM = tuple(f"{minute // 60:02d}{minute % 60:02d}" for minute in range(1440))


def _parts(ms: int, tz: dt.tzinfo) -> tuple[int, int, int, int, int, int]:
    # Cached per hour: labels are the hot path and events of one hour share them. Zones with
    # sub-hour offsets fall back to an exact conversion.
    if tz is UTC:
        return _hour_parts(ms // 3_600_000, tz)
    moment = to_datetime(ms, tz)
    iso = moment.isocalendar()
    return moment.year, moment.month, moment.day, moment.hour, iso[0], iso[1]


def hour_label(ms: int, tz: dt.tzinfo = UTC) -> str:
    if tz is UTC:  # the hot path: one cached lookup per hour
        return _utc_labels(ms // 3_600_000)[0]
    y, m, d, h, _, _ = _parts(ms, tz)
    return f"{y:04d}-{m:02d}-{d:02d}-{h:02d}"


def day_label(ms: int, tz: dt.tzinfo = UTC) -> str:
    if tz is UTC:  # the hot path: one cached lookup per hour
        return _utc_labels(ms // 3_600_000)[1]
    y, m, d, _, _, _ = _parts(ms, tz)
    return f"{y:04d}-{m:02d}-{d:02d}"


def iso_week_label(ms: int, tz: dt.tzinfo = UTC) -> str:
    """ISO-8601 week (``2021-W09``): sorts, and unlike the docs' ``week9`` never repeats."""
    if tz is UTC:  # the hot path: one cached lookup per hour
        return _utc_labels(ms // 3_600_000)[2]
    _, _, _, _, iso_year, iso_week = _parts(ms, tz)
    return f"{iso_year:04d}-W{iso_week:02d}"


def month_label(ms: int, tz: dt.tzinfo = UTC) -> str:
    if tz is UTC:  # the hot path: one cached lookup per hour
        return _utc_labels(ms // 3_600_000)[3]
    y, m, _, _, _, _ = _parts(ms, tz)
    return f"{y:04d}-{m:02d}"


def minute_label(ms: int, tz: dt.tzinfo = UTC) -> str:
    """``2021-03-05-1200``: the single-timestamp balloon rows."""
    moment = to_datetime(ms, tz)
    return f"{moment:%Y-%m-%d-%H%M}"


def compact_day(ms: int, tz: dt.tzinfo = UTC) -> str:
    """``YYYYMMDD`` (SENSOR, game and garden keys)."""
    if tz is UTC:  # the hot path: one cached lookup per hour
        return _utc_labels(ms // 3_600_000)[4]
    y, m, d, _, _, _ = _parts(ms, tz)
    return f"{y:04d}{m:02d}{d:02d}"


def compact_month(ms: int, tz: dt.tzinfo = UTC) -> str:
    if tz is UTC:  # the hot path: one cached lookup per hour
        return _utc_labels(ms // 3_600_000)[5]
    y, m, _, _, _, _ = _parts(ms, tz)
    return f"{y:04d}{m:02d}"


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
