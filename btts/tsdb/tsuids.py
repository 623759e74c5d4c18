"""Series names as OpenTSDB's TSUIDs (pure).

OpenTSDB names a series by its TSUID: the hex of its metric's and tags' UIDs. btts has no UID
tables, so a series' TSUID here is the hex of its name itself (the metric and its sorted tags
as compact JSON): a client that keeps TSUIDs from ``showTSUIDs`` or ``/api/query/last`` can
hand them back to ``/api/query/last?tsuids=…``, and two series never share one.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Mapping

from btts.tsdb.errors import BadRequest

__all__ = ["decode", "encode"]


def encode(metric: str, tags: Mapping[str, str]) -> str:
    """The TSUID of the series ``metric`` with ``tags`` (upper-case hex, as OpenTSDB's)."""
    name = json.dumps([metric, sorted(tags.items())], separators=(",", ":"), ensure_ascii=False)
    return name.encode("utf-8").hex().upper()


def decode(tsuid: str) -> tuple[str, dict[str, str]]:
    """The metric and tags a TSUID of :func:`encode` names; a :class:`BadRequest` (a
    ValueError) when it is none."""
    try:
        metric, pairs = json.loads(binascii.unhexlify(tsuid.strip()).decode("utf-8"))
        tags = {str(k): str(v) for k, v in pairs}
    except (binascii.Error, UnicodeDecodeError, ValueError, TypeError):
        raise BadRequest(f"No such unique ID: {tsuid[:40]!r} is not a TSUID btts made") from None
    if not isinstance(metric, str):
        raise BadRequest(f"No such unique ID: {tsuid[:40]!r} is not a TSUID btts made")
    return metric, tags
