"""Two fields that give one instant, checked against each other: wall times written without an
offset (a flight's scheduled ``year, month, day, hour, minute`` in New York) and the same
instants with one (``time_hour``: ``2013-01-01T10:00:00Z``). When the wall times are that
instant in one time zone (its daylight-saving changes included), the draft declares that
``timezone:``; when they look like one instant on two clocks but no zone's offsets explain the
difference, init refuses naming both. A file that holds both instants of an autumn change's
repeated hour (a weather station reporting 01:00 twice) is explained by its zone too, but only
the instants tell those two records apart (:attr:`Zoned.both`).

Each is compared at the coarser of the two resolutions (``time_hour`` keeps the hour, the parts
the minute). Zones are tried by the job's own rule for wall times
(:func:`transforms.text.timefmt.local_to_ms`): a wall time the clocks skip never lands, and the
repeated hour of a change is read as the other field says. Pure.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from transforms.text import timefmt

__all__ = ["compare"]

_STEP = {"ms": 1, "second": 1000, "minute": 60_000, "hour": 3_600_000}
_MAX_OFFSET_MS = 15 * 3_600_000  # every zone's offset is within ±14 h
_QUARTER_HOUR_MS = 900_000
_TRIAL = 64  # records each zone is first tried on
# Zones tried first, so that a draft names the zone people know (each reads its data the same
# as the others that fit): the most used of each offset.
_COMMON = (
    "America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles",
    "America/Phoenix", "America/Anchorage", "Pacific/Honolulu", "America/Toronto",
    "America/Sao_Paulo", "America/Mexico_City", "Europe/London", "Europe/Paris", "Europe/Berlin",
    "Europe/Madrid", "Europe/Moscow", "Europe/Istanbul", "Africa/Johannesburg", "Africa/Cairo",
    "Asia/Kolkata", "Asia/Shanghai", "Asia/Tokyo", "Asia/Singapore", "Asia/Dubai",
    "Australia/Sydney", "Australia/Perth", "Pacific/Auckland",
)  # fmt: skip
_REGIONS = ("Africa", "America", "Antarctica", "Asia", "Atlantic", "Australia", "Europe",
            "Indian", "Pacific")  # fmt: skip


@dataclass
class Zoned:
    """The zone the wall times are written in, and what the draft says of it."""

    zone: str  # "UTC": the wall times are UTC already
    ambiguous: str  # earliest|latest where some wall time falls in a repeated hour, else ""
    ms: list[int]  # the wall times' instants in that zone
    why: str
    both: bool = False  # a repeated hour is held at both its instants: no ``ambiguous:`` reads it


def _step(ms: Sequence[int], phased: bool = False) -> int:
    """The coarsest of ms, second, minute, hour that every time is a whole number of;
    ``phased``: or the hour, when every time is one quarter hour past it (a zone of half hours
    floors its hours at :30 UTC)."""
    out = 1
    for step in _STEP.values():
        if all(m % step == 0 for m in ms):
            out = step
    phase = ms[0] % _STEP["hour"] if ms else 0
    if phased and phase % _QUARTER_HOUR_MS == 0 and all(m % _STEP["hour"] == phase for m in ms):
        out = _STEP["hour"]
    return out


def _looks_one_instant(differences: Sequence[int]) -> bool:
    """Whether the wall-minus-true differences look like a clock's offset: each within ±15 h,
    on a quarter hour, and few distinct (a zone's standard and summer offsets)."""
    if any(abs(d) > _MAX_OFFSET_MS or d % _QUARTER_HOUR_MS for d in differences):
        return False
    return len(set(differences)) <= 4


@lru_cache(maxsize=1)
def _candidates() -> tuple[str, ...]:
    names = zoneinfo.available_timezones()
    regional = sorted(n for n in names if n.split("/")[0] in _REGIONS)
    rest = sorted(n for n in names if n.split("/")[0] not in _REGIONS)
    return tuple(dict.fromkeys(("UTC", *(n for n in _COMMON if n in names), *regional, *rest)))


def _fixed(offset: int) -> str:
    """The fixed-offset zone of a whole-hour offset (``Etc/GMT+5`` is UTC-5: POSIX's sign)."""
    hours = -offset // 3_600_000
    return "UTC" if hours == 0 else f"Etc/GMT{'+' if hours > 0 else '-'}{abs(hours)}"


def _reading(wall: int, true: int, step: int, tz: dt.tzinfo) -> int:
    """How ``wall`` (a wall time's digits as epoch ms) reads ``true`` in ``tz``: 0 not at all,
    1 as the one instant it names, 2 as the earlier of a repeated hour, 3 as the later."""
    local = timefmt.to_datetime(wall).replace(tzinfo=None)
    floored = local - dt.timedelta(milliseconds=wall % step)  # on the wall clock
    found = []
    for fold in (0, 1):
        moment = local.replace(tzinfo=tz, fold=fold)
        if moment.astimezone(timefmt.UTC).astimezone(tz).replace(tzinfo=None) != local:
            continue  # a wall time the clocks skip: the job refuses it
        instant = (moment - timefmt.EPOCH) // timefmt.MILLISECOND
        hit = instant == true or instant - instant % step == true  # floored in UTC, or
        if not hit:  # on the wall clock (they differ where the offset is not whole hours)
            floor = floored.replace(tzinfo=tz, fold=fold)
            hit = (floor - timefmt.EPOCH) // timefmt.MILLISECOND == true
        found.append((instant, hit))
    if len(found) == 2 and found[0][0] != found[1][0]:
        hits = [hit for _, hit in found]
        return 0 if not any(hits) else 1 if all(hits) else 2 if hits[0] else 3
    return int(bool(found) and found[0][1])


def _fits(name: str, wall: Sequence[int], true: Sequence[int], step: int) -> set[int] | None:
    """The readings of every record in zone ``name`` (None: some record does not fit); 2 and 3
    both among them: the file holds a repeated hour at both its instants."""
    tz = timefmt.zone(name)
    seen = set()
    for w, t in zip(wall, true, strict=True):
        reading = _reading(w, t, step, tz)
        if not reading:
            return None
        seen.add(reading)
    return seen


def compare(wall: Sequence[int], true: Sequence[int], names: tuple[str, str]) -> Zoned | str | None:
    """``wall`` (wall times' digits as epoch ms, one per record) against ``true`` (the same
    records' instants): the zone that explains them, a refusal (a one-line text naming both
    fields, ``names``: wall's then true's) when they look like one instant but no zone fits, or
    None when they are not one instant (two different times of an event: nothing to check)."""
    step = max(_step(wall), _step(true, phased=True))
    if step > _STEP["hour"] or not wall or len(wall) != len(true):
        return None
    differences = [(w - w % step) - t for w, t in zip(wall, true, strict=True)]
    if not _looks_one_instant(differences):
        return None
    spread = sorted({0, len(wall) - 1, *range(0, len(wall), max(1, len(wall) // _TRIAL))})
    spread += [differences.index(d) for d in set(differences)]
    few_wall, few_true = [wall[i] for i in spread], [true[i] for i in spread]
    offsets = Counter(differences)
    order = _candidates()
    if len(offsets) == 1 and next(iter(offsets)) % 3_600_000 == 0:
        order = (_fixed(next(iter(offsets))), *order)  # one offset all along: a fixed zone
    fitting = [n for n in order if _fits(n, few_wall, few_true, step) is not None]
    for name in fitting:
        readings = _fits(name, wall, true, step)
        if readings is not None:
            return _zoned(name, readings, wall, fitting, names, offsets)
    shown = offsets.most_common(1)[0][0]
    index = differences.index(shown)
    return (
        f"fields {names[0]!r} and {names[1]!r} both give the event time but disagree: e.g. "
        f"{_wall_text(wall[index])} against {timefmt.iso(true[index])}, off by "
        f"{', '.join(_hours(d) for d in sorted(offsets))}, and no time zone's offsets explain "
        f"that; keep the one that is the event time and drop the other from the file (or "
        f"declare format: and timezone: of {names[0]!r} in the schema by hand)"
    )


def _zoned(name, readings, wall, fitting, names, offsets) -> Zoned:
    tz = timefmt.zone(name)
    both = {2, 3} <= readings
    ambiguous = "" if both else "earliest" if 2 in readings else "latest" if 3 in readings else ""
    ms = [
        timefmt.local_to_ms(
            timefmt.to_datetime(w).replace(tzinfo=None), tz, "t", ambiguous or "earliest",
            earliest=timefmt.MIN_EPOCH_MS,
        )
        for w in wall
    ]  # fmt: skip
    if name == "UTC":
        why = f"{names[1]!r} gives the same instants: the wall times are UTC"
    else:
        others = [n for n in fitting if n != name][:3]
        also = f" ({', '.join(others)} read them the same)" if others else ""
        off = ", ".join(_hours(d) for d in sorted(offsets))
        how = f"one offset all along, {off}" if name.startswith("Etc/") else f"off by {off}"
        why = (
            f"no UTC offset in the wall times, but {names[1]!r} gives each record's instant: "
            f"they are that instant's wall time in {name}{also}, {how}: timezone: {name}"
        )
    if ambiguous:
        why += f"; a repeated hour reads as its {ambiguous} instant, as {names[1]!r} says"
    if both:
        why += (
            f"; a repeated hour is held at both its instants, which only {names[1]!r} tells apart"
        )
    return Zoned(name, ambiguous, ms, why, both)


def _hours(ms: int) -> str:
    sign = "+" if ms >= 0 else "-"
    minutes = abs(ms) // 60_000
    return f"{sign}{minutes // 60}h" + (f"{minutes % 60:02d}" if minutes % 60 else "")


def _wall_text(ms: int) -> str:
    return timefmt.iso(ms)[:19].replace("T", " ")
