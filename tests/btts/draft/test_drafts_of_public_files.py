"""``btts init``: a schema drafted from public datasets of many shapes lands every record, and
every value reads back equal (tests/data/init/README.md says where each file comes from).

Each case runs as a user would: ``btts init FILE -o s.yaml`` (exit 0: the loader takes the draft
and the advisor finds no error), then the generic job with ``--create_tables`` against the test
emulator (no dead letter), then ``btts query --schema s.yaml --table T --format json``: the
records read back hold exactly the source's values (read here with the standard library, not
with the code under test) and its first and last times.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections import Counter
from pathlib import Path

import pytest
import yaml

from btts import config
from btts.draft import draft, review
from btts.draft import sample as sample_mod
from btts_cli import main as cli
from tests.support import REPO
from tests.support.jobs import read_dead_letters, run_job
from tests.support.source_records import record_values, source_records
from transforms import schema as schema_lib

DATA = REPO / "tests" / "data" / "init"

# file → (first time, last time) read back, in the time order of the key
CASES = {
    "sunspots.csv": ("1700-01-01T00:00:00.000Z", "2008-01-01T00:00:00.000Z"),
    "crimea.json": ("1854-04-01T00:00:00.000Z", "1856-03-01T00:00:00.000Z"),
    "driving.json": ("1956-01-01T00:00:00.000Z", "2010-01-01T00:00:00.000Z"),
    "iowa-electricity.csv": ("2001-01-01T00:00:00.000Z", "2017-01-01T00:00:00.000Z"),
    "stocks.csv.gz": ("2000-01-01T00:00:00.000Z", "2010-03-01T00:00:00.000Z"),
    "seattle-weather.parquet": ("2012-01-01T00:00:00.000Z", "2015-12-31T00:00:00.000Z"),
    "seattle-temps.csv": ("2010-01-01T00:00:00.000Z", "2010-03-25T08:00:00.000Z"),
    "us-employment.csv": ("2006-01-01T00:00:00.000Z", "2015-12-01T00:00:00.000Z"),
    "co2.csv": ("1958-03-29T00:00:00.000Z", "2001-12-29T00:00:00.000Z"),
    "wheat.jsonl": ("1565-01-01T00:00:00.000Z", "1820-01-01T00:00:00.000Z"),
    "ohlc.json": ("2009-06-01T00:00:00.000Z", "2009-07-31T00:00:00.000Z"),
    "sensors.jsonl": ("2024-05-01T10:00:00.001Z", "2024-05-01T10:01:39.751Z"),
    "sf-temps-epoch.jsonl": ("2010-01-01T00:00:00.000Z", "2010-02-11T15:00:00.000Z"),
    "sunspots-floats.json": ("1700-01-01T00:00:00.000Z", "2008-01-01T00:00:00.000Z"),
    "macrodata.csv": ("1959-01-01T00:00:00.000Z", "2009-07-01T00:00:00.000Z"),
    "elnino.csv": ("1950-01-01T00:00:00.000Z", "2010-12-01T00:00:00.000Z"),
}


# What issue 43 adds to schema files; a draft using it is skipped until the loader has it.
def _unpivoted(records: list[dict], unpivot: dict | None) -> list[dict]:
    """The events a wide file's records become (one per listed column holding a value)."""
    if not unpivot:
        return records
    columns, name, value = unpivot["columns"], unpivot["name"], unpivot["value"]
    out = []
    for record in records:
        rest = {k: v for k, v in record.items() if k not in columns}
        out += [
            {**rest, name: c, value: record[c]} for c in columns if record.get(c) not in (None, "")
        ]
    return out


def _draft_file(name: str, tmp_path: Path, capsys) -> tuple[Path, dict]:
    source = DATA / name
    result = draft([str(source)])
    problems, _ = review(result.text)
    assert not problems, problems
    schema_path = tmp_path / "s.yaml"
    code = cli.main(["init", str(source), "-o", str(schema_path)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "0 open error" in err or "no error" in err
    return schema_path, yaml.safe_load(schema_path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def landed(bigtable_emulator, tmp_path_factory):
    """``land(name, capsys)``: the file drafted by ``btts init`` (asserted as
    :func:`_draft_file` does) and landed by the generic job on a fresh instance, no dead letter,
    once per module: (target, schema path, drafted schema). The read-back test and the serve
    test of a file read the same landing."""
    done: dict[str, tuple[config.Target, Path, dict]] = {}

    def land(name: str, capsys) -> tuple[config.Target, Path, dict]:
        if name not in done:
            work = tmp_path_factory.mktemp("init")
            schema_path, drafted = _draft_file(name, work, capsys)
            target = config.Target("test-project", f"t{uuid.uuid4().hex[:12]}")
            run_job("generic", target, DATA / name, work / "dead", [f"--schema={schema_path}"])
            assert read_dead_letters(work / "dead") == []
            capsys.readouterr()
            done[name] = (target, schema_path, drafted)
        return done[name]

    return land


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_drafted_schema_lands_every_record_and_reads_back_equal(name, landed, capsys):
    target, schema_path, drafted = landed(name, capsys)
    source = DATA / name

    table = drafted["tables"][0]["name"]
    where = ["--project", target.project, "--instance", target.instance]
    argv = ["query", "--schema", str(schema_path), "--table", table, "--format", "json"]
    assert cli.main([*argv, *where]) == 0
    back = json.loads(capsys.readouterr().out)

    time_field = drafted["event"]["time"]
    spec = drafted["event"]["fields"][time_field]
    skip = {time_field, *(spec.get("from") or {}).values()}
    records = _unpivoted(source_records(source), drafted["event"].get("unpivot"))
    expected = Counter(record_values(r, skip) for r in records)
    got = Counter(record_values(r, {"time", "ts_ms", "key", time_field}) for r in back)
    assert got == expected
    assert (back[0]["time"], back[-1]["time"]) == CASES[name]


def test_every_file_is_sampled_in_the_format_the_job_reads_it():
    from transforms.ingest import readers

    for path in sorted(DATA.iterdir()):
        if path.name in CASES:
            fmt, compression = readers.detect(str(path))
            compression = "" if compression == "uncompressed" else compression
            assert sample_mod.detect(str(path)) == (fmt, compression), path.name


def test_the_commands_output_is_the_schema_and_its_report_goes_to_stderr(capsys):
    assert cli.main(["init", str(DATA / "iowa-electricity.csv"), "--query", "source"]) == 0
    out, err = capsys.readouterr()
    schema = schema_lib.loads(out, "iowa.yaml")
    assert [s.field for s in schema.table("IOWA_ELECTRICITY").decl.key.segments] == [
        "source",
        "year",
    ]
    assert "btts init: advisor:" in err and "advisor" not in out.split("advisor:")[0]


# -- through btts serve (the OpenTSDB API Grafana reads) ----------------------------------------

SERVED = {
    # file → (metric field, entity tag, time column, how the source writes the time)
    "stocks.csv.gz": ("price", "symbol", "date", "%b %d %Y"),
    "iowa-electricity.csv": ("net_generation", "source", "year", "%Y-%m-%d"),
    "sensors.jsonl": ("temperature_c", "device", "ts", "%Y-%m-%dT%H:%M:%S.%fZ"),
}


def _ms(text: str, fmt: str) -> int:
    moment = dt.datetime.strptime(text, fmt).replace(tzinfo=dt.timezone.utc)
    return int(moment.timestamp() * 1000)


@pytest.mark.parametrize("name", sorted(SERVED))
def test_btts_serve_answers_every_drafted_value(name, landed, capsys):
    from tests.support import serving

    field, tag, column, fmt = SERVED[name]
    target, schema_path, drafted = landed(name, capsys)
    expected: dict[str, dict[int, float]] = {}
    for record in source_records(DATA / name):
        series = expected.setdefault(record[tag], {})
        series[_ms(record[column], fmt)] = float(record[field])
    times = [t for series in expected.values() for t in series]
    query = serving.grafana_query(f"{drafted['dataset']}.{field}", "none", tags={tag: "*"})
    server = serving.Server(target, "--schema", str(schema_path))
    try:
        status, answer = server.call(
            "/api/query", serving.grafana_body([query], min(times), max(times) + 1)
        )
    finally:
        server.stop()
    assert status == 200, answer
    got: dict[str, dict[int, float]] = {}
    for series in answer:
        points = got.setdefault(series["tags"][tag], {})
        points.update({int(t): float(v) for t, v in series["dps"].items()})
    assert got == expected
