"""What `btts check`, `btts ingest` and `btts query` say about a mistake: the offending line as
written, the schema's format, btts commands only, a did-you-mean for a misspelt flag, and times
as the user wrote them."""

from __future__ import annotations

import calendar
import subprocess
import sys

import pytest

from btts_cli import main as cli
from btts_cli.query_output import time_arg
from tests.support import REPO
from tests.support.jobs import write_lines

STOCKS = REPO / "tests" / "data" / "shapes" / "stocks.yaml"


def _btts(*argv: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}  # no emulator: check needs no Bigtable
    return subprocess.run(
        [sys.executable, "-m", "btts_cli.main", *argv],
        capture_output=True, text=True, env=env, timeout=120, cwd=REPO,
    )  # fmt: skip


def test_check_shows_each_reasons_first_line_and_the_format_it_missed(tmp_path):
    lines = ["symbol,date,price", "IBM,Jan 1 2000,1.5", "IBM,2000-02-01,2", "IBM,Mar 1 2000,x"]
    source = write_lines(tmp_path / "bad.csv", lines)
    done = _btts("check", "--schema", str(STOCKS), f"--input={source}")
    assert done.returncode == 1
    assert "does not match format %b %d %Y" in done.stdout
    assert "line 3: IBM,2000-02-01,2" in done.stdout
    assert "line 4: IBM,Mar 1 2000,x" in done.stdout
    (error,) = [line for line in done.stderr.splitlines() if line.strip()]
    assert error.startswith("btts check --schema FILE: error: 2 dead letters in 3 records")
    assert "--max_bad_records 10%" in error and "Traceback" not in done.stderr


def test_ingest_errors_name_the_btts_command():
    done = _btts("ingest", "--schema", str(STOCKS), "--inptu", "x")
    assert done.returncode != 0
    assert done.stderr.strip() == (
        "btts ingest --schema FILE: error: unknown option --inptu (did you mean --input?); "
        "see btts ingest --schema FILE --help"
    )


def test_a_misspelt_flag_is_named_before_the_flag_it_leaves_missing(capsys):
    argv = ["query", "--schema", str(STOCKS), "prices", "--symbol", "IBM", "--strat", "2000"]
    with pytest.raises(SystemExit):
        cli.main([*argv, "--end", "2001"])
    assert "unrecognized arguments: --strat; did you mean --start?" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "ms"),
    [("1958", calendar.timegm((1958, 1, 1, 0, 0, 0)) * 1000),
     ("1958-04", calendar.timegm((1958, 4, 1, 0, 0, 0)) * 1000),
     ("0854", calendar.timegm((854, 1, 1, 0, 0, 0)) * 1000)],
)  # fmt: skip
def test_a_query_window_takes_a_year_or_a_month(text, ms):
    assert time_arg(text) == ms


def test_a_bad_query_time_says_what_it_takes():
    with pytest.raises(Exception, match=r"'195x' is not a time: give RFC 3339"):
        time_arg("195x")


def test_a_reversed_range_is_said_in_the_users_times(capsys, target):
    argv = ["query", "--schema", str(STOCKS), "prices", "--symbol", "IBM", "--start", "2001",
            "--end", "2000", "--instance", target.instance]  # fmt: skip
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "ends at 2000-01-01T00:00:00.000Z (--end), at or before its start 2001-01-01" in err
