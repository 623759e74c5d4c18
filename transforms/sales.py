"""Sales (SPEC §3 rule 13, §5.6): one sale → AddToCell into its employee's month.

``{"employee": "Corrie", "timestamp": "2015-03-16T19:53:32.045Z", "amount_cents": 1999}`` →
row ``Corrie#201503`` of ``SALES_MONTHLY``: ``sum:AMOUNT += 1999`` and ``sum:COUNT += 1``, both
at the cell timestamp of the month's start (``2015-03-01T00:00Z``), so every sale of the month
adds into the same two cells. Amounts are integer cents (refunds are negative): aggregate
families sum int64, and money in floats would drift. Pure: no I/O.
"""

from __future__ import annotations

import datetime as dt
from typing import NamedTuple

from transforms import events, timefmt
from transforms.declarations.sales import SALES_MONTHLY
from transforms.mutations import AddCell, RowMutation

FIELDS = ("employee", "timestamp", "amount_cents")
FAMILY = "sum"
AMOUNT = b"AMOUNT"
COUNT = b"COUNT"
MAX_EMPLOYEE = 256
# Per sale. 10^13 cents is 100 billion of a currency unit; int64 then holds ~900,000 such sales.
MAX_AMOUNT_CENTS = 10**13
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_KEY = SALES_MONTHLY.key.build


class Sale(NamedTuple):
    employee: str
    ts_ms: int
    amount_cents: int


def parse(record: dict) -> Sale:
    events.check_fields(record, FIELDS)
    employee = events.text_field(record, "employee", MAX_EMPLOYEE)
    ts_ms = timefmt.parse_event_time(record["timestamp"])
    amount = events.int_field(record, "amount_cents", -MAX_AMOUNT_CENTS, MAX_AMOUNT_CENTS)
    return Sale(employee, ts_ms, amount)


def month_start_ms(ms: int, tz: dt.tzinfo = dt.timezone.utc) -> int:
    """Epoch ms of the first instant of ``ms``'s calendar month in ``tz``: the timestamp every
    sale of that month adds into."""
    local = timefmt.to_datetime(ms, tz)
    first = dt.datetime(local.year, local.month, 1, tzinfo=tz)
    return (first - _EPOCH) // dt.timedelta(milliseconds=1)


def rows(sale: Sale, tz: dt.tzinfo = dt.timezone.utc) -> list[RowMutation]:
    key = _KEY({"employee": sale.employee, "ts": sale.ts_ms}, tz)
    ts_us = timefmt.micros(month_start_ms(sale.ts_ms, tz))
    cells = (AddCell(FAMILY, AMOUNT, sale.amount_cents, ts_us), AddCell(FAMILY, COUNT, 1, ts_us))
    return [RowMutation(SALES_MONTHLY.name, key, cells)]


def build(record: dict) -> list[RowMutation]:
    """The pipeline's builder (months in UTC)."""
    return rows(parse(record))


class Builder:
    """The builder for months in a configured time zone (picklable: ZoneInfo pickles by name)."""

    def __init__(self, tz: dt.tzinfo = dt.timezone.utc) -> None:
        self.tz = tz

    def __call__(self, record: dict) -> list[RowMutation]:
        return rows(parse(record), self.tz)


TABLES = (SALES_MONTHLY.name,)
