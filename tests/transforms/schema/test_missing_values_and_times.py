"""What files write for "no value" and for times, as schema files declare them (issue 49):
``missing:`` tokens (R's ``NA``, ``NaN``), a JSON ``null`` in an optional field, decimal years
(R's ``ts`` exports: ``format: decimal_year, round: UNIT``) and constant parts of a time made
``from:`` fields (``year: 1973``), with the finer parts hour, minute, second and ISO week.

Each feature is checked three ways: worked values, the loader's one-line refusals, and an
oracle — the compiled builder (plain and framed) must build exactly what the same schema
without the feature builds from the record with the absent values taken out by hand.
"""

from __future__ import annotations

import calendar
import datetime as dt
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.codegen_inputs import GENERATED_LITERALS, HOSTILE, literals, quoted
from transforms import schema as sf
from transforms.builder import builder as generic
from transforms.builder import shaping
from transforms.errors import InvalidEvent
from transforms.text import decimal_year, timefmt
from transforms.text.events import CsvText, Num, parse_csv_line, parse_json_object


def _ms(*parts: int) -> int:
    return calendar.timegm((*parts, 0, 0, 0)[:6]) * 1000


# -- decimal years --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "unit", "wall"),
    [
        # lubridate: decimal_date(ymd("2009-02-10")) is 2009 + 40/365; date_decimal reads it back
        ("2009.109589041096", "day", "2009-02-10T00:00:00"),
        ("2009.109589041096", "ms", "2009-02-10T00:00:00"),
        # R: ts(x, start = c(1960, 2), frequency = 4) has time 1960.25 (1960 has 366 days)
        ("1960.25", "ms", "1960-04-01T12:00:00"),
        ("1960.25", "quarter", "1960-04-01T00:00:00"),
        ("1960.25", "month", "1960-04-01T00:00:00"),
        ("1960.25", "day", "1960-04-02T00:00:00"),  # a tie goes to the later day
        # R: ts(x, start = c(1969, 2), frequency = 12), time() printed with 7 digits
        ("1969.0833333", "month", "1969-02-01T00:00:00"),
        ("1969.0833333", "ms", "1969-01-31T09:59:58.949000"),
        ("1969.08333333333", "month", "1969-02-01T00:00:00"),  # write.csv's 15 digits
        ("1949.9166666666667", "month", "1949-12-01T00:00:00"),  # pandas' 17 digits
        ("1960.5", "month", "1960-07-01T00:00:00"),
        ("1949", "year", "1949-01-01T00:00:00"),
        ("1949.", "year", "1949-01-01T00:00:00"),
        ("1949.6", "year", "1950-01-01T00:00:00"),
        ("1999.99999", "month", "2000-01-01T00:00:00"),
        ("2020.5", "hour", "2020-07-02T00:00:00"),  # 366 days / 2 = 183 days
    ],
)
def test_a_decimal_year_is_the_fraction_of_its_year_rounded_to_the_unit(text, unit, wall):
    assert decimal_year.wall_time(text, unit) == dt.datetime.fromisoformat(wall)


@settings(max_examples=150, deadline=None)
@given(
    year=st.integers(1, 9998),
    frequency=st.sampled_from([1, 2, 4, 12]),
    index=st.integers(0, 11),
    digits=st.sampled_from(["%.15g", "%.17g", "%.10f", "%.7f", "%r"]),
)
def test_an_r_ts_lands_on_its_period_in_every_year(year, frequency, index, digits):
    """R's ts time is start + i/frequency: every period of every year, leap or not, written
    with as many digits as R, pandas or JSON writers use, lands on that period's first day."""
    index %= frequency
    value = year + index / frequency
    text = repr(value) if digits == "%r" else digits % value
    unit = {1: "year", 2: "month", 4: "quarter", 12: "month"}[frequency]
    month = 1 + index * 12 // frequency
    assert decimal_year.wall_time(text, unit) == dt.datetime(year, month, 1)


@pytest.mark.parametrize(
    "text", ["abc", "0.5", "-1960.5", "10000.5", "1960.5e0", "1960,5", "", "9999.5"]
)
def test_what_is_not_a_decimal_year_is_refused(text):
    with pytest.raises(ValueError):
        decimal_year.wall_time(text, "month")


def test_the_decimal_year_format_reads_numbers_and_text_in_its_zone():
    parse = timefmt.make_parser("decimal_year", "t", round_to="month")
    assert parse(Num("1979.0833333")) == _ms(1979, 2, 1)
    assert parse(CsvText("1979.25")) == _ms(1979, 4, 1)
    assert parse("1979.5") == _ms(1979, 7, 1)
    paris = timefmt.zone("Europe/Paris")
    local = timefmt.make_parser("decimal_year", "t", paris, round_to="month")
    assert local(Num("1979.5")) == _ms(1979, 7, 1) - 2 * 3_600_000  # CEST
    with pytest.raises(InvalidEvent, match=r"a decimal year such as 1960\.25, got boolean"):
        parse(True)
    with pytest.raises(InvalidEvent, match="outside 1970-01-01"):
        parse(Num("1969.5"))
    early = timefmt.make_parser("decimal_year", "t", earliest=timefmt.day_ms("1700-01-01"))
    assert early(Num("1749.0")) == _ms(1749, 1, 1)


# -- the schema files ------------------------------------------------------------------------

TS = """\
dataset: ts
event:
  time: t
  missing: [NA, NaN]
  fields:
    time: {type: time, format: decimal_year, round: month, as: t}
    value: {type: number, optional: true}
    note: {type: text, optional: true, missing: []}
    level: {type: number, optional: true}
tables:
  - name: T
    pattern: TS-COLS
    families: [{name: m, max_versions: 1}]
    key: [{const: T}, {epoch_ms: t}]
    columns:
      - {family: m, qualifier: v, value: value}
      - {family: m, qualifier: n, value: note}
      - {family: m, qualifier: l, value: level}
      - {family: m, qualifier: t, value: t}
"""


def test_missing_tokens_are_absent_values_and_a_field_may_keep_them_as_text():
    builder = generic.Builder(sf.loads(TS))
    header = ("time", "value", "note", "level")
    (row,) = builder(parse_csv_line("1979.0833333,NA,NA,NaN", header))
    assert row.key == b"T#%013d" % _ms(1979, 2, 1)
    assert [(c.qualifier, c.value) for c in row.cells] == [
        (b"n", b"NA"),  # missing: [] on the field: NA is its text
        (b"t", b"%013d" % _ms(1979, 2, 1)),
    ]
    (row,) = builder(parse_json_object('{"time": 1979.25, "value": "NA", "level": 2.50}'))
    assert [(c.qualifier, c.value) for c in row.cells] == [
        (b"l", b"2.50"),
        (b"t", b"%013d" % _ms(1979, 4, 1)),
    ]
    with pytest.raises(InvalidEvent, match="missing field"):  # a required field NA: absent
        builder(parse_csv_line("NA,1,x,2", header))


def test_a_json_null_in_an_optional_field_is_absent_and_in_a_required_one_a_dead_letter():
    builder = generic.Builder(sf.loads(TS.replace("  missing: [NA, NaN]\n", "")))
    record = parse_json_object('{"time": 1979.5, "value": null, "note": null, "level": 1}')
    (row,) = builder(record)
    assert [c.qualifier for c in row.cells] == [b"l", b"t"]
    rows, entries = builder.framed(record)
    assert rows == builder.rows(record) and len(entries) == 1
    with pytest.raises(InvalidEvent, match="got null"):
        builder(parse_json_object('{"time": null, "value": 1}'))


AIRQUALITY = """\
dataset: airquality
event:
  time: when
  fields:
    Month: integer
    Day: integer
    Ozone: {type: number, optional: true}
    when: {type: time, from: {year: 1973, month: Month, day: Day}}
tables:
  - name: A
    pattern: TS-COLS
    families: [{name: m, max_versions: 1}]
    key: [{const: A}, {epoch_ms: when}]
    columns: [{family: m, qualifier: o, value: Ozone}]
"""


def test_a_constant_year_completes_a_month_and_day():
    builder = generic.Builder(sf.loads(AIRQUALITY))
    (row,) = builder(parse_csv_line("5,2,36", ("Month", "Day", "Ozone")))
    assert row.key == b"A#%013d" % _ms(1973, 5, 2)
    assert sf.loads(AIRQUALITY).field_by_ref()["when"].constants == (("year", 1973),)


@pytest.mark.parametrize(
    ("text", "old", "new", "words"),
    [
        (AIRQUALITY, "year: 1973, ", "", "it has no year: add year: FIELD, or year: YYYY"),
        (AIRQUALITY, "year: 1973", "year: 0", "year 0 is not a constant year (1-9999)"),
        (AIRQUALITY, "month: Month, day: Day", "month: 5, day: 2", "every part is a constant"),
        (AIRQUALITY, "year: 1973", "year: 1973.5", "a field's name or a whole number"),
        (AIRQUALITY, "day: Day", "minute: Day", "has a time of day but no day"),
        (AIRQUALITY, "day: Day", "day: Day, second: Day, hour: Day", "a second but no minute"),
        (AIRQUALITY, "day: Day", "day: Day, time: Day, hour: Day", "combines time with hour"),
        (AIRQUALITY, "month: Month, ", "week: Month, ", "combines quarter or week with finer"),
        (TS, "round: month", "round: mont", "round 'mont' (did you mean 'month'?)"),
        (TS, ", round: month", "", "format decimal_year needs round"),
        (TS, "value: {type: number,", "value: {type: number, round: day,", "applies to format"),
        (TS, "missing: [NA, NaN]", "missing: [NA, null]", 'quote it: missing: ["null"]'),
        (TS, "missing: [NA, NaN]", "missing: [-999]", 'quote it: missing: ["-999"]'),
        (TS, "missing: [NA, NaN]", "missing: NA", "missing is a list of texts"),
        (TS, "missing: []", "missing: [1]", 'quote it: missing: ["1"]'),
    ],
)
def test_mistakes_in_the_new_keys_are_one_line_with_the_fix(text, old, new, words):
    assert old in text
    with pytest.raises(sf.SchemaError) as err:
        sf.loads(text.replace(old, new, 1), "s.yaml")
    messages = [message for _, message in err.value.problems]
    assert any(words in m for m in messages), messages
    assert all("\n" not in m for m in messages)


@pytest.mark.parametrize(
    ("parts", "wall"),
    [
        ({"year": 2013, "month": 1, "day": 1, "hour": 5}, "2013-01-01T05:00:00.000000"),
        ({"year": 2013, "month": "1", "day": 1, "hour": 5, "minute": "17"}, "2013-01-01T05:17:00"),
        ({"year": 2013, "month": 1, "day": 1, "hour": 5, "minute": 17, "second": 9}, "05:17:09"),
        ({"date": "2013-01-01", "hour": 23}, "2013-01-01T23:00:00.000000"),
        ({"year": 2021, "week": 1}, "2021-01-04T00:00:00.000000"),  # ISO 8601: week 1's Monday
        ({"year": 2020, "week": 53}, "2020-12-28T00:00:00.000000"),
    ],
)
def test_finer_parts_and_iso_weeks_make_a_time(parts, wall):
    assert wall in shaping.made_time(parts, "t")


@pytest.mark.parametrize(
    ("parts", "words"),
    [
        ({"year": 2013, "month": 1, "day": 1, "hour": 25}, "hour 25 is not a whole number 0-24"),
        ({"year": 2013, "month": 1, "day": 1, "hour": 24, "minute": 1}, "hour 24 is only 24:00"),
        ({"year": 2013, "month": 1, "day": 1, "hour": 1, "minute": 60}, "minute 60"),
        ({"year": 2021, "week": 53}, "2021 has no ISO week 53"),
    ],
)
def test_a_bad_finer_part_is_named(parts, words):
    with pytest.raises(InvalidEvent, match="field 't': ") as err:
        shaping.made_time(parts, "t")
    assert words in str(err.value)


# -- the oracle: the same rows as the record with its absent values taken out by hand ---------

_TOKENS = ["NA", "NaN", "null", "", "-", "N/A"]
_VALUES = st.sampled_from([*_TOKENS, "1.5", "7", "x", None])


def _by_hand(record: dict, tokens: set[str], optional: set[str]) -> dict:
    """The reference: a token is an absent value; a null in an optional field too."""
    out = {}
    for name, value in record.items():
        if isinstance(value, str) and value in tokens:
            continue
        if value is None and name in optional:
            continue
        out[name] = value
    return out


def _schema(field: str, tokens: list[str] | None) -> str:
    declared = "" if tokens is None else f"  missing: {json.dumps(tokens, ensure_ascii=False)}\n"
    return f"""
dataset: d
event:
  time: ts
{declared}  fields:
    {quoted(field)}: {{type: text, optional: true}}
    {quoted(field + "_n")}: {{type: number, optional: true}}
    when: {{type: time, as: ts, format: epoch_ms}}
tables:
  - name: T
    pattern: TS-COLS
    families: [{{name: f, max_versions: 1}}]
    key: [{{const: c}}, {{epoch_ms: ts}}]
    columns:
      - {{family: f, qualifier: a, value: {quoted(field)}}}
      - {{family: f, qualifier: b, value: {quoted(field + "_n")}}}
      - {{family: f, qualifier: t, value: ts}}
"""


def _source(builder: generic.Builder) -> str:
    """The generated source of ``builder`` (under its shaper, when it has one)."""
    from transforms.builder import codegen

    plan = generic.build_plan(builder.schema, builder.tables, builder.tz)
    return codegen.build_function(plan).source


def _outcome(builder: generic.Builder, record: dict):
    try:
        plain = builder.rows(dict(record))
    except InvalidEvent as err:
        with pytest.raises(InvalidEvent):
            builder.framed(dict(record))
        return "dead letter", str(err).split(":")[0]
    rows, _ = builder.framed(dict(record))
    assert rows == plain
    return "rows", plain


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    field=st.sampled_from(["v", *[h for h in HOSTILE if h.strip() and h != "when"]]),
    tokens=st.lists(st.sampled_from(_TOKENS), max_size=3, unique=True),
    text=_VALUES,
    number=_VALUES,
    csv=st.booleans(),
)
def test_the_compiled_builder_agrees_with_the_values_taken_out_by_hand(
    field, tokens, text, number, csv
):
    kind = CsvText if csv else str
    record = {"when": Num("1426535612045")}
    if text is not None or not csv:
        record[field] = None if text is None else kind(text)
    if number is not None or not csv:
        record[field + "_n"] = None if number is None else (kind if csv else Num)(number)
    record = {k: v for k, v in record.items() if not (csv and v == "")}  # CSV: empty = absent
    declared = generic.Builder(sf.loads(_schema(field, tokens)))
    plain = generic.Builder(sf.loads(_schema(field, None)))
    reference = _by_hand(record, set(tokens), {field, field + "_n"})
    assert _outcome(declared, record) == _outcome(plain, reference)
    assert literals(_source(declared)) <= GENERATED_LITERALS


@pytest.mark.parametrize("token", HOSTILE)
def test_hostile_tokens_never_reach_the_generated_source(token, tmp_path):
    if token == "":
        return
    builder = generic.Builder(sf.loads(_schema("f", [token])))
    (row,) = builder({"when": Num("1426535612045"), "f": token, "f_n": Num("2")})
    assert [c.qualifier for c in row.cells] == [b"b", b"t"]
    assert literals(_source(builder)) <= GENERATED_LITERALS
    assert not (tmp_path / "pwned").exists()


def test_missing_map_entries_and_unpivoted_cells_are_no_values():
    wide = """\
dataset: w
event:
  time: year
  missing: [NA]
  unpivot: {columns: [JAN, FEB], name: month, value: v}
  fields:
    year: {type: time, format: year}
    month: text
    v: number
    t: {type: time, from: {year: year, month: month}}
tables:
  - name: W
    pattern: TS-COLS
    families: [{name: m, max_versions: 1}]
    key: [{text: month}, {epoch_ms: t}]
    columns: [{family: m, qualifier: v, value: v}]
"""
    builder = generic.Builder(sf.loads(wide))
    rows = builder(parse_csv_line("1999,NA,2.5", ("year", "JAN", "FEB")))
    assert [r.key for r in rows] == [b"FEB#%013d" % _ms(1999, 2, 1)]
    metrics = """\
dataset: m
event:
  time: ts
  missing: [NA]
  fields:
    ts: {type: time, format: epoch_ms}
    m: map
tables:
  - name: M
    pattern: TS-COLS
    families: [{name: f, max_versions: 1}]
    key: [{const: M}, {epoch_ms: ts}]
    columns: [{family: f, each: m}]
"""
    builder = generic.Builder(sf.loads(metrics))
    record = builder.csv_adapter(parse_csv_line("1426535612045,NA,3", ("ts", "cpu", "mem")))
    (row,) = builder(record)
    assert [(c.qualifier, c.value) for c in row.cells] == [(b"MEM", b"3")]
    with pytest.raises(InvalidEvent, match="missing field"):
        builder(builder.csv_adapter(parse_csv_line("1426535612045,NA,NA", ("ts", "cpu", "mem"))))


def test_a_salted_key_zero_pads_an_integer_as_the_unsalted_one_does():
    """The salted (general) key path handed every integer over as text, which a zero_pad
    segment refuses: the drafts key a record id that way behind a salt."""
    text = """\
dataset: s
event:
  time: t
  fields:
    t: {type: time, format: year}
    n: integer
tables:
  - name: S
    pattern: TS-COLS
    families: [{name: m, max_versions: 1}]
    key: [{const: S}, {salt: [t], buckets: 4}, {epoch_ms: t}, {zero_pad: n, width: 5}]
    columns: [{family: m, qualifier: n, value: n}]
"""
    (row,) = generic.Builder(sf.loads(text))(parse_json_object('{"t": 2018, "n": 42}'))
    assert row.key.endswith(b"#%013d#00042" % _ms(2018, 1, 1))
