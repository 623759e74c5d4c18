"""The commands around a user's schema file: ``tables list/show --schema`` say where a table
is declared (and cite no empty section), and every ``btts advise`` command takes ``--schema``."""

from __future__ import annotations

from btts_cli import advise_command as advise
from btts_cli import main as cli
from tests.support import REPO

IOT = REPO / "docs" / "schemas" / "tb-cell-iot-temperatures.yaml"


def test_tables_list_says_where_each_table_is_declared(target, capsys):
    where = ["--project", target.project, "--instance", target.instance]
    assert cli.main(["tables", "create", "--schema", str(IOT), *where]) == 0
    assert cli.main(["tables", "create", "--table", "METRIC", *where]) == 0
    capsys.readouterr()
    assert cli.main(["tables", "list", "--schema", str(IOT), *where]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:-1]}
    assert lines["DEVICE_TEMP"].endswith(f"declared in {IOT}")
    assert lines["METRIC"].endswith("built-in")
    assert "not declared here" not in "".join(lines.values())
    assert cli.main(["tables", "list", *where]) == 0
    out = capsys.readouterr().out
    assert (
        "DEVICE_TEMP              not declared" in out
        and "METRIC                   built-in" in out
    )


def test_tables_show_cites_a_section_only_when_there_is_one(capsys):
    assert cli.main(["tables", "show", "--schema", str(IOT)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("DEVICE_TEMP  [TB-CELL]  key DEVICE#TS\n") and "§" not in out
    assert cli.main(["tables", "show", "--table", "METRIC"]) == 0
    assert "(docs/patterns.md §5.2)" in capsys.readouterr().out


def test_advise_hotspots_takes_a_schema_and_its_workload(capsys):
    argv = ["hotspots", "--schema", str(IOT), "DEVICE_TEMP", "--slices", "4", "--nodes", "3"]
    assert advise.main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("DEVICE_TEMP  key DEVICE#TS  on 3 nodes, 500 events/s")  # advisor: 500
    assert cli.main(["advise", "hotspots", "--schema", str(IOT), "NOPE"]) == 2
    assert "has no table 'NOPE'" in capsys.readouterr().err
    assert advise.main(["hotspots", "--schema", str(IOT), "--documented"]) == 2
    assert "drop --schema" in capsys.readouterr().err


def test_a_time_first_key_of_a_schema_file_is_a_hotspot(tmp_path, capsys):
    text = IOT.read_text().replace(
        "      - text: device\n      - {reverse_ts: ts, bucket: hour}",
        "      - epoch_ms: ts\n      - text: device",
    )
    assert "epoch_ms: ts" in text
    first = tmp_path / "time-first.yaml"
    first.write_text(text)
    argv = ["advise", "hotspots", "--schema", str(first), "DEVICE_TEMP", "--slices", "4"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "key TS#DEVICE" in out and "peak 3.00" in out and "the key concentrates writes" in out


def test_advise_table_takes_a_schema(target, capsys):
    where = ["--project", target.project, "--instance", target.instance]
    assert cli.main(["tables", "create", "--schema", str(IOT), *where]) == 0
    capsys.readouterr()
    assert advise.main(["table", "--schema", str(IOT), "DEVICE_TEMP", *where]) == 0
    assert "DEVICE_TEMP" in capsys.readouterr().out
    assert advise.main(["table", "--schema", str(IOT), "METRIC", *where]) == 2
    assert "has no table 'METRIC'" in capsys.readouterr().err
