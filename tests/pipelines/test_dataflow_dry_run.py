"""Every job translates for Dataflow offline: Beam's ``--dry_run=True`` on the DataflowRunner,
with no emulator, no credentials and no network, exits 0 and says what it would launch. The
flex templates' ``main.py`` (the launcher's ``--name=value`` arguments) passes the same check.

Each run is a subprocess: the translation is the whole job's ``run()``, exactly as a user or
the template launcher starts it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipelines import job_modules
from tests.support import REPO
from tests.support.offline_dataflow import DATAFLOW, offline_env

SCHEMA = REPO / "docs" / "schemas" / "ts-cols-stock-ticks.yaml"
# Dataflow's workers read URIs, not the launcher's files
# (tests/pipelines/common/test_remote_paths.py)
GS_INPUT = "--input=gs://test-bucket/in/events.jsonl"
STREAM = [
    "--input_subscription=projects/test-project/subscriptions/events",
    "--dead_letter_topic=projects/test-project/topics/dead",
]
JOBS = {
    **{name: [GS_INPUT] for name in sorted(job_modules()) if name != "generic"},
    "generic": [GS_INPUT, f"--schema={SCHEMA}"],
    "server_metrics (streaming, rollup)": [*STREAM, "--hourly_rollup"],
    "smart_meters (streaming, rollup)": [*STREAM, "--hourly_rollup"],
    "generic (streaming)": [*STREAM, f"--schema={SCHEMA}"],
    "nightly": ["--date=20170726"],
}


def _run(argv: list[str], tmp_path: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    source = tmp_path / "in.jsonl"
    source.write_text("{}\n")
    args = [a.format(input=source) for a in argv]
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=240, cwd=tmp_path,
        env={**offline_env(), **(env or {})},
    )  # fmt: skip


@pytest.mark.parametrize("job", list(JOBS))
def test_every_job_translates_for_dataflow_offline(job, tmp_path):
    module = job.split(" ")[0]
    done = _run(["-m", f"pipelines.{module}", *DATAFLOW, *JOBS[job]], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    mode = "streaming" if "--input_subscription" in JOBS[job][0] else "batch"
    assert f"{module}: dry run: the {mode} job translated for DataflowRunner" in done.stdout
    assert "Nothing was launched or written." in done.stdout
    assert not (tmp_path / "dead-letters").exists()


@pytest.mark.parametrize("job", ["generic", "server_metrics", "nightly"])
def test_the_template_entry_points_translate_with_the_launchers_arguments(job, tmp_path):
    flags = {
        "generic": [GS_INPUT, f"--schema={SCHEMA}", "--create_tables=true"],
        "server_metrics": [*STREAM, "--hourly_rollup=true", "--create_tables=false"],
        "nightly": ["--date=20170726"],
    }[job]
    main = REPO / "templates" / "main.py"  # every image's entry point; its ENV names the job
    done = _run([str(main), *DATAFLOW, *flags], tmp_path, {"BTTS_PIPELINE": job})
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{job}: dry run: the " in done.stdout
    assert "translated for DataflowRunner" in done.stdout


@pytest.mark.parametrize("job", ["sales", "--schema"])
def test_btts_ingest_reaches_dataflow_with_the_same_flags(job, tmp_path):
    """``btts ingest`` (a built-in job, or ``--schema FILE``) takes the flags ``python -m
    pipelines.JOB`` takes: ``--project`` is the Bigtable project and the Dataflow job's."""
    btts_flags = [
        "--runner=DataflowRunner", "--project", "test-project", "--region=europe-west1",
        "--temp_location=gs://test-bucket/tmp", "--dry_run=True", "--instance", "test-instance",
    ]  # fmt: skip
    what = ["sales"] if job == "sales" else [f"--schema={SCHEMA}"]
    done = _run(["-m", "btts_cli.main", "ingest", *what, GS_INPUT, *btts_flags], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    name = "sales" if job == "sales" else "generic"
    assert (
        f"{name}: dry run: the batch job translated for DataflowRunner (project test-project"
        in done.stdout
    )
    assert "Nothing was launched or written." in done.stdout
