"""Tenant isolation (docs/patterns.md §3 rule 11, §5.6): one table, one key prefix per tenant.

No tenant ID, device ID or other key field can produce a key inside another tenant's range;
a tenant's read (the devices schema's tenant_rows query) returns its rows only; offboarding (drop
of the row range of its prefix) leaves every other tenant untouched, lookalikes included (``acme``,
``acme2``, ``acm``, and names that differ by one byte on either side of the delimiter).
tests/transforms/declarations/test_declarations_without_a_job.py holds the plain acme/acme2/acm
drop; these add adversarial names, the read path and properties over arbitrary text.
"""

from __future__ import annotations

import json
import unicodedata
import uuid
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from btts import admin, config
from btts.query import engine
from btts_cli import demo
from tests.support.jobs import dump, read_dead_letters, write_lines
from transforms import schema as sf
from transforms.builder import builder
from transforms.errors import InvalidEvent
from transforms.scans import key_ranges
from transforms.schema import builtin_tables
from transforms.text import keys
from transforms.text.events import parse_json_object

DEVICE = builtin_tables.get("DEVICE")

DEVICE_READING = builder.Builder(sf.builtin("devices"))  # the device schema, compiled

DAY_MS = 1556668800000  # 2019-05-01T00:00:00Z
# Characters that make names collide or sort next to each other: the delimiter and its byte
# neighbours (" and $), digits, case, spaces, controls, separators, zero-width and combining
# marks, non-ASCII letters and astral characters.
TRICKY = list('acme2#"$ .-ACMEé\u0301\x00\n\t\x7f\x85\u2028\u200b\ufeff\U0001f600\udc80')
# Names are mostly valid (printable, no delimiter) so that most examples build a key; a third
# are drawn from the tricky characters above, invalid ones included.
_valid = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"), blacklist_characters="#"
    ),
    min_size=1,
    max_size=8,
)
names = st.one_of(_valid, _valid, st.text(alphabet=st.sampled_from(TRICKY), max_size=8))
timestamps = st.integers(min_value=0, max_value=9_999_999_999_999)


def _tenant_query(tenant):
    return engine.builtin_query("devices", "tenant_rows", {"tenant": tenant})


def _tenant_rows(target, tenant):
    """One reading per item (tenant, device, value, key): what the assertions below speak of."""
    return [
        SimpleNamespace(**{k: v for k, v in r.items() if k != "readings"}, reading=name, value=v)
        for r in engine.run(target, _tenant_query(tenant))
        for name, v in r["readings"].items()
    ]


def _key_or_none(tenant: str, kind: str, device: str, ts: int) -> bytes | None:
    try:
        key = DEVICE.key.build({"tenant": tenant, "kind": kind, "device": device, "ts": ts})
    except InvalidEvent:
        event("refused")
        return None
    event("key built")
    return key


# -- pure properties --------------------------------------------------------------------------


@settings(max_examples=400)
@given(tenant=names, kind=names, device=names, ts=timestamps)
def test_a_key_belongs_to_exactly_one_tenant_whatever_its_fields_hold(tenant, kind, device, ts):
    key = _key_or_none(tenant, kind, device, ts)
    if key is None:
        return  # refused: no key at all
    # The key is its tenant's prefix and the rest; no field can move or repeat the delimiter.
    assert key.startswith(keys.tenant_prefix(tenant))
    tenant = _nfc(tenant)  # the tenant is its NFC form: one tenant however it was typed
    assert key.decode("utf-8").split("#") == [tenant, kind, device, key.decode()[-8:]]
    # Every prefix of the key that could be a tenant name owns the key only if it IS the tenant.
    text = key.decode("utf-8")
    for end in range(len(text) + 1):
        other = text[:end]
        try:
            prefix = keys.tenant_prefix(other)
        except InvalidEvent:
            continue  # not a valid tenant name: it cannot be read or dropped either
        assert key.startswith(prefix) == (_nfc(other) == tenant), (other, tenant)


@settings(max_examples=400)
@given(tenant=names, other=names, extra=names, kind=names, device=names, ts=timestamps)
def test_no_key_falls_in_another_tenants_read_range(tenant, other, extra, kind, device, ts):
    key = _key_or_none(tenant, kind, device, ts)
    if key is None:
        return
    ((own_start, own_end),) = _tenant_query(tenant).scans[0].ranges
    assert own_start <= key < own_end  # the tenant's own read holds it
    # Other readers: an unrelated name, and the lookalikes: every shorter prefix of the tenant
    # (acm for acme) and the tenant with more text after it (acme2 for acme).
    lookalikes = {other, tenant + extra, *(tenant[:end] for end in range(len(tenant)))}
    for reader in lookalikes - {tenant}:
        if _nfc(reader) == _nfc(tenant):
            continue  # the same tenant, typed another way
        try:
            (scan,) = _tenant_query(reader).scans
        except InvalidEvent:
            continue  # a name that cannot be a tenant reads nothing (never the whole table)
        ((start, end),) = scan.ranges
        assert start and end, "a tenant read must be a bounded range"
        assert not (start <= key < end), (reader, tenant, key)


@settings(max_examples=300)
@given(tenant=names, kind=names, device=names)
def test_a_json_record_cannot_smuggle_a_delimiter_through_escapes(tenant, kind, device):
    """Escapes (\\u0023 is '#') are decoded before the check: the text, not the spelling,
    decides. A record is refused, or its row sits in its tenant's range."""
    line = json.dumps(
        {
            "tenant": tenant,
            "kind": kind,
            "device": device,
            "timestamp": DAY_MS,
            "readings": {"memusage": 12},
        },
        ensure_ascii=True,  # every non-ASCII character spelled as an escape
    )
    try:
        rows = DEVICE_READING(parse_json_object(line))
    except InvalidEvent:
        assert not _valid_tenant(tenant) or any(
            "#" in f or not f or not f.isprintable() or len(f) > limit
            for f, limit in ((tenant, 128), (kind, 64), (device, 256))
        )
        return
    (row,) = rows
    assert row.key.startswith(keys.tenant_prefix(tenant))
    assert row.key.split(b"#")[0] == unicodedata.normalize("NFC", tenant).encode("utf-8")


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _valid_tenant(tenant: str) -> bool:
    try:
        keys.tenant_id(tenant)
    except InvalidEvent:
        return False
    return True


@given(a=names, b=names)
def test_two_tenants_prefix_ranges_never_overlap(a, b):
    try:
        pa, pb = keys.tenant_prefix(a), keys.tenant_prefix(b)
    except InvalidEvent:
        return
    assume(a != b)
    ra = (pa, keys.prefix_end(pa))
    rb = (pb, keys.prefix_end(pb))
    assert ra[1] <= rb[0] or rb[1] <= ra[0], (a, b)


@pytest.mark.parametrize(
    ("tenant", "reason"),
    [
        ("", "field 'tenant': empty"),
        ("acme#", "contains the key delimiter '#'"),
        ("acme\x00", "contains a control or unprintable character"),
        ("acme\u2028", "contains a control or unprintable character"),
        (None, "expected text"),
    ],
)
def test_a_read_or_drop_for_an_impossible_tenant_is_refused_not_widened(tenant, reason):
    """An empty or malformed tenant must never become the whole table or a wider range."""
    with pytest.raises(InvalidEvent, match=reason):
        _tenant_query(tenant)
    with pytest.raises(InvalidEvent, match=reason):
        key_ranges.prefix_scan(DEVICE, {"tenant": tenant})


# -- on the emulator ---------------------------------------------------------------------------

LOOKALIKES = [
    "acme",
    "acme2",
    "acm",
    "ACME",
    "acme!",  # '!' sorts before '#'
    'acme"',  # the byte just before '#'
    "acme$",  # the byte just after '#': the end of acme's range
    "acme ",
    "acme.",
    "acmé",  # é composed (U+00E9); e + combining acute is the same tenant (below)
    "a",
    "acme\U0001f600",
]
IMPOSSIBLE = [
    "acme#2", "acme#", "", "acme\x00", "acme\u200b", "acme\n",
    "\u0430cme",  # a Cyrillic а among Latin letters
    "\uff41\uff43\uff4d\uff45",  # fullwidth: reads as acme
    "\u0430\u0441\u0435",  # all Cyrillic, all drawn like Latin: passes for "ace"
]  # fmt: skip


def _reading(tenant: str, device: str, hour: int, value: int) -> str:
    return json.dumps(
        {
            "tenant": tenant,
            "kind": "phone",
            "device": device,
            "timestamp": DAY_MS + hour * 3_600_000,
            "readings": {"memusage": value},
        }
    )


def _ingest(target: config.Target, tmp_path, lines: list[str]):
    """The device job (pipelines/demo.DEVICE_JOB), run as a user would."""
    source = write_lines(tmp_path / "devices.jsonl", lines)
    dead = tmp_path / "dead" / "device"
    result = demo.run_job_spec(
        demo.DEVICE_JOB,
        [
            f"--input={source}",
            f"--dead_letter={dead}",
            f"--bigtable_project={target.project}",
            f"--bigtable_instance={target.instance}",
            "--create_tables",
            "--max_bad_records=100%",  # mostly bad lines on purpose
        ],
    )
    return result, read_dead_letters(dead)


def test_lookalike_tenants_read_only_their_rows_and_survive_a_drop(target, tmp_path):
    good = [
        _reading(t, device, hour, 10 + i)
        for i, t in enumerate(LOOKALIKES)
        for device in ("4c410523", "acme")  # a device named like a tenant changes nothing
        for hour in (0, 25)  # two day rows per device
    ]
    bad = [_reading(t, "4c410523", 0, 99) for t in IMPOSSIBLE] + [
        # another field trying to look like a tenant boundary
        json.dumps(
            {
                "tenant": "acm",
                "kind": "e#phone",
                "device": "d",
                "timestamp": DAY_MS,
                "readings": {"memusage": 1},
            }
        )
    ]
    result, letters = _ingest(target, tmp_path, good + bad)
    assert result.counters["events_valid"] == len(good)
    assert sorted(d["raw"] for d in letters) == sorted(bad)
    reasons = ("#", "empty", "control", "mixes scripts", "compatibility", "look Latin")
    assert all(any(r in d["reason"] for r in reasons) for d in letters), letters

    for i, tenant in enumerate(LOOKALIKES):
        readings = _tenant_rows(target, tenant)
        assert {r.tenant for r in readings} == {tenant}, tenant
        assert {r.device for r in readings} == {"4c410523", "acme"}
        assert len(readings) == 4 and {int(r.value) for r in readings} == {10 + i}

    before = dump(target, DEVICE.name)
    assert engine.offboard_tenant(target, "acme") == 4  # two devices, two days
    after = dump(target, DEVICE.name)
    assert after == [c for c in before if not c[0].startswith(b"acme#")]
    assert len(before) - len(after) == 4
    assert _tenant_rows(target, "acme") == []
    for tenant in LOOKALIKES[1:]:
        assert len(_tenant_rows(target, tenant)) == 4, tenant


def test_a_tenant_typed_in_either_unicode_form_is_one_tenant(target, tmp_path):
    """acmé precomposed (U+00E9) and with a combining accent (e + U+0301) look the same: they
    are one tenant, one prefix, one read and one drop, whichever form the caller types."""
    composed, combining = "acm\u00e9", "acme\u0301"
    lines = [_reading(composed, "d1", 0, 1), _reading(combining, "d1", 1, 2)]
    result, letters = _ingest(target, tmp_path, [*lines, _reading("acme", "d1", 0, 3)])
    assert result.counters["events_valid"] == 3 and letters == []
    for form in (composed, combining):
        readings = _tenant_rows(target, form)
        assert sorted(int(r.value) for r in readings) == [1, 2]
        assert {r.key.split("#")[0] for r in readings} == {composed}
    assert engine.offboard_tenant(target, combining) == 1  # one day row holds both readings
    assert _tenant_rows(target, composed) == []
    assert [int(r.value) for r in _tenant_rows(target, "acme")] == [3]


def _tenant_sets():
    """2–5 distinct valid tenants, often prefixes of one another or one byte apart."""
    base = st.text(alphabet=st.sampled_from(list('ab"$!2 é')), min_size=1, max_size=3)
    return st.lists(base, min_size=2, max_size=5, unique=True).map(
        lambda names: sorted({n for name in names for n in (name, name[:-1] or name)})
    )


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(tenants=_tenant_sets(), dropped_index=st.integers(min_value=0, max_value=10))
def test_reads_and_drops_isolate_arbitrary_tenant_sets(bigtable_emulator, tenants, dropped_index):
    target = config.Target("test-project", f"ten{uuid.uuid4().hex[:10]}")
    with admin.Admin(target) as api:
        api.ensure(DEVICE)
    rows = [
        row
        for t in tenants
        for row in DEVICE_READING(parse_json_object(_reading(t, "dev", 0, len(t))))
    ]
    from google.cloud.bigtable.data import BigtableDataClient, RowMutationEntry, SetCell

    with BigtableDataClient(project=target.project) as client:
        client.get_table(target.instance, DEVICE.name).bulk_mutate_rows(
            [
                RowMutationEntry(
                    r.key,
                    [SetCell(c.family, c.qualifier, c.value, c.timestamp_us) for c in r.cells],
                )
                for r in rows
            ]
        )
    for t in tenants:
        assert [r.tenant for r in _tenant_rows(target, t)] == [t]
    dropped = tenants[dropped_index % len(tenants)]
    assert engine.offboard_tenant(target, dropped) == 1
    left = sorted(r.key for r in engine.read_rows(target, DEVICE.name))
    assert left == sorted(r.key for r in rows if not r.key.startswith(dropped.encode() + b"#"))
    assert len(left) == len(tenants) - 1
