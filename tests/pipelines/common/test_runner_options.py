"""Any runner's flags are accepted: the jobs refuse an unknown flag (a typo Beam would only
warn about), so the options class of the chosen runner must be loaded before parsing, as Beam
loads it when the pipeline is made. A typo of one of our flags is still one line naming the
flag it resembles."""

from __future__ import annotations

import gc
import importlib.util
import sys
import uuid

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from btts import errors
from pipelines import common, flags
from pipelines import server_metrics as job

RUNNER_MODULE = """
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.runner import PipelineRunner


class ClusterOptions(PipelineOptions):
    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument("--cluster_address_NAME", help="where the cluster listens")


class ClusterRunner(PipelineRunner):
    def run_pipeline(self, pipeline, options):
        raise NotImplementedError
"""


def _parse(argv):
    return common.parse_args(argv, "python -m pipelines.server_metrics", "", job.OPTION_CLASSES)


@pytest.fixture
def runner_module(tmp_path, monkeypatch):
    """A runner and its options class in a module nothing has imported yet, its flag
    ``--cluster_address_<module>``. Gone afterwards: Beam parses every options class loaded
    in the process, so another test's flag would be this process's for good (and two classes
    declaring one flag make every later pipeline's parser fail)."""
    name = f"cluster_runner_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(RUNNER_MODULE.replace("NAME", name))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)
    gc.collect()  # the classes go with their module (options classes are held weakly)
    left = [c for c in PipelineOptions.__subclasses__() if c.__module__ == name]
    assert not left, f"{left} outlived the test: every later pipeline would parse it"


def test_a_runners_flags_are_known_once_it_is_chosen(runner_module):
    flag = f"--cluster_address_{runner_module}"
    with pytest.raises(errors.ConfigError, match=f"unknown option {flag}"):
        _parse(["--input=x.jsonl", f"{flag}=tcp://10.0.0.7:8786"])  # no runner names it
    assert runner_module not in sys.modules
    runner = f"--runner={runner_module}.ClusterRunner"
    options = _parse(["--input=x.jsonl", runner, f"{flag}=tcp://10.0.0.7:8786"])
    assert options.get_all_options()[flag[2:]] == "tcp://10.0.0.7:8786"


def test_beams_dask_runner_takes_its_flags_or_says_what_is_missing():
    """Beam's Dask runner is named by its class (Beam maps no short name to it); its module
    needs dask installed. Either its flags parse, or the one line says what to install."""
    runner = "--runner=apache_beam.runners.dask.dask_runner.DaskRunner"
    argv = ["--input=x.jsonl", runner, "--dask_client_address=tcp://10.0.0.7:8786"]
    if importlib.util.find_spec("dask") is None:
        with pytest.raises(errors.ConfigError) as refused:
            _parse(argv)
        assert "cannot load it (No module named 'dask')" in str(refused.value)
        assert "apache-beam[dask]" in str(refused.value) and "\n" not in str(refused.value)
    else:
        assert _parse(argv).get_all_options()["address"] == "tcp://10.0.0.7:8786"


def test_a_typo_of_our_flag_is_still_named_with_a_runner_loaded(runner_module):
    argv = ["--input=x.jsonl", f"--runner={runner_module}.ClusterRunner", "--creat_tables"]
    with pytest.raises(errors.ConfigError) as refused:
        _parse(argv)
    assert str(refused.value).startswith(
        "unknown option --creat_tables (did you mean --create_tables?)"
    )


@pytest.mark.parametrize(
    ("runner", "said"),
    [
        ("NoSuchRunner", "--runner NoSuchRunner: Unexpected pipeline runner: NoSuchRunner"),
        ("no_such_module.Runner", "--runner no_such_module.Runner: cannot load it"),
    ],
)
def test_a_runner_that_cannot_be_loaded_is_one_line(runner, said):
    with pytest.raises(SystemExit) as stop:
        job.run(["--input=x.jsonl", f"--runner={runner}"])
    text = str(stop.value)
    assert text.startswith(f"server_metrics: error: {said}") and "\n" not in text


def test_a_job_parses_its_own_flags_whatever_else_was_imported():
    """Which flags a job takes is what its declarations say: another job's flag is refused even
    when that job's module (and so its options class) is loaded in the process."""
    import pipelines.weather_balloons  # noqa: F401  (its --balloon_pattern: not server_metrics')

    with pytest.raises(errors.ConfigError, match="unknown option --balloon_pattern"):
        _parse(["--input=x.jsonl", "--balloon_pattern=TB-ROW"])
    assert common.options_class(flags.BIGTABLE) is common.BigtableOptions
