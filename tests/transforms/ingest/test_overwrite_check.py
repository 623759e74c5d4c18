"""The overwrite check on the emulator: records of one run that write one cell with different
values are found (how many, the first pair of lines, the cell), the run fails after writing
unless --accept_overwrites, exact duplicates are counted as such, the landed line counts only
records whose cells survive, and distinct rows are exact, with two worker processes too. Each
test reads back what landed."""

from __future__ import annotations

import gzip
import json
import os
import random

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from btts.query import engine
from pipelines import common, load
from pipelines import server_metrics as metrics_job
from pipelines.common.report import JobFailed
from pipelines.common.runner import prepare
from tests.support.jobs import run_job, write_lines
from transforms.ingest import overwrite_check

MP = ("--direct_num_workers=2", "--direct_running_mode=multi_processing")

# The issue's file: a daily series (Year, Month, Day) drafted with its time from the year and
# the month only, so each month's days write one row, one cell per column, again and again.
DAILY_SCHEMA = """\
dataset: airquality
event:
  time: month_start
  fields:
    Ozone: {type: integer, optional: true}
    Temp: integer
    Month: {type: integer, min: 1, max: 12}
    Day: {type: integer, min: 1, max: 31}
    Year: integer
    month_start: {type: time, from: {year: Year, month: Month}}
tables:
  - name: AIRQUALITY
    pattern: TS-COLS
    families:
      - {name: m, max_versions: 1}
    key:
      - {const: airquality}
      - epoch_ms: month_start
    columns:
      - {family: m, qualifier: Ozone, value: Ozone}
      - {family: m, qualifier: Temp, value: Temp}
      - {family: m, qualifier: Day, value: Day}
"""


def _daily(tmp_path):
    rnd = random.Random(1)
    lines = ["Ozone,Temp,Month,Day,Year"]
    for month, days in ((5, 31), (6, 30), (7, 31), (8, 31), (9, 30)):
        lines += [
            f"{rnd.randint(1, 150)},{rnd.randint(56, 97)},{month},{d},1973"
            for d in range(1, days + 1)
        ]
    schema = tmp_path / "daily.yaml"
    schema.write_text(DAILY_SCHEMA)
    return schema, write_lines(tmp_path / "daily.csv", lines)


def test_the_issues_daily_file_fails_then_lands_last_wins_when_accepted(target, tmp_path, capsys):
    schema, source = _daily(tmp_path)
    flags = [f"--schema={schema}"]
    with pytest.raises(JobFailed) as failed:
        run_job("generic", target, source, tmp_path / "dead", flags)
    message = str(failed.value)
    assert "153 records wrote 15 cells that another record of this run wrote" in message
    assert f"(first: {source}:2 and {source}:3 both write AIRQUALITY row " in message
    assert "column m:Ozone at 1973-05-01T00:00:00.000Z" in message
    assert "--accept_overwrites" in message
    out = capsys.readouterr().out
    assert "(153 row writes into 5 distinct rows)" in out
    assert "0 of 153 records landed (0 dead letters, 0.00%; 153 overwrote one another)" in out
    rows = engine.read_rows(target, "AIRQUALITY", latest_only=True)
    assert len(rows) == 5  # the silent loss the issue saw: five rows for 153 days
    days = {row.key: int(row.latest()[("m", b"Day")]) for row in rows}
    assert all(1 <= day <= 31 for day in days.values())  # one day's value survived, which one?

    report = run_job("generic", target, source, tmp_path / "dead2", [*flags, "--accept_overwrites"])
    out = capsys.readouterr().out
    assert "accepted (--accept_overwrites): the last write to arrive wins" in out
    assert (
        report.landed
        == "0 of 153 records landed (0 dead letters, 0.00%; 153 overwrote one another)"
    )
    assert (
        report.counters["overwrite_cells"] == 15
        and report.counters["distinct_rows_AIRQUALITY"] == 5
    )


def _metric(host: str, second: int, **values: float) -> str:
    stamp = f"2015-03-16T19:53:{second:02d}.000Z"
    return json.dumps({"hostname": host, "timestamp": stamp, "metrics": values})


MIXED = [
    _metric("web1", 1, cpu=1, mem=2),
    _metric("web1", 1, disk=3),  # the same row and time, other columns: no overwrite
    _metric("web2", 1, cpu=1),
    _metric("web3", 1, cpu=1),
    _metric("web2", 1, cpu=1),  # a resent message: the same cells again
    _metric("web3", 1, cpu=5, mem=1),  # web3's cpu at second 1 again, another value
    *(_metric("web4", s, cpu=s) for s in range(2, 7)),
]


def test_duplicates_land_conflicts_do_not_and_partial_rows_are_no_overwrite(
    target, tmp_path, capsys
):
    source = write_lines(tmp_path / "m.jsonl", MIXED)
    with pytest.raises(JobFailed) as failed:
        run_job("server_metrics", target, source, tmp_path / "dead")
    counts = failed.value.report.counters
    # web3's two records: its cpu in METRIC and in CURRENT_METRIC, 2 cells
    assert (counts["overwrite_records"], counts["overwrite_cells"]) == (2, 2)
    assert counts["duplicate_records"] == 1
    assert counts["distinct_rows_METRIC"] == 8 and counts["distinct_rows_CURRENT_METRIC"] == 4
    assert counts["overwrite_check_cpu_us"] > 0  # what the check's own code cost the run
    assert counts["series_index_cpu_us"] > 0  # and the index's, outside the builder's fold
    assert f"first: {source}:4 and {source}:6 both write METRIC row 'web3#1426535581000'" in str(
        failed.value
    )
    assert failed.value.report.landed.startswith("9 of 11 records landed")
    out = capsys.readouterr().out
    assert "repeated                   1   records repeat another record" in out
    stored = {row.key: row.latest() for row in engine.read_rows(target, "METRIC")}
    assert stored[b"web1#1426535581000"] == {
        ("METRIC", b"CPU"): b"1",
        ("METRIC", b"MEM"): b"2",
        ("METRIC", b"DISK"): b"3",
    }
    assert stored[b"web3#1426535581000"][("METRIC", b"CPU")] in (b"1", b"5")
    assert len(stored) == 8


def _spread(tmp_path, files: int) -> list:
    """Metrics in ``files`` files, each conflict and each duplicate split over two files."""
    paths = []
    for index in range(files):
        lines = [_metric(f"h{index}-{n}", n % 60, cpu=n) for n in range(40)]
        partner = (index + 1) % files
        lines.append(_metric(f"h{partner}-0", 0, cpu=99))  # h{partner}-0 at second 0: cpu=0
        lines.append(_metric(f"h{partner}-1", 1, cpu=1))  # exactly as in the partner's file
        paths.append(write_lines(tmp_path / f"part{index}.jsonl", lines))
    return paths


def test_counts_are_exact_with_two_worker_processes(target, tmp_path):
    """Four files read by two worker processes (each must build rows: their PIDs are checked),
    every conflict and duplicate between two files: the counts of one process."""
    paths = _spread(tmp_path, 4)
    argv = [
        f"--input={','.join(map(str, paths))}",
        f"--dead_letter={tmp_path / 'dead'}",
        f"--bigtable_project={target.project}",
        f"--bigtable_instance={target.instance}",
        "--create_tables",
        *MP,
    ]
    options = common.parse_args(argv, "test", "", metrics_job.OPTION_CLASSES)
    config = common.job_config(options, metrics_job.JOB)
    prepare(config)
    pipeline = common.new_pipeline(options, config.runner)
    built = common.ingest(pipeline, config)
    pids = (
        built["rows"]
        | beam.Map(lambda _batch: os.getpid())
        | beam.Distinct()
        | beam.combiners.Count.Globally()
    )
    assert_that(pids, equal_to([2]))  # both workers built rows
    result = pipeline.run()
    result.wait_until_finish()
    counts = common.counters(result)
    assert counts["events_valid"] == 4 * 42
    assert (counts["overwrite_records"], counts["overwrite_cells"]) == (8, 8)
    assert counts["duplicate_records"] == 4
    assert counts["distinct_rows_METRIC"] == 4 * 40
    assert counts["distinct_rows_CURRENT_METRIC"] == 4 * 40
    assert counts["overwrite_check_cpu_us"] > 0  # both workers' and the passes' after them
    assert len(engine.read_rows(target, "METRIC")) == 4 * 40


def _write_formats(tmp_path, lines: list[str]) -> dict[str, str]:
    """The same records as JSON lines (gzip), one JSON array, CSV and Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = [json.loads(line) for line in lines]
    gz = tmp_path / "t.jsonl.gz"
    gz.write_bytes(gzip.compress("\n".join(lines).encode() + b"\n"))
    array = tmp_path / "t.json"
    array.write_text("[\n" + ",\n".join(lines) + "\n]\n")
    csv = tmp_path / "t.csv"
    csv.write_text(
        "symbol,ts,price,size\n"
        + "".join(f"{r['symbol']},{r['ts']},{r['price']},{r['size']}\n" for r in records)
    )
    parquet = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pylist(records), parquet, row_group_size=3)
    return {"jsonl.gz": str(gz), "json_array": str(array), "csv": str(csv), "parquet": str(parquet)}


TICKS = [
    json.dumps({"symbol": s, "ts": f"2020-01-01T00:00:0{t}Z", "price": p, "size": 1})
    for s, t, p in [("A", 1, 1.5), ("A", 2, 1.6), ("B", 1, 2.0), ("A", 1, 1.5),
                    ("B", 1, 2.5), ("C", 3, 3.0), ("A", 2, 1.7), ("B", 1, 2.0)]
]  # fmt: skip


def test_btts_check_finds_overwrites_in_every_format_without_writing(tmp_path, capsys, monkeypatch):
    """--validate_only reads the candidates again whatever the format: the same findings; and
    the same again when they are compared a share of their row ids at a time."""
    schema = "docs/schemas/ts-cols-stock-ticks.yaml"
    formats = _write_formats(tmp_path, TICKS)
    for kind, path in [*formats.items(), ("in passes", formats["jsonl.gz"])]:
        if kind == "in passes":
            monkeypatch.setattr(
                overwrite_check, "RESOLVE_ROWS", 2
            )  # three row ids twice: three passes
            kind = "jsonl.gz"
        with pytest.raises(JobFailed) as failed:
            load("generic").run([f"--schema={schema}", f"--input={path}", "--validate_only"])
        counts = failed.value.report.counters
        # A@1 twice (same), A@2 1.6/1.7, B@1 2.0/2.5/2.0: five records in conflicts
        assert (counts["overwrite_records"], counts["overwrite_cells"]) == (5, 2), kind
        assert counts["duplicate_records"] == 1, kind
        assert counts["distinct_rows_TICK"] == 4, kind
        out = capsys.readouterr().out
        assert "8 of 8 records valid (validate only: nothing written)" in out, kind
        # records 3 and 5: lines 3 and 5, one further on after a header or a '['
        shift = kind in ("csv", "json_array")
        first = {"parquet": f"{path} (record 3) and {path} (record 5)"}.get(
            kind, f"{path}:{3 + shift} and {path}:{5 + shift}"
        )
        assert f"first: {first} both write TICK row 'B#1577836801000'" in out, (kind, out)
