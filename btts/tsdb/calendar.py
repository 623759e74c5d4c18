"""Calendar buckets for a downsample (``1dc``, or ``useCalendar`` with a ``timezone``), as
OpenTSDB's ``DateTime.previousInterval`` places them: pure, no client.

A bucket of ``count`` units starts on the calendar in the time zone: days at local midnight,
months on the 1st, years on January 1st, weeks on Sunday (any count of weeks from the first
point's week, as OpenTSDB's downsampler steps them). Like OpenTSDB, a count that does not
divide the next larger unit counts from a coarser start (``5h`` from the month's start, ``2d``
from the year's), and hours and smaller add elapsed time while days and larger add wall-clock
days, months or years (a day is 23 or 25 hours across a daylight-saving change).
"""

from __future__ import annotations

import datetime as dt
import zoneinfo

__all__ = ["Calendar", "zone"]

_ELAPSED_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def zone(name: str) -> dt.tzinfo:
    """The time zone ``name`` (an IANA name or UTC); ValueError when unknown."""
    if name.upper() in ("UTC", "GMT", "Z", ""):
        return dt.timezone.utc
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"Unknown time zone {name[:40]!r}: use an IANA name (Europe/Paris)"
        ) from None


class Calendar:
    """Bucket starts of ``count`` ``unit`` s in time zone ``tz``."""

    def __init__(self, count: int, unit: str, tz: dt.tzinfo) -> None:
        self.count, self.unit, self.tz = count, unit, tz

    def _local(self, ts_ms: int) -> dt.datetime:
        return (_EPOCH + dt.timedelta(milliseconds=ts_ms)).astimezone(self.tz).replace(tzinfo=None)

    def _ms(self, local: dt.datetime) -> int:
        aware = local.replace(tzinfo=self.tz)
        return (aware - _EPOCH) // dt.timedelta(milliseconds=1)

    def _anchor(self, t: dt.datetime) -> dt.datetime:
        """The coarser start a bucket is counted from (``previousInterval``'s field resets)."""
        n, unit = self.count, self.unit
        day = t.replace(hour=0, minute=0, second=0, microsecond=0)
        if unit == "ms":
            return t.replace(microsecond=0) if 1000 % n == 0 else t.replace(second=0, microsecond=0)
        if unit == "s":
            return (
                t.replace(second=0, microsecond=0)
                if 60 % n == 0
                else t.replace(minute=0, second=0, microsecond=0)
            )
        if unit == "m":
            return t.replace(minute=0, second=0, microsecond=0) if 60 % n == 0 else day
        if unit == "h":
            return day if 24 % n == 0 else day.replace(day=1)
        if unit == "d":
            return day.replace(day=1) if n == 1 else day.replace(month=1, day=1)
        if unit == "w":  # any count of weeks: the week's Sunday (previousInterval's 7 days)
            return day - dt.timedelta(days=(day.weekday() + 1) % 7)
        return day.replace(month=1, day=1)

    def add(self, ts_ms: int, buckets: int = 1) -> int:
        """The start ``buckets`` buckets after the one starting at ``ts_ms``."""
        k = buckets * self.count
        if self.unit in _ELAPSED_MS:
            return ts_ms + k * _ELAPSED_MS[self.unit]
        return self._ms(self._shift(self._local(ts_ms), k))

    def _shift(self, t: dt.datetime, k: int) -> dt.datetime:
        if self.unit == "d":
            return t + dt.timedelta(days=k)
        if self.unit == "w":
            return t + dt.timedelta(days=7 * k)
        months = k * (12 if self.unit == "y" else 1) + t.month - 1
        year = t.year + months // 12
        return t.replace(year=year, month=months % 12 + 1, day=min(t.day, 28))

    def floor(self, ts_ms: int) -> int:
        """The start of the bucket holding ``ts_ms`` (``DateTime.previousInterval``; for weeks,
        whatever their count, the start of the week)."""
        anchor = self._ms(self._anchor(self._local(ts_ms)))
        if self.unit == "w":
            return anchor
        if self.unit in _ELAPSED_MS:
            size = self.count * _ELAPSED_MS[self.unit]
            return anchor + (ts_ms - anchor) // size * size
        start, k = anchor, 0
        guess = self._steps(anchor, ts_ms)
        if guess > 0:
            k = guess - 1
            start = self.add(anchor, k)
        while self.add(anchor, k + 1) <= ts_ms:
            k += 1
            start = self.add(anchor, k)
        return start

    def stepped(self, ts_ms: int, origin: int) -> int:
        """The bucket holding ``ts_ms`` on buckets stepped from the bucket ``origin`` (the
        ``Downsampler`` adds the interval from the first point's bucket): for weeks counted
        from the first point's week; otherwise :meth:`floor`."""
        if self.unit != "w" or self.count == 1 or ts_ms < origin:
            return self.floor(ts_ms)
        days = (self._local(self.floor(ts_ms)).date() - self._local(origin).date()).days
        return self.add(origin, days // 7 // self.count)

    def _steps(self, anchor: int, ts_ms: int) -> int:
        """About how many buckets lie between ``anchor`` and ``ts_ms`` (a lower bound)."""
        days = (ts_ms - anchor) // 86_400_000
        per = {"d": 1, "w": 7, "n": 31, "y": 366}[self.unit] * self.count
        return max(0, days // per)

    def ceil(self, ts_ms: int) -> int:
        """The first bucket start at or after ``ts_ms``."""
        start = self.floor(ts_ms)
        return start if start == ts_ms else self.add(start)
