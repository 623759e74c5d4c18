"""What each column of a sample holds: the field type a schema declares for it.

Pure: values are the readers' decoded values (:class:`~transforms.text.events.CsvText`,
:class:`~transforms.text.events.Num`, str, bool, dict…). A column's type is the narrowest one every
value of the sample passes as the job checks it: ``boolean``, ``integer``, ``number`` (decimal
text kept as written), ``text``, ``map`` (an object of numbers); anything else is ``other``,
which no declared type lands.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from transforms.text import events
from transforms.text.events import CsvText, Num

__all__ = ["Column", "free_name", "infer_columns", "plain_name"]

MAX_DISTINCT = 5_000  # distinct values remembered per column (cardinality above it: "many")
_INTEGER = re.compile(r"-?[0-9]+\Z")
_INTEGRAL_FLOAT = re.compile(r"-?[0-9]+\.0+\Z")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass
class Column:
    """One input column over the sample."""

    name: str
    kinds: set[str] = field(default_factory=set)  # the kinds of its values
    csv: bool = False  # CSV cells: text takes every one of them
    present: int = 0
    empties: int = 0  # empty JSON strings (the job refuses empty text)
    records: int = 0
    max_length: int = 0
    distinct: set = field(default_factory=set)
    many: bool = False  # more distinct values than MAX_DISTINCT
    integral_floats: bool = False  # some whole numbers are written 1956.0
    fractions: bool = False  # some numbers have a fraction (1960.25)
    low: Decimal | None = None
    high: Decimal | None = None
    values: list = field(default_factory=list)  # every present value, in sample order

    @property
    def type(self) -> str:
        kinds = self.kinds
        if not kinds:
            return "other"
        if kinds <= {"boolean"}:
            return "boolean"
        if kinds <= {"integer"}:
            return "integer"
        if kinds <= {"integer", "number"}:
            return "number"
        if kinds <= {"map"}:
            return "map"
        if kinds <= {"text"} or (self.csv and "unknown" not in kinds):
            return "text"
        return "other"

    @property
    def optional(self) -> bool:
        return self.present < self.records

    @property
    def cardinality(self) -> int:
        return len(self.distinct)

    @property
    def whole_numbers(self) -> bool:
        """Every value is a whole number (written ``12`` or ``12.0``)."""
        return (bool(self.kinds) and self.kinds <= {"integer"}) or (
            self.integral_floats and self.kinds <= {"integer", "number"} and not self.fractions
        )


def free_name(name: str, taken: set[str] | frozenset[str]) -> str:
    """``name``, or the first of ``name_2``, ``name_3``… that ``taken`` lacks: how a draft names
    a field beside others (repeated headers, renamed fields, the record number) so that no two
    collide."""
    new, n = name, 2
    while new in taken:
        new, n = f"{name}_{n}", n + 1
    return new


def plain_name(name: str) -> str:
    """A name keys and columns can use (letters, digits, ``_``) for a column's name."""
    if _NAME.match(name):
        return name
    text = re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_") or "field"
    return text if _NAME.match(text) else f"f_{text}"


def _kind(value: object, column: Column) -> str:
    if value is True or value is False:
        return "boolean"
    if type(value) is CsvText:
        column.csv = True
        if value in ("true", "false"):
            return "boolean"
        value = events.as_number(value)
    if type(value) is Num:
        return _number_kind(value, column)
    if isinstance(value, str):
        return "text"
    if isinstance(value, dict) and value and all(type(v) is Num for v in value.values()):
        return "map"
    return "unknown"


def _number_kind(value: Num, column: Column) -> str:
    number = Decimal(value)
    column.low = number if column.low is None else min(column.low, number)
    column.high = number if column.high is None else max(column.high, number)
    if _INTEGER.match(value):
        return "integer" if -(2**63) <= number < 2**63 else "number"  # int64, as the job
    if _INTEGRAL_FLOAT.match(value):
        column.integral_floats = True
    else:
        column.fractions = True  # (an exponent too: 1e3 is no whole number's text)
    return "number"


def infer_columns(records: Sequence[dict], order: Sequence[str] = ()) -> dict[str, Column]:
    """Each column of ``records`` (in ``order``, then as first seen) with what its values are."""
    columns: dict[str, Column] = {name: Column(name) for name in order}
    for record in records:
        for name, value in record.items():
            column = columns.get(name)
            if column is None:
                column = columns[name] = Column(name)
            if value is None:
                continue  # a JSON null: absent (the field is then optional)
            column.present += 1
            column.kinds.add(_kind(value, column))
            column.values.append(value)
            if isinstance(value, str):
                column.max_length = max(column.max_length, len(value))
                column.empties += not value
            if not column.many and not isinstance(value, dict):
                column.distinct.add(str(value))
                if len(column.distinct) > MAX_DISTINCT:
                    column.many = True
    for column in columns.values():
        column.records = len(records)
    return columns
