"""No column is ever lost (issue 57): every reader refuses, or keeps apart, two columns or keys
of one name. CSV: every record of a header that repeats a name is a dead letter naming the fix,
unless each column is declared by position (``from: N``), then both land. JSON lines and JSON
arrays: an object repeating a key is a dead letter. Parquet and Avro: a file with two columns
of one name is refused whole (the job fails naming it), never read with one of them gone."""

from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from tests.support.jobs import write_lines
from transforms import schema as schema_lib
from transforms.builder.builder import Builder
from transforms.ingest.build_rows import DEAD_LETTER, ROWS, BuildRows
from transforms.ingest.columnar import RepeatedColumn, columnar_names
from transforms.ingest.readers import ReadRecords

SCHEMA = """
dataset: ise
event:
  time: date
  fields:
    date: {type: time, format: date}
    ISE: {type: number%s}
    ISE_2: {type: number, optional: true%s}
    SP: {type: number}
tables:
  - name: ISE
    pattern: TS-COLS
    families: [{name: m, max_versions: 1}]
    key: [{const: ISE}, {epoch_ms: date}]
    columns:
      - {family: m, qualifier: a, value: ISE}
      - {family: m, qualifier: b, value: ISE_2}
      - {family: m, qualifier: s, value: SP}
"""


def _builder(by_position: bool) -> Builder:
    text = SCHEMA % ((", from: 2", ", from: 3") if by_position else ("", ""))
    return Builder(schema_lib.loads(text, "ise.yaml"))


def test_a_repeated_csv_header_is_refused_naming_the_fix(tmp_path):
    write_lines(tmp_path / "x.csv", ["date,ISE,ISE,SP", "2020-01-01,1.5,2.5,3"])
    builder = _builder(by_position=False)
    with TestPipeline() as p:
        out = p | ReadRecords([str(tmp_path / "x.csv")]) | BuildRows(builder, "ise")
        assert_that(out[ROWS] | beam.FlatMap(list), equal_to([]))
        assert_that(
            out[DEAD_LETTER] | beam.Map(lambda d: d["reason"]),
            equal_to(
                [
                    "CSV columns 2 and 3 are both named 'ISE': one would be lost; declare a "
                    "field for each with from: POSITION (btts init drafts them)"
                ]
            ),
            label="Reason",
        )


@pytest.mark.parametrize("split", [False, True])
def test_columns_declared_by_position_both_land(tmp_path, monkeypatch, split):
    """Also when the file is cut into ranges (a range after the first reads the header again)."""
    from transforms.ingest import readers

    lines = ["date,ISE,ISE,SP"] + [f"2020-01-{d:02d},1.{d},2.{d},{d}" for d in range(1, 29)]
    write_lines(tmp_path / "x.csv", lines)
    if split:
        monkeypatch.setattr(readers, "SPLIT_BYTES", 200)
        monkeypatch.setattr(readers, "CHUNK_BYTES", 64)
    builder = _builder(by_position=True)
    read = ReadRecords([str(tmp_path / "x.csv")], dialect=builder.schema.csv)
    with TestPipeline() as p:
        out = p | read | BuildRows(builder, "ise", builder.csv_adapter)
        cells = out[ROWS] | beam.FlatMap(list) | beam.FlatMap(lambda r: list(r.cells))
        expected = [
            (q, v)
            for d in range(1, 29)
            for q, v in ((b"a", f"1.{d}"), (b"b", f"2.{d}"), (b"s", str(d)))
        ]
        assert_that(cells | beam.Map(lambda c: (c.qualifier, c.value.decode())), equal_to(expected))
        assert_that(out[DEAD_LETTER], equal_to([]), label="NoDeadLetters")


@pytest.mark.parametrize(
    "name, text",
    [
        ("x.jsonl", '{"date": "2020-01-01", "ISE": 1.5, "ISE": 2.5, "SP": 3}'),
        ("x.json", '[{"date": "2020-01-01", "ISE": 1.5, "ISE": 2.5, "SP": 3}]'),
    ],
)
def test_a_json_object_repeating_a_key_stays_a_dead_letter(tmp_path, name, text):
    write_lines(tmp_path / name, [text])
    builder = _builder(by_position=False)
    with TestPipeline() as p:
        out = p | ReadRecords([str(tmp_path / name)]) | BuildRows(builder, "ise")
        assert_that(out[ROWS] | beam.FlatMap(list), equal_to([]))
        assert_that(
            out[DEAD_LETTER] | beam.Map(lambda d: d["reason"]),
            equal_to(["invalid JSON: field 'ISE' repeated in one object"]),
            label="Reason",
        )


def _parquet(path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = [pa.array(["2020-01-01"]), pa.array([1.5]), pa.array([2.5]), pa.array([3.0])]
    pq.write_table(pa.table(columns, names=["date", "ISE", "ISE", "SP"]), path)


def _avro(path) -> None:
    import fastavro

    fields = [{"name": n, "type": t} for n, t in (("date", "string"), ("ISE", "double"))]
    fields += [{"name": "ISE", "type": "double"}, {"name": "SP", "type": "double"}]
    schema = {"type": "record", "name": "r", "fields": fields}
    with open(path, "wb") as out:
        fastavro.writer(out, schema, [{"date": "2020-01-01", "ISE": 1.5, "SP": 3.0}])


@pytest.mark.parametrize("name, write", [("x.parquet", _parquet), ("x.avro", _avro)])
def test_a_columnar_file_with_two_columns_of_one_name_is_refused(tmp_path, name, write):
    path = tmp_path / name
    write(path)
    with pytest.raises(RepeatedColumn, match="columns 2 and 3 are both named 'ISE'"):
        columnar_names(str(path), name.split(".")[1])
    builder = _builder(by_position=False)
    # the job fails, naming it
    with pytest.raises(Exception, match="both named 'ISE'"), TestPipeline() as p:
        out = p | ReadRecords([str(path)]) | BuildRows(builder, "ise")
        assert_that(out[ROWS] | beam.FlatMap(list), equal_to([]))


def test_a_columnar_file_with_distinct_names_is_read(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "ok.parquet"
    pq.write_table(pa.table({"date": ["2020-01-01"], "SP": [3.0]}), path)
    assert columnar_names(str(path), "parquet") == ("date", "SP")
