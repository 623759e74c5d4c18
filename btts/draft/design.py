"""The drafted schema's decisions, by the guidance's rules (docs/user-guide.md §1).

Pure. From a sample's columns, its time and its shape: the fields and their types; the time
field, its format and how early it goes (``earliest:``, ``cell_timestamp: offset``); the key
(the fields queries select first, then the other entity fields from broad to narrow, then the
time; a constant and, only when the declared rate calls for it, a salt where no field can
lead); one version per cell (one event per row, TS-COLS); the two queries a user asks (one
entity over a range, every entity over a range); the advisor's workload. Each decision keeps
its reason for :mod:`btts.draft.render`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from btts.draft import shape
from btts.draft.fields import Column, free_name, plain_name
from btts.draft.model import Choice, DraftSchema
from btts.draft.times import TimeGuess, resolution
from transforms.text import timefmt

__all__ = ["Inputs", "design", "note_checked"]

HOT_RATE = 140.0  # writes/s on one tablet from which the advisor calls a time-first key an error
_OFFSET = re.compile(r"(Z|[+-][0-9]{2}:?[0-9]{2})\Z")
_EPOCH_LABEL = {"year": "yyyymm", "month": "yyyymm", "day": "yyyymmdd"}
_PERIOD_S = {"year": 365.25 * 86_400, "month": 30.44 * 86_400, "day": 86_400, "hour": 3600,
             "minute": 60, "second": 1, "ms": 0.001}  # fmt: skip
_RESERVED = {"key", "ts_ms", "time"}  # names a record read back gives its row key and time


def _plain_ref(name: str, time: bool = False) -> str:
    """The name keys and columns use for a field: the plain name, and for a field other than
    the event time one a record read back does not already use for its key or time."""
    plain = plain_name(name)
    return f"{plain}_value" if plain in _RESERVED and not time else plain


def unique_refs(names: Sequence[str], time: str) -> dict[str, str]:
    """Each field's name for keys and columns, no two alike (the loader refuses a draft whose
    ``a.b`` and ``a_b`` both become ``a_b``): a name that is already plain keeps it, another
    takes its plain name, or that name with ``_2``, ``_3``… when another field has it."""
    wanted = {name: _plain_ref(name, name == time) for name in dict.fromkeys(names)}
    out = {name: plain for name, plain in wanted.items() if plain == name}
    taken = set(out.values())
    for name, plain in wanted.items():
        if name in out:
            continue
        out[name] = new = free_name(plain, taken)
        taken.add(new)
    return out


@dataclass
class Inputs:
    """What the draft is made from: the sample and the user's declarations."""

    dataset: str
    described: list[str]  # one line per sampled file
    fmt: str  # the (first) file's format
    complete: bool  # the sample holds every record
    estimated_records: int
    columns: dict[str, Column]
    records: list[dict]
    time: TimeGuess
    wide: shape.Wide | None = None
    rate: float | None = None
    others: list[str] = field(default_factory=list)  # other ways the records carry a time
    query: list[str] = field(default_factory=list)
    latest: bool = False  # the commonest query reads the newest values first
    missing: list[str] = field(default_factory=list)  # the texts the file writes for no value
    keep: list[str] = field(default_factory=list)  # JSON text fields where a token is a value
    record_id: str | None = None  # the key's field after the time, when it has one
    refs: dict[str, str] = field(default_factory=dict)  # each field's name in keys and columns

    def __post_init__(self) -> None:
        self.refs = unique_refs([*self.columns, self.time.field], self.time.field)

    def ref(self, name: str, time: bool = False) -> str:
        """The field's name in keys and columns (:func:`unique_refs`)."""
        return self.refs.get(name) or _plain_ref(name, time)


def _earliest(ms: Sequence[int], complete: bool) -> str | None:
    """The ``earliest:`` day a time field needs (None from 1970 on): 1 January of the oldest
    sampled year, or of its century when the sample is a part of the file."""
    oldest = min(ms)
    if oldest >= 0:
        return None
    year = timefmt.to_datetime(oldest).year
    year = year if complete else max(1, year - year % 100)
    return f"{year:04d}-01-{'02' if year == 1 else '01'}"


def _field_spec(column: Column, complete: bool, key: bool) -> Choice:
    kind = column.type
    spec: dict = {"type": kind}
    notes = []
    if kind == "text":
        longest = column.max_length or 1
        spec["max_length"] = longest if complete else max(64, 2 * longest)
        notes.append(f"text up to {longest} characters" + ("" if complete else " in the sample"))
        if key:
            notes.append(f"{column.cardinality} distinct values: names an entity (key field)")
    elif kind == "number":
        notes.append("decimals kept as written" + (" (whole numbers written 1.0)"
                     if column.integral_floats else ""))  # fmt: skip
    elif kind == "integer":
        notes.append(f"whole numbers {column.low}..{column.high}")
    elif kind == "map":
        spec["qualifier"] = "as_is"
    if column.optional:
        spec["optional"] = True
        notes.append(f"missing in {column.records - column.present} of {column.records} records")
    return Choice(spec, "; ".join(notes))


def _missing_notes(choice: Choice, name: str, inputs: Inputs) -> None:
    """A field where the file writes a missing-value token: say how it reads (or keeps) it."""
    if name in inputs.keep:
        choice.value["missing"] = []
        choice.comment = (
            f"{choice.comment}; {'/'.join(inputs.missing)} is a value here (JSON text), "
            "not a missing one"
        ).lstrip("; ")


def _time_spec(inputs: Inputs, earliest: str | None) -> Choice:
    guess = inputs.time
    spec: dict = {"type": "time"}
    if guess.derived:
        spec["from"] = dict(guess.sources)
        if guess.date_format:
            spec["format"] = guess.date_format
    elif guess.format != "auto":
        spec["format"] = guess.format
    if guess.round:
        spec["round"] = guess.round
    if guess.timezone:
        spec["timezone"] = guess.timezone
    if guess.ambiguous:
        spec["ambiguous"] = guess.ambiguous
    if earliest:
        spec["earliest"] = earliest
    notes = [guess.why]
    if guess.alternatives:
        notes.append(_alternatives(guess))
    offsets = _offsets(inputs.columns[guess.field].values) if guess.format == "rfc3339" else []
    if offsets:
        notes.append(f"each time carries its UTC offset ({', '.join(offsets[:3])}): no zone needed")
    clock = "%H" in guess.format or bool({"time", "hour"} & set(guess.sources))
    if clock and not timefmt.has_offset(guess.format) and not guess.timezone:
        notes.append(
            "no UTC offset in the data: read as UTC (declare timezone: ZONE if these are local "
            "times; a wall time a clock change skips is then a dead letter)"
        )
    if earliest:
        notes.append(f"times go back to {_day(min(guess.ms))}: earliest: {earliest}")
    return Choice(spec, "; ".join(notes))


def _alternatives(guess: TimeGuess) -> str:
    """The other formats that read the time; a numeric date both day orders read is said to
    be a choice, with the format that takes the other."""
    fmt = guess.format
    swapped = fmt[3:5] + fmt[2] + fmt[:2] + fmt[5:] if fmt[:5] in _DAY_ORDERS else ""
    if swapped and swapped in guess.alternatives:
        first = "day first" if fmt.startswith("%d") else "month first"
        return (
            f"AMBIGUOUS: every value reads both day first and month first; took {first} "
            f"({fmt}); if the file writes them the other way, declare format: {swapped!r}"
        )
    return f"also readable as {', '.join(guess.alternatives)}"


_DAY_ORDERS = {f"%{a}{sep}%{b}" for sep in "/-." for a, b in ("dm", "md")}


def _offsets(values: Sequence) -> list[str]:
    """The UTC offsets RFC 3339 times are written with (``Z``, ``+01:00``…)."""
    return sorted({m.group(0) for v in values if (m := _OFFSET.search(str(v)))})


def _day(ms: int) -> str:
    return timefmt.to_datetime(ms).date().isoformat()


def _fields(inputs: Inputs, keys: Sequence[str], earliest: str | None) -> dict[str, Choice]:
    out: dict[str, Choice] = {}
    wide = inputs.wide
    series = set(wide.columns) if wide and wide.how == "map" else set()
    for name, column in inputs.columns.items():
        if name in series or column.type == "other":
            continue  # (a value no type takes: a loss, said by _losses)
        if name == inputs.time.field:
            out[name] = _time_spec(inputs, earliest)
            if inputs.ref(name, True) != name:
                out[name].value["as"] = inputs.ref(name, True)
            continue
        choice = _field_spec(column, inputs.complete, name in keys)
        if inputs.ref(name) != name:
            choice.value["as"] = inputs.ref(name)
        _missing_notes(choice, name, inputs)
        out[name] = choice
    if inputs.time.derived:
        out[inputs.time.field] = _time_spec(inputs, earliest)
    if wide and wide.how == "map":
        out[wide.name] = _map_spec(inputs, wide)
    return out


def _map_spec(inputs: Inputs, wide) -> Choice:
    """The map field collecting a CSV's series columns: optional when some record has a value
    in none of them (its other fields land all the same)."""
    choice = Choice(
        {"type": "map", "qualifier": "as_is"},
        f"every other column ({len(wide.columns)} series) as one entry per column: {wide.why}",
    )
    empty = sum(all(r.get(c) is None for c in wide.columns) for r in inputs.records)
    if empty:
        choice.value["optional"] = True
        choice.comment += (
            f"; no series has a value in {empty:,} of {len(inputs.records):,} records: optional"
        )
    return choice


def _time_segment(inputs: Inputs, earliest: str | None, time_name: str) -> Choice:
    if inputs.latest and not earliest:
        return Choice(
            {"reverse_ts": time_name},
            "then the time reversed (--latest: the newest first, so the latest values of a "
            "series are the first rows of its prefix; epoch_ms instead for oldest-first reads)",
        )
    if not earliest:
        return Choice(
            {"epoch_ms": time_name},
            "then the time, oldest first (13-digit epoch ms: a time range is one key range; "
            "reverse_ts instead if the commonest query is the latest values)",
        )
    unit = resolution(inputs.time.ms)
    label = _EPOCH_LABEL.get(unit, "yyyymmddhhmmssmmm")
    return Choice(
        {"time": time_name, "format": label},
        f"then the time as a calendar label ({label}: the times differ by the {unit}): "
        "epoch-ms keys cannot hold times before 1970, labels sort in time order from year 1",
    )


def _entity_segment(inputs: Inputs, name: str) -> dict:
    """A text field as it is; a non-negative integer zero-padded (``10`` sorts after ``9``),
    two digits wider than the sample's largest when the sample is a part of the file."""
    column = inputs.columns.get(name)
    if column is not None and column.type == "integer" and (column.low or 0) >= 0:
        width = len(str(column.high)) + (0 if inputs.complete else 2)
        return {"zero_pad": inputs.ref(name), "width": width}
    return {"text": inputs.ref(name)}


def _key(inputs: Inputs, ents: shape.Entities, earliest: str | None, rate: float) -> list[Choice]:
    keys = ents.names
    time_name = inputs.ref(inputs.time.field, True)
    out = []
    for index, name in enumerate(keys):
        card = inputs.columns[name].cardinality if name in inputs.columns else 0
        why = "selected by --query" if name in inputs.query else f"{card} values"
        lead = "leads the key (field promotion)" if index == 0 else "then"
        out.append(Choice(_entity_segment(inputs, name), f"{lead}: {why}"))
    if not keys:
        out.append(Choice(
            {"const": inputs.dataset.upper()[:20]},
            "no field names an entity"
            + ("" if ents.record_id or ents.numbered else " (the time alone tells records apart)")
            + ": a constant prefix, so the key can later take other series beside this one",
        ))  # fmt: skip
        if rate >= HOT_RATE:
            buckets = min(64, math.ceil(rate / HOT_RATE * 2))
            out.append(Choice(
                {"salt": [time_name], "buckets": buckets},
                f"{rate:g} writes/s behind one constant would hotspot one tablet: {buckets} "
                "salt buckets spread them (a time read fans out over every bucket)",
            ))  # fmt: skip
    out.append(_time_segment(inputs, earliest, time_name))
    if ents.numbered:
        out.append(_number_segment(inputs, ents.numbered))
    if ents.record_id:
        ident = ents.record_id
        out.append(Choice(
            _entity_segment(inputs, ident),
            f"then {ident}, a value of its own in every record: records of one time are told "
            "apart by it (no other field does)",
        ))  # fmt: skip
    return out


def _number_name(inputs: Inputs) -> str:
    """The record number's field: ``record_number``, or with ``_2``… when a field has it."""
    return free_name("record_number", {*inputs.columns, *inputs.refs.values()})


def _number_segment(inputs: Inputs, clashes: int) -> Choice:
    """The record number after the time, zero-padded (``10`` after ``9``): a digit wider than
    the file's count of records (two when the count is the sample's estimate)."""
    width = len(str(inputs.estimated_records)) + (1 if inputs.complete else 2)
    return Choice(
        {"zero_pad": _number_name(inputs), "width": width},
        f"then the record's number in the file: {clashes} sampled records share their key "
        "fields and time with an earlier one and differ from it, and no field tells them "
        "apart (give the file an id column, or btts init --query FIELD, to key by it "
        f"instead); width {width}: numbers up to {10**width - 1:,} (the file holds about "
        f"{inputs.estimated_records:,} records)",
    )


def _number_spec(clashes: int) -> Choice:
    return Choice(
        {"type": "integer", "from": "record_number"},
        f"not in the file: each record's number in it (1 is the first; the same in every run), "
        f"which tells apart the {clashes} sampled records that share their key fields and time "
        "with an earlier one (a record inserted into the file would renumber those after it)",
    )


def note_checked(draft: DraftSchema, checked: str) -> None:
    """Say beside the key what it was found unique over (the whole file, or the sample)."""
    draft.checked = checked
    if draft.key:
        last = draft.key[-1]
        last.comment = f"{last.comment}; the key is unique over {checked}".lstrip("; ")


def _rate(inputs: Inputs) -> tuple[float, str]:
    if inputs.rate is not None:
        return inputs.rate, "--rate: the declared write rate"
    ms = inputs.time.ms
    # the records cover their last period too: 3,950 records of one year are that year's, not
    # 3,950 in one second (a rate that would salt the key of a file with one time)
    span_s = max(1.0, (max(ms) - min(ms)) / 1000 + _PERIOD_S[resolution(ms)])
    rate = max(inputs.estimated_records / span_s, 1e-7)
    rate = float(f"{rate:.3g}")
    return rate, (
        f"the data's own pace: about {inputs.estimated_records:,} records over "
        f"{_day(min(ms))}..{_day(max(ms))}; pass --rate for the live write rate"
    )


def _queries(
    draft: DraftSchema, table: str, keys: Sequence[str], latest: bool, inputs: Inputs
) -> None:
    salted = any("salt" in c.value for c in draft.key)
    if keys and latest:
        draft.queries.append(Choice(
            {"name": "latest", "table": table, "select": [inputs.ref(k) for k in keys],
             "read": "prefix", "limit": 1},
            "the newest event of one series: the first row of its prefix",
        ))  # fmt: skip
    if keys:
        select = [inputs.ref(k) for k in keys]
        draft.queries.append(Choice(
            {"name": "series", "table": table, "select": select},
            f"one {'/'.join(select)} over a time range: one key range",
        ))  # fmt: skip
        draft.queries.append(Choice(
            {"name": "everything", "table": table, "read": "table"},
            "every series over a time range: reads the whole table (cells filtered by time)",
        ))  # fmt: skip
    else:
        why = "one range per salt bucket, merged" if salted else "one key range"
        draft.queries.append(Choice({"name": "series", "table": table}, f"a time range: {why}"))


def _advisor(draft: DraftSchema, inputs: Inputs, keys: Sequence[str], rate: float, note: str):
    draft.advisor["events_per_second"] = rate
    draft.advisor_comments["events_per_second"] = note
    if keys:
        draft.advisor["fields"] = {
            inputs.ref(k): {"cardinality": max(2, inputs.columns[k].cardinality)}
            for k in keys if k in inputs.columns
        }  # fmt: skip
        draft.advisor_comments["fields"] = "distinct values seen in the sample" + (
            "" if inputs.complete else " (a part of the file: raise them to the real counts)"
        )
        draft.advisor["query_fields"] = [inputs.ref(k) for k in keys if k != inputs.record_id]


def design(inputs: Inputs, ents: shape.Entities) -> DraftSchema:
    """The whole draft from the sample and its chosen key fields."""
    keys = [*ents.names, *([ents.record_id] if ents.record_id else [])]
    inputs.record_id = ents.record_id
    table = plain_name(inputs.dataset).upper()[:50]
    draft = DraftSchema(inputs.dataset, f"Drafted by btts init from {inputs.described[0]}.")
    earliest = _earliest(inputs.time.ms, inputs.complete)
    rate, rate_note = _rate(inputs)
    draft.time = inputs.ref(inputs.time.field, True)
    draft.time_comment = "the event time: it stamps every cell and is the key's time"
    if inputs.others:
        draft.time_comment += f"; other fields that read as times: {', '.join(inputs.others)}"
    draft.fields = _fields(inputs, keys, earliest)
    draft.table = table
    draft.pattern_comment = (
        "TS-COLS: one row per event, a column per field (tall and narrow, the guidance's "
        "default); TB-CELL (a row per entity and hour/day) if queries read whole periods"
    )
    if earliest:
        draft.cell_timestamp = Choice(
            {"cell_timestamp": "offset"},
            "times before 1970: cells are stamped from year 1 (every read undoes it)",
        )
    draft.families.append(Choice(
        {"name": "m", "max_versions": 1},
        "one event per row: one version; no max_age (its clock is the cell time: "
        "historical data would be collected at once)",
    ))  # fmt: skip
    draft.key = _key(inputs, ents, earliest, rate)
    _columns(draft, inputs, keys)
    if ents.numbered:  # (in the key only: no column of its own)
        numbered = _number_name(inputs)
        draft.fields[numbered] = _number_spec(ents.numbered)
        draft.notes.append(
            f"{ents.numbered} sampled records share their key fields and time with an earlier "
            "one and differ from it, and no field tells them apart: the key ends with each "
            f"record's number in the file (field {numbered}, from: record_number)"
        )
    _queries(draft, table, ents.names, inputs.latest and not earliest, inputs)
    _advisor(draft, inputs, keys, rate, rate_note)
    draft.losses += _losses(inputs.columns.values())
    if inputs.missing:
        draft.missing = Choice(
            {"missing": list(inputs.missing)},
            f"the file writes {', '.join(inputs.missing)} for a missing value: read as no "
            "value (an optional field writes no cell), so numeric columns stay numbers",
        )
    if inputs.time.needs_year:
        draft.refusals.append(_no_year(inputs.time))
    if ents.clashes:
        draft.losses.append(
            f"{ents.clashes} sampled records share their key fields and time with an earlier "
            "one and differ from it, and no field tells them apart: the later would overwrite "
            "it; give each record an id (a row number column), or name the field that tells "
            "them apart with btts init --query FIELD"
        )
    return draft


def _no_year(guess: TimeGuess) -> str:
    """The one line that says what a month-and-day time needs."""
    parts = ", ".join(f"{role}: {name}" for role, name in guess.sources.items())
    return (
        f"the times have {' and '.join(guess.sources)} but no year: add year: YYYY (the year of "
        f"these times, e.g. from: {{year: 1973, {parts}}}) to the from: of field "
        f"{guess.field!r}"
    )


def _losses(columns) -> list[str]:
    """What the job would dead-letter whatever the schema says: empty text, values of no
    declared type (nested arrays, numbers and text mixed in JSON). (A JSON null is an absent
    value of an optional field.)"""
    out = []
    for column in columns:
        what = f"field {column.name!r}"
        if column.empties:
            out.append(f"{what} is empty text in {column.empties} sampled records: refused")
        if column.type == "other" and column.present:
            kinds = ", ".join(sorted(column.kinds))
            out.append(f"{what} holds values no field type takes ({kinds}): not declared")
    return out


def _columns(draft: DraftSchema, inputs: Inputs, keys: Sequence[str]) -> None:
    skip = {*keys, inputs.time.field, *inputs.time.sources.values()}
    always = False  # some stored field is in every event
    for name, choice in draft.fields.items():
        if name in skip:
            continue
        used = choice.value.get("as", name)
        always = always or not choice.value.get("optional")
        if choice.value["type"] == "map":
            draft.columns.append(Choice({"family": "m", "each": used}, "one column per entry"))
        else:
            draft.columns.append(Choice({"family": "m", "qualifier": used, "value": used}))
    if not always:
        draft.columns.append(Choice(
            {"family": "m", "qualifier": "t", "value": inputs.ref(inputs.time.field, True)},
            "the time as a value (13-digit epoch ms): every event writes this cell, so one "
            "whose other fields are all missing still lands as a row",
        ))  # fmt: skip
    for role, name in inputs.time.sources.items():
        draft.fields[name].comment = (
            draft.fields[name].comment + f"; the time's {role} (not stored: the time holds it)"
        ).lstrip("; ")
