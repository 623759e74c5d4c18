"""Dataflow flex templates: metadata generated from the pipelines' declared flags (drift fails),
the images' Dockerfiles checked statically (no Docker engine here), the launcher's argument
handling, the gcloud commands, and the wheel the images and ``--setup_file`` rely on."""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import apache_beam
import pytest

from btts.query import engine
from btts_cli import templates
from pipelines import common, flags
from tests.support import REPO
from tests.support.jobs import parsed_flags, read_dead_letters, write_lines

PIPELINES = templates.pipeline_names()
SETUP = REPO / "setup.py"


def _committed(name: str) -> dict:
    return json.loads((REPO / "templates" / name / "metadata.json").read_text(encoding="utf-8"))


def _params(name: str) -> dict[str, dict]:
    return {p["name"]: p for p in _committed(name)["parameters"]}


# A flag a pipeline might gain (a group no option class is made of: Beam would parse its flags
# in every later test of the session).
_EXTRA = flags.Group.of(
    "extra", "Extra", flags.Flag("--server_metrics_sample_rate", type=int, default=1, help="new")
)


# -- one source of truth: the flags the pipelines declare --------------------------------------


def test_every_pipeline_has_a_template_and_nothing_else_does():
    assert set(PIPELINES) == {
        "server_metrics",
        "market_data",
        "smart_meters",
        "weather_balloons",
        "battery",
        "game_results",
        "garden",
        "sales",
        "generic",
        "nightly",
    }
    folders = {p.parent.name for p in (REPO / "templates").glob("*/metadata.json")}
    assert folders == set(PIPELINES)


def test_committed_templates_equal_the_generated_ones():
    """`make templates` regenerates them; a pipeline that gains, loses or changes a flag
    without it fails here."""
    assert templates.drift(REPO) == []
    for name in PIPELINES:
        text = (REPO / "templates" / name / "metadata.json").read_text(encoding="utf-8")
        assert text == templates.rendered(name, REPO)["metadata.json"]


@pytest.mark.parametrize("name", PIPELINES)
def test_parameters_are_exactly_the_pipeline_flags_with_their_required_ness(name):
    """Independent of the generator: the committed metadata against the flags the pipeline's
    run() parses (what its option classes give Beam's parser, and its --help lists)."""
    module = templates.pipeline_module(name)
    parsed = {flag[2:]: action for flag, action in parsed_flags(module.OPTION_CLASSES).items()}
    params = _params(name)
    assert set(params) == set(parsed)
    for flag, action in parsed.items():
        param = params[flag]
        assert param["label"] and param["helpText"], flag
        assert param["helpText"].startswith(" ".join((action.help or "").split())[:40]), flag
        if action.required:
            assert param["isOptional"] is False, flag
    # Dataflow has no emulator: the instance must be given; a batch-only job needs its files
    assert params["bigtable_instance"]["isOptional"] is False
    assert params["input" if "input" in params else "date"]["isOptional"] is (
        "input_subscription" in params or name == "nightly"
    )
    assert templates.mismatches(name, _committed(name)) == []


def test_the_templates_read_what_each_module_runs_with():
    """The groups and description a template is made of are the ones the job module parses
    (its OPTION_CLASSES, one per group) and states (its docstring)."""
    for name in PIPELINES:
        module = templates.pipeline_module(name)
        description, groups = templates.declared_groups(name)
        assert tuple(cls.GROUP for cls in module.OPTION_CLASSES) == groups, name
        assert module.__doc__ == description, name


def test_a_pipeline_gaining_an_option_fails_the_check(monkeypatch):
    original = templates.declared_groups

    def gained(name):
        description, groups = original(name)
        if name == "server_metrics":
            groups = (*groups, _EXTRA)
        return description, groups

    monkeypatch.setattr(templates, "declared_groups", gained)
    problems = templates.drift(REPO)
    assert problems == [
        "templates/server_metrics/metadata.json: --server_metrics_sample_rate has no template "
        "parameter"
    ]
    assert templates.main(["check"]) == 1


def test_a_pipeline_losing_an_option_fails_the_check(monkeypatch):
    original = templates.declared_groups

    def lost(name):
        description, groups = original(name)
        if name == "market_data":
            groups = tuple(g for g in groups if g is not flags.STREAMING)
        return description, groups

    monkeypatch.setattr(templates, "declared_groups", lost)
    problems = templates.drift(REPO)
    prefix = "templates/market_data/metadata.json: parameter "
    assert sorted(problems) == sorted(
        [
            f"{prefix}'allowed_lateness_minutes' is no flag of the pipeline",
            f"{prefix}'dead_letter_topic' is no flag of the pipeline",
            f"{prefix}'hourly_rollup' is no flag of the pipeline",
            f"{prefix}'input_subscription' is no flag of the pipeline",
            f"{prefix}'rollup_mode' is no flag of the pipeline",
            # without streaming, files become the job's only input
            f"{prefix}'input': isOptional must be False",
        ]
    )


def test_a_hand_edited_template_fails_the_check(tmp_path):
    root = tmp_path / "repo"
    shutil.copytree(REPO / "templates", root / "templates")
    shutil.copy(SETUP, root / "setup.py")
    meta = json.loads((root / "templates" / "garden" / "metadata.json").read_text())
    meta["parameters"] = [p for p in meta["parameters"] if p["name"] != "garden_layout"]
    meta["parameters"][0]["isOptional"] = True  # input: required, garden reads files only
    (root / "templates" / "garden" / "metadata.json").write_text(json.dumps(meta))
    (root / "templates" / "nightly" / "Dockerfile").write_text("FROM python:3.11\n")
    (root / "templates" / "old_job").mkdir()
    (root / "templates" / "old_job" / "metadata.json").write_text("{}")
    assert templates.drift(root) == [
        "templates/garden/metadata.json: --garden_layout has no template parameter",
        "templates/garden/metadata.json: parameter 'input': isOptional must be False",
        "templates/nightly/Dockerfile: differs from the pipeline",
        "templates/old_job/metadata.json: no pipeline 'old_job'",
    ]
    templates.write(root)
    assert templates.drift(root) == ["templates/old_job/metadata.json: no pipeline 'old_job'"]


def test_the_image_follows_the_python_the_templates_are_built_for(tmp_path, capsys):
    """``btts templates build --python 3.X``: both stages on Beam's SDK image of that Python
    (the launch and the workers run it); later builds and the check keep the Python each
    Dockerfile was built for."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "templates", root / "templates")
    shutil.copy(SETUP, root / "setup.py")
    assert templates.main(["build", "--root", str(root), "--python", "3.13"]) == 0
    for name in PIPELINES:
        text = (root / "templates" / name / "Dockerfile").read_text(encoding="utf-8")
        froms = [arg for op, arg in _instructions(text) if op == "FROM"]
        assert [f.split(":")[0] for f in froms] == ["apache/beam_python3.13_sdk"] * 2, name
        assert templates.built_for(name, root) == "3.13"
    assert templates.drift(root) == []  # the check reads which Python each was built for
    templates.write(root)  # a build without --python keeps it
    assert templates.built_for("nightly", root) == "3.13"
    assert templates.main(["build", "--root", str(root), "--python", "3.10"]) == 0
    assert templates.built_for("garden", root) == "3.10"
    with pytest.raises(SystemExit):
        templates.main(["build", "--root", str(root), "--python", "3.9"])  # below setup.py
    assert "invalid choice: '3.9'" in capsys.readouterr().err
    with pytest.raises(ValueError, match=re.escape("built for 3.10, 3.11, 3.12, 3.13")):
        templates.sdk_image("3.14")


def test_the_template_pythons_are_the_ones_setup_py_accepts():
    floor = re.search(r'python_requires=">=(3\.\d+)"', SETUP.read_text()).group(1)
    assert templates.PYTHONS[0] == floor
    assert templates.DEFAULT_PYTHON in templates.PYTHONS


# -- what the metadata validates -------------------------------------------------------------


def _regex(name: str, flag: str) -> re.Pattern:
    (regex,) = _params(name)[flag]["regexes"]
    return re.compile(regex)


@pytest.mark.parametrize(
    ("name", "flag", "good", "bad"),
    [
        ("nightly", "date", ["20170726", "20160229"], ["2017-07-26", "20171301", "2017072"]),
        ("nightly", "dates", ["20170701..20170731"], ["20170701-20170731", "20170701.."]),
        ("nightly", "keep_days", ["0", "30"], ["-1", "thirty", "3.5"]),
        ("nightly", "layout", ["per_day_table", "single_table"], ["per_day", "table"]),
        ("nightly", "verify", ["true", "false"], ["yes", ""]),
        ("nightly", "source_table", ["SENSOR"], ["SEN SOR", ""]),
        (
            "smart_meters",
            "timezone",
            ["UTC", "Europe/Paris", "America/Argentina/Buenos_Aires", "Etc/GMT+5"],
            ["Europe Paris", "/Paris", "+05:00"],
        ),
        (
            "server_metrics",
            "input_subscription",
            ["projects/p1/subscriptions/metrics"],
            ["metrics", "projects/p1/topics/metrics", "projects//subscriptions/s"],
        ),
        (
            "server_metrics",
            "dead_letter_topic",
            ["projects/p1/topics/dead"],
            ["projects/p1/subscriptions/dead", "dead"],
        ),
        (
            "game_results",
            "input",
            ["gs://b/results/*.jsonl", "gs://b/a.csv,gs://b/b.csv", "gs://b/a.csv, gs://b/c"],
            ["/local/file.jsonl", "results/*.jsonl", "gs://b/a,/tmp/b"],
        ),
        ("game_results", "dead_letter", ["gs://b/dead/games"], ["dead-letters/games"]),
        ("game_results", "bigtable_instance", ["meters", "prod-meters-1"], ["M", "ab", "x_y"]),
        ("battery", "salt_buckets", ["3", "12"], ["0", "-3", "three"]),
        ("battery", "battery_layout", ["promoted", "salted", "timestamp_first"], ["salt"]),
        ("weather_balloons", "balloon_pattern", ["TS-BLOB", "TB-CELL"], ["TS_BLOB", "ts-blob"]),
    ],
)
def test_fixed_formats_have_regexes(name, flag, good, bad):
    regex = _regex(name, flag)
    assert all(regex.fullmatch(v) for v in good), good
    assert not any(regex.fullmatch(v) for v in bad), bad


def test_parameter_types_and_defaults_pass_their_own_validation():
    for name in PIPELINES:
        parsed = parsed_flags(templates.pipeline_module(name).OPTION_CLASSES)
        defaults = {flag[2:]: action.default for flag, action in parsed.items()}
        for param in _committed(name)["parameters"]:
            assert param["paramType"] in {
                "TEXT",
                "BOOLEAN",
                "ENUM",
                "PUBSUB_SUBSCRIPTION",
                "PUBSUB_TOPIC",
            }
            default = defaults[param["name"]]
            if isinstance(default, bool):
                default = str(default).lower()
            if isinstance(default, (str, int)) and param.get("regexes"):
                assert re.fullmatch(param["regexes"][0], str(default)), (name, param["name"])
            if param["paramType"] == "ENUM":
                assert [o["value"] for o in param["enumOptions"]] == list(
                    parsed["--" + param["name"]].choices
                )
            if param["paramType"] == "BOOLEAN":
                assert param["regexes"] == ["^(true|false)$"]


def test_streaming_templates_are_the_pubsub_pipelines():
    streaming = {name for name in PIPELINES if _committed(name).get("streaming")}
    assert streaming == {"server_metrics", "market_data", "smart_meters", "generic"}
    for name in PIPELINES:
        meta = _committed(name)
        assert meta["name"] == f"bigtable-timeseries {name}"
        assert meta["description"] and "\n" not in meta["description"]


def test_the_nightly_schedule_launches_with_valid_template_parameters():
    job = json.loads((REPO / "templates" / "nightly" / "cloud-scheduler.json").read_text())
    launch = job["httpTarget"]["body"]["launchParameter"]
    params = _params("nightly")
    sample = {
        "${BIGTABLE_PROJECT}": "my-project",
        "${BIGTABLE_INSTANCE}": "meters",
        "${TIMEZONE}": "Europe/Paris",
        "${KEEP_DAYS}": "30",
    }
    for name, value in launch["parameters"].items():
        assert name in params, name
        value = sample.get(value, value)
        for regex in params[name].get("regexes", []):
            assert re.fullmatch(regex, value), (name, value)
    required = {n for n, p in params.items() if not p["isOptional"]}
    assert required <= set(launch["parameters"])


# -- Dockerfiles (static: no Docker engine on this machine) ------------------------------------


def _setup_beam_requirement() -> str:
    tree = ast.parse(SETUP.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and getattr(node.targets[0], "id", "") == "INSTALL_REQUIRES"
        ):
            (beam,) = [r for r in ast.literal_eval(node.value) if r.startswith("apache-beam")]
            return beam
    raise AssertionError("setup.py has no INSTALL_REQUIRES")


def _instructions(text: str) -> list[tuple[str, str]]:
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return [(line.split()[0].upper(), line.split(None, 1)[1]) for line in lines]


@pytest.mark.parametrize("name", PIPELINES)
def test_dockerfile_builds_on_the_pinned_beam_sdk_image(name):
    from packaging.specifiers import SpecifierSet

    requirement = _setup_beam_requirement()  # e.g. apache-beam[gcp]>=2.77.0,<2.78
    spec = SpecifierSet(re.sub(r"^apache-beam(\[[^\]]*\])?", "", requirement))
    text = (REPO / "templates" / name / "Dockerfile").read_text(encoding="utf-8")
    steps = _instructions(text)
    froms = [arg.split()[0] for op, arg in steps if op == "FROM"]
    assert froms, name
    for image in froms:
        repository, tag = image.split(":")
        assert repository == templates.sdk_image(templates.DEFAULT_PYTHON)  # as committed
        assert tag in spec, (tag, requirement)  # the image's Beam satisfies setup.py
        assert tag == templates.beam_version(REPO)  # ... and is the version it pins
    assert apache_beam.__version__ in spec  # what the tests ran with, too
    # launcher: the Flex Template launcher binary, and the entry point it runs
    copies = [arg for op, arg in steps if op == "COPY"]
    launcher = "/opt/google/dataflow/python_template_launcher"
    assert any(
        c.startswith("--from=gcr.io/dataflow-templates-base/") and launcher in c for c in copies
    )
    env = dict(arg.split("=", 1) for op, arg in steps if op == "ENV")
    entry = env["FLEX_TEMPLATE_PYTHON_PY_FILE"]
    assert f"templates/main.py {entry}" in copies
    assert env[templates.PIPELINE_ENV] == name  # what the one entry point launches
    assert "FLEX_TEMPLATE_PYTHON_SETUP_FILE" not in env  # the package is in the image
    assert env[templates.IMAGE_ENV] == "${IMAGE}"
    # worker: Beam's boot entry point, the project wheel installed
    assert steps[-1] == ("ENTRYPOINT", '["/opt/apache/beam/boot"]')
    assert "pip wheel --no-cache-dir --no-deps --wheel-dir /wheels ." in text
    assert "pip install --no-cache-dir /wheels/*.whl && pip check" in text
    # every file COPY'd from the build context exists in the repository
    for copy in copies:
        if copy.startswith("--from"):
            continue
        *sources, _ = copy.split()
        for source in sources:
            assert (REPO / source).exists(), source


@pytest.mark.parametrize("name", PIPELINES)
def test_every_image_a_dockerfile_names_is_pinned(name):
    """A rebuild gets the same images: a dated tag or a digest, never ``:latest`` or no tag."""
    steps = _instructions((REPO / "templates" / name / "Dockerfile").read_text(encoding="utf-8"))
    images = [arg.split()[0] for op, arg in steps if op == "FROM"]
    froms = [arg.split()[0] for op, arg in steps if op == "COPY" and arg.startswith("--from=")]
    images += [f[len("--from=") :] for f in froms]
    images = [i for i in images if "/" in i]  # not a stage of this Dockerfile (`wheel`)
    assert any("template-launcher-base" in i for i in images), images
    for image in images:
        repository, _, tag = image.partition("@")[0].rpartition(":")
        assert repository and tag and tag != "latest", image
        if "template-launcher-base" in image:
            assert "@sha256:" in image or re.search(r"20[0-9]{6}", tag), image


def test_cloud_build_config_builds_a_template_dockerfile_with_its_own_name():
    text = (REPO / "templates" / "cloudbuild.yaml").read_text(encoding="utf-8")
    assert "--file=templates/${_TEMPLATE}/Dockerfile" in text
    assert "--build-arg=IMAGE=${_IMAGE}" in text
    assert "--tag=${_IMAGE}" in text
    assert re.search(r"^images:\n  - \$\{_IMAGE\}$", text, re.M)


@pytest.mark.parametrize("name", PIPELINES)
def test_entry_point_launches_its_pipeline(name, capsys):
    with pytest.raises(SystemExit) as stop:
        templates.launch(name, ["--help"])
    assert stop.value.code == 0
    assert f"python -m pipelines.{name}" in capsys.readouterr().out


def _entry_point(pipeline: str | None, *argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != templates.PIPELINE_ENV}
    if pipeline is not None:
        env[templates.PIPELINE_ENV] = pipeline
    return subprocess.run(
        [sys.executable, str(REPO / "templates" / "main.py"), *argv],
        capture_output=True, text=True, timeout=120, cwd=REPO, env=env,
    )  # fmt: skip


def test_entry_point_runs_the_pipeline_its_image_names():
    shown = _entry_point("nightly", "--help")
    assert shown.returncode == 0, shown.stderr
    assert "--keep_days" in shown.stdout
    unset = _entry_point(None, "--help")
    assert unset.returncode == 1 and "BTTS_PIPELINE is not set" in unset.stderr


# -- the launcher's arguments ----------------------------------------------------------------


def test_boolean_parameters_become_bare_flags():
    argv = [
        "--create_tables=true",
        "--skip_preflight=false",
        "--hourly_rollup=TRUE",
        "--input_subscription=projects/p/subscriptions/s",
        "--runner=DataflowRunner",
    ]
    assert templates.template_argv("server_metrics", argv, environ={}) == [
        "--create_tables",
        "--hourly_rollup",
        "--input_subscription=projects/p/subscriptions/s",
        "--runner=DataflowRunner",
    ]
    # --verify takes a value itself; --no_verify is a bare flag
    assert templates.template_argv(
        "nightly", ["--verify=false", "--no_verify=true", "--keep_days=3"], environ={}
    ) == ["--verify=false", "--no_verify", "--keep_days=3"]
    with pytest.raises(SystemExit, match="--create_tables takes true or false"):
        templates.template_argv("sales", ["--create_tables=maybe"], environ={})


def test_dead_letters_default_to_the_temp_location_and_workers_to_the_image():
    image = "europe-west1-docker.pkg.dev/p/btts/sales:0.1.0"
    env = {templates.IMAGE_ENV: image}
    argv = ["--input=gs://b/in.jsonl", "--temp_location=gs://b/tmp/"]
    assert templates.template_argv("sales", argv, environ=env) == [
        *argv,
        "--dead_letter=gs://b/tmp/dead-letters/sales",
        f"--sdk_container_image={image}",
    ]
    given = [*argv, "--dead_letter=gs://b/dead/s", "--sdk_container_image=other:1"]
    assert templates.template_argv("sales", given, environ=env) == given
    # streaming dead letters go to their topic; no temp location, no default
    streaming = ["--input_subscription=projects/p/subscriptions/s", "--temp_location=gs://b/t"]
    assert templates.template_argv("server_metrics", streaming, environ={}) == streaming
    assert templates.template_argv("sales", ["--input=gs://b/x"], environ={}) == [
        "--input=gs://b/x"
    ]
    # the nightly job writes no dead letters
    assert templates.template_argv("nightly", ["--temp_location=gs://b/t"], environ={}) == [
        "--temp_location=gs://b/t"
    ]


def test_launch_with_template_parameters_runs_the_job(target, tmp_path):
    """What the Flex Template launcher does, on the DirectRunner: every parameter as
    --name=value, booleans as true/false."""
    lines = [
        '{"game": "LoL", "player": "Corrie", "date": "2015-03-01", "win": false, "kda": 4.25}',
        '{"game": "LoL", "player": "Corrie", "date": "2015-03-32", "win": false, "kda": 4.25}',
    ]
    source = write_lines(tmp_path / "in.jsonl", lines)
    result = templates.launch(
        "game_results",
        [
            f"--input={source}",
            f"--dead_letter={tmp_path / 'dead'}",
            f"--bigtable_project={target.project}",
            f"--bigtable_instance={target.instance}",
            "--create_tables=true",
            "--skip_preflight=false",
            f"--temp_location={tmp_path / 'tmp'}",
            "--max_bad_records=1",  # the bad line is on purpose
        ],
    )
    assert result.counters["events_valid"] == 1
    rows = engine.read_rows(target, "GAME_BY_PLAYER")
    assert [r.key for r in rows] == [b"LoL#Corrie#20150301"]
    assert [d["raw"] for d in read_dead_letters(tmp_path / "dead")] == [lines[1]]


def test_a_templated_launch_has_no_job_to_count():
    """The Flex Template launcher runs the pipeline with --template_location: DataflowRunner
    writes the job spec and returns a result without a job, whose metrics cannot be queried.
    The jobs print their counters after the run, which must not fail the launch."""
    from apache_beam.runners.dataflow.dataflow_metrics import DataflowMetrics
    from apache_beam.runners.dataflow.dataflow_runner import DataflowPipelineResult

    result = DataflowPipelineResult(None, None)
    result.metric_results = DataflowMetrics(None, result, None)
    assert result.wait_until_finish() == "DONE"
    assert common.counters(result) == {}


# -- the gcloud commands and make templates ---------------------------------------------------


def test_build_commands_for_every_template(monkeypatch):
    for var, value in {"PROJECT": "my-proj", "REGION": "europe-west1", "BUCKET": "tpl"}.items():
        monkeypatch.setenv(var, value)
    monkeypatch.delenv("REPOSITORY", raising=False)
    monkeypatch.delenv("TAG", raising=False)
    lines = templates.commands()
    assert len(lines) == 2 * len(PIPELINES)
    pairs = zip(lines[::2], lines[1::2], strict=True)
    for name, (image_build, spec_build) in zip(PIPELINES, pairs, strict=True):
        image = f"europe-west1-docker.pkg.dev/my-proj/btts/{name}:0.1.0"
        assert image_build == (
            'gcloud builds submit . --project="my-proj" --config=templates/cloudbuild.yaml '
            f'--substitutions="_TEMPLATE={name},_IMAGE={image}"'
        )
        assert spec_build == (
            f'gcloud dataflow flex-template build "gs://tpl/templates/{name}.json" '
            f'--project="my-proj" --image="{image}" --sdk-language=PYTHON '
            f"--metadata-file=templates/{name}/metadata.json"
        )
        assert (REPO / "templates" / name / "metadata.json").is_file()


def test_build_commands_keep_placeholders_for_the_shell(monkeypatch, capsys, tmp_path):
    for var in ("PROJECT", "REGION", "BUCKET", "REPOSITORY", "TAG"):
        monkeypatch.delenv(var, raising=False)
    shutil.copytree(REPO / "templates", tmp_path / "templates")
    shutil.copy(SETUP, tmp_path / "setup.py")
    assert templates.main(["build", "--root", str(tmp_path), "--pipeline", "nightly"]) == 0
    out = capsys.readouterr().out
    assert 'gcloud dataflow flex-template build "gs://${BUCKET}/templates/nightly.json"' in out
    assert '--image="${REGION}-docker.pkg.dev/${PROJECT}/btts/nightly:0.1.0"' in out
    assert "server_metrics" not in out
    assert templates.main(["build", "--run", "--root", str(tmp_path)]) == 2  # no PROJECT...


def test_make_templates_and_the_cli_hook():
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    target = re.search(r"^templates:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert target and "btts_cli.templates build" in target.group(1)
    top = argparse.ArgumentParser(prog="btts")
    templates.register(top.add_subparsers(dest="command"))
    args = top.parse_args(["templates", "check"])
    assert args.func(args) == 0


# -- the wheel: what Dataflow workers install --------------------------------------------------


def _source_copy(dest: Path) -> Path:
    """The files `pip wheel .` reads, without generated protobuf code (the build must make
    it) and without caches."""
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(REPO / name, dest / name)
    skip = shutil.ignore_patterns("__pycache__", "*_pb2.py", "*_pb2.pyi", "*.pyc")
    for package in templates.WHEEL_PACKAGES:
        shutil.copytree(REPO / package, dest / package, ignore=skip)
    return dest


def _modules(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for package in templates.WHEEL_PACKAGES
        for p in (root / package).rglob("*")
        if p.suffix in {".py", ".proto"} and "__pycache__" not in p.parts
    }


def _pip(*args: str, python: str = sys.executable, timeout: int = 300):
    done = subprocess.run(
        [python, "-m", "pip", *args], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.mark.slow
def test_wheel_and_sdist_package_what_workers_need_and_install_into_a_fresh_venv(tmp_path):
    """`pip wheel .` → a fresh virtualenv → `btts --help`, the nightly job's --help, and the
    generated protobuf code importable. Also the sdist Beam builds for --setup_file: it carries
    every module, the .proto and its generator (setup.py's build_py runs it when a worker
    installs the sdist). ~60-90 s: the fresh environment installs apache-beam[gcp]."""
    started = time.monotonic()
    (tmp_path / "src").mkdir()
    src = _source_copy(tmp_path / "src")
    _pip("wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(src))
    (wheel,) = (tmp_path / "dist").glob("bigtable_timeseries-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    protos = sorted((REPO / "protos").glob("*.proto"))
    assert protos
    generated = {f"protos/{p.stem}_pb2.py" for p in protos}
    assert _modules(src) | generated <= names, (_modules(src) | generated) - names
    assert any(n.endswith("entry_points.txt") for n in names)

    # --setup_file: Beam builds an sdist of the checkout, the workers install it
    subprocess.run(
        [sys.executable, "setup.py", "-q", "sdist", "--dist-dir", str(tmp_path / "sdist")],
        cwd=src,
        check=True,
        capture_output=True,
        timeout=120,
    )
    (sdist,) = (tmp_path / "sdist").glob("bigtable_timeseries-*.tar.gz")
    with tarfile.open(sdist) as archive:
        members = {m.split("/", 1)[1] for m in archive.getnames() if "/" in m}
    assert {"setup.py", "pyproject.toml", "README.md"} <= members
    # what the workers build the wheel from: the sources, the .proto and its generator
    assert _modules(src) <= members, _modules(src) - members

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    _pip("install", "-q", "--no-compile", str(wheel), python=python, timeout=600)
    elsewhere = tmp_path / "elsewhere"  # not the checkout: imports come from the venv
    elsewhere.mkdir()

    def run(*command: str) -> str:
        done = subprocess.run(
            list(command), capture_output=True, text=True, timeout=120, cwd=elsewhere
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    assert "usage: btts" in run(str(venv / "bin" / "btts"), "--help")
    assert "--keep_days" in run(python, "-m", "pipelines.nightly", "--help")
    where = run(
        python,
        "-c",
        "import protos.balloon_pb2, transforms.builder.builder, pipelines; "
        "print(pipelines.__file__)",
    )
    assert str(venv) in where
    print(f"wheel build + fresh venv install + checks: {time.monotonic() - started:.0f}s")
