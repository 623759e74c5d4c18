"""Which texts a file writes for "no value", and the sample without them.

R writes ``NA`` in a CSV, pandas ``NaN`` (or an empty cell), some tools ``null``, ``NULL`` or
``N/A``. A numeric column with such a cell is still numeric: the draft declares the tokens once
(``event.missing``), the job reads them as absent values, and the column stays a number field
that is optional (so it never enters the key). Pure.

A token is detected when it is a whole value of the sample: any CSV cell (R and pandas write
every missing value alike, text columns included), or a JSON string in a column whose other
values are numbers or booleans (a JSON text column's ``"NA"`` may be a real value: Namibia).
An empty JSON string is one too (``""``: no field type takes an empty text, as a CSV's empty
cell is no value).
"""

from __future__ import annotations

from collections.abc import Sequence

from transforms.text.events import CsvText

__all__ = ["detect", "strip"]

# what tools write for a missing value, most common first (the order the draft lists them)
TOKENS = ("NA", "NaN", "nan", "null", "NULL", "None", "N/A", "n/a", "#N/A", "NA_character_")


def detect(records: Sequence[dict]) -> tuple[list[str], list[str]]:
    """The tokens of :data:`TOKENS` the sample writes as whole values (see the module's rule),
    in :data:`TOKENS` order, and the JSON text columns that write one as a value (which keep
    it: their field declares ``missing: []``)."""
    known = frozenset(TOKENS)
    found: set[str] = set()
    texts: dict[str, set[str]] = {}  # JSON column → tokens seen as its strings
    typed: set[str] = set()  # JSON columns with a number or boolean
    for record in records:
        for name, value in record.items():
            if type(value) is CsvText:
                if value in known:
                    found.add(str(value))
            elif type(value) is str:
                if value in known:
                    texts.setdefault(name, set()).add(value)
                elif not value:
                    found.add("")  # an empty text: no field type takes it, so it is no value
            elif value is not None and not isinstance(value, (dict, list)):
                typed.add(name)
    for name, tokens in texts.items():
        if name in typed:
            found |= tokens
    keep = sorted(n for n, tokens in texts.items() if n not in typed and tokens & found)
    return [t for t in (*TOKENS, "") if t in found], keep


def strip(records: Sequence[dict], tokens: Sequence[str], keep: Sequence[str] = ()) -> list[dict]:
    """``records`` without the values equal to a token, but in the ``keep`` columns (as the
    job's shaper reads them)."""
    if not tokens:
        return list(records)
    drop = frozenset(tokens)
    kept = frozenset(keep)
    return [
        {k: v for k, v in r.items() if k in kept or not (isinstance(v, str) and v in drop)}
        for r in records
    ]
