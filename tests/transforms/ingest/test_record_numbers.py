"""Each record's number in its file (a schema's ``from: record_number``): the same whatever
reads it — the whole file, its ranges (a large file is read in ranges by several workers), the
overwrite check's second read — and 1 for the first record in every format: a CSV's records
after its preamble and header (CRLF, a quoted field across lines and a blank line as they come),
JSON lines, a JSON array written on one line, gzip, Parquet across row groups, Avro. The
expected numbers are counted here by hand from how each file is written."""

from __future__ import annotations

import gzip
import io
import json

import pytest

from tests.support.jobs import write_lines
from transforms import schema as schema_lib
from transforms.errors import InvalidEvent
from transforms.ingest import build_rows, numbering, readers, reread
from transforms.ingest.readers import Block, FileRange
from transforms.text import events
from transforms.text.csv_dialect import CsvDialect


def _numbers(blocks) -> list[tuple[int, bytes | str | dict]]:
    return [
        (block.first_record + i, item) for block in blocks for i, item in enumerate(block.items)
    ]


def _whole(path, fmt: str, dialect: CsvDialect | None = None, compression: str = "uncompressed"):
    part = FileRange(str(path), fmt, compression, 0, path.stat().st_size)
    return _numbers(readers.range_blocks(part, dialect or CsvDialect()))


def test_first_lines_counts_the_line_each_range_owns_first():
    data = b'{"a":1}\n{"a":2}\n\n{"a":4}\n'
    starts = [0, 1, 8, 9, 16, 17]  # mid-line, a line start, a blank line's start …
    got = numbering.first_lines(io.BytesIO(data), starts, chunk_bytes=3)
    # the line a range starting there owns first: the one starting at or after the offset
    assert got == [1, 2, 2, 3, 3, 4]


def test_records_before_counts_the_records_that_start_before_each_cut():
    assert numbering.records_before([2, 3, 5, 6, 9], [2, 5, 7, 20]) == [0, 2, 4, 5]
    assert numbering.records_before([], [3]) == [0]


CSV_ROWS = 300


def _csv_text() -> bytes:
    """A preamble, the header, then records: every 7th with a quoted note across two lines,
    every 50th followed by a blank line (a record of its own, as the reader reads it), CRLF."""
    lines = ["Exported 2024-05-01 by a logger", "n,note,v"]
    for i in range(1, CSV_ROWS + 1):
        note = '"two\r\nlines"' if i % 7 == 0 else "plain"
        lines.append(f"{i},{note},{i * 2}")
        if i % 50 == 0:
            lines.append("")
    return ("\r\n".join(lines) + "\r\n").encode()


def _csv_expected() -> list[int]:
    """The ``n`` of each numbered record, None for a blank line's: in order, numbered from 1."""
    out = []
    for i in range(1, CSV_ROWS + 1):
        out.append(i)
        if i % 50 == 0:
            out.append(None)
    return out


def _n(item: bytes) -> int | None:
    return int(item.split(b",")[0]) if item.strip() else None


def test_a_csv_read_in_ranges_numbers_its_records_as_the_whole_file_does(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "SPLIT_BYTES", 400)
    monkeypatch.setattr(readers, "CHUNK_BYTES", 97)
    path = tmp_path / "x.csv"
    path.write_bytes(_csv_text())
    dialect = CsvDialect(skip=1)
    whole = _whole(path, "csv", dialect)
    assert [(number, _n(item)) for number, item in whole] == list(
        enumerate(_csv_expected(), start=1)
    )
    parts = readers.file_ranges(str(path), path.stat().st_size, "csv", dialect, numbered=True)
    assert len(parts) > 5
    ranged = _numbers(b for part in parts for b in readers.range_blocks(part, dialect))
    assert ranged == whole
    # without numbers asked for, ranges past the first do not count (no extra pass)
    plain = readers.file_ranges(str(path), path.stat().st_size, "csv", dialect)
    assert [p.first_record for p in plain][:2] == [1, 0]


def test_json_lines_read_in_ranges_are_numbered_by_their_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "SPLIT_BYTES", 500)
    monkeypatch.setattr(readers, "CHUNK_BYTES", 130)
    lines = [json.dumps({"n": i, "pad": "x" * (i % 23)}) for i in range(1, 401)]
    lines[99] = ""  # a blank line is a line, numbered as such
    path = tmp_path / "x.jsonl"
    path.write_bytes(("\r\n".join(lines[:200]) + "\n" + "\n".join(lines[200:])).encode())
    size = path.stat().st_size
    parts = readers.file_ranges(str(path), size, numbered=True)
    assert len(parts) > 10
    blocks = []
    for part in parts:
        with open(path, "rb") as handle:
            blocks += list(readers.jsonl_blocks(part, handle))
    ranged = _numbers(blocks)
    assert ranged == [(i, line.encode()) for i, line in enumerate(lines, start=1)]
    # the overwrite check's second read of some of the job's blocks (by their offsets) gives
    # each line the same number
    offsets = {blocks[0].offset, blocks[len(blocks) // 2].offset, blocks[-1].offset}
    again = reread.records_again(str(path), offsets, "jsonl", numbered=True)
    numbered = dict(ranged)
    seen = 0
    for block, _places in again:
        for number, item in _numbers([block]):
            assert numbered[number] == item
            seen += 1
    assert seen >= 3


def test_a_json_array_on_one_line_is_numbered_by_element(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(
        json.dumps([{"n": i} for i in range(1, 601)])
    )  # one line: lines tell none apart
    got = _whole(path, "json_array")
    assert [(number, json.loads(item)["n"]) for number, item in got] == [
        (i, i) for i in range(1, 601)
    ]


def test_a_gzip_file_is_numbered_as_its_text(tmp_path):
    path = tmp_path / "x.csv.gz"
    path.write_bytes(gzip.compress(_csv_text()))
    got = _whole(path, "csv", CsvDialect(skip=1), "gzip")
    assert [(number, _n(item)) for number, item in got] == list(enumerate(_csv_expected(), 1))


def test_parquet_and_avro_are_numbered_in_the_files_order(tmp_path):
    import fastavro
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"n": list(range(1, 601))}), tmp_path / "x.parquet", row_group_size=7)
    schema = {"type": "record", "name": "R", "fields": [{"name": "n", "type": "long"}]}
    with open(tmp_path / "x.avro", "wb") as out:
        fastavro.writer(out, schema, [{"n": i} for i in range(1, 601)], sync_interval=100)
    for fmt in ("parquet", "avro"):
        read = readers._NumberedColumnarFn(fmt)
        got = _numbers(read.process(str(tmp_path / f"x.{fmt}")))
        assert [(number, int(item["n"])) for number, item in got] == [(i, i) for i in range(1, 601)]
        # the overwrite check reads each record again with its own number
        again = _numbers(b for b, _ in reread.records_again(str(tmp_path / f"x.{fmt}"), None))
        assert [(number, int(item["n"])) for number, item in again] == [
            (i, i) for i in range(1, 601)
        ]


def test_the_decoder_gives_every_item_its_number_broken_and_blank_ones_too():
    block = Block("f.jsonl", "jsonl", [b'{"a": 1}', b"", b"{broken", b'{"a": 4}'], 7, 0)
    block = block._replace(first_record=7)
    decode = build_rows.decoder(block, numbered="row")
    assert decode(block.items[0]) == {"a": "1", "row": "7"}  # (JSON numbers as their text)
    for item in block.items[1:3]:
        with pytest.raises(InvalidEvent):
            decode(item)
    assert decode(block.items[3])["row"] == "10"


def test_a_record_without_a_number_or_with_a_field_of_its_name_is_a_dead_letter():
    unknown = Block("sub", "jsonl", [b'{"a": 1}'], 0, -1)
    with pytest.raises(InvalidEvent, match="comes from no file"):
        build_rows.decoder(unknown, numbered="row")(unknown.items[0])
    taken = Block("f.jsonl", "jsonl", [b'{"row": 1}'], 1, 0, first_record=1)
    with pytest.raises(InvalidEvent, match="rename the schema's field"):
        build_rows.decoder(taken, numbered="row")(taken.items[0])


SCHEMA = """\
dataset: cars
event:
  time: Year
  fields:
    Year: {type: time, format: date}
    mpg: number
    row: {type: %s, from: record_number}
tables:
  - name: CARS
    pattern: TS-COLS
    families: [{name: m, max_versions: 1}]
    key: [{const: CARS}, {epoch_ms: Year}, {text: row}]
    columns: [{family: m, qualifier: mpg, value: mpg}]
"""


def test_a_record_number_is_a_whole_number_the_input_does_not_hold():
    loaded = schema_lib.loads(SCHEMA % "integer", "cars.yaml")
    assert loaded.record_number == "row"
    from transforms.builder.builder import Builder

    record = {"Year": "1971-01-01", "mpg": events.Num("18.5"), "row": events.Num("12")}
    rows = Builder(loaded).rows(record)
    assert rows[0][1].endswith(b"#12")
    with pytest.raises(schema_lib.SchemaError, match="from: record_number is a whole number"):
        schema_lib.loads(SCHEMA % "text", "cars.yaml")


def test_a_subscription_is_refused_a_schema_that_numbers_records(tmp_path):
    from apache_beam.options.pipeline_options import PipelineOptions

    from btts import errors
    from pipelines import common

    path = write_lines(tmp_path / "cars.yaml", [SCHEMA % "integer"])
    job = common.schema_job(schema_lib.load(path), description="cars", builtin=False)
    argv = ["--input_subscription=projects/p/subscriptions/s", "--dead_letter_topic=t"]
    with pytest.raises(errors.ConfigError, match="come from no file") as raised:
        common.job_config(PipelineOptions([*argv, "--bigtable_instance=i"]), job)
    assert "\n" not in str(raised.value)
