"""OpenTSDB 2.4.1's own test vectors as data (tests/data/opentsdb_vectors/): loading them, and
the differences btts keeps on purpose, each named by the vectors that meet it; for the pure
vectors' tests and the HTTP ones."""

from __future__ import annotations

import json

from tests.support import REPO

DATA = REPO / "tests" / "data" / "opentsdb_vectors"
DIFFERENCES = {  # also in the README's "Dashboards" section
    "exact": "decimals and integer series stay exact where OpenTSDB rounds through doubles or "
    "truncates longs",
    "before-1970": "times before 1970 are answered; OpenTSDB refuses negative timestamps",
    "fraction": "seconds.fff is seconds and a fraction; OpenTSDB drops the dot (1355961603.41 "
    "becomes the millisecond 135596160341)",
    "lenient": "btts reads a date or a count it can tell apart where OpenTSDB's parser refuses",
    "no-uids": "btts has no UID tables: no tsuid= queries; a TSUID is the series' name in hex",
    "no-histograms": "btts keeps numbers, not histograms: percentiles[…] queries are refused",
    "no-expressions": "expressions (/api/query/exp, /api/query/gexp) are not served",
    "empty-series": "a series with no point in [start, end] is left out of the answer",
}


def load(kind: str | None = None) -> list[tuple[str, dict, dict]]:
    """``(id, vector, defaults)`` of every vector (of ``kind``) in the data files."""
    out = []
    for path in sorted(DATA.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        for n, v in enumerate(doc["vectors"]):
            if kind is None or v["kind"] == kind:
                defaults = {**doc.get("defaults", {}), "stores": doc.get("stores", {})}
                out.append((f"{path.stem}.{v['method']}#{n}", v, defaults))
    return out
