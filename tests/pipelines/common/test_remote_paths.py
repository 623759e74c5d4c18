"""On a runner whose workers run elsewhere (Dataflow, a cluster, Docker workers), every file path
a job gives them is a remote URI: a local ``--input`` or ``--dead_letter`` (or the local default
for dead letters) is refused before launch in one line naming the flag and what to pass, and
readers are chosen without opening the launcher's files."""

from __future__ import annotations

import subprocess
import sys

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines import common, load
from pipelines.common import remote
from tests.support.offline_dataflow import DATAFLOW, offline_env
from transforms.ingest.readers import ReadRecords

GS = "gs://test-bucket/in/events.jsonl"


def test_a_dataflow_dry_run_of_a_local_input_is_refused_in_one_line(tmp_path):
    """The issue's run: ``--input m.jsonl`` (relative, on the launcher's disk) and no
    ``--dead_letter`` used to translate and exit 0."""
    (tmp_path / "m.jsonl").write_text("{}\n")
    done = subprocess.run(
        [sys.executable, "-m", "pipelines.server_metrics", *DATAFLOW, "--input", "m.jsonl"],
        capture_output=True, text=True, timeout=240, cwd=tmp_path, env=offline_env(),
    )  # fmt: skip
    assert done.returncode != 0
    assert "Nothing was launched" not in done.stdout
    (line,) = [line for line in done.stderr.splitlines() if line.strip()]
    assert line == (
        "server_metrics: error: --input m.jsonl is a local path, which DataflowRunner's workers "
        "cannot read (they run on other machines); pass a gs:// URI, e.g. --input "
        "gs://BUCKET/m.jsonl"
    )


def _refusal(job: str, argv: list[str], runner: list[str] = DATAFLOW) -> str:
    with pytest.raises(SystemExit) as stop:
        load(job).run([*runner, *argv])
    text = str(stop.value)
    assert "\n" not in text and text.startswith(f"{job}: error: ")
    return text.removeprefix(f"{job}: error: ")


@pytest.mark.parametrize("path", ["/data/events.jsonl", "events/*.jsonl", "./m.jsonl"])
def test_every_local_input_is_refused_before_launch(path):
    said = _refusal("market_data", [f"--input={GS}", f"--input={path}"])
    assert said.startswith(f"--input {path} is a local path") and "gs://" in said


def test_a_local_dead_letter_prefix_is_refused():
    said = _refusal("garden", [f"--input={GS}", "--dead_letter=bad/garden"])
    assert said.startswith("--dead_letter bad/garden is a local path, which DataflowRunner's")
    assert "pass a gs:// URI, e.g. --dead_letter gs://BUCKET/garden" in said


def test_the_local_default_for_dead_letters_is_refused_without_a_temp_location():
    runner = [a for a in DATAFLOW if not a.startswith("--temp_location")]
    said = _refusal("sales", [f"--input={GS}"], runner)
    assert said.startswith("--dead_letter: the default, dead-letters/sales, is on each")
    assert "--dead_letter gs://BUCKET/dead-letters/sales" in said


def test_dead_letters_default_under_the_temp_location_on_a_remote_runner():
    battery = load("battery").JOB
    options = PipelineOptions([*DATAFLOW, f"--input={GS}"])
    where = common.job_config(options, battery, "RUN").dead_letters
    assert where == "gs://test-bucket/tmp/dead-letters/battery-RUN*.jsonl"
    local = PipelineOptions([f"--input={GS}", "--validate_only"])
    assert common.job_config(local, battery, "RUN").dead_letter_prefix == "dead-letters/battery-RUN"


def test_a_streaming_job_with_a_dead_letter_topic_needs_no_file_path():
    argv = [
        "--input_subscription=projects/test-project/subscriptions/events",
        "--dead_letter_topic=projects/test-project/topics/dead",
        "--dead_letter=local/ignored",
    ]
    options = PipelineOptions([*DATAFLOW, *argv])
    config = common.job_config(options, load("server_metrics").JOB)
    assert config.dead_letters == "projects/test-project/topics/dead"


@pytest.mark.parametrize(
    ("flags", "far"),
    [
        ([], False),
        (["--runner=DirectRunner", "--direct_running_mode=multi_processing"], False),
        (["--runner=direct"], False),
        (["--runner=PrismRunner"], False),
        (["--runner=DataflowRunner"], True),
        (["--runner=PortableRunner", "--job_endpoint=localhost:8099"], True),  # DOCKER workers
        (["--runner=PortableRunner", "--job_endpoint=localhost:8099",
          "--environment_type=LOOPBACK"], False),
        (["--runner=PortableRunner", "--job_endpoint=127.0.0.1:8099",
          "--environment_type=EXTERNAL", "--environment_config=localhost:50000"], False),
        (["--runner=PortableRunner", "--job_endpoint=[::1]:8099",
          "--environment_type=PROCESS", "--environment_config={}"], False),
        (["--runner=PortableRunner", "--job_endpoint=localhost:8099",
          "--environment_type=EXTERNAL", "--environment_config=10.1.2.3:50000"], True),
        (["--runner=PortableRunner", "--job_endpoint=jobs.example.com:8099",
          "--environment_type=LOOPBACK"], True),
        (["--runner=FlinkRunner", "--environment_type=LOOPBACK"], False),  # embedded Flink
        (["--runner=FlinkRunner", "--flink_master=flink.example.com:8081",
          "--environment_type=LOOPBACK"], True),
        (["--runner=SparkRunner"], True),
        (["--runner=apache_beam.runners.dask.dask_runner.DaskRunner"], False),
        (["--runner=apache_beam.runners.dask.dask_runner.DaskRunner",
          "--dask_client_address=tcp://10.1.2.3:8786"], True),
        (["--runner=apache_beam.runners.dask.dask_runner.DaskRunner",
          "--dask_client_address=tcp://127.0.0.1:8786"], False),
        (["--runner=my_company.runners.ClusterRunner"], True),
    ],
)  # fmt: skip
def test_which_runners_workers_share_the_launchers_disk(flags, far):
    if any("dask" in f for f in flags):  # its flags parse whether or not dask is installed
        flags = [f.replace("--dask_client_address=", "--address=") for f in flags]
    assert remote.runner_of(PipelineOptions(flags)).remote is far


def test_readers_are_chosen_without_opening_a_file_when_told_not_to(tmp_path):
    """A remote runner's graph opens nothing of the launcher's to choose its readers: every
    reader is in the graph and each file's own content decides when it runs."""
    missing = str(tmp_path / "not-here" / "x.jsonl")  # opening it would fail
    assert ReadRecords([missing], inspect=False)._kinds() == {"text", "parquet", "avro"}
    present = tmp_path / "y.jsonl"
    present.write_text("{}\n")
    assert ReadRecords([str(present)])._kinds() == {"text"}  # local: looked at, one reader
