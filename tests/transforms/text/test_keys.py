"""Key builders (docs/patterns.md §3): exact outputs and the order properties the guidance relies
on."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support import REPO
from tests.support.jobs import recipe_key
from transforms.errors import InvalidEvent
from transforms.table_model import KeyRecipe, Segment
from transforms.text import keys

# the market-data key's exchange: padded to 6 by the recipe every write and read shares
EXCHANGE = KeyRecipe((Segment("space_pad", "exchange", width=6),))


def join_key(segments: list[str]) -> bytes:
    """Text segments joined as every key recipe joins them."""
    return recipe_key(*(("text", s) for s in segments)).encode("utf-8")


def test_join_key_is_utf8_joined_by_delimiter():
    assert join_key(["server1.bbb.com", "1426535612045"]) == b"server1.bbb.com#1426535612045"


@pytest.mark.parametrize(
    ("segment", "reason"),
    [
        ("a#b", "delimiter"),
        ("", "empty"),
        ("tab\there", "control"),
        ("new\nline", "control"),
        ("nul\x00", "control"),
        ("del\x7f", "control"),
    ],
)
def test_join_key_refuses_segments_that_could_forge_or_hide_a_boundary(segment, reason):
    with pytest.raises(InvalidEvent, match=reason):
        join_key(["ok", segment])


def test_key_size_limit():
    assert len(join_key(["a" * 4096])) == 4096
    with pytest.raises(InvalidEvent, match="4096"):
        join_key(["a" * 4095, "b"])


def test_documented_helpers():
    assert keys.reverse_timestamp(1426535612045) == "9223370610319163762"
    assert keys.reverse_timestamp(0) == "9223372036854775807"
    assert keys.reverse_domain("maps.google.com") == "com.google.maps"
    assert recipe_key(("reverse_id", "12345")) == "54321"
    assert keys.zero_pad(987654, 10) == "0000987654"
    assert EXCHANGE.build({"exchange": "NYSE"}) == b"NYSE  "
    tenant_key = [("tenant", "altostrat"), ("text", "phone"), ("text", "4c410523")]
    assert recipe_key(*tenant_key, ("text", "20190501")) == "altostrat#phone#4c410523#20190501"


@pytest.mark.parametrize(
    ("call", "args"),
    [
        (keys.zero_pad, (-1, 10)),
        (keys.zero_pad, (10**10, 10)),
        (keys.zero_pad, (True, 10)),
        (EXCHANGE.build, ({"exchange": "NASDAQX"},)),
        (recipe_key, (("reverse_id", "12a45"),)),
        (keys.reverse_domain, ("maps..com",)),
        (keys.reverse_timestamp, (-1,)),
        (recipe_key, (("tenant", "acme#2"), ("text", "phone"))),
    ],
)
def test_helpers_refuse_values_that_break_ordering_or_structure(call, args):
    with pytest.raises(InvalidEvent):
        call(*args)


def test_tenant_prefix_does_not_match_a_longer_tenant():
    prefix = keys.tenant_prefix("acme")
    assert b"acme#phone#1".startswith(prefix)
    assert not b"acme2#phone#1".startswith(prefix)


def test_prefix_end():
    assert keys.prefix_end(b"abc") == b"abd"
    assert keys.prefix_end(b"a\xff") == b"b"
    assert keys.prefix_end(b"\xff") == b""


@given(st.integers(0, 10**10 - 1), st.integers(0, 10**10 - 1))
def test_zero_padding_preserves_numeric_order(a, b):
    assert (keys.zero_pad(a, 10) < keys.zero_pad(b, 10)) == (a < b)


@given(st.integers(0, keys.LONG_MAX), st.integers(0, keys.LONG_MAX))
def test_reversed_timestamps_reverse_order(a, b):
    ra, rb = keys.reverse_timestamp(a), keys.reverse_timestamp(b)
    assert len(ra) == len(rb) == 19
    assert (ra < rb) == (a > b)
    assert keys.unreverse_timestamp(ra) == a


@given(st.integers(0, 9_999_999_999_999), st.integers(0, 9_999_999_999_999))
def test_epoch_ms_keys_sort_in_time_order(a, b):
    assert (keys.epoch_ms(a) < keys.epoch_ms(b)) == (a < b)


@given(st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=5))
def test_no_segment_can_forge_a_delimiter(segments):
    """A key either is refused or splits back into exactly its segments."""
    try:
        key = join_key(segments)
    except InvalidEvent:
        assert any("#" in s or not s.isprintable() for s in segments)
        return
    assert key.decode("utf-8").split("#") == segments


@given(st.text(max_size=30), st.integers(1, 64))
def test_salt_is_in_range_and_padded(material, buckets):
    label = keys.salt(material, buckets)
    assert label in keys.salt_buckets(buckets)
    assert len(label) == len(str(buckets))


def test_salt_is_stable_across_processes():
    """Python's hash() changes per process; the salt must not (keys would move)."""
    here = [keys.salt(f"2015030112450100{i}", 3) for i in range(10)]
    code = (
        "from transforms.text import keys;"
        "print(','.join(keys.salt(f'2015030112450100{i}', 3) for i in range(10)))"
    )
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
            cwd=REPO,
        ).stdout.strip()
        assert out.split(",") == here
    assert len(set(here)) > 1  # not a constant
