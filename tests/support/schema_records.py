"""What the builders' differential tests generate: every schema file of the repository that
writes tables from events (and the schemas of every generated and every general path), the
zones they are built in, and records from a schema's fields (valid ones, and ones with a field
missing, unknown, or of another type or range), or a shaped schema's first data lines. Shared
by the generated builder's test against the plain loop and the lean rows' test."""

from __future__ import annotations

import datetime as dt
import itertools
import json
from zoneinfo import ZoneInfo

from hypothesis import strategies as st

from tests.schema_oracle import schema_files
from tests.support import REPO
from tests.support.codegen_inputs import every_path_schema
from transforms import schema as sf
from transforms.text import events

# Every path of the general closures at once: salted keys holding a zero-padded integer, a
# reversed id, a tenant and a reversed time bucket; a qualifier from a field; added cells.
GENERAL_PATHS = """
dataset: general
event:
  time: ts
  fields:
    tenant: {type: text, max_length: 16}
    meter: {type: integer, min: 0, max: 99999}
    user: {type: integer, min: 0}
    site: {type: text, max_length: 40, whitespace: none}
    metric: {type: text, max_length: 12, whitespace: none, case: upper}
    amount: {type: integer, optional: true}
    when: {type: time, as: ts}
tables:
  - name: SALTED
    pattern: TS-COLS
    families: [{name: f, max_versions: 1}]
    key:
      - tenant: tenant
      - {salt: [tenant, meter], buckets: 4}
      - {zero_pad: meter, width: 6}
      - reverse_id: user
      - {reverse_ts: ts, bucket: hour}
    columns:
      - {family: f, qualifier: {field: metric}, value: site}
  - name: TOTALS
    pattern: AGGREGATE
    families: [{name: sum, aggregate: sum}]
    key:
      - reverse_domain: site
      - {time: ts, format: yyyymmdd}
    columns:
      - {family: sum, qualifier: AMOUNT, add: amount}
      - {family: sum, qualifier: COUNT, add: 1}
"""
SCHEMAS = {  # files that write tables from events, and the two schemas of every path
    **{str(p.relative_to(REPO)): p for p in schema_files() if sf.load(str(p)).written()},
    "every_generated_path": every_path_schema("x'); import os #", "qualifier"),
    "every_general_path": GENERAL_PATHS,
}
ZONES = [dt.timezone.utc, ZoneInfo("America/New_York")]

_WRONG = st.sampled_from(
    [None, True, [], {}, "", " x ", "a#b", "1e999", 10**20, -1, 0.5, "x" * 1030, "é\n"]
)
_moments = st.datetimes(dt.datetime(1971, 1, 1), dt.datetime(2100, 1, 1))
_offsets = st.sampled_from(["Z", "+00:00", "-05:00", "+05:30"])


def _rfc3339(moment: dt.datetime, offset: str, ms: bool) -> str:
    return moment.isoformat(timespec="milliseconds" if ms else "seconds") + offset


def _formatted(moment: dt.datetime, fmt: str) -> object:
    """``moment`` (naive UTC) written in a time field's declared format."""
    seconds = int(moment.replace(tzinfo=dt.timezone.utc).timestamp())
    named = {
        "epoch_s": seconds,
        "epoch_ms": seconds * 1000 + moment.microsecond // 1000,
        "epoch_us": seconds * 10**6 + moment.microsecond,
        "date": f"{moment:%Y-%m-%d}",
        "year": moment.year,
        "yyyymmddhhmmssmmm": f"{moment:%Y%m%d%H%M%S}{moment.microsecond // 1000:03d}",
    }
    return named[fmt] if fmt in named else moment.strftime(fmt)


def _valid(field, width: int = 12) -> st.SearchStrategy:
    """Values ``field`` takes (mostly: bounds given as decimals are kept to integers); a text is
    at most ``width`` characters (a space-padded key segment's width)."""
    kind = field.type
    if kind == "time":
        if field.format in ("auto", "rfc3339"):
            return st.builds(_rfc3339, _moments, _offsets, st.booleans())
        return _moments.map(lambda m: _formatted(m, field.format))
    if kind in ("integer", "number"):
        low = int(float(field.minimum)) if field.minimum else -(10**6)
        high = int(float(field.maximum)) if field.maximum else 10**12
        low, high = (max(low, 0), high) if kind == "integer" and not field.minimum else (low, high)
        numbers = st.integers(low, high)
        if kind == "number":
            numbers |= st.floats(low, high, allow_nan=False).map(lambda f: round(f, 3))
        return numbers
    if kind == "boolean":
        return st.booleans()
    if kind == "float64":  # a number, or the bits of any double (NaN payloads) as 0x text
        bits = st.integers(0, 2**64 - 1).map(lambda b: f"0x{b:016x}")
        return st.floats(allow_nan=False, allow_infinity=False) | bits
    if kind == "map":
        names = st.sampled_from(["cpu", "mem", "disk_io", "load1"])
        return st.dictionaries(names, st.integers(0, 10**6) | st.floats(0, 100), max_size=3)
    alphabet = "abcXYZ09-_." + (" " if field.whitespace == "allow" else "")
    text = st.text(alphabet=alphabet, min_size=1, max_size=min(field.max_length or 12, width))
    text = text.filter(lambda t: t.strip() == t and t.strip())
    if field.case == "lower":
        text = text.map(str.lower)
    elif field.case == "upper":
        text = text.map(str.upper)
    return text | st.integers(1, 10**6).map(str) if kind == "id" else text


def _pad_widths(schema: sf.Schema) -> dict[str, int]:
    """Field → the narrowest space-padded key segment holding it: a longer text is refused, and
    records refused there would seldom reach the tables' other rules."""
    out: dict[str, int] = {}
    for table in schema.written():
        for seg in table.decl.key.segments:
            if seg.kind == "space_pad" and seg.width:
                out[seg.field] = min(seg.width, out.get(seg.field, 12))
    return out


def _input_fields(schema: sf.Schema) -> list:
    return [f for f in schema.fields if not f.sources]  # a time made from fields: not input


@st.composite
def records(draw, schema: sf.Schema, bases: list[dict]) -> dict:
    """A JSON record for ``schema`` (from its fields, or one of ``bases`` for a schema whose
    records are shaped), and in a third of them one value wrong, one field dropped or one
    unknown field added; parsed as the jobs parse a line."""
    if bases:
        record = dict(draw(st.sampled_from(bases)))
    else:
        widths = _pad_widths(schema)
        record = {
            f.name: draw(_valid(f, widths.get(f.ref, 12)))
            for f in _input_fields(schema)
            if not (f.optional and draw(st.booleans()))
        }
    change = draw(st.integers(0, 8))
    if record and change < 2:
        record[draw(st.sampled_from(sorted(record)))] = draw(_WRONG)
    elif record and change == 2:
        del record[draw(st.sampled_from(sorted(record)))]
    elif change == 3:
        record[draw(st.sampled_from(["extra", "hostname_", "Time"]))] = 1
    if bases:  # parsed already (CSV cells are text the builder reads as the job gives it)
        return record
    return events.parse_json_object(json.dumps(record))


def shaped_records(path) -> list[dict]:
    """A shaped schema's records: the first lines of the data file beside it."""
    for suffix in (".csv", ".jsonl"):
        data = path.with_suffix(suffix)
        if path.stem.startswith("stocks"):
            data = path.with_name("stocks_wide.csv" if "rows_per" in path.stem else data.name)
        if data.exists():
            with open(data, "rb") as f:
                lines = list(itertools.islice(f, 41))
            if suffix == ".csv":
                header = events.parse_csv_header(lines[0])
                return [events.parse_csv_line(line.rstrip(b"\r\n"), header) for line in lines[1:]]
            return [events.parse_json_object(line) for line in lines[:40]]
    return []
