"""Records no field tells apart land whole, each told apart by its number in its file (issue
57): ``btts init`` drafts ``from: record_number`` into the key after the time, the generic job
lands every record on the test emulator, ``btts query`` reads each back equal — its number
too — and a second run of the same file writes nothing new (the numbers are the file's own);
a file the job reads in ranges numbers its records as one reader would.

The files and the values expected are written here by hand, as vega_datasets' ``cars.json``
holds them: two records of one name and year that differ, and an exact repeat.
"""

from __future__ import annotations

import gzip
import json

import pytest

from tests.support.jobs import draft_land_and_query, dump, read_dead_letters, run_job

# the first two differ in their mileage only (no field a key takes tells them apart); the
# fourth repeats the first exactly
CARS = [
    {"Name": "ford pinto", "Mpg": 18.5, "Year": "1971-01-01", "Origin": "USA"},
    {"Name": "ford pinto", "Mpg": 19.5, "Year": "1971-01-01", "Origin": "USA"},
    {"Name": "vw rabbit", "Mpg": 27.5, "Year": "1971-01-01", "Origin": "Europe"},
    {"Name": "ford pinto", "Mpg": 18.5, "Year": "1971-01-01", "Origin": "USA"},
    {"Name": "vw rabbit", "Mpg": 29.5, "Year": "1972-01-01", "Origin": "Europe"},
]


def _csv(crlf: bool = False, preamble: str = "") -> bytes:
    end = "\r\n" if crlf else "\n"
    lines = [preamble] if preamble else []
    lines += ["Name,Mpg,Year,Origin"]
    lines += [f"{c['Name']},{c['Mpg']},{c['Year']},{c['Origin']}" for c in CARS]
    return end.join([*lines, ""]).encode()


FILES = {
    "cars.json": json.dumps(CARS, indent=1).encode(),  # a JSON array, as vega_datasets ships it
    "cars.jsonl": "".join(json.dumps(c) + "\n" for c in CARS).encode(),
    "cars.csv": _csv(),
    "cars_crlf_preamble.csv": _csv(crlf=True, preamble="Exported by a car magazine"),
    "cars.json.gz": gzip.compress(json.dumps(CARS).encode()),
}


def _back(records: list[dict]) -> list[tuple]:
    return sorted(
        (r["record_number"], r["Name"], str(r["Mpg"]), r["time"][:10], r["Origin"]) for r in records
    )


EXPECTED = sorted(
    (n, c["Name"], str(c["Mpg"]), c["Year"], c["Origin"]) for n, c in enumerate(CARS, start=1)
)


@pytest.mark.parametrize("name", sorted(FILES))
def test_records_no_field_tells_apart_land_whole_by_their_number(
    name, bigtable_emulator, tmp_path, capsys
):
    source = tmp_path / name
    source.write_bytes(FILES[name])
    drafted, back = draft_land_and_query(source, tmp_path, capsys)
    assert drafted["event"]["fields"]["record_number"] == {
        "type": "integer",
        "from": "record_number",
    }
    assert drafted["tables"][0]["key"][-1] == {"zero_pad": "record_number", "width": 2}
    assert _back(back) == EXPECTED  # every record, the repeat too, each with its number


def test_a_second_run_of_the_same_file_writes_nothing_new(bigtable_emulator, tmp_path, capsys):
    """The numbers depend on the file only: the same rows and cells, every version of every
    cell read (none added), after a re-run."""
    import uuid

    from btts import config

    source = tmp_path / "cars.json"
    source.write_bytes(FILES["cars.json"])
    draft_land_and_query(source, tmp_path, capsys)  # (checks the draft lands)
    target = config.Target("test-project", f"t{uuid.uuid4().hex[:12]}")
    schema = [f"--schema={tmp_path / 's.yaml'}"]
    table = "CARS"
    run_job("generic", target, source, tmp_path / "d1", schema)
    first = dump(target, table)
    run_job("generic", target, source, tmp_path / "d2", schema)
    again = dump(target, table)
    assert read_dead_letters(tmp_path / "d1") == read_dead_letters(tmp_path / "d2") == []
    assert len({cell[0] for cell in first}) == len(CARS)
    assert sorted(again) == sorted(first)


def test_files_drafted_together_are_still_refused(tmp_path, capsys):
    """A record number tells apart the records of one file: two files whose records collide
    with each other keep the refusal that names the fix."""
    from btts_cli import main as cli

    for name in ("a.json", "b.json"):
        (tmp_path / name).write_bytes(FILES["cars.json"])
    code = cli.main(["init", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    err = capsys.readouterr().err
    assert code == 1
    assert "no field tells them apart" in err
    assert "record_number" not in err


RANGED_SCHEMA = """\
dataset: readings
event:
  time: day
  fields:
    day: {type: time, format: date}
    v: number
    row: {type: integer, from: record_number}
tables:
  - name: READINGS
    pattern: TS-COLS
    families: [{name: m, max_versions: 1}]
    key: [{const: R}, {epoch_ms: day}, {zero_pad: row, width: 6}]
    columns: [{family: m, qualifier: v, value: v}]
"""


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_file_read_in_ranges_lands_every_record_under_its_own_number(
    fmt, bigtable_emulator, tmp_path, capsys, monkeypatch
):
    """A file the job reads as several ranges (a small split size here) numbers its records
    as one reader would: 900 records of three days, each landed once, ``v`` its number."""
    import uuid

    from btts import config
    from btts_cli import main as cli
    from transforms.ingest import readers

    monkeypatch.setattr(readers, "SPLIT_BYTES", 2000)
    monkeypatch.setattr(readers, "CHUNK_BYTES", 300)
    days = [f"2020-01-0{1 + i % 3}" for i in range(900)]
    if fmt == "csv":  # a preamble, CRLF and a quoted value across lines every 50th record
        body = ["exported by a logger", "day,v,note"]
        quoted = '"a\r\nb"'  # a value across lines, as written: a quoted CRLF inside it
        body += [f"{d},{i},{quoted if i % 50 == 0 else 'x'}" for i, d in enumerate(days, 1)]
        data = ("\r\n".join(body) + "\r\n").encode()
        schema = RANGED_SCHEMA.replace("  fields:", "  csv: {skip_lines: 1}\n  fields:")
        schema = schema.replace("    v: number", "    v: number\n    note: text")
    else:
        data = "".join(json.dumps({"day": d, "v": i}) + "\n" for i, d in enumerate(days, 1))
        data, schema = data.encode(), RANGED_SCHEMA
    source = tmp_path / f"readings.{fmt}"
    source.write_bytes(data)
    (tmp_path / "s.yaml").write_text(schema)
    assert len(readers.file_ranges(str(source), len(data), numbered=True)) > 5
    target = config.Target("test-project", f"t{uuid.uuid4().hex[:12]}")
    run_job("generic", target, source, tmp_path / "dead", [f"--schema={tmp_path / 's.yaml'}"])
    assert read_dead_letters(tmp_path / "dead") == []
    capsys.readouterr()
    where = ["--project", target.project, "--instance", target.instance]
    argv = ["query", "--schema", str(tmp_path / "s.yaml"), "--table", "READINGS"]
    assert cli.main([*argv, "--format", "json", *where]) == 0
    back = json.loads(capsys.readouterr().out)
    assert sorted((r["row"], int(r["v"])) for r in back) == [(i, i) for i in range(1, 901)]
