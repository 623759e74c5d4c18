"""BuildRows and the readers as Beam transforms (TestPipeline + assert_that)."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from tests.support.jobs import compiled, write_lines
from transforms.ingest.build_rows import DEAD_LETTER, ROWS, BuildRows
from transforms.ingest.readers import ReadRecords

METRICS = compiled("server_metrics")  # the server-metrics job's builder

GOOD = b'{"hostname": "h1", "timestamp": "2015-03-16T19:53:32.045Z", "metrics": {"a": 0.50}}'


def test_build_rows_routes_good_and_bad_lines():
    lines = [
        ("f.jsonl", GOOD),
        ("f.jsonl", b"{oops"),
        ("f.jsonl", b"   "),
        ("f.jsonl", b"\xff\xfe"),
    ]
    with TestPipeline() as p:
        out = p | beam.Create(lines) | BuildRows(METRICS, "server_metrics")
        keys = (
            out[ROWS]
            | beam.FlatMap(list)
            | "Keys" >> beam.Map(lambda r: (r.table, r.key, r.cells[0].value))
        )
        assert_that(
            keys,
            equal_to(
                [("METRIC", b"h1#1426535612045", b"0.50"), ("CURRENT_METRIC", b"h1", b"0.50")]
            ),
        )
        reasons = out[DEAD_LETTER] | "Reasons" >> beam.Map(
            lambda d: (d["source"], d["raw"], d["reason"][:20], d.get("raw_base64"))
        )
        assert_that(
            reasons,
            equal_to(
                [
                    ("f.jsonl", "{oops", "invalid JSON: Expect", None),
                    ("f.jsonl", "\\xff\\xfe", "not UTF-8: byte 0 is", "//4="),
                ]
            ),
            label="DeadLetters",
        )


def _explode(record: dict):
    raise RuntimeError("bug in a builder")


def test_a_builder_bug_dead_letters_the_line_instead_of_losing_it():
    with TestPipeline() as p:
        out = p | beam.Create([("f", GOOD)]) | BuildRows(_explode, "x")
        assert_that(out[ROWS] | beam.FlatMap(list), equal_to([]))
        assert_that(
            out[DEAD_LETTER] | beam.Map(lambda d: d["reason"]),
            equal_to(["unexpected error: RuntimeError: bug in a builder"]),
            label="Reason",
        )


def test_read_records_mixes_json_and_csv_with_per_file_headers(tmp_path):
    write_lines(tmp_path / "a.jsonl", [GOOD])
    write_lines(tmp_path / "b.csv", ["timestamp,hostname,a", "2015-03-16T19:53:32.045Z,h2,0.70"])
    write_lines(tmp_path / "c.csv", ["hostname,a,timestamp", "h3,0.90,2015-03-16T19:53:32.045Z"])
    patterns = [str(tmp_path / "*.jsonl"), str(tmp_path / "*.csv")]
    with TestPipeline() as p:
        out = p | ReadRecords(patterns) | BuildRows(METRICS, "server_metrics", METRICS.csv_adapter)
        current = (
            out[ROWS] | beam.FlatMap(list) | beam.Filter(lambda r: r.table == "CURRENT_METRIC")
        )
        assert_that(
            current | beam.Map(lambda r: (r.key, r.cells[0].qualifier, r.cells[0].value)),
            equal_to([(b"h1", b"A", b"0.50"), (b"h2", b"A", b"0.70"), (b"h3", b"A", b"0.90")]),
        )
        assert_that(out[DEAD_LETTER], equal_to([]), label="NoDeadLetters")


def test_an_oversize_cell_is_dead_lettered_not_written():
    big = "1" + "0" * (10 * 1024 * 1024)  # a number whose text is over 10 MB
    line = (
        '{"hostname": "h1", "timestamp": "2015-03-16T19:53:32.045Z", "metrics": {"a": '
        + big
        + ', "b": 1}}'
    ).encode()
    with TestPipeline() as p:
        out = p | beam.Create([("f", line), ("f", GOOD)]) | BuildRows(METRICS, "m")
        rows = out[ROWS] | beam.FlatMap(list)
        assert_that(rows | beam.Map(lambda r: r.key), equal_to([b"h1#1426535612045", b"h1"]))
        assert_that(
            out[DEAD_LETTER] | beam.Map(lambda d: d["reason"]),
            equal_to(
                [
                    "METRIC METRIC:b'A': value of 10,485,761 bytes is over Bigtable's 10 MB "
                    "cell limit"
                ]
            ),
            label="Reason",
        )


def test_streaming_dead_letters_land_in_files(tmp_path):
    import json

    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
    from apache_beam.testing.test_stream import TestStream
    from apache_beam.utils.timestamp import Timestamp

    from transforms.ingest.dead_letters import WriteDeadLetterFiles

    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = True
    stream = (
        TestStream()
        .add_elements([{"reason": "a", "raw": "1"}])
        .advance_watermark_to(Timestamp(100))
        .add_elements([{"reason": "b", "raw": "2"}, {"reason": "c", "raw": "3"}])
        .advance_watermark_to_infinity()
    )
    with TestPipeline(options=options) as p:
        _ = p | stream | WriteDeadLetterFiles(str(tmp_path / "dead"))
    records = [
        json.loads(line)
        for path in sorted(tmp_path.glob("dead-*.jsonl"))
        for line in path.read_text().splitlines()
    ]
    assert sorted(r["reason"] for r in records) == ["a", "b", "c"]


def test_the_collector_is_raised_for_blocks_of_rows_and_never_lowered():
    import gc

    from transforms.ingest import build_rows

    saved = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        build_rows.tune_gc()
        assert gc.get_threshold() == (build_rows.GC_ALLOCATIONS, 10, 10)
        gc.set_threshold(build_rows.GC_ALLOCATIONS * 5, 3, 4)
        build_rows.tune_gc()
        assert gc.get_threshold() == (build_rows.GC_ALLOCATIONS * 5, 3, 4)
        gc.set_threshold(0)  # disabled by its owner: left alone
        build_rows.tune_gc()
        assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*saved)
