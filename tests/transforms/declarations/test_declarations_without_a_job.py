"""The other documented shapes (docs/patterns.md §5.6): versioned corrections, qualifiers as data,
tenant prefixes with drop-by-prefix offboarding, reversed domains and reversed numeric IDs."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from google.cloud.bigtable.data import BigtableDataClient, RowMutationEntry, SetCell

from btts import admin, config
from btts.query import engine
from transforms import schema as sf
from transforms.builder import builder
from transforms.errors import InvalidEvent
from transforms.mutations import Cell, RowMutation
from transforms.schema import builtin_tables
from transforms.text import keys
from transforms.text.events import parse_json_object

DEVICE = builtin_tables.get("DEVICE")
FRIENDS = builtin_tables.get("FRIENDS")
STOCK_PRICE = builtin_tables.get("STOCK_PRICE")
USER_ACTIVITY = builtin_tables.get("USER_ACTIVITY")
WEB_PAGES = builtin_tables.get("WEB_PAGES")

CLOSE = '{"symbol": "ZXZZT", "timestamp": "2015-03-01T21:00:00Z", "price": 600.60}'
CORRECTION = (
    '{"symbol": "ZXZZT", "timestamp": "2015-03-01T21:00:00Z", "price": 600.66, '
    '"corrected_at": "2015-03-02T09:15:00Z"}'
)
CLOSE_US = 1425243600000 * 1000
CORRECTION_US = 1425287700000 * 1000


# Each shape is its own schema file (transforms/declarations/<name>.yaml), compiled once.
STOCK, FRIEND, DEVICE_READING, WEB_PAGE, USER_EVENT = (
    builder.Builder(sf.builtin(name))
    for name in ("stock_prices", "friends", "devices", "web_pages", "user_activity")
)


def _build(build, line: str) -> list[RowMutation]:
    return build(parse_json_object(line))


def _write(target: config.Target, rows: Sequence[RowMutation]) -> None:
    """Create the rows' tables from their declarations and write the rows' cells as given."""
    with admin.Admin(target) as client:
        for name in sorted({r.table for r in rows}):
            client.ensure(builtin_tables.get(name))
    with BigtableDataClient(project=target.project) as data:
        for name in sorted({r.table for r in rows}):
            entries = [
                RowMutationEntry(
                    r.key,
                    [SetCell(c.family, c.qualifier, c.value, c.timestamp_us) for c in r.cells],
                )
                for r in rows
                if r.table == name
            ]
            data.get_table(target.instance, name).bulk_mutate_rows(entries)


# -- pure ------------------------------------------------------------------------------------


def test_stock_close_and_its_correction_are_the_same_cell_at_two_times():
    assert _build(STOCK, CLOSE) == [
        RowMutation(
            "STOCK_PRICE", b"ZXZZT#20150301", (Cell("STOCK", b"PRICE", b"600.60", CLOSE_US),)
        )
    ]
    assert _build(STOCK, CORRECTION) == [
        RowMutation(
            "STOCK_PRICE",
            b"ZXZZT#20150301",
            (Cell("STOCK", b"PRICE", b"600.66", CORRECTION_US),),
        )
    ]


def test_a_correction_older_than_the_close_is_refused():
    line = CORRECTION.replace("2015-03-02T09:15:00Z", "2015-03-01T20:00:00Z")
    with pytest.raises(InvalidEvent) as err:
        _build(STOCK, line)
    assert str(err.value) == (
        "field 'corrected_at': 2015-03-01T20:00:00Z is not after field 'timestamp' "
        "(2015-03-01T21:00:00Z)"
    )


def test_friend_names_are_qualifiers_and_circles_are_values():
    line = '{"person": "Jose", "friend": "Sofía", "circle": "work", "timestamp": 1425243600000}'
    assert _build(FRIEND, line) == [
        RowMutation(
            "FRIENDS", b"Jose", (Cell("Friends", "Sofía".encode(), b"work", 1425243600000000),)
        )
    ]
    with pytest.raises(InvalidEvent) as err:
        _build(
            FRIEND,
            '{"person": "Jose", "friend": "a\\u0000b", "circle": "x", "timestamp": 1425243600001}',
        )
    assert str(err.value) == (
        "field 'friend': 'a\\x00b' contains a control or unprintable character, and names a column"
    )


def test_device_keys_are_tenant_keys():
    line = (
        '{"tenant": "altostrat", "kind": "phone", "device": "4c410523", '
        '"timestamp": "2019-05-01T10:00:00Z", "readings": {"memusage": 61.5, "battery": 98}}'
    )
    (row,) = _build(DEVICE_READING, line)
    assert row.key == b"altostrat#phone#4c410523#20190501"
    values = {"tenant": "altostrat", "kind": "phone", "device": "4c410523", "ts": 1556704800000}
    assert row.key == DEVICE.key.build(values)
    assert row.key.startswith(keys.tenant_prefix("altostrat"))
    ts = 1556704800000000
    assert row.cells == (
        Cell("STATS", b"MEMUSAGE", b"61.5", ts),
        Cell("STATS", b"BATTERY", b"98", ts),
    )


@pytest.mark.parametrize(
    ("tenant", "reason"),
    [("acme#2", "contains the key delimiter '#'"), ("", "field 'tenant': empty")],
)
def test_a_tenant_cannot_forge_another_tenants_prefix(tenant, reason):
    line = (
        f'{{"tenant": "{tenant}", "kind": "phone", "device": "d", "timestamp": 1425243600001, '
        '"readings": {"x": 1}}'
    )
    with pytest.raises(InvalidEvent, match=reason):
        _build(DEVICE_READING, line)


def test_web_pages_are_keyed_by_reversed_domain():
    line = '{"domain": "Maps.Google.com", "timestamp": "2015-03-01T08:00:00Z", "status": 200, '
    line += '"bytes": 5120}'
    (row,) = _build(WEB_PAGE, line)
    assert row.key == b"com.google.maps#20150301"
    assert row.key == WEB_PAGES.key.build({"domain": "maps.google.com", "ts": 1425196800000})
    assert row.cells == (
        Cell("CRAWL", b"STATUS", b"200", 1425196800000000),
        Cell("CRAWL", b"BYTES", b"5120", 1425196800000000),
    )
    assert [s.kind for s in WEB_PAGES.key.segments] == ["reverse_domain", "time"]


def test_site_ranges_hold_a_site_and_its_subdomains_only():
    ranges = keys.site_ranges("google.com")

    def inside(key: bytes) -> bool:
        return any(start <= key < end for start, end in ranges)

    assert inside(b"com.google#20150301")
    assert inside(b"com.google.maps#20150301")
    assert inside(b"com.google.mail.inbox#20150301")
    assert not inside(b"com.googleusercontent#20150301")
    assert not inside(b"com.googl#20150301")
    assert not inside(b"org.google#20150301")


def test_user_activity_is_keyed_by_reversed_numeric_id():
    line = '{"user_id": 12345, "timestamp": 1425213901001, "action": "login"}'
    (row,) = _build(USER_EVENT, line)
    assert row.key == b"54321#1425213901001"
    assert row.cells == (Cell("ACT", b"ACTION", b"login", 1425213901001000),)
    assert [s.kind for s in USER_ACTIVITY.key.segments] == ["reverse_id", "epoch_ms"]
    # sequential ids land far apart: their first byte differs
    firsts = {
        _build(USER_EVENT, line.replace("12345", str(i)))[0].key[:1] for i in range(12340, 12350)
    }
    assert len(firsts) == 10
    with pytest.raises(InvalidEvent, match="field 'user_id': expected a numeric id"):
        _build(USER_EVENT, line.replace("12345", '"12a45"'))


def test_declarations_have_the_documented_families():
    assert STOCK_PRICE.family("STOCK").max_versions == 5
    assert FRIENDS.pattern == "QUALIFIER-DATA"
    assert DEVICE.key.segments[0].kind == "tenant"
    # the tables whose key starts with a tenant: where drop_tenant applies
    decls = builtin_tables.all_tables().values()
    tenants = [d for d in decls if d.key.segments[0].kind == "tenant"]
    assert tenants == [DEVICE]


# -- on the emulator ---------------------------------------------------------------------------


def test_a_correction_is_a_newer_version_and_history_is_kept(target):
    # the correction arrives first: order of arrival must not matter
    _write(target, _build(STOCK, CORRECTION))
    _write(target, _build(STOCK, CLOSE))

    (row,) = engine.read_rows(target, "STOCK_PRICE")
    assert row.key == b"ZXZZT#20150301"
    assert [(c.value, c.timestamp_us) for c in row.cells] == [
        (b"600.66", CORRECTION_US),
        (b"600.60", CLOSE_US),
    ]
    (latest,) = engine.read_rows(target, "STOCK_PRICE", latest_only=True)
    assert latest.latest() == {("STOCK", b"PRICE"): b"600.66"}
    with admin.Admin(target) as client:
        assert client.get_families("STOCK_PRICE")["STOCK"].gc_rule.max_num_versions == 5


def test_one_row_holds_a_persons_friends(target):
    lines = [
        '{"person": "Jose", "friend": "Sofia", "circle": "work", "timestamp": 1425243600001}',
        '{"person": "Jose", "friend": "Lucas", "circle": "family", "timestamp": 1425243600002}',
        '{"person": "Jose", "friend": "Ana", "circle": "school", "timestamp": 1425243600003}',
        '{"person": "Sofia", "friend": "Jose", "circle": "work", "timestamp": 1425243600001}',
    ]
    _write(target, [r for line in lines for r in _build(FRIEND, line)])
    rows = engine.read_rows(target, "FRIENDS", start=b"Jose", end=b"Jose\x00")
    assert [r.key for r in rows] == [b"Jose"]
    assert rows[0].latest() == {
        ("Friends", b"Ana"): b"school",
        ("Friends", b"Lucas"): b"family",
        ("Friends", b"Sofia"): b"work",
    }


def test_dropping_a_tenant_leaves_lookalike_tenants_untouched(target):
    rows = []
    for tenant in ("acme", "acme2", "acm"):
        for device in ("4c410523", "9f00aa01"):
            line = (
                f'{{"tenant": "{tenant}", "kind": "phone", "device": "{device}", '
                '"timestamp": "2019-05-01T10:00:00Z", "readings": {"memusage": 12}}'
            )
            rows += _build(DEVICE_READING, line)
    _write(target, rows)
    assert len(engine.read_rows(target, "DEVICE")) == 6

    assert admin.drop_tenant(target, "DEVICE", "acme") == b"acme#"

    assert [r.key for r in engine.read_rows(target, "DEVICE")] == [
        b"acm#phone#4c410523#20190501",
        b"acm#phone#9f00aa01#20190501",
        b"acme2#phone#4c410523#20190501",
        b"acme2#phone#9f00aa01#20190501",
    ]


def test_drop_tenant_refuses_a_table_not_keyed_by_tenant(target):
    with pytest.raises(ValueError, match="FRIENDS: its key does not start with a tenant"):
        admin.drop_tenant(target, FRIENDS, "Jose")
    with pytest.raises(InvalidEvent, match="contains the key delimiter"):
        admin.drop_tenant(target, DEVICE, "ac#me")


def test_a_site_scan_reads_the_site_and_subdomains(target):
    domains = ["google.com", "maps.google.com", "googleusercontent.com", "example.org"]
    lines = [
        f'{{"domain": "{d}", "timestamp": 1425196800000, "status": 200, "bytes": 1}}'
        for d in domains
    ]
    _write(target, [r for line in lines for r in _build(WEB_PAGE, line)])
    found = [
        row.key
        for start, end in keys.site_ranges("google.com")
        for row in engine.read_rows(target, "WEB_PAGES", start, end)
    ]
    assert found == [b"com.google#20150301", b"com.google.maps#20150301"]
