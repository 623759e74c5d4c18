"""The shape of a sample: whether it is wide, and which text fields name its entities.

Pure. *Wide*: many numeric columns of one kind, one per series (or one per month, where the
columns are a year's months): the guidance keeps series tall and narrow, so the draft either
unpivots them into one event per column or collects them in a map field (one row per time, a
column per series), whichever the column count calls for. *Entities*: the text fields that,
with the time, tell records apart (a symbol, a source, a station); they lead the row key.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from btts.advisor.naming import guess_kind
from btts.draft.fields import Column

__all__ = ["Wide", "entities", "wide"]

WIDE_MIN_COLUMNS = 10  # this many same-kind numeric columns make a file wide
MAP_MAX_COLUMNS = 100  # a map field up to this many series per row; an unpivot beyond
MAX_KEY_TEXT = 128  # longer text does not name an entity
ENTITY_WORDS = {
    "symbol", "ticker", "station", "device", "host", "hostname", "sensor", "site", "country",
    "region", "city", "state", "source", "series", "id", "user", "meter", "location",
    "code", "machine", "node", "account", "customer", "product", "store", "team", "player",
}  # fmt: skip
_MONTHS = {m.lower() for m in calendar.month_abbr if m} | {
    m.lower() for m in calendar.month_name if m
}


@dataclass
class Wide:
    """A wide sample's series columns and how the draft lands them."""

    columns: list[str]
    how: str  # unpivot | map
    months: bool = False  # the columns are the months of a year
    why: str = ""
    others: list[str] = field(default_factory=list)  # columns copied to every event
    name: str = "series"  # the field naming a series (a map, or an unpivoted column's name)
    value: str = "value"  # the field holding an unpivoted column's value


def _is_month(name: str) -> bool:
    return name.strip().lower() in _MONTHS


def wide(columns: Mapping[str, Column], time_fields: Sequence[str], fmt: str) -> Wide | None:
    """The wide layout of a sample, or None when it is long (tall and narrow already)."""
    numeric = [
        c.name for c in columns.values()
        if c.type in ("integer", "number") and c.name not in time_fields
    ]  # fmt: skip
    months = [n for n in numeric if _is_month(n)]
    others = [n for n in columns if n not in numeric]
    if len(months) >= 6:
        rest = [n for n in columns if n not in months]
        why = (
            f"{len(months)} numeric columns named after months: each is one month of the row's "
            "year, so each becomes an event of its own (tall and narrow)"
        )
        return Wide(months, "unpivot", True, why, rest, name="month")
    if len(numeric) < WIDE_MIN_COLUMNS or len({columns[n].type for n in numeric}) > 2:
        return None
    plain = all(n.isprintable() and n.split() == [n] for n in numeric)  # map entry names
    if len(numeric) <= MAP_MAX_COLUMNS and fmt == "csv" and plain:
        why = (
            f"{len(numeric)} numeric series side by side: a map field keeps them in one row per "
            "time, one column per series (read together, as the file shows them); the "
            f"alternative, an unpivot to one row per series and time, suits more than "
            f"{MAP_MAX_COLUMNS} series or queries that read one series alone"
        )
        return Wide(numeric, "map", False, why, others)
    why = (
        f"{len(numeric)} numeric series side by side: each becomes an event of its own, its "
        "series named by a key field (tall and narrow: one series over a range is one range)"
    )
    return Wide(numeric, "unpivot", False, why, others)


def _tokens(name: str) -> set[str]:
    return set(re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()))


def candidates(columns: Mapping[str, Column], exclude: Sequence[str]) -> list[Column]:
    """Text fields that could name an entity: required, short, fewer values than records."""
    out = []
    for column in columns.values():
        if column.name in exclude or column.type != "text" or column.optional:
            continue
        if column.many or column.max_length > MAX_KEY_TEXT or guess_kind(column.name) == "pii":
            continue  # (personal data never leads a key unless --query says so)
        if any("#" in str(v) or not str(v).isprintable() for v in column.values):
            continue  # the key delimiter or a control character: not key text
        if column.cardinality >= max(2, column.records) and column.records > 20:
            continue  # a value per record: a label, not an entity
        out.append(column)
    return sorted(out, key=lambda c: (c.cardinality, c.name))


def collisions(records: Sequence[dict], names: Sequence[str], times: Sequence[int]) -> int:
    """How many records share their (entities, time) with an earlier record."""
    seen = set()
    clashes = 0
    for record, ms in zip(records, times, strict=True):
        key = (*(str(record.get(n)) for n in names), ms)
        clashes += key in seen
        seen.add(key)
    return clashes


def entities(
    columns: Mapping[str, Column],
    records: Sequence[dict],
    times: Sequence[int],
    chosen: Sequence[str],
    exclude: Sequence[str],
) -> tuple[list[str], int]:
    """The entity fields (``chosen`` first, e.g. the fields queries select), the fewest that
    tell the sampled records apart with the time, and how many records still collide."""
    pool = [c for c in candidates(columns, [*exclude, *chosen])]
    names = list(chosen)
    names += [c.name for c in pool if _tokens(c.name) & ENTITY_WORDS and c.cardinality > 1]
    clashes = collisions(records, names, times)
    if not clashes:
        return names, 0
    rest = [c.name for c in pool if c.name not in names]
    for size in (1, 2):
        for extra in combinations(rest, size):
            if not collisions(records, [*names, *extra], times):
                return [*names, *extra], 0
    every = [*names, *rest]
    return every, collisions(records, every, times)
