"""The files people have (transforms/ingest/readers.py): JSON lines read as byte ranges, one
top-level JSON array streamed element by element, CSV with quoted fields spanning lines, Parquet
and Avro through Beam's readers, gzip and bzip2 by their magic bytes; every good record lands,
every bad one is a dead letter with its reason and, where the reader knows it, its line."""

from __future__ import annotations

import bz2
import datetime as dt
import gzip
import io
import json
import random

import pytest

from btts.query import engine
from tests.support.jobs import read_dead_letters, run_job
from transforms.ingest import readers
from transforms.ingest.columnar import columnar_record
from transforms.text import events

SCHEMA = """\
dataset: stations
doc: Station readings with a free-text note.
event:
  time: ts
  fields:
    station: {type: text, max_length: 20, whitespace: none}
    ts: time
    temp: {type: number, min: -90}
    note: {type: text, whitespace: allow, optional: true}
tables:
  - name: READING
    pattern: TS-COLS
    families:
      - {name: r, max_versions: 1}
    key:
      - text: station
      - epoch_ms: ts
    columns:
      - {family: r, qualifier: temp, value: temp}
      - {family: r, qualifier: note, value: note}
"""

T0 = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.timezone.utc)


def _ts(minute: int) -> str:
    return (T0 + dt.timedelta(minutes=minute)).isoformat().replace("+00:00", "Z")


def _key(station: str, minute: int) -> bytes:
    ms = int((T0 + dt.timedelta(minutes=minute)).timestamp() * 1000)
    return f"{station}#{ms:013d}".encode()


def _parquet(path, records):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "station": [r["station"] for r in records],
            "ts": pa.array([r["ts"] for r in records], pa.timestamp("ms", tz="UTC")),
            "temp": [r["temp"] for r in records],
            "note": [r.get("note") for r in records],
        }
    )
    pq.write_table(table, path)


def _avro(path, records):
    import fastavro

    schema = {
        "type": "record",
        "name": "Reading",
        "fields": [
            {"name": "station", "type": "string"},
            {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "temp", "type": "double"},
            {"name": "note", "type": ["null", "string"], "default": None},
        ],
    }
    with open(path, "wb") as out:
        fastavro.writer(out, fastavro.parse_schema(schema), records)


def test_every_format_lands_its_good_records_and_dead_letters_its_bad_ones(target, tmp_path):
    schema = tmp_path / "stations.yaml"
    schema.write_text(SCHEMA)
    data = tmp_path / "in"
    data.mkdir()
    # One top-level array, pretty-printed, with a bad value and a broken element in the middle.
    array = [
        {"station": "A", "ts": _ts(0), "temp": 21.5},
        {"station": "A", "ts": _ts(1), "temp": -100},  # below the declared minimum
        "BROKEN",
        {"station": "A", "ts": _ts(2), "temp": 22.25, "note": "fine"},
    ]
    text = json.dumps(array, indent=2).replace('"BROKEN"', '{"station": tru}')
    (data / "a.json").write_text(text)
    # CSV, gzip-compressed, a note spanning lines, and a stray quote that costs one line only.
    csv_text = (
        "station,ts,temp,note\r\n"
        f'B,{_ts(0)},1.5,"two\r\nlines, ""quoted"""\r\n'
        f'B,{_ts(1)},"oops,2.5,\r\n'
        f"B,{_ts(2)},3.5,\r\n"
    )
    (data / "b.csv.gz").write_bytes(gzip.compress(csv_text.encode()))
    # JSON lines, bzip2-compressed, under a name that says nothing: the magic bytes tell.
    lines = [
        json.dumps({"station": "C", "ts": _ts(0), "temp": 0.5}),
        json.dumps({"station": "C#1", "ts": _ts(1), "temp": 0.5}),  # the key delimiter
    ]
    (data / "c.data").write_bytes(bz2.compress("\n".join(lines).encode()))
    base = [T0 + dt.timedelta(minutes=m) for m in range(3)]
    _parquet(
        data / "d.parquet",
        [
            {"station": "D", "ts": base[0], "temp": 10.25, "note": None},
            {"station": "D D", "ts": base[1], "temp": 1.0},  # whitespace: none
            {"station": "D", "ts": base[2], "temp": 11.0, "note": "ok"},
        ],
    )
    _avro(
        data / "e.avro",
        [
            {"station": "E", "ts": base[0], "temp": 5.5, "note": None},
            {"station": "E", "ts": base[1], "temp": -91.0, "note": "too cold"},
        ],
    )
    dead = tmp_path / "dead" / "s"
    result = run_job("generic", target, data / "*", dead, [f"--schema={schema}"])

    rows = {r.key: r.latest() for r in engine.read_rows(target, "READING", latest_only=True)}
    assert set(rows) == {
        _key("A", 0),
        _key("A", 2),
        _key("B", 0),
        _key("B", 2),
        _key("C", 0),
        _key("D", 0),
        _key("D", 2),
        _key("E", 0),
    }
    assert rows[_key("A", 2)][("r", b"temp")] == b"22.25"  # the source's digits
    # (the CRLF inside the quotes is the value's own: kept, as every CSV reader keeps it)
    assert rows[_key("B", 0)][("r", b"note")] == b'two\r\nlines, "quoted"'
    assert rows[_key("D", 0)][("r", b"temp")] == b"10.25"
    assert ("r", b"note") not in rows[_key("D", 0)]  # a null is an absent optional field
    assert rows[_key("E", 0)][("r", b"temp")] == b"5.5"

    letters = {(d["source"].rsplit("/", 1)[-1], d.get("line")): d for d in read_dead_letters(dead)}
    assert set(letters) == {
        ("a.json", 7),
        ("a.json", 12),
        ("b.csv.gz", 4),
        ("c.data", 2),
        ("d.parquet", None),
        ("e.avro", None),
    }
    assert (
        "below the minimum" in letters[("a.json", 7)]["reason"]
        or "-100" in (letters[("a.json", 7)]["reason"])
    )
    assert letters[("a.json", 12)]["reason"].startswith("invalid JSON")
    assert letters[("b.csv.gz", 4)]["raw"] == f'B,{_ts(1)},"oops,2.5,'
    assert "delimiter" in letters[("c.data", 2)]["reason"]
    assert json.loads(letters[("d.parquet", None)]["raw"])["station"] == "D D"
    assert json.loads(letters[("e.avro", None)]["raw"])["note"] == "too cold"
    counters = result.counters
    assert counters["events_valid"] == 8 and counters["dead_letters"] == 6


def test_a_large_json_lines_file_is_read_as_ranges_each_line_exactly_once(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "SPLIT_BYTES", 1000)
    monkeypatch.setattr(readers, "CHUNK_BYTES", 300)
    lines = [json.dumps({"n": i, "pad": "x" * (i % 37)}) for i in range(2000)]
    body = "\r\n".join(lines[:1000]) + "\n" + "\n".join(lines[1000:])  # CRLF, no final newline
    path = tmp_path / "big.jsonl"
    path.write_text(body)
    ranges = readers.file_ranges(str(path), path.stat().st_size)
    assert len(ranges) > 50
    seen = []
    for part in ranges:
        with open(part.path, "rb") as handle:
            for block in readers.jsonl_blocks(part, handle):
                for i, item in enumerate(block.items):
                    line = block.line(i) or readers.line_at(block.source, block.offset) + i
                    seen.append((line, item.decode()))
    assert seen == [(i + 1, line) for i, line in enumerate(lines)]


@pytest.mark.parametrize("chunk", [7, 64, 1 << 20])
def test_an_array_is_streamed_into_the_same_elements_json_gives(chunk):
    elements = [{"s": 'a,]}\\"[{', "n": i, "deep": [[{"x": i}]]} for i in range(300)]
    text = json.dumps(elements, indent=1).encode()
    blocks = list(readers.array_blocks("x", io.BytesIO(text), chunk_bytes=chunk))
    items = [item for block in blocks for item in block.items]
    assert [json.loads(item) for item in items] == elements
    lines = [line for block in blocks for line in block.lines]
    starts = [n + 1 for n, row in enumerate(text.decode().split("\n")) if row == " {"]
    assert lines == starts


def test_a_broken_element_costs_itself_and_a_truncated_array_says_so():
    text = b'[{"a": 1}, {"a": tru}, {"a": [1, 2}, {"a": 3}, 4'
    (block,) = readers.array_blocks("x", io.BytesIO(text), chunk_bytes=5)
    # A bracket that does not match hides where the element ends: the rest is one bad item.
    assert block.items == ['{"a": 1}', '{"a": tru}', '{"a": [1, 2}, {"a": 3}, 4', ""]
    # What follows the array is not dropped: it is one bad item.
    (block,) = readers.array_blocks("x", io.BytesIO(b'[{"a": 1}]\n[{"a": 2}]\n'))
    assert block.items == ['{"a": 1}', '[{"a": 2}]'] and block.lines == (1, 2)


def test_a_json_lines_reason_says_when_the_file_is_really_an_array():
    with pytest.raises(Exception) as err:
        events.parse_json_object(b'  {"a": 1},')
    reason = events.array_hint(b'  {"a": 1},', str(err.value))
    assert "--input_format=json_array" in reason
    assert events.array_hint(b'{"a": 1', "x") == "x"


def test_formats_are_detected_by_content_then_name(tmp_path):
    (tmp_path / "lines.json").write_text('{"a": 1}\n')
    (tmp_path / "array.json").write_text('\ufeff  \n [{"a": 1}]')
    (tmp_path / "array.jsonl.gz").write_bytes(gzip.compress(b'[{"a": 1}]'))
    (tmp_path / "t.csv").write_text("a\n1\n")
    assert readers.detect(str(tmp_path / "lines.json"))[0] == "jsonl"
    assert readers.detect(str(tmp_path / "array.json"))[0] == "json_array"
    assert readers.detect(str(tmp_path / "array.jsonl.gz")) == ("json_array", "gzip")
    assert readers.detect(str(tmp_path / "t.csv"))[0] == "csv"
    assert readers.detect(str(tmp_path / "array.json"), "jsonl")[0] == "jsonl"  # forced


def test_the_content_names_the_format_whatever_the_name_says(tmp_path):
    csv_text = b"station,ts,temp\nA,2024-05-01T12:00:00Z,1.5\n"
    (tmp_path / "data.gz").write_bytes(gzip.compress(csv_text))
    (tmp_path / "export").write_bytes(bz2.compress(csv_text))
    (tmp_path / "lines.csv.gz").write_bytes(gzip.compress(b'{"a": 1}\n'))
    (tmp_path / "array.csv").write_text('[{"a": 1}]')
    (tmp_path / "csv.jsonl").write_bytes(csv_text)  # the name claims JSON lines: it stays so
    (tmp_path / "one.tsv").write_text("a\tb\n1\t2\n")
    assert readers.detect(str(tmp_path / "data.gz")) == ("csv", "gzip")
    assert readers.detect(str(tmp_path / "export")) == ("csv", "bzip2")
    assert readers.detect(str(tmp_path / "lines.csv.gz")) == ("jsonl", "gzip")
    assert readers.detect(str(tmp_path / "array.csv"))[0] == "json_array"
    assert readers.detect(str(tmp_path / "csv.jsonl"))[0] == "jsonl"
    assert readers.detect(str(tmp_path / "one.tsv"))[0] == "jsonl"
    assert readers.detect(str(tmp_path / "data.gz"), "jsonl")[0] == "jsonl"  # forced


def test_a_json_lines_reason_says_when_the_line_looks_like_csv():
    line = b"A,2024-05-01T12:00:00Z,1.5"
    with pytest.raises(Exception) as err:
        events.parse_json_object(line)
    reason = events.array_hint(line, str(err.value))
    assert reason.startswith("invalid JSON") and "--input_format=csv" in reason
    assert events.array_hint(b'{"a": 1, "b"', "invalid JSON: x") == "invalid JSON: x"
    assert not events.looks_like_csv("a,b\n1,2,3\n")  # records of unequal width


def test_a_gzip_csv_named_data_gz_lands(target, tmp_path):
    schema = tmp_path / "stations.yaml"
    schema.write_text(SCHEMA)
    rows = "".join(f"S,{_ts(m)},{m}.5\n" for m in range(3))
    (tmp_path / "data.gz").write_bytes(gzip.compress(f"station,ts,temp\n{rows}".encode()))
    dead = tmp_path / "dead" / "s"
    run_job("generic", target, tmp_path / "data.gz", dead, [f"--schema={schema}"])
    landed = {r.key: r.latest() for r in engine.read_rows(target, "READING", latest_only=True)}
    assert {k for k in landed if k.startswith(b"S#")} == {_key("S", m) for m in range(3)}
    assert landed[_key("S", 2)][("r", b"temp")] == b"2.5"
    assert not list(read_dead_letters(dead))


def test_columnar_values_become_what_a_json_line_gives():
    from decimal import Decimal

    record = columnar_record(
        {
            "t": dt.datetime(2024, 5, 1, 12, 0, 0, 45000, tzinfo=dt.timezone.utc),
            "n": 3,
            "f": 0.1,
            "d": Decimal("600.60"),
            "b": True,
            "s": "x",
            "gone": None,
        }
    )
    assert record == {
        "t": "2024-05-01T12:00:00.045000Z",
        "n": "3",
        "f": "0.1",
        "d": "600.60",
        "b": True,
        "s": "x",
    }
    assert type(record["n"]) is events.Num and type(record["d"]) is events.Num


def test_a_large_csv_is_cut_at_record_starts_outside_quotes(tmp_path, monkeypatch):
    """Quoted fields spanning lines, doubled quotes and commas: every range starts on a
    record's first line and knows its number, so the records and lines equal one reader's."""
    import csv as csv_module

    monkeypatch.setattr(readers, "SPLIT_BYTES", 500)
    monkeypatch.setattr(readers, "CHUNK_BYTES", 97)
    rnd = random.Random(3)
    text = io.StringIO()
    writer = csv_module.writer(text, lineterminator="\n")
    writer.writerow(["id", "note", "v"])
    rows = []
    for i in range(400):
        note = rnd.choice(["plain", "multi\nline", 'q"uo"te', "a,b", 'x\n\ny"z'])
        rows.append([str(i), note, str(i * 2)])
        writer.writerow(rows[-1])
    path = tmp_path / "x.csv"
    path.write_bytes(text.getvalue().encode())
    parts = readers.file_ranges(str(path), path.stat().st_size)
    assert len(parts) > 10 and all(p.first_line > 1 for p in parts[1:])
    got = []
    read = readers._ReadBlocksFn()
    read.setup()  # as a runner does before any element
    for part in parts:
        for block in read.process(part):
            for line, item in zip(block.lines, block.items, strict=True):
                got.append((line, next(csv_module.reader([item.decode()]))))
    expected, line = [], 2
    for row in rows:
        expected.append((line, row))
        line += 1 + row[1].count("\n")
    assert got == expected


def _read_steps(pattern: str, input_format: str = "auto") -> set[str]:
    import apache_beam as beam

    pipeline = beam.Pipeline()
    _ = pipeline | "Read" >> readers.ReadRecords([pattern], input_format)
    return {t.full_label.split("/")[1] for t in pipeline.transforms_stack[0].parts[0].parts}


def test_only_the_readers_the_files_need_are_built(tmp_path):
    """A Flatten of reader branches makes the DirectRunner hold the whole input in memory:
    local JSON lines get the text reader alone; a mix of formats gets every reader."""
    (tmp_path / "a.jsonl").write_text('{"x": 1}\n')
    only_text = _read_steps(str(tmp_path / "*.jsonl"))
    assert "ReadBlocks" in only_text
    assert not {"ReadParquet", "ReadAvro", "FlattenFormats"} & only_text
    assert "ReadParquet" not in _read_steps(str(tmp_path / "*"), "csv")
    _parquet(
        tmp_path / "b.parquet",
        [{"station": "A", "ts": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc), "temp": 1.0}],
    )
    mixed = _read_steps(str(tmp_path / "*"))
    assert {"ReadBlocks", "ReadParquet", "FlattenFormats"} <= mixed
    assert "ReadAvro" not in mixed
    assert {"ReadParquet", "ReadAvro"} <= _read_steps("gs://bucket/in/*")  # decided at run time


def test_a_file_that_changed_format_after_the_job_was_built_fails_rather_than_vanish(tmp_path):
    from apache_beam.io.filesystem import FileMetadata

    path = tmp_path / "b.parquet"
    _parquet(
        path, [{"station": "A", "ts": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc), "temp": 1.0}]
    )
    ranges = readers._RangesFn("auto", frozenset({"text"}))
    with pytest.raises(ValueError, match="is now parquet"):
        list(ranges.process(FileMetadata(str(path), path.stat().st_size)))
