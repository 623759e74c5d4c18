"""Cell builders for the other documented shapes (SPEC §5.6). Pure, except the one marked I/O
function at the end (tenant offboarding), which imports its client only when called.

* STOCK_PRICE — ``ZXZZT#20150301`` → ``STOCK:PRICE``. A correction is the same cell with a
  newer timestamp (the correction's time), so the family's max-versions rule keeps the history
  and a latest-value read returns the corrected price.
* FRIENDS — qualifiers as data: row ``Jose``, ``Friends:<friend>`` = circle.
* DEVICE — tenant-prefixed rows ``altostrat#phone#4c410523#20190501``, ``STATS:<reading>``; a
  tenant is offboarded by dropping the row range of its prefix (:func:`drop_tenant`).
* WEB_PAGES — reversed-domain keys ``com.google.maps#20150301``, ``CRAWL:STATUS``/``BYTES``.
* USER_ACTIVITY — reversed numeric user IDs ``54321#1425213901001``, ``ACT:ACTION``.

Cell timestamps are event times (micros), values the source's text.
"""

from __future__ import annotations

from transforms import events, keys, timefmt
from transforms.declarations.other_shapes import (
    DEVICE,
    FRIENDS,
    STOCK_PRICE,
    USER_ACTIVITY,
    WEB_PAGES,
)
from transforms.errors import InvalidEvent
from transforms.mutations import Cell, RowMutation
from transforms.schema import TableDecl

MAX_QUALIFIER_BYTES = 16 * 1024
MAX_TEXT = 1024


def qualifier(name: object, what: str) -> bytes:
    """A data value used as a column qualifier: non-empty, printable, under 16 KiB."""
    if type(name) not in (str, events.CsvText) or not name:
        raise InvalidEvent(f"{what}: expected a non-empty string")
    if not name.isprintable():
        raise InvalidEvent(f"{what} {name[:40]!r}: contains a control or unprintable character")
    data = name.encode("utf-8")
    if len(data) > MAX_QUALIFIER_BYTES:
        raise InvalidEvent(f"{what} {name[:40]!r}…: over Bigtable's 16 KiB qualifier limit")
    return data


# -- STOCK_PRICE ----------------------------------------------------------------------------


def stock_price(record: dict) -> list[RowMutation]:
    """``{"symbol", "timestamp" (the close), "price"[, "corrected_at"]}`` → one PRICE cell in
    the close's day row. Without ``corrected_at`` the cell is stamped with the close time; with
    it, with the correction's time, which must be later, so the correction is the newer version.
    """
    events.check_fields(record, ("symbol", "timestamp", "price"), ("corrected_at",))
    symbol = events.text_field(record, "symbol", 64)
    close_ms = timefmt.parse_event_time(record["timestamp"])
    price = events.number_field(record, "price")
    stamp_ms = close_ms
    if "corrected_at" in record:
        stamp_ms = timefmt.parse_event_time(record["corrected_at"], "corrected_at")
        if stamp_ms <= close_ms:
            raise InvalidEvent(
                "field 'corrected_at': a correction must be later than the price it corrects "
                f"({record['corrected_at']} is not after {record['timestamp']})"
            )
    key = STOCK_PRICE.key.build({"symbol": symbol, "ts": close_ms})
    cell = Cell("STOCK", b"PRICE", price.encode("ascii"), timefmt.micros(stamp_ms))
    return [RowMutation(STOCK_PRICE.name, key, (cell,))]


# -- FRIENDS --------------------------------------------------------------------------------


def friendship(record: dict) -> list[RowMutation]:
    """``{"person", "friend", "circle", "timestamp"}`` → ``Friends:<friend>`` = circle."""
    events.check_fields(record, ("person", "friend", "circle", "timestamp"))
    person = events.text_field(record, "person", 256)
    friend = qualifier(events.text_field(record, "friend", 256), "field 'friend'")
    circle = events.text_field(record, "circle", MAX_TEXT)
    ts_us = timefmt.micros(timefmt.parse_event_time(record["timestamp"]))
    key = FRIENDS.key.build({"person": person})
    return [RowMutation(FRIENDS.name, key, (Cell("Friends", friend, circle.encode(), ts_us),))]


# -- DEVICE (multi-tenant) ------------------------------------------------------------------


def device_key(tenant: str, kind: str, device: str, ts_ms: int) -> bytes:
    """``TENANT#KIND#DEVICE#YYYYMMDD`` from the declaration (the same text as
    :func:`keys.tenant_key`; the tenant is checked so it cannot forge another tenant's prefix)."""
    values = {"tenant": tenant, "kind": kind, "device": device, "ts": ts_ms}
    return DEVICE.key.build(values)


def device_reading(record: dict) -> list[RowMutation]:
    """``{"tenant", "kind", "device", "timestamp", "readings": {name: number}}`` → one cell per
    reading (qualifier = upper-cased name) in the device's day row, at the event time."""
    events.check_fields(record, ("tenant", "kind", "device", "timestamp", "readings"))
    tenant = events.text_field(record, "tenant", 128)
    kind = events.text_field(record, "kind", 64)
    device = events.text_field(record, "device", 256)
    ts_ms = timefmt.parse_event_time(record["timestamp"])
    readings = record["readings"]
    if type(readings) is not dict or not readings:
        raise InvalidEvent("field 'readings': expected a non-empty object of numbers")
    ts_us = timefmt.micros(ts_ms)
    cells = []
    seen = set()
    for name, value in readings.items():
        qualifier(name, "reading name")
        if any(ch.isspace() for ch in name):
            raise InvalidEvent(f"reading name {name[:40]!r}: contains whitespace")
        column = name.upper().encode("utf-8")
        if column in seen:
            raise InvalidEvent(f"reading name {name!r}: collides with another once upper-cased")
        seen.add(column)
        value = events.as_number(value)
        if type(value) is not events.Num:
            raise InvalidEvent(f"reading {name!r}: expected a number, got {events.describe(value)}")
        cells.append(Cell("STATS", column, value.encode("ascii"), ts_us))
    key = device_key(tenant, kind, device, ts_ms)
    return [RowMutation(DEVICE.name, key, tuple(cells))]


# -- WEB_PAGES (reversed domains) -----------------------------------------------------------


def web_page(record: dict) -> list[RowMutation]:
    """``{"domain", "timestamp", "status", "bytes"}`` → ``com.google.maps#YYYYMMDD``."""
    events.check_fields(record, ("domain", "timestamp", "status", "bytes"))
    domain = events.text_field(record, "domain", 253).lower()
    ts_ms = timefmt.parse_event_time(record["timestamp"])
    status = events.int_field(record, "status", 100, 599)
    size = events.int_field(record, "bytes")
    ts_us = timefmt.micros(ts_ms)
    cells = (
        Cell("CRAWL", b"STATUS", str(status).encode(), ts_us),
        Cell("CRAWL", b"BYTES", str(size).encode(), ts_us),
    )
    key = WEB_PAGES.key.build({"domain": domain, "ts": ts_ms})
    return [RowMutation(WEB_PAGES.name, key, cells)]


def site_ranges(domain: str) -> list[tuple[bytes, bytes]]:
    """``[start, end)`` ranges holding a site (``com.google#…``) and its subdomains
    (``com.google.maps#…``), and not ``com.googleusercontent``: the reversed domain makes them
    two contiguous ranges."""
    base = keys.reverse_domain(domain.lower()).encode("utf-8")
    return keys.key_ranges_for_prefixes([base + b"#", base + b"."])


# -- USER_ACTIVITY (reversed numeric IDs) ---------------------------------------------------


def user_activity(record: dict) -> list[RowMutation]:
    """``{"user_id" (digits), "timestamp", "action"}`` → ``<reversed id>#<epoch ms>``."""
    events.check_fields(record, ("user_id", "timestamp", "action"))
    user_id = events.as_number(record["user_id"])
    if not isinstance(user_id, str) or not user_id.isascii() or not user_id.isdigit():
        raise InvalidEvent(f"field 'user_id': expected a numeric id, got {user_id!r}")
    ts_ms = timefmt.parse_event_time(record["timestamp"])
    action = events.text_field(record, "action", MAX_TEXT)
    key = USER_ACTIVITY.key.build({"user_id": str(user_id), "ts": ts_ms})
    cell = Cell("ACT", b"ACTION", action.encode(), timefmt.micros(ts_ms))
    return [RowMutation(USER_ACTIVITY.name, key, (cell,))]


# -- I/O: tenant offboarding ----------------------------------------------------------------


def tenant_tables() -> list[TableDecl]:
    """Declared tables whose key starts with a tenant segment (where drop_tenant applies)."""
    from transforms import tables

    return [d for d in tables.all_tables().values() if d.key.segments[0].kind == "tenant"]


def drop_tenant(target, table: TableDecl | str, tenant: str) -> bytes:
    """Offboard ``tenant``: drop the row range of its prefix (``tenant#``) in one admin call,
    so ``acme`` never takes ``acme2``'s rows. ``target`` is a :class:`btts.admin.Target`.
    Returns the prefix dropped. Refuses a table whose key does not start with the tenant."""
    from btts import admin
    from transforms import tables

    decl = tables.get(table) if isinstance(table, str) else table
    if decl.key.segments[0].kind != "tenant":
        raise ValueError(f"{decl.name}: its key does not start with a tenant; nothing to drop")
    prefix = keys.tenant_prefix(tenant, decl.key.delimiter)
    with admin.Admin(target) as client:
        client.api.drop_row_range(
            request={"name": target.table_path(decl.name), "row_key_prefix": prefix}
        )
    return prefix
