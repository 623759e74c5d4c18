"""A job's flag is declared once: one ``Flag`` in ``pipelines/flags/``, which the option classes,
the ``--help`` and the templates' metadata all read; a job's description likewise (its module's
docstring is the one its flags module declares). Checked on the source, so a second declaration
of a flag (an ``add_argument`` in a job, an option class of its own) fails here."""

from __future__ import annotations

import ast
import collections
import importlib
from pathlib import Path

import pytest

from btts_cli import template_params
from pipelines import common, flags, job_modules
from tests.support import REPO

JOBS = [*sorted(job_modules()), "nightly"]
DECLARED = [flag for groups in flags.GROUPS.values() for group in groups for flag in group.flags]
NAMES = {flag.name for flag in DECLARED}
# Where a job's flags are read: the jobs and the templates. (btts's own commands, e.g. `btts
# query --date`, have flags of their own, some sharing a job flag's name.)
JOB_SOURCES = [
    *sorted((REPO / "pipelines").rglob("*.py")),
    REPO / "btts_cli" / "templates.py",
    REPO / "btts_cli" / "template_params.py",
    REPO / "templates" / "main.py",
]
PRODUCT = [
    p for top in ("pipelines", "btts", "btts_cli", "transforms") for p in (REPO / top).rglob("*.py")
]


def _declarations(path: Path) -> list[tuple[str, str, int]]:
    """``(call, flag name, line)`` of every call in ``path`` declaring a ``--flag`` by a
    literal: ``Flag(...)``, ``add_argument(...)``, ``add_value_provider_argument(...)``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if called not in ("Flag", "add_argument", "add_value_provider_argument"):
            continue
        first = node.args[0] if node.args else None
        first = first or next((k.value for k in node.keywords if k.arg == "name"), None)
        if isinstance(first, ast.Constant) and str(first.value).startswith("--"):
            out.append((called, first.value, node.lineno))
    return sorted(out, key=lambda d: d[2])


def test_every_flag_is_one_flag_in_pipelines_flags():
    found = collections.Counter()
    for path in PRODUCT:
        for called, name, line in _declarations(path):
            if called == "Flag":
                where = path.relative_to(REPO).parts[:2]
                assert where == ("pipelines", "flags"), f"{where}:{line}: Flag({name!r})"
                found[name] += 1
    assert set(found) == NAMES  # the walk sees every declared flag (it can fail)
    assert [name for name, count in found.items() if count > 1] == []
    groups = list({id(g): g for groups in flags.GROUPS.values() for g in groups}.values())
    assert len({g.name for g in groups}) == len(groups), "two groups of one name (one class)"
    names = [f.name for g in groups for f in g.flags]
    assert len(names) == len(set(names)), "a flag in two groups (Beam parses them together)"


def test_no_job_or_template_declares_a_flag_of_its_own():
    """A job module, an option class or the templates adding a job's flag to a parser would be
    a second declaration: only pipelines.flags.spec.add_group adds them."""
    again = [
        f"{path.relative_to(REPO)}:{line}: {called}({name!r})"
        for path in JOB_SOURCES
        for called, name, line in _declarations(path)
        if called != "Flag" and name in NAMES
    ]
    assert again == []
    # nor a PipelineOptions class of its own: every option class is made from a group
    classes = [
        f"{path.relative_to(REPO)}:{node.lineno}: class {node.name}"
        for path in JOB_SOURCES
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
        and any(getattr(b, "id", getattr(b, "attr", "")) == "PipelineOptions" for b in node.bases)
    ]
    assert classes == []


def test_the_walk_finds_a_second_declaration(tmp_path):
    source = tmp_path / "job.py"
    source.write_text(
        "def add(parser):\n    parser.add_argument('--input', action='append')\n"
        "X = Flag(name='--input')\n"
    )
    assert _declarations(source) == [("add_argument", "--input", 2), ("Flag", "--input", 3)]


def test_template_annotations_name_declared_flags():
    """Labels, formats and Dataflow notes are keyed by flag name: a renamed or removed flag
    must not leave its annotation behind."""
    keys = {flag.key for flag in DECLARED}
    for table in (
        template_params.LABELS,
        template_params.FORMATS,
        template_params.DATAFLOW_REQUIRED,
        template_params.DATAFLOW_NOTES,
    ):
        assert set(table) <= keys, set(table) - keys


@pytest.mark.parametrize("job", JOBS)
def test_a_jobs_description_is_said_once(job):
    """The job module has no docstring of its own: its ``__doc__`` (and its IngestEntry's, its
    JobSpec's description) is the DESCRIPTION of ``pipelines.flags.<job>``."""
    module = importlib.import_module(f"pipelines.{job}")
    assert ast.get_docstring(ast.parse(Path(module.__file__).read_text(encoding="utf-8"))) is None
    assert module.__doc__ == flags.description(job)
    assert module.__doc__.strip()
    entry = getattr(module, "ENTRY", None)
    if entry is not None:
        assert entry.description is module.__doc__


def _sample_argv(job: str) -> list[str]:
    """A value for every flag of ``job``, as a user might give it."""
    argv = []
    for group in flags.GROUPS[job]:
        for flag in group.flags:
            if flag.action in ("store_true", "store_false") or flag.nargs == "?":
                argv.append(flag.name)
            elif flag.choices:
                argv += [flag.name, str(list(flag.choices)[-1])]
            elif flag.type in (int, float):
                argv += [flag.name, "7"]
            else:
                argv += [flag.name, f"{flag.key}-value"]
                if flag.action == "append":
                    argv += [flag.name, "again"]
    return argv


@pytest.mark.parametrize("job", JOBS)
@pytest.mark.parametrize("given", ["none", "every"])
def test_the_option_classes_parse_as_the_help_parser(job, given):
    """What a run reads (Beam's options, a view per option class) is what the plain parser of
    the ``--help``, made from the same declarations, parses from the same flags."""
    argv = _sample_argv(job) if given == "every" else []
    classes = common.option_classes(job)
    options = common.parse_args(argv, "p", "", classes)
    seen = {}
    for cls in classes:
        seen.update(options.view_as(cls).get_all_options(current_only=True))
    plain = flags.help_parser("p", "", flags.GROUPS[job]).parse_args(argv)
    assert seen == vars(plain)


def test_one_option_class_per_group():
    """A group's class is made once (Beam parses every class made, so a second class of one
    group would declare its flags twice); another group of the same name is refused."""
    group = flags.BIGTABLE
    assert common.options_class(group) is common.BigtableOptions
    assert common.BigtableOptions.__name__ == "BigtableOptions"
    impostor = flags.Group.of(group.name, "Impostor", flags.Flag("--impostor_flag"))
    with pytest.raises(ValueError, match="two flag groups are named 'bigtable'"):
        common.options_class(impostor)
