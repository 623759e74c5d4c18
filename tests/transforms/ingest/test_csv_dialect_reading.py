"""The job reads a CSV in the dialect its schema declares (``event.csv``), also when the file is
cut into ranges that each read the header again: the preamble skipped, the encoding decoded,
the delimiter split, decimal commas and thousands marks read as numbers, a bad one a dead letter
naming the field."""

from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from transforms import schema as schema_lib
from transforms.builder.builder import Builder
from transforms.ingest import readers
from transforms.ingest.build_rows import DEAD_LETTER, ROWS, BuildRows
from transforms.ingest.readers import ReadRecords

SCHEMA = """
dataset: wetter
event:
  time: datum
  csv: {delimiter: ";", decimal: ",", thousands: ".", encoding: cp1252, skip_lines: 2}
  fields:
    datum: {type: time, format: date}
    druck: number
    ort: text
tables:
  - name: W
    pattern: TS-COLS
    families: [{name: m, max_versions: 1}]
    key: [{const: W}, {epoch_ms: datum}]
    columns: [{family: m, qualifier: p, value: druck}, {family: m, qualifier: o, value: ort}]
"""


@pytest.mark.parametrize("split", [False, True])
def test_a_declared_dialect_is_read_whole_in_ranges_too(tmp_path, monkeypatch, split):
    builder = Builder(schema_lib.loads(SCHEMA, "w.yaml"))
    days = range(1, 29)
    text = "Station Köln-Bonn; 92 m\n\ndatum;druck;ort\n"
    text += "".join(f"2020-02-{d:02d};1.0{d:02d},5;Köln\n" for d in days)
    text += "2020-03-01;1.5;Bonn\n"  # a thousands mark where no group fits: refused
    path = tmp_path / "w.csv"
    path.write_bytes(text.encode("cp1252"))
    if split:
        monkeypatch.setattr(readers, "SPLIT_BYTES", 300)
        monkeypatch.setattr(readers, "CHUNK_BYTES", 64)
        parts = readers.file_ranges(str(path), path.stat().st_size, "auto", builder.schema.csv)
        assert len(parts) > 2
    read = ReadRecords([str(path)], dialect=builder.schema.csv)
    with TestPipeline() as p:
        out = p | read | BuildRows(builder, "wetter", builder.csv_adapter)
        cells = out[ROWS] | beam.FlatMap(list) | beam.FlatMap(lambda r: list(r.cells))
        expected = [(b"p", f"10{d:02d}.5") for d in days] + [(b"o", "Köln") for d in days]
        assert_that(cells | beam.Map(lambda c: (c.qualifier, c.value.decode())), equal_to(expected))
        assert_that(
            out[DEAD_LETTER] | beam.Map(lambda d: (d["line"], d["reason"])),
            equal_to(
                [
                    (
                        32,
                        "field 'druck': '1.5' is not a number written with ',' for decimals "
                        "and '.' between thousands",
                    )
                ]
            ),
            label="DeadLetters",
        )


def test_the_overwrite_check_reads_the_file_again_in_its_dialect(bigtable_emulator, tmp_path):
    """Two records of one day with other readings: the check reads both again (as the job read
    them: cp1252, ';', the preamble skipped) and names their lines."""
    import uuid

    from btts import config
    from pipelines.common.report import JobFailed
    from tests.support.jobs import run_job

    schema = tmp_path / "w.yaml"
    schema.write_text(SCHEMA, encoding="utf-8")
    text = "Station Köln-Bonn; 92 m\n\ndatum;druck;ort\n"
    text += "2020-02-01;1.013,5;Köln\n2020-02-02;1.012,5;Köln\n2020-02-01;1.011,5;Köln\n"
    source = tmp_path / "w.csv"
    source.write_bytes(text.encode("cp1252"))
    target = config.Target("test-project", f"t{uuid.uuid4().hex[:12]}")
    with pytest.raises(JobFailed) as failed:
        run_job("generic", target, source, tmp_path / "dead", [f"--schema={schema}"])
    assert f"(first: {source}:4 and {source}:6 both write W row " in str(failed.value)
