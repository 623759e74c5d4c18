"""Tag-filter patterns on RE2: shapes that made a backtracking engine take exponential time are
answered (and mean what Python's ``re`` says they mean), refusals keep a reason, and the
matchers a client can create are bounded."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from btts.tsdb import patterns, request, routes
from btts.tsdb.cache import TtlLru
from btts.tsdb.errors import BadRequest

# patterns the old guard refused for their shape, and the one that slipped past it (27
# characters, 5.2 s of CPU on a backtracking engine)
CATASTROPHIC = ["(a+)+$", "^(.*)*x", "(a|aa)+b", "(x{1,9}){1,9}y", "^" + ".*" * 9 + "X|server"]


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_catastrophic_shapes_are_accepted_and_match_as_re_does(pattern):
    f = request.tag_filter("hostname", "regexp", pattern, False)
    for text in ["a" * 8 + "!", "aaab", "x" * 8, "server01", "web01.X", ""]:  # short: re's turn
        assert f.match(text) == (re.search(pattern, text) is not None), text
    assert not f.match("a" * 5000 + "!")  # where backtracking would never finish


@pytest.mark.parametrize(
    ("pattern", "word"),
    [
        (r"(a)\1", "Back-references"),
        ("(?P<x>a)(?P=x)", "Back-references"),
        ("(?=a)b", "lookarounds"),
        ("a" * 500, "longer"),
        ("[unclosed", "Invalid regexp"),
    ],
)
def test_refused_patterns_say_why(pattern, word):
    with pytest.raises(BadRequest) as err:
        request.tag_filter("hostname", "regexp", pattern, False)
    assert routes.status(err.value) == 400 and word in str(err.value)
    assert "b'" not in str(err.value)  # RE2's bytes message is decoded


PIECES = st.sampled_from(["a", "b", ".", "a*", "b+", "(a|b)", "[ab]", "x?", "(ab)*", "^", "$"])
TEXT = st.text(alphabet="abx", max_size=12)


@given(st.lists(PIECES, min_size=1, max_size=8).map("".join), TEXT)
def test_a_regexp_filter_means_what_re_says(pattern, text):
    f = request.tag_filter("t", "regexp", pattern, False)
    assert f.match(text) == (re.search(pattern, text) is not None)


@given(st.lists(st.sampled_from(["a", "B", "*", ".", "x"]), max_size=8).map("".join), TEXT)
def test_a_wildcard_is_a_whole_match_and_iwildcard_ignores_case(pattern, text):
    regex = ".*".join(re.escape(p) for p in pattern.split("*"))
    exact = re.fullmatch(regex, text, re.DOTALL)  # OpenTSDB's wildcard is case-sensitive
    blind = re.fullmatch(regex, text, re.IGNORECASE | re.DOTALL)
    if "*" not in pattern:  # TagVWildcardFilter: "Filter must contain an asterisk"
        for kind in ("wildcard", "iwildcard"):
            with pytest.raises(BadRequest):
                request.tag_filter("t", kind, pattern, False)
        return
    assert request.tag_filter("t", "wildcard", pattern, False).match(text) == bool(exact)
    assert request.tag_filter("t", "iwildcard", pattern, False).match(text) == bool(blind)


def test_literal_filters_are_sets():
    assert request.tag_filter("t", "literal_or", "a|b", False).match("b")
    assert not request.tag_filter("t", "literal_or", "a|b", False).match("a|b")
    assert request.tag_filter("t", "iliteral_or", "Web01", False).match("WEB01")
    assert not request.tag_filter("t", "not_literal_or", "a|b", False).match("a")


def test_client_patterns_cannot_grow_the_caches_without_bound():
    for i in range(3000):
        request.tag_filter("t", "regexp", f"^host{i}$", False).match("host1")
    assert patterns.matcher.cache_info().currsize <= patterns.matcher.cache_info().maxsize


def test_the_ttl_lru_cache_is_bounded_and_ages():
    cache = TtlLru(3, 60.0)
    for i in range(10):
        cache.put(i, i)
    assert len(cache) == 3 and cache.get(0) is None and cache.get(9) == 9
    cache.get(7)  # used: kept over 8 when a new one comes
    cache.put(10, 10)
    assert cache.get(7) == 7 and cache.get(8) is None
    aged = TtlLru(3, 0.0)
    aged.put("a", 1)
    assert aged.get("a") is None
