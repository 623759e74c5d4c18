"""Every read gives back exactly what went in, as an invariant: for each column pattern and
schema feature, hypothesis generates events, the generic job ingests them on the emulator, and
`btts query --schema` reads them back (JSON and CSV, every declared query form) to records equal
to the events, key fields included.

Features covered: TS-COLS, TS-BLOB (JSON and protobuf), TB-CELL, TB-COL with ``rows_per``,
``rows_per`` with the value in a column, map fields, salted keys, reversed timestamps, a promoted
constant, tenants, times before 1970 (``cell_timestamp: offset``), optional values, and the
input side: unpivoted wide records, a time made from several fields, ignored extra fields.
"""

from __future__ import annotations

import csv
import io
import json
import uuid
from dataclasses import dataclass, field
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from btts import config
from btts_cli import main as cli
from tests.support.jobs import run_job, write_lines
from tests.support.serving import Server, grafana_body, grafana_query

HEAD = """\
dataset: rt
event:
  time: ts
  fields:
    dev: {type: text, max_length: 16, whitespace: none}
    ts: {type: time}
    temp: number
    rh: {type: number, optional: true}
"""
FAMILY = "    families: [{name: m, max_versions: 1000}]\n"


@dataclass(frozen=True)
class Case:
    """One pattern or feature: its tables and queries, and what a record holds."""

    tables: str
    queries: list[tuple[str, list[str]]]  # (query name, its --FIELD flags from the event)
    values: tuple[str, ...] = ("temp", "rh")  # the record fields equal to the event's
    head: str = HEAD
    keyed: tuple[str, ...] = ("dev",)  # the key fields a record must hold
    line: object = None  # event → input line (default: JSON)
    extra: dict = field(default_factory=dict)  # per-case options


def _table(pattern: str, key: str, columns: str, extra: str = "") -> str:
    return (
        f"tables:\n  - name: RT\n    pattern: {pattern}\n{FAMILY}{extra}"
        f"    key: {key}\n    columns: {columns}\n"
    )


_COLS = "[{family: m, qualifier: t, value: temp}, {family: m, qualifier: h, value: rh}]"
_BY_DEV = [("by_dev", ["dev"])]
_Q = "queries:\n  - {name: by_dev, table: RT, select: [dev]}\n"
# every other read form: a prefix, the whole table (each entity's records picked from it)
_FORMS = [("by_dev", ["dev"]), ("dev_prefix", ["dev"]), ("whole", [])]
_QF = _Q + (
    "  - {name: dev_prefix, table: RT, select: [dev], read: prefix}\n"
    "  - {name: whole, table: RT, read: table}\n"
)

CASES = {
    "ts_cols": Case(_table("TS-COLS", "[{text: dev}, {epoch_ms: ts}]", _COLS) + _QF, _FORMS),
    "ts_blob_json": Case(
        _table(
            "TS-BLOB",
            "[{text: dev}, {epoch_ms: ts}]",
            "[{family: m, qualifier: e, value: {json: [temp, rh]}}]",
        )
        + _Q,
        _BY_DEV,
    ),
    "ts_blob_protobuf": Case(
        _table(
            "TS-BLOB",
            "[{text: dev}, {epoch_ms: ts}]",
            "[{family: m, qualifier: e, value: {protobuf: protos.balloon_pb2.BalloonMeasurement, "
            "fields: {balloon_id: dev, event_time_ms: ts, pressure: temp}}}]",
        )
        + _Q,
        _BY_DEV,
        values=("temp",),
    ),
    "tb_cell": Case(
        _table("TB-CELL", "[{text: dev}, {time: ts, format: day}]", _COLS) + _QF, _FORMS
    ),
    "tb_col_rows_per": Case(
        _table(
            "TB-COL",
            "[{text: dev}, {text: metric}, {time: ts, format: week}]",
            "[{family: m, qualifier: {field: value}, value: {const: ''}}]",
            "    rows_per: {fields: [temp, rh], name: metric, value: value}\n",
        )
        + "queries:\n  - {name: by_dev, table: RT, select: [dev], per: metric}\n",
        _BY_DEV,
        keyed=("dev",),
    ),
    "rows_per_value_column": Case(
        _table(
            "TS-COLS",
            "[{text: dev}, {text: metric}, {epoch_ms: ts}]",
            "[{family: m, qualifier: v, value: value}]",
            "    rows_per: {fields: [temp, rh], name: metric, value: value}\n",
        )
        + "queries:\n  - {name: by_dev, table: RT, select: [dev], per: metric}\n",
        _BY_DEV,
    ),
    "salted": Case(
        _table(
            "TS-COLS",
            "[{salt: [dev], buckets: 3}, {time: ts, format: yyyymmddhhmmssmmm}, {text: dev}]",
            _COLS,
        )
        + "queries:\n  - {name: every_dev, table: RT}\n",
        [("every_dev", [])],  # one range per bucket, merged; each dev's records picked here
    ),
    "reversed": Case(_table("TS-COLS", "[{text: dev}, {reverse_ts: ts}]", _COLS) + _Q, _BY_DEV),
    "promoted": Case(
        _table("TS-COLS", "[{const: RT}, {text: dev}, {epoch_ms: ts}]", _COLS) + _Q, _BY_DEV
    ),
    "tenant": Case(
        _table("TS-COLS", "[{tenant: dev}, {epoch_ms: ts}]", _COLS)
        + "queries:\n  - {name: by_dev, table: RT, select: [dev]}\n",
        _BY_DEV,
    ),
    "era_offset": Case(
        _table(
            "TS-COLS",
            "[{text: dev}, {time: ts, format: yyyymmddhhmmssmmm}]",
            _COLS,
            "    cell_timestamp: offset\n",
        )
        + _Q,
        _BY_DEV,
        extra={"early": True},
    ),
}


def _map_case() -> Case:
    head = HEAD.replace("    rh: {type: number, optional: true}\n", "    rh: map\n")
    tables = _table("TS-COLS", "[{text: dev}, {epoch_ms: ts}]", "[{family: m, qualifier: t, "
                    "value: temp}, {family: m, each: rh}]")  # fmt: skip
    return Case(tables + _Q, _BY_DEV, head=head, extra={"map": True})


CASES["map"] = _map_case()


def _wide_case() -> Case:
    """Unpivot + a time made from a date and a time of day + ignored extra columns (CSV)."""
    head = """\
dataset: rt
event:
  time: ts
  extra_fields: ignore
  unpivot: {columns: [temp, rh], name: metric, value: v}
  fields:
    dev: {type: text, max_length: 16, whitespace: none}
    day: text
    clock: text
    ts: {type: time, from: {date: day, time: clock}, earliest: "1700-01-01"}
    metric: {type: text, whitespace: none}
    v: number
"""
    tables = _table(
        "TS-COLS", "[{text: dev}, {text: metric}, {time: ts, format: yyyymmddhhmmssmmm}]",
        "[{family: m, qualifier: v, value: v}]", "    cell_timestamp: offset\n",
    )  # fmt: skip
    queries = "queries:\n  - {name: by_dev, table: RT, select: [dev, metric]}\n"
    return Case(tables + queries, [], head=head, extra={"wide": True, "early": True})


CASES["wide_made_time"] = _wide_case()

_NAMES = st.text(alphabet="abcxyz019", min_size=1, max_size=6)
_DECIMAL = st.decimals(min_value=-1000, max_value=1000, places=2, allow_nan=False).map(str)


@st.composite
def events(draw, early: bool = False, with_map: bool = False) -> list[dict]:
    low = -8_000_000_000_000 if early else 100_000_000_000
    times = st.integers(min_value=low, max_value=4_000_000_000_000)
    if early:  # whole seconds of the day in the wide case's clock (HH:MM:SS.fff)
        times = times.map(lambda t: t - t % 1000)
    keys = draw(st.lists(st.tuples(_NAMES, times), min_size=1, max_size=12, unique=True))
    out = []
    for dev, ts in keys:
        event = {"dev": dev, "ts": ts, "temp": draw(_DECIMAL)}
        if with_map:
            names = draw(st.lists(st.sampled_from(["CPU", "MEM", "IO"]), min_size=1, unique=True))
            event["rh"] = {n: draw(_DECIMAL) for n in names}
        elif draw(st.booleans()):
            event["rh"] = draw(_DECIMAL)
        out.append(event)
    return out


def _json_line(event: dict) -> str:
    parts = [
        f'"dev": {json.dumps(event["dev"])}',
        f'"ts": {event["ts"]}',
        f'"temp": {event["temp"]}',
    ]
    if isinstance(event.get("rh"), dict):
        parts.append('"rh": {' + ", ".join(f'"{k}": {v}' for k, v in event["rh"].items()) + "}")
    elif "rh" in event:
        parts.append(f'"rh": {event["rh"]}')
    return "{" + ", ".join(parts) + "}"


def _ms_text(ms: int) -> tuple[str, str]:
    import datetime as dt

    moment = dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%d").rjust(10, "0"), moment.strftime("%H:%M:%S.%f")[:12]


def _wide_lines(batch: list[dict]) -> list[str]:
    lines = ["dev,day,clock,temp,rh,unused"]
    for e in batch:
        day, clock = _ms_text(e["ts"])
        lines.append(f"{e['dev']},{day},{clock},{e['temp']},{e.get('rh', '')},x")
    return lines


_TIMED = ("by_dev", "every_dev")  # the queries reading a time window


def _read(capsys, target, schema, name: str, flags: list[str], fmt: str) -> list[dict]:
    capsys.readouterr()
    window = ["--start", "1700-01-01", "--end", "2100-01-01"] if name in _TIMED else []
    argv = ["query", "--schema", str(schema), name, *flags, *window, "--format", fmt,
            "--instance", target.instance]  # fmt: skip
    assert cli.main(argv) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    if fmt == "json":
        return json.loads(out, parse_float=Decimal)
    return list(csv.DictReader(io.StringIO(out)))


def _number(value: object) -> str:
    """A value's exact text: ``600.60`` must come back as ``600.60``, not ``600.6``."""
    return str(value)


def _expected(case: Case, batch: list[dict], entity: dict) -> dict:
    """ts_ms → the fields a record of ``entity`` must hold, from the events alone."""
    out = {}
    for e in batch:
        if any(e[k] != v for k, v in entity.items() if k in e):
            continue
        if case.extra.get("wide"):
            if entity["metric"] in e:
                out[e["ts"]] = {"v": _number(e[entity["metric"]])}
            continue
        values = {"temp": _number(e["temp"])}
        if "rh" in case.values and "rh" in e:
            rh = e["rh"]
            values["rh"] = (
                {k: _number(v) for k, v in rh.items()} if isinstance(rh, dict) else _number(rh)
            )
        out[e["ts"]] = values
    return out


def _got(case: Case, records: list[dict], entity: dict, fmt: str) -> dict:
    out = {}
    for r in records:
        for name, value in entity.items():  # the key's fields are in every record
            if name in case.keyed or case.extra.get("wide"):
                assert str(r.get(name)) == value, (name, r)
        assert entity["dev"] in r["key"], r  # the row key(s) it was read from (--keys)
        fields = ("v",) if case.extra.get("wide") else case.values
        values = {}
        for f in fields:
            if fmt == "csv":
                entries = {
                    k.split(".", 1)[1]: v for k, v in r.items() if k.startswith(f + ".") and v
                }
                if entries:
                    values[f] = {k: _number(v) for k, v in entries.items()}
                elif r.get(f):
                    values[f] = _number(r[f])
            elif isinstance(r.get(f), dict):
                values[f] = {k: _number(v) for k, v in r[f].items()}
            elif r.get(f) is not None:
                values[f] = _number(r[f])
        out[int(r["ts_ms"])] = values
    return out


# Served by ``btts serve`` as OpenTSDB metrics: ``rt.temp`` tagged by dev (tenant keys are
# served pinned to one tenant, the made-time case keys by metric name; /api/query takes no
# time before 1970, so the era case is read above only).
_NOT_SERVED = ("tenant", "wide_made_time", "map", "era_offset")


def _served(target, schema, batch: list[dict]) -> None:
    """Each dev's temp as `btts serve` answers it equals the events'."""
    server = Server(target, "--schema", str(schema))
    try:
        for dev in sorted({e["dev"] for e in batch}):
            # by value: the server's number text is its own (it sends 0.00 as 0)
            want = {str(e["ts"]): Decimal(e["temp"]) for e in batch if e["dev"] == dev}
            query = grafana_query("rt.temp", "none", tags={"dev": dev})
            body = grafana_body([query], 0, 4_100_000_000_000)
            status, answer = server.call("/api/query", body)
            assert status == 200, answer
            got = {ms: Decimal(str(v)) for series in answer for ms, v in series["dps"].items()}
            assert got == want, (dev, answer)
    finally:
        server.stop()


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_pattern_reads_back_what_went_in(bigtable_emulator, tmp_path_factory, capsys, name):
    case = CASES[name]
    early = bool(case.extra.get("early"))

    # each example is a pipeline run: a few per pattern, no shrinking (the failure is printed)
    @settings(
        max_examples=3,
        deadline=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
    )
    @given(batch=events(early=early, with_map=bool(case.extra.get("map"))))
    def round_trip(batch):
        work = tmp_path_factory.mktemp(name)
        schema = work / "rt.yaml"
        head = case.head
        if early:
            early_ts = 'ts: {type: time, format: epoch_ms, earliest: "1700-01-01"}'
            head = head.replace("ts: {type: time}", early_ts)
        schema.write_text(head + case.tables, encoding="utf-8")
        target = config.Target("test-project", f"rt{uuid.uuid4().hex[:10]}")
        if case.extra.get("wide"):
            source = write_lines(work / "in.csv", _wide_lines(batch))
            entities = [{"dev": d, "metric": m} for d in {e["dev"] for e in batch}
                        for m in ("temp", "rh")]  # fmt: skip
            queries = [("by_dev", ["dev", "metric"])]
        else:
            source = write_lines(work / "in.jsonl", [_json_line(e) for e in batch])
            entities = [{"dev": d} for d in {e["dev"] for e in batch}]
            queries = case.queries
        report = run_job("generic", target, source, work / "dead", [f"--schema={schema}",
                         "--max_bad_records=0"])  # fmt: skip
        assert report.counters.get("dead_letters", 0) == 0
        for query, selects in queries:
            for entity in entities:
                flags = [x for k in selects for x in (f"--{k}", entity[k])]
                want = _expected(case, batch, entity)
                for fmt in ("json", "csv"):
                    records = _read(capsys, target, schema, query, flags, fmt)
                    if not selects:  # the whole table: this entity's records
                        records = [r for r in records if r["dev"] == entity["dev"]]
                    assert _got(case, records, entity, fmt) == want, (name, fmt, entity)
        if name not in _NOT_SERVED:
            _served(target, schema, batch)

    round_trip()
