"""Game results, denormalised into two tables for two queries (SPEC §5.5)."""

from __future__ import annotations

from transforms.schema import Family, declare, text, time_label

_GAME = Family("GAME", max_versions=1, doc="WIN (true/false) and KDA (decimal text)")

GAME_BY_PLAYER = declare(
    "GAME_BY_PLAYER",
    key=[text("game"), text("player"), time_label("date", "yyyymmdd")],
    families=[_GAME],
    pattern="TS-COLS",
    doc="One player's results in one game over a period (\"Corrie's LoL wins in March\"): the "
    "range GAME#PLAYER#start..GAME#PLAYER#end. One result per player, game and day.",
    spec="5.5",
)

GAME_BY_DATE = declare(
    "GAME_BY_DATE",
    key=[text("game"), time_label("date", "yyyymmdd"), text("player")],
    families=[_GAME],
    pattern="TS-COLS",
    doc='Every result of one game over a period ("all LoL games in March"): the range '
    "GAME#start..GAME#end. Same cells as GAME_BY_PLAYER, written from the same events.",
    spec="5.5",
)
