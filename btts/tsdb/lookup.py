"""What ``/api/search/lookup`` asks, as OpenTSDB 2.4.1's ``SearchRpc`` reads it (pure): a
metric, tag keys, tag values or any mix of them (``TimeSeriesLookup``).

``m=metric{tag=value,…}`` (GET, ``Tags.parseWithMetric``) or a POST body ``{"metric", "tags":
[{"key", "value"}], "limit"}`` (``SearchQuery``). The metric may be left out (``m={host=}``:
every served metric); a pair may be a key alone (``host=``, or a ``null`` value: any value of
that key) or a value alone (``=web01``: that value under any key), ``*`` standing for either
side. Different keys are AND'd, values alone OR'd, and a key alone overrides the pairs of that
key, as ``TimeSeriesLookup`` documents. A pair's value takes btts' filter syntax (``web*``,
``a|b``, ``regexp(…)``) as a query's tags do, where OpenTSDB resolves it as one name.
"""

from __future__ import annotations

from dataclasses import dataclass

from btts.tsdb import request
from btts.tsdb.errors import BadRequest
from btts.tsdb.request import TagFilter

__all__ = ["Lookup", "parse_body", "parse_m"]

DEFAULT_LIMIT = 25  # SearchQuery's
Pair = tuple[str | None, str | None]


@dataclass(frozen=True)
class Lookup:
    """One lookup: ``filters`` from the pairs with both sides, ``keys`` alone, ``values``
    alone; ``pairs`` as asked (echoed in the answer); ``limit`` 0 or less: no limit."""

    metric: str | None
    pairs: tuple[Pair, ...]
    filters: tuple[TagFilter, ...] = ()
    keys: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    limit: int = DEFAULT_LIMIT

    @property
    def tag_keys(self) -> set[str]:
        """The tag keys a series must have."""
        return {f.tagk for f in self.filters} | set(self.keys)


def _any(side: object) -> str | None:
    """A side of a pair as ``TimeSeriesLookup`` takes it: ``*`` or nothing is any."""
    if side is None or side in ("", "*"):
        return None
    if not isinstance(side, str):
        raise BadRequest("A lookup's tag keys and values are text")
    return side


def lookup_of(metric: object, pairs: list[tuple[object, object]], limit: int) -> Lookup:
    """The lookup of a metric (None: every one) and ``(key, value)`` pairs."""
    name = _any(metric)
    kept = [p for p in ((_any(k), _any(v)) for k, v in pairs) if p != (None, None)]
    if name is None and not kept:
        raise BadRequest("Missing metric and tags. Please supply at least one value.")
    keys = tuple(dict.fromkeys(k for k, v in kept if k is not None and v is None))
    values = tuple(dict.fromkeys(v for k, v in kept if k is None and v is not None))
    filters = tuple(
        request.filter_of_tag(k, v, group_by=False)
        for k, v in dict.fromkeys(kept)
        if k is not None and v is not None and k not in keys
    )
    return Lookup(name, tuple(kept), filters, keys, values, limit)


def parse_m(text: str, limit: int = DEFAULT_LIMIT) -> Lookup:
    """``m=`` (``Tags.parseWithMetric``): ``metric``, ``metric{k=v,k=,=v}`` or ``{…}``."""
    if not text:
        raise BadRequest("Missing the 'm' parameter")
    curly = text.find("{")
    if curly < 0:
        return lookup_of(text, [], limit)
    if not text.endswith("}"):
        raise BadRequest(f"Unable to parse query: Missing '}}' at the end of: {text[:80]}")
    pairs = []
    for tag in text[curly + 1 : -1].split(",") if curly < len(text) - 2 else ():
        key, sep, value = tag.partition("=")
        if len(tag) < 2 or not sep:
            raise BadRequest(f"Unable to parse query: when parsing tag {tag[:40]!r}: not k=v")
        pairs.append((key or None, value or None))
    if curly == 0 and not pairs:
        raise BadRequest(f"Unable to parse query: Missing metric and tags: {text[:80]}")
    return lookup_of(text[:curly] or None, pairs, limit)


def parse_body(body: object) -> Lookup:
    """A POST body (``SearchQuery``'s JSON): ``metric``, ``tags`` as ``[{"key", "value"}]``
    (either may be null), ``limit``; ``useMeta`` and the rest change nothing here."""
    if not isinstance(body, dict):
        raise BadRequest("The lookup body must be a JSON object")
    tags = body.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, dict) for t in tags):
        raise BadRequest('tags must be a list of {"key": …, "value": …}')
    limit = body.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise BadRequest(f"Invalid 'limit': {str(limit)[:20]!r} is not a number")
    pairs = [(t.get("key"), t.get("value")) for t in tags]
    return lookup_of(body.get("metric"), pairs, min(limit, 100_000))
