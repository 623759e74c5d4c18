"""Dataflow flex templates, one per pipeline, generated from the flags the pipelines declare.

``templates/<pipeline>/`` holds two generated files:

* ``metadata.json``: the template's name, description and one parameter per flag of the
  pipeline (label, help text, regexes where the format is fixed, and ``isOptional``), from the
  declarations its option classes and ``--help`` are made of (:mod:`pipelines.flags`), so
  Dataflow and the console validate a launch before any VM starts;
* ``Dockerfile``: one image that is both the Flex Template launcher image and the workers' SDK
  container (``sdk_container_image``), built ``FROM`` Beam's Python SDK image of the Beam version
  ``setup.py`` pins, with the project wheel installed, and its pipeline's name in
  ``BTTS_PIPELINE`` for the launcher's entry point ``templates/main.py``
  (``FLEX_TEMPLATE_PYTHON_PY_FILE``, one for every template), which calls :func:`launch`.

The flag declarations are the one source of truth: ``btts templates build`` (``make templates``)
regenerates the files and prints the ``gcloud`` commands that build the images and the template
specs; ``btts templates check`` (and the test suite) fails when a committed file differs from
what the pipelines declare, e.g. after a pipeline gains a flag.

    python -m btts_cli.templates build            # write the files, print the gcloud commands
    python -m btts_cli.templates check            # exit 1 when a template drifted from its pipeline
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from btts import __version__, errors, exits
from btts_cli.template_params import is_bare, parameter, required_on_dataflow
from pipelines import flags
from transforms.errors import RunFailed

__all__ = ["main"]  # fmt: skip

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
NIGHTLY = "nightly"

# The Pythons a template can be built for: those setup.py accepts that Beam's pinned release
# publishes wheels and SDK images (apache/beam_python3.X_sdk) for. The image of a template is
# Beam's SDK image of the template's Python (`btts templates build --python 3.X`; by default
# the Python its Dockerfile was built for, else DEFAULT_PYTHON): the launch (main.py) and the
# workers run that Python.
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
DEFAULT_PYTHON = "3.11"
_SDK_IMAGE = re.compile(r"^FROM apache/beam_python(3\.\d+)_sdk:", re.MULTILINE)
# The launcher image at a dated release tag, not :latest, so a rebuild gets the same launcher
# (tags: cloud.google.com/dataflow/docs/reference/flex-templates-base-images). Move it forward
# on purpose, then `make templates`. Only its launcher binary (a Go program, the same for every
# Python) is copied into a template's image, so one launcher image serves every Python.
LAUNCHER_TAG = "flex_templates_base_image_release_20240628_RC00"
LAUNCHER_IMAGE = f"gcr.io/dataflow-templates-base/python311-template-launcher-base:{LAUNCHER_TAG}"
LAUNCHER_BINARY = "/opt/google/dataflow/python_template_launcher"
ENTRY_POINT = "/template/main.py"
IMAGE_ENV = "BTTS_SDK_CONTAINER_IMAGE"
PIPELINE_ENV = "BTTS_PIPELINE"  # which pipeline an image's entry point launches
# What the images copy from a checkout to build the wheel (setup.py's packages and its inputs).
WHEEL_SOURCES = ("setup.py", "pyproject.toml", "README.md")
WHEEL_PACKAGES = ("btts", "btts_cli", "pipelines", "transforms", "protos")

# -- the pipelines and their flags ------------------------------------------------------------


def pipeline_names() -> list[str]:
    """Every pipeline that gets a template: each ingest job and the nightly job."""
    from pipelines import job_modules

    return [*sorted(job_modules()), NIGHTLY]


def pipeline_module(name: str) -> ModuleType:
    if name not in pipeline_names():
        raise KeyError(f"no pipeline {name!r} (pipelines: {', '.join(pipeline_names())})")
    return importlib.import_module(f"pipelines.{name}")


def declared_groups(name: str) -> tuple[str, tuple[flags.Group, ...]]:
    """The description and flag groups of a pipeline, as :mod:`pipelines.flags` declares them:
    what its ``--help`` shows and its option classes (what its ``run`` parses) are made of."""
    if name not in pipeline_names():
        raise KeyError(f"no pipeline {name!r} (pipelines: {', '.join(pipeline_names())})")
    return flags.description(name), flags.GROUPS[name]


def pipeline_flags(name: str) -> list[flags.Flag]:
    """Every flag of the pipeline, in ``--help`` order."""
    return [flag for group in declared_groups(name)[1] for flag in group.flags]


# -- metadata.json ----------------------------------------------------------------------------


def _summary(description: str) -> str:
    """The first paragraph of a module docstring, on one line."""
    first = description.strip().split("\n\n")[0]
    return " ".join(first.split())


def metadata(name: str) -> dict:
    """The template metadata of one pipeline, from the flags it declares."""
    description = declared_groups(name)[0]
    job_flags = pipeline_flags(name)
    names = {f.key for f in job_flags}
    meta: dict = {"name": f"bigtable-timeseries {name}", "description": _summary(description)}
    if "input_subscription" in names:
        meta["streaming"] = True
    meta["parameters"] = [parameter(f, names) for f in job_flags]
    return meta


# -- Dockerfile and entry point ---------------------------------------------------------------


def setup_requirements(root: Path = PACKAGE_ROOT) -> list[str]:
    """``INSTALL_REQUIRES`` of ``setup.py``, read without running it."""
    tree = ast.parse((root / "setup.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "INSTALL_REQUIRES" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
    raise RuntimeError(f"no INSTALL_REQUIRES list in {root / 'setup.py'}")


def beam_version(root: Path = PACKAGE_ROOT) -> str:
    """The Beam version ``setup.py`` pins: its ``==`` version or its ``>=`` lower bound."""
    for requirement in setup_requirements(root):
        match = re.match(r"apache-beam(\[[^\]]*\])?\s*(?P<spec>.*)$", requirement)
        if not match:
            continue
        for clause in match.group("spec").split(","):
            pinned = re.fullmatch(r"\s*(==|>=|~=)\s*([0-9][0-9.]*)\s*", clause)
            if pinned:
                return pinned.group(2)
        raise RuntimeError(f"setup.py: {requirement!r} has no lower bound to build the image on")
    raise RuntimeError("setup.py does not require apache-beam")


def sdk_image(python: str = DEFAULT_PYTHON) -> str:
    """Beam's SDK image repository for ``python`` (``3.X``); ValueError for a Python no
    template can be built for."""
    if python not in PYTHONS:
        raise ValueError(f"Python {python}: templates are built for {', '.join(PYTHONS)}")
    return f"apache/beam_python{python}_sdk"


def built_for(name: str, root: Path = PACKAGE_ROOT) -> str | None:
    """The Python the committed Dockerfile of ``name`` was built for (None: no such file, or
    not built on Beam's SDK image)."""
    path = root / "templates" / name / "Dockerfile"
    found = _SDK_IMAGE.search(path.read_text(encoding="utf-8")) if path.is_file() else None
    return found.group(1) if found and found.group(1) in PYTHONS else None


def dockerfile(name: str, root: Path = PACKAGE_ROOT, python: str = DEFAULT_PYTHON) -> str:
    sdk = f"{sdk_image(python)}:{beam_version(root)}"
    sources = " ".join(WHEEL_SOURCES)
    packages = "\n".join(f"COPY {p} {p}" for p in WHEEL_PACKAGES)
    return f"""\
# Flex template image of the `{name}` pipeline.
# Generated by `btts templates build` from setup.py (do not edit; run `make templates`).
#
# One image for both roles: Dataflow's Flex Template launcher runs {ENTRY_POINT} in it to
# build and submit the job, and the workers run it as their SDK container
# (sdk_container_image), so launch and workers use the same code and the same dependencies.
# Build it from the repository root (see templates/cloudbuild.yaml and docs/dataflow.md):
#   docker build -f templates/{name}/Dockerfile --build-arg IMAGE=$IMAGE -t $IMAGE .

# 1. The project wheel; setup.py's build_py generates protos/*_pb2.py into it.
FROM {sdk} AS wheel
WORKDIR /src
COPY {sources} ./
{packages}
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

# 2. Beam's SDK image of the Beam version setup.py pins, for Python {python} (its
#    /opt/apache/beam/boot is the worker entry point), plus the Flex Template launcher and the
#    project with its dependencies.
FROM {sdk}
COPY --from={LAUNCHER_IMAGE} {LAUNCHER_BINARY} {LAUNCHER_BINARY}
COPY --from=wheel /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && pip check
WORKDIR /template
COPY templates/main.py {ENTRY_POINT}
ENV FLEX_TEMPLATE_PYTHON_PY_FILE={ENTRY_POINT}
ENV {PIPELINE_ENV}={name}
# No FLEX_TEMPLATE_PYTHON_SETUP_FILE or _REQUIREMENTS_FILE: the package and its dependencies are
# installed above and the workers run this image, so a launch stages nothing. The image's own
# name (the build argument IMAGE) becomes the workers' default sdk_container_image.
ARG IMAGE=""
ENV {IMAGE_ENV}=${{IMAGE}}
ENTRYPOINT ["/opt/apache/beam/boot"]
"""


def rendered(name: str, root: Path = PACKAGE_ROOT, python: str | None = None) -> dict[str, str]:
    """The generated files of one template, by file name, for ``python`` (default: the one
    its Dockerfile was built for, else :data:`DEFAULT_PYTHON`)."""
    python = python or built_for(name, root) or DEFAULT_PYTHON
    return {
        "metadata.json": json.dumps(metadata(name), indent=2, ensure_ascii=False) + "\n",
        "Dockerfile": dockerfile(name, root, python),
    }


# -- build and check --------------------------------------------------------------------------


def write(
    root: Path = PACKAGE_ROOT, names: Sequence[str] | None = None, python: str | None = None
) -> list[Path]:
    """Write every template's generated files under ``root/templates`` (for ``python``, see
    :func:`rendered`); returns those that changed."""
    changed = []
    for name in names or pipeline_names():
        for file_name, text in rendered(name, root, python).items():
            path = root / "templates" / name / file_name
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
                changed.append(path)
    return changed


def mismatches(name: str, meta: dict) -> list[str]:
    """How a template's parameters disagree with its pipeline's flags: a flag without a
    parameter, a parameter that is no flag, or a parameter optional when the job needs it (or
    the reverse)."""
    job_flags = {f.key: f for f in pipeline_flags(name)}
    params = {p.get("name"): p for p in meta.get("parameters", [])}
    out = [f"--{flag} has no template parameter" for flag in job_flags if flag not in params]
    out += [f"parameter {p!r} is no flag of the pipeline" for p in params if p not in job_flags]
    for flag_name, param in params.items():
        if flag_name in job_flags:
            required = required_on_dataflow(job_flags[flag_name], set(job_flags))
            if bool(param.get("isOptional", False)) == required:
                out.append(f"parameter {flag_name!r}: isOptional must be {not required}")
    return out


def drift(root: Path = PACKAGE_ROOT) -> list[str]:
    """Every way ``root/templates`` differs from what the pipelines declare (empty: in step)."""
    problems = []
    expected = pipeline_names()
    folder = root / "templates"
    for name in expected:
        for file_name, text in rendered(name, root).items():
            path = folder / name / file_name
            where = path.relative_to(root)
            if not path.is_file():
                problems.append(f"{where}: missing")
                continue
            committed = path.read_text(encoding="utf-8")
            if committed == text:
                continue
            reasons = []
            if file_name == "metadata.json":
                try:
                    reasons = mismatches(name, json.loads(committed))
                except (ValueError, AttributeError):
                    reasons = ["not a JSON object"]
            problems += [f"{where}: {r}" for r in reasons or ["differs from the pipeline"]]
    for meta in sorted(folder.glob("*/metadata.json")):  # none when there is no folder
        if meta.parent.name not in expected:
            problems.append(f"{meta.relative_to(root)}: no pipeline {meta.parent.name!r}")
    return problems


# -- gcloud commands --------------------------------------------------------------------------


def _setting(name: str, default: str | None = None) -> str:
    """An environment variable's value, else its default, else a ``${NAME}`` placeholder the
    shell fills in when the printed commands run."""
    return os.environ.get(name) or default or f"${{{name}}}"


def image(name: str) -> str:
    registry = f"{_setting('REGION')}-docker.pkg.dev/{_setting('PROJECT')}"
    return f"{registry}/{_setting('REPOSITORY', 'btts')}/{name}:{_setting('TAG', __version__)}"


def template_spec(name: str) -> str:
    return f"gs://{_setting('BUCKET')}/templates/{name}.json"


def commands(names: Sequence[str] | None = None) -> list[str]:
    """Per template: build and push its image with Cloud Build, then write its template spec
    (image + metadata) to Cloud Storage. Run from the repository root."""
    out = []
    for name in names or pipeline_names():
        img = image(name)
        out.append(
            f'gcloud builds submit . --project="{_setting("PROJECT")}" '
            f"--config=templates/cloudbuild.yaml "
            f'--substitutions="_TEMPLATE={name},_IMAGE={img}"'
        )
        out.append(
            f'gcloud dataflow flex-template build "{template_spec(name)}" '
            f'--project="{_setting("PROJECT")}" --image="{img}" --sdk-language=PYTHON '
            f"--metadata-file=templates/{name}/metadata.json"
        )
    return out


# -- the launcher -----------------------------------------------------------------------------


def template_argv(name: str, argv: Sequence[str], environ: dict | None = None) -> list[str]:
    """The launcher's arguments as the pipeline's flags.

    * Dataflow passes every parameter as ``--name=value``; a store_true/store_false flag (e.g.
      ``--create_tables``) takes no value, so ``=true`` becomes the bare flag and ``=false``
      drops it.
    * Without ``--dead_letter``, a file-reading job writes dead letters under
      ``<temp_location>/dead-letters/<pipeline>``, not to a worker's local disk.
    * Without an ``--sdk_container_image``, the workers run this image (``$IMAGE_ENV``).
    """
    environ = os.environ if environ is None else environ
    job_flags = {f.key: f for f in pipeline_flags(name)}
    out: list[str] = []
    given: dict[str, str | None] = {}
    for arg in argv:
        flag, eq, value = arg.partition("=")
        given[flag.lstrip("-")] = value if eq else None
        spec = job_flags.get(flag[2:]) if flag.startswith("--") else None
        if spec is None or not is_bare(spec) or not eq:
            out.append(arg)
        elif value.strip().lower() == "true":
            out.append(flag)
        elif value.strip().lower() != "false":
            why = errors.ConfigError(f"{flag} takes true or false, got {value!r}")
            raise exits.stop(why, name)
    temp = given.get("temp_location")
    if (
        temp
        and "dead_letter" in job_flags
        and not {"dead_letter", "input_subscription"} & set(given)
    ):
        out.append(f"--dead_letter={temp.rstrip('/')}/dead-letters/{name}")
    own_image = environ.get(IMAGE_ENV)
    if own_image and not {"sdk_container_image", "worker_harness_container_image"} & set(given):
        out.append(f"--sdk_container_image={own_image}")
    return out


def launch(name: str, argv: Sequence[str] | None = None):
    """Run pipeline ``name`` with the flex-template launcher's arguments (see
    :func:`template_argv`); a run that did not do its work ends with its line, as
    ``python -m pipelines.<job>`` does."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = template_argv(name, list(sys.argv[1:] if argv is None else argv))
    logging.getLogger(__name__).info("pipelines.%s %s", name, " ".join(args))
    try:
        return pipeline_module(name).run(args)
    except RunFailed as err:  # a JobFailed
        raise exits.stop(err, name) from None


# -- command line -----------------------------------------------------------------------------


def _root(args: argparse.Namespace) -> Path:
    """The checkout the templates live in: --root, this package's checkout (an editable
    install), or the current directory. Templates are built from a checkout, not a wheel."""
    if args.root:
        root = Path(args.root).resolve()
    elif (PACKAGE_ROOT / "setup.py").is_file():
        root = PACKAGE_ROOT
    else:
        root = Path.cwd()
    if not (root / "setup.py").is_file():
        raise SystemExit(
            f"btts templates: {root} is not a bigtable-timeseries checkout (no setup.py)"
        )
    return root


def _build(args: argparse.Namespace) -> int:
    root = _root(args)
    names = args.pipeline or None
    for path in write(root, names, args.python):
        print(f"# wrote {path.relative_to(root)}", file=sys.stderr)
    lines = commands(names)
    if not args.run:
        print("# From the repository root; PROJECT, REGION and BUCKET (and optionally")
        print("# REPOSITORY, default btts, and TAG) come from the environment.")
        print("\n".join(lines))
        return 0
    missing = [v for v in ("PROJECT", "REGION", "BUCKET") if not os.environ.get(v)]
    if missing:
        print(
            f"btts templates: error: set {', '.join(missing)} to run the commands", file=sys.stderr
        )
        return 2
    if not shutil.which("gcloud"):
        print(
            "btts templates: error: gcloud not found; run without --run to print", file=sys.stderr
        )
        return 2
    for line in lines:
        print(f"+ {line}", flush=True)
        if subprocess.run(["bash", "-c", line], cwd=root).returncode:  # it said why on stderr
            print("btts templates: error: the command above failed; nothing after it ran",
                  file=sys.stderr)  # fmt: skip
            return 1
    return 0


def _check(args: argparse.Namespace) -> int:
    problems = drift(_root(args))
    for problem in problems:
        print(problem)
    if problems:
        print("templates are out of date: run `make templates` (btts templates build)")
        return 1
    print(f"templates up to date: {', '.join(pipeline_names())}")
    return 0


def add_actions(parser: argparse.ArgumentParser) -> None:
    """``build`` and ``check``, for ``btts templates`` and ``python -m btts_cli.templates``."""
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    build = actions.add_parser(
        "build",
        help="regenerate templates/<pipeline>/ and print (or --run) the gcloud build commands",
        description="Write metadata.json and the Dockerfile of every pipeline's flex template "
        "from the flags it declares, then print the commands that build each image "
        "(Cloud Build) and template spec (gcloud dataflow flex-template build).",
    )
    build.add_argument(
        "--pipeline", action="append", choices=pipeline_names(), help="only this one"
    )
    build.add_argument("--run", action="store_true", help="run the gcloud commands too")
    build.add_argument(
        "--python",
        choices=PYTHONS,
        help="the Python the images run (Beam's SDK image of it); default: the one each "
        f"template was built for, else {DEFAULT_PYTHON}",
    )
    check = actions.add_parser(
        "check",
        help="fail when a committed template differs from its pipeline's flags",
    )
    for action, func in ((build, _build), (check, _check)):
        action.add_argument("--root", help="repository root (default: this checkout)")
        action.set_defaults(func=func)


def register(subparsers) -> None:
    """Add ``templates build|check`` to the ``btts`` command line (``btts_cli.main.parser``)."""
    templates = subparsers.add_parser(
        "templates",
        help="Dataflow flex templates: regenerate, check, print the gcloud build commands",
        description=__doc__.split("\n\n")[0],
    )
    add_actions(templates)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m btts_cli.templates",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_actions(parser)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
