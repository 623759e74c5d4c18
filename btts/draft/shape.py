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
from itertools import combinations, pairwise

from btts.advisor.naming import guess_kind
from btts.draft import parts
from btts.draft.fields import Column

__all__ = ["Entities", "Wide", "entities", "record_id", "wide"]

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
        if c.type in ("integer", "number") and c.name not in time_fields and not row_number(c)
        and not parts.role_of(c.name)
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
    if fmt != "csv" and len(numeric) <= MAP_MAX_COLUMNS:
        return None  # JSON and Parquet name each value: a column per field, as they come
    why = (
        f"{len(numeric)} numeric series side by side: each becomes an event of its own, its "
        "series named by a key field (tall and narrow: one series over a range is one range)"
    )
    return Wide(numeric, "unpivot", False, why, others)


def _tokens(name: str) -> set[str]:
    return set(re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()))


def _unique(column: Column) -> bool:
    """Every record has its own value (a row number, a record id): a label, not an entity."""
    return column.cardinality >= column.records >= 3 and not column.many


def candidates(columns: Mapping[str, Column], exclude: Sequence[str]) -> list[Column]:
    """Fields that could name an entity: required, short text or whole numbers, fewer values
    than records; text first, then by cardinality."""
    out = []
    for column in columns.values():
        if column.name in exclude or column.type not in ("text", "integer") or column.optional:
            continue
        if column.many or column.max_length > MAX_KEY_TEXT or guess_kind(column.name) == "pii":
            continue  # (personal data never leads a key unless --query says so)
        if any("#" in str(v) or not str(v).isprintable() for v in column.values):
            continue  # the key delimiter or a control character: not key text
        if _unique(column) or column.cardinality < 2:
            continue
        out.append(column)
    return sorted(out, key=lambda c: (c.type != "text", c.cardinality, c.name))


_ROW_NAMES = {"", "rownames", "rowname", "row", "rownum", "rownumber", "rowid", "index", "idx"}
_ROW_NAMES |= {"id", "obs", "unnamed0", "x"}


def row_number(column: Column) -> bool:
    """A row's number: a required whole number named like one (R's ``rownames``, pandas'
    ``index``, an ``id``), a value of its own in every record, growing with the records."""
    if re.sub(r"[^a-z0-9]", "", column.name.lower()) not in _ROW_NAMES:
        return False
    if column.type != "integer" or column.optional or len(column.values) < 3:
        return False
    numbers = [int(v) for v in column.values]
    rising = sum(a < b for a, b in pairwise(numbers))  # (records a check added come last)
    return len(set(numbers)) == len(numbers) and rising >= 0.9 * (len(numbers) - 1)


def record_id(columns: Mapping[str, Column], exclude: Sequence[str]) -> Column | None:
    """A required field with a value of its own in every record (a row number first, else an
    id): what tells records of one time apart when no entity does, after the time in the
    key. Never a field named like personal data (a person's name: the advisor refuses it in a
    key, as it does an entity's)."""
    pool = [
        c for c in columns.values()
        if c.name not in exclude and not c.optional and guess_kind(c.name) != "pii"
    ]  # fmt: skip
    for column in sorted(pool, key=lambda c: not row_number(c)):
        if column.type not in ("text", "integer", "number") or column.max_length > MAX_KEY_TEXT:
            continue
        if any("#" in str(v) or not str(v).isprintable() for v in column.values):
            continue
        if len({str(v) for v in column.values}) == len(column.values) == column.records:
            return column
    return None


def collisions(records: Sequence[dict], names: Sequence[str], times: Sequence[int]) -> int:
    """How many records share their (entities, time) with an earlier record and differ from it
    (an exact duplicate writes the same cells: nothing is lost)."""
    seen: dict[tuple, dict] = {}
    clashes = 0
    for record, ms in zip(records, times, strict=True):
        key = (*(str(record.get(n)) for n in names), ms)
        first = seen.setdefault(key, record)
        clashes += first is not record and first != record
    return clashes


@dataclass
class Entities:
    """The key's fields besides the time: entity fields before it, a record id after it, and
    the sampled records that still share a key."""

    names: list[str]
    clashes: int = 0
    record_id: str | None = None
    # records that share their key fields and time with an earlier one and differ from it,
    # told apart by each record's number in its file after the time (``from: record_number``)
    numbered: int = 0


def entities(
    columns: Mapping[str, Column],
    records: Sequence[dict],
    times: Sequence[int],
    chosen: Sequence[str],
    exclude: Sequence[str],
    one_file: bool = False,
) -> Entities:
    """The entity fields (``chosen`` first, e.g. the fields queries select), the fewest that
    tell the sampled records apart with the time; else a record id after the time; else, for
    the records of ``one_file``, each record's number in it after the time; and how many
    records still collide (a record number tells apart the records of one file only)."""
    pool = [c for c in candidates(columns, [*exclude, *chosen])]
    names = list(chosen)
    names += [c.name for c in pool if _tokens(c.name) & ENTITY_WORDS and c.type == "text"]
    if not collisions(records, names, times):
        return Entities(names)
    rest = [c.name for c in pool if c.name not in names]
    for size in (1, 2):
        for extra in combinations(rest, size):
            if not collisions(records, [*names, *extra], times):
                return Entities([*names, *extra])
    ident = record_id(columns, [*exclude, *names])
    if ident is not None:
        return Entities(names, 0, ident.name)
    if one_file:
        return Entities(names, numbered=collisions(records, names, times))
    every = [*names, *rest]
    return Entities(every, collisions(records, every, times))
