"""A run's settings are decided once, before the graph is built (pipelines/common/config.py):
the job's builder is compiled once per run, the checks change no option, and what the run
does is read from one frozen :class:`JobConfig`."""

from __future__ import annotations

import dataclasses
import shutil
import threading
from collections import Counter

import pytest
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from btts.query import engine
from btts_cli import main as cli
from pipelines import common, server_metrics
from tests.support import REPO
from tests.support.jobs import write_lines
from transforms.builder.builder import Builder

IOT = REPO / "docs" / "schemas" / "tb-cell-iot-temperatures.yaml"
SUBSCRIPTION = "--input_subscription=projects/p/subscriptions/s"


@pytest.fixture
def compilations(monkeypatch) -> Counter:
    """Every builder compiled from a schema, by the schema's file, as the run goes: a wrapper
    at the compiler's one door (``Builder.__init__``). The copies a runner unpickles on its
    workers (``Builder.__setstate__``, compiled again from the pickled text by design) are
    counted apart, under ``("copy", file)``."""
    made: Counter = Counter()
    unpickling = threading.local()  # the runner's workers are threads here
    init, setstate = Builder.__init__, Builder.__setstate__

    def counted_init(self, schema, *args, **kwargs):
        copy = getattr(unpickling, "on", False)
        made[("copy", str(schema.source)) if copy else str(schema.source)] += 1
        init(self, schema, *args, **kwargs)

    def counted_setstate(self, state):
        unpickling.on = True
        try:
            setstate(self, state)
        finally:
            unpickling.on = False

    monkeypatch.setattr(Builder, "__init__", counted_init)
    monkeypatch.setattr(Builder, "__setstate__", counted_setstate)
    return made


def test_btts_ingest_compiles_the_builder_once(target, tmp_path, compilations, capsys):
    """``btts ingest --schema FILE`` with a time flag (which changes the schema the builder is
    compiled from): one compilation in the whole run, and the rows land as that flag says."""
    schema = shutil.copy(IOT, tmp_path / "iot.yaml")  # a file no other test compiles
    lines = ['{"device": "d1", "ts": "2024-05-01 10:15:00", "temperature_c": 21.5}']
    source = write_lines(tmp_path / "in.jsonl", lines)
    argv = ["ingest", "--schema", str(schema), f"--input={source}", "--create_tables"]
    argv += ["--time_format=ts=%Y-%m-%d %H:%M:%S", f"--dead_letter={tmp_path / 'dead'}"]
    argv += ["--project", target.project, "--instance", target.instance]
    assert cli.main(argv) == 0
    assert "1 of 1 records landed" in capsys.readouterr().out
    assert compilations[str(schema)] == 1, compilations
    assert compilations[("copy", str(schema))] > 0  # the workers' own: the count can see them
    (row,) = engine.read_rows(target, "DEVICE_TEMP")
    assert row.cells[0].timestamp_us == 1714558500 * 10**6  # 2024-05-01T10:15Z, as the flag reads


def test_a_job_is_not_compiled_until_a_run_needs_it(compilations):
    job = common.builtin_job("server_metrics", "a job made for this test")
    assert not compilations
    assert job.builder is job.builder
    assert sum(compilations.values()) == 1


def test_checking_the_flags_changes_no_option(tmp_path):
    """Streaming is decided when the flags are parsed (Pub/Sub input is a streaming pipeline),
    and making the config sets nothing on the options."""
    argv = [SUBSCRIPTION, "--dead_letter_topic=t", "--bigtable_instance=i", "--project=p"]
    parsed = common.parse_args(argv, "test", "", server_metrics.OPTION_CLASSES)
    assert parsed.view_as(StandardOptions).streaming
    plain = PipelineOptions(argv)
    before = plain.get_all_options()
    config = common.job_config(plain, server_metrics.JOB)
    assert config.streaming
    assert plain.get_all_options() == before
    assert not plain.view_as(StandardOptions).streaming


def test_the_config_is_frozen_and_says_where_dead_letters_go(tmp_path):
    source = write_lines(tmp_path / "in.jsonl", [])
    argv = [f"--input={source}", f"--dead_letter={tmp_path / 'dead'}", "--validate_only"]
    config = common.job_config(PipelineOptions(argv), server_metrics.JOB, "RUN")
    assert config.dead_letter_prefix == f"{tmp_path / 'dead'}-RUN"
    assert config.dead_letters is None  # a check writes none
    assert config.target is None and not config.writes
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.run_id = "another"  # type: ignore[misc]
