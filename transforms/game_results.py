"""Game results (SPEC §5.5): one result → a GAME_BY_PLAYER row and a GAME_BY_DATE row.

``{"game": "LoL", "player": "Corrie", "date": "2015-03-01", "win": false, "kda": 4.25}`` →
``GAME_BY_PLAYER`` row ``LoL#Corrie#20150301`` and ``GAME_BY_DATE`` row ``LoL#20150301#Corrie``,
both with ``GAME:WIN = false`` and ``GAME:KDA = 4.25``. The source has a date, not a time: the
cell timestamp is midnight UTC of that date, so a re-run writes the very same cells.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import NamedTuple

from transforms import events, keys, timefmt
from transforms.declarations.game_results import GAME_BY_DATE, GAME_BY_PLAYER
from transforms.errors import InvalidEvent
from transforms.mutations import Cell, RowMutation

FIELDS = ("game", "player", "date", "win", "kda")
FAMILY = "GAME"
TABLES = ("GAME_BY_PLAYER", "GAME_BY_DATE")
MAX_NAME = 256
_BY_PLAYER_KEY = GAME_BY_PLAYER.key.build
_BY_DATE_KEY = GAME_BY_DATE.key.build
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
_EPOCH_DAY = dt.date(1970, 1, 1).toordinal()
_DAY_MS = 86_400_000


def parse_date(obj: dict, field: str = "date") -> int:
    """A calendar date ``YYYY-MM-DD`` → epoch milliseconds of its midnight UTC (the row's time
    and cell timestamp). Anything else (a time, another layout, an impossible day) is refused."""
    value = obj[field]
    if type(value) not in (str, events.CsvText):
        raise InvalidEvent(
            f"field {field!r}: expected a date YYYY-MM-DD, got {events.describe(value)}"
        )
    if not _DATE.match(value):
        raise InvalidEvent(f"field {field!r}: {value[:40]!r} is not a date YYYY-MM-DD")
    try:
        day = dt.date.fromisoformat(value)
    except ValueError as err:
        raise InvalidEvent(f"field {field!r}: {value!r} is not a real date ({err})") from None
    ms = (day.toordinal() - _EPOCH_DAY) * _DAY_MS
    if not 0 <= ms <= timefmt.MAX_EPOCH_MS:
        raise InvalidEvent(f"field {field!r}: {value!r} is outside 1970-01-01..2286-11-20")
    return ms


def name_field(obj: dict, field: str) -> str:
    """A key segment from free text: no delimiter, and no surrounding spaces (``Corrie `` and
    ``Corrie`` must not become two players)."""
    value = events.text_field(obj, field, MAX_NAME)
    if value != value.strip():
        raise InvalidEvent(f"field {field!r}: {value!r} has leading or trailing whitespace")
    return keys.check_segment(value, f"field {field!r}")


class GameResult(NamedTuple):
    game: str
    player: str
    date_ms: int
    win: bool
    kda: str  # the source's decimal text


def parse(obj: dict) -> GameResult:
    events.check_fields(obj, FIELDS)
    kda = events.number_field(obj, "kda")
    if kda.startswith("-"):
        raise InvalidEvent(f"field 'kda': {kda} is negative")
    return GameResult(
        game=name_field(obj, "game"),
        player=name_field(obj, "player"),
        date_ms=parse_date(obj),
        win=events.bool_field(obj, "win"),
        kda=str(kda),
    )


def rows(event: GameResult) -> list[RowMutation]:
    values = {"game": event.game, "player": event.player, "date": event.date_ms}
    ts_us = timefmt.micros(event.date_ms)
    cells = (
        Cell(FAMILY, b"WIN", b"true" if event.win else b"false", ts_us),
        Cell(FAMILY, b"KDA", event.kda.encode("ascii"), ts_us),
    )
    return [
        RowMutation("GAME_BY_PLAYER", _BY_PLAYER_KEY(values), cells),
        RowMutation("GAME_BY_DATE", _BY_DATE_KEY(values), cells),
    ]


def build(record: dict) -> list[RowMutation]:
    """The pipeline's builder: record → rows for both tables, or :class:`InvalidEvent`. CSV has
    the same flat columns (``win`` as ``true``/``false``)."""
    return rows(parse(record))
