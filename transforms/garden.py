"""Garden temperatures (SPEC §5.6): the tall-narrow day row and the short-wide month row.

``{"garden": "VEGGIEGARDEN", "date": "2015-03-31", "temp": 60.4}`` → ``GARDEN_DAILY`` row
``VEGGIEGARDEN#20150331`` with ``DAILY:TEMP = 60.4`` (layout ``tall``) and/or ``GARDEN_MONTHLY`` row
``VEGGIEGARDEN#201503`` with ``TEMP:31 = 60.4`` (layout ``month``). Cell timestamps are midnight UTC
of the date, so a re-run writes the very same cells.
"""

from __future__ import annotations

from typing import NamedTuple

from transforms import events, timefmt
from transforms.declarations.garden import GARDEN_DAILY, GARDEN_MONTHLY
from transforms.game_results import name_field, parse_date  # shared date/name rules
from transforms.mutations import Cell, RowMutation

FIELDS = ("garden", "date", "temp")
LAYOUTS = {
    "tall": ("GARDEN_DAILY",),
    "month": ("GARDEN_MONTHLY",),
    "both": ("GARDEN_DAILY", "GARDEN_MONTHLY"),
}
_DAILY_KEY = GARDEN_DAILY.key.build
_MONTHLY_KEY = GARDEN_MONTHLY.key.build


class DailyTemp(NamedTuple):
    garden: str
    date_ms: int  # midnight UTC
    temp: str  # the source's decimal text


def parse(obj: dict) -> DailyTemp:
    events.check_fields(obj, FIELDS)
    return DailyTemp(
        garden=name_field(obj, "garden"),
        date_ms=parse_date(obj),
        temp=str(events.number_field(obj, "temp")),
    )


def tables(layout: str) -> tuple[str, ...]:
    """The tables a layout writes; an unknown layout is a programming error."""
    try:
        return LAYOUTS[layout]
    except KeyError:
        raise ValueError(
            f"unknown garden layout {layout!r}; use one of {sorted(LAYOUTS)}"
        ) from None


def rows(event: DailyTemp, layout: str = "tall") -> list[RowMutation]:
    wanted = tables(layout)
    values = {"garden": event.garden, "date": event.date_ms}
    ts_us = timefmt.micros(event.date_ms)
    temp = event.temp.encode("ascii")
    out = []
    if "GARDEN_DAILY" in wanted:
        out.append(
            RowMutation("GARDEN_DAILY", _DAILY_KEY(values), (Cell("DAILY", b"TEMP", temp, ts_us),))
        )
    if "GARDEN_MONTHLY" in wanted:
        day = str(timefmt.to_datetime(event.date_ms).day).encode("ascii")
        out.append(
            RowMutation("GARDEN_MONTHLY", _MONTHLY_KEY(values), (Cell("TEMP", day, temp, ts_us),))
        )
    return out


def build(record: dict, layout: str = "tall") -> list[RowMutation]:
    """The pipeline's builder (bind ``layout`` with :func:`functools.partial`): record → the
    layout's rows, or :class:`InvalidEvent`. CSV has the same flat columns."""
    return rows(parse(record), layout)
