"""The btts command line: help that explains itself, idempotent table creation."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from btts import admin
from btts_cli import main as cli
from tests.support import REPO
from transforms.schema import builtin_tables


def _btts(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "btts_cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env or dict(os.environ),
    )


def test_help_explains_itself():
    top = _btts("--help")
    assert top.returncode == 0
    for command in ("tables", "emulator", "ingest", "demo"):
        assert command in top.stdout
    assert "BIGTABLE_EMULATOR_HOST" in top.stdout
    create = _btts("tables", "create", "--help")
    assert create.returncode == 0
    assert "Idempotent" in create.stdout
    assert "--project" in create.stdout and "--instance" in create.stdout


def test_ingest_help_is_the_jobs_help(capsys):
    with pytest.raises(SystemExit):
        cli.main(["ingest", "server_metrics", "--help"])
    assert "--dead_letter" in capsys.readouterr().out


def test_tables_create_is_idempotent_and_sets_gc_rules(target, capsys):
    argv = ["tables", "create", "--project", target.project, "--instance", target.instance]
    assert cli.main(argv) == 0
    first = capsys.readouterr().out
    assert "created table METRIC" in first and "created table CURRENT_METRIC" in first
    assert cli.main(argv) == 0
    second = capsys.readouterr().out
    assert "created" not in second and "already as declared" in second

    with admin.Admin(target) as api:
        assert set(builtin_tables.all_tables()) <= set(api.list_tables())
        families = api.get_families("CURRENT_METRIC")
    assert families["METRIC"].gc_rule.max_num_versions == 1


def test_tables_create_adds_a_missing_family_and_reports_a_differing_one(target, capsys):
    from google.cloud.bigtable_admin_v2 import types

    with admin.Admin(target) as api:
        api.api.create_table(
            parent=target.instance_path,
            table_id="METRIC",
            table=types.Table(
                column_families={
                    "OLD": types.ColumnFamily(gc_rule=types.GcRule(max_num_versions=3))
                }
            ),
        )
    cli.main(["tables", "create", "--table", "METRIC", "--instance", target.instance])
    assert "added family METRIC to METRIC" in capsys.readouterr().out
    with admin.Admin(target) as api:
        api.api.modify_column_families(
            name=target.table_path("METRIC"),
            modifications=[
                types.ModifyColumnFamiliesRequest.Modification(
                    id="METRIC",
                    update=types.ColumnFamily(gc_rule=types.GcRule(max_num_versions=9)),
                )
            ],
        )
    cli.main(["tables", "create", "--table", "METRIC", "--instance", target.instance])
    assert "differs from its declaration" in capsys.readouterr().out
    with admin.Admin(target) as api:
        assert api.get_families("METRIC")["METRIC"].gc_rule.max_num_versions == 9


@pytest.mark.parametrize("command", ["create", "show"])
def test_unknown_table_is_a_clear_error(target, capsys, command):
    where = ["--instance", target.instance] if command == "create" else []
    assert cli.main(["tables", command, "--table", "NOPE", *where]) == 2
    err = capsys.readouterr().err
    assert err.startswith("btts: error: no table declaration named 'NOPE'; known: ")
    assert "METRIC" in err


def test_without_emulator_or_instance_the_error_says_what_to_do():
    env = {k: v for k, v in os.environ.items() if k != "BIGTABLE_EMULATOR_HOST"}
    done = _btts("tables", "create", env=env)
    assert done.returncode == 2
    assert "pass --project and --instance" in done.stderr
    assert "Traceback" not in done.stderr


def test_cli_spelling_of_the_target_reaches_the_jobs():
    """``--project`` is the Bigtable project and, on Dataflow, the job's project (issue 34)."""
    assert cli._instance_flag(["--instance", "i1", "--project=p1", "--date", "20170726"]) == [
        "--bigtable_instance=i1",
        "--bigtable_project=p1",
        "--project=p1",
        "--date",
        "20170726",
    ]


def test_nightly_and_demo_take_their_own_flags(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["nightly", "--help"])
    assert done.value.code == 0
    assert "--keep_days" in capsys.readouterr().out
    with pytest.raises(SystemExit) as done:
        cli.main(["demo", "--help"])
    assert done.value.code == 0
    assert "--hosts" in capsys.readouterr().out


def test_a_closed_pipe_ends_a_command_quietly():
    """``btts … | head``: the reader goes away before the output ends; no traceback."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from btts_cli import main as cli; "
         "sys.exit(max(cli.main(['tables', 'show']) for _ in range(40)))"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    proc.stdout.read(100)
    proc.stdout.close()  # 40 × the table listing is far more than a pipe holds
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "Traceback" not in err and "BrokenPipeError" not in err


@pytest.mark.parametrize("flag", ["-q", "--quiet", "-v"])
def test_logging_flags_work_wherever_they_stand(flag):
    job = cli.parser().parse_args(["ingest", "sales", "--input=x", flag])
    assert (job.quiet, job.verbose, job.command, job.job, job.args) == (
        flag != "-v",
        flag == "-v",
        "ingest",
        "sales",
        ["--input=x"],
    )
    args = cli.parser().parse_args(["tables", "list", flag])
    assert args.quiet is (flag != "-v") and args.verbose is (flag == "-v")


def test_tables_show_of_a_schema_file_points_at_no_empty_section(capsys):
    schema = str(REPO / "docs" / "schemas" / "tb-col-door-sensors.yaml")
    assert cli.main(["tables", "show", "--schema", schema]) == 0
    out = capsys.readouterr().out
    assert out and "§)" not in out
    assert cli.main(["tables", "show", "--table", "METRIC"]) == 0
    assert "(docs/patterns.md §5.2)" in capsys.readouterr().out
