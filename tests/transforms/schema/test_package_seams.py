"""The schema package's seams: protobuf messages only from allowed modules (a schema file is
hostile input), the public problems collector, the advisor section as a typed value, and
``__all__`` on every module."""

from __future__ import annotations

import dataclasses
import importlib
import pickle
import pkgutil
import sys

import pytest

from transforms import schema as sf
from transforms.builder import builder as generic
from transforms.schema import protobuf, queries
from transforms.schema.problems import Problems
from transforms.text import events

BALLOONS = sf.DECLARATIONS / "weather_balloons.yaml"
MESSAGE = "protos.balloon_pb2.BalloonMeasurement"


def _balloons_naming(message: str) -> str:
    text = BALLOONS.read_text(encoding="utf-8")
    assert text.count(MESSAGE) == 1
    return text.replace(MESSAGE, message)


def _message_line() -> int:
    lines = BALLOONS.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if MESSAGE in line)


@pytest.mark.parametrize(
    "hostile",
    [
        "os.system",
        "builtins.eval",
        "subprocess.Popen",
        "importlib.import_module",
        "nosuch_module_xyz.Message",
        "protos.__init__.generate",
        "protos.balloon_pb2._sym_db",
        "protos.balloon_pb2.__class__",
        "__import__.x",
        "protos..Message",
        "os.path.join",
        "évil.Message",
    ],
)
def test_a_schema_naming_a_module_outside_protos_is_refused_with_its_line(hostile):
    with pytest.raises(sf.SchemaError) as err:
        sf.loads(_balloons_naming(hostile), "balloons.yaml")
    refused = [(line, m) for line, m in err.value.problems if "refused" in m]
    assert len(refused) == 1, err.value.problems
    line, message = refused[0]
    assert line == _message_line()
    assert f"protobuf message {hostile!r} refused: " in message
    assert f"balloons.yaml:{line}: table BALLOON_TS_BLOB: column on line" in str(err.value)


def test_a_refused_module_is_never_imported(tmp_path, monkeypatch):
    sentinel = tmp_path / "imported"
    (tmp_path / "evil_schema_module.py").write_text(
        f"open({str(sentinel)!r}, 'w').close()\nMessage = object\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(sf.SchemaError, match="a schema file alone cannot name another module"):
        sf.loads(_balloons_naming("evil_schema_module.Message"), "evil.yaml")
    assert not sentinel.exists() and "evil_schema_module" not in sys.modules
    with pytest.raises(protobuf.ProtoRefused):
        sf.message_class("evil_schema_module.Message")
    assert not sentinel.exists()


def test_a_name_in_protos_that_is_not_a_message_is_refused():
    with pytest.raises(
        sf.SchemaError, match=r"'protos\.generate' refused: .* not a protobuf message"
    ):
        sf.loads(_balloons_naming("protos.generate"), "balloons.yaml")


@pytest.fixture
def user_protos(tmp_path, monkeypatch):
    """A module of the user's (outside ``protos``) holding a generated message class."""
    (tmp_path / "user_protos_mod.py").write_text(
        "from protos.balloon_pb2 import BalloonMeasurement as Reading\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "user_protos_mod"
    sys.modules.pop("user_protos_mod", None)


def test_a_module_the_user_names_outside_the_file_is_allowed(user_protos):
    text = _balloons_naming(f"{user_protos}.Reading")
    with pytest.raises(sf.SchemaError, match="--proto_module"):
        sf.loads(text, "mine.yaml")
    schema = sf.loads(text, "mine.yaml", proto_modules=[user_protos])
    assert schema.proto_modules == (user_protos,)
    assert sf.message_class(f"{user_protos}.Reading", [user_protos]).DESCRIPTOR.name == (
        "BalloonMeasurement"
    )
    # with_times and a pickled builder (a worker) keep the allow-list
    assert sf.with_times(schema, zone="UTC").proto_modules == (user_protos,)
    builder = generic.Builder(schema, ["BALLOON_TS_BLOB"])
    again = pickle.loads(pickle.dumps(builder))
    ours = generic.Builder(sf.builtin("weather_balloons"), ["BALLOON_TS_BLOB"])
    event = events.parse_json_object(schema.example)
    assert again.rows(dict(event)) == ours.rows(dict(event))
    assert len(ours.rows(dict(event))) == 1


def test_the_queries_checker_takes_the_public_collector():
    problems = Problems("x.yaml")
    assert queries.parse(problems, "not a list", 7, []) == ()
    assert problems.found == [
        (7, "queries: expected a list (lines starting with '- '), got str 'not a list'")
    ]


def test_the_advisor_section_is_a_frozen_typed_value():
    advisor = sf.builtin("weather_balloons").advisor
    assert isinstance(advisor, sf.AdvisorSection)
    assert advisor.defaults.events_per_second is not None or advisor.tables
    with pytest.raises(dataclasses.FrozenInstanceError):
        advisor.defaults = sf.AdvisorWorkload()  # type: ignore[misc]


def test_every_module_of_the_package_declares_all():
    for info in pkgutil.iter_modules(sf.__path__):
        module = importlib.import_module(f"transforms.schema.{info.name}")
        names = getattr(module, "__all__", None)
        assert names, f"transforms.schema.{info.name} has no __all__"
        missing = [n for n in names if not hasattr(module, n)]
        assert not missing, f"transforms.schema.{info.name}: {missing}"
    assert all(hasattr(sf, n) for n in sf.__all__)
