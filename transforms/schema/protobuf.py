"""Which protobuf message classes a schema file may name, and finding them.

A schema file is hostile input: naming ``module.Message`` must not make the job import any
module it likes. A message comes from the project's ``protos`` package
(``protos.balloon_pb2.BalloonMeasurement``), or from a module the user names outside the file
(``--proto_module`` of a job, ``proto_modules=`` of :func:`transforms.schema.load`); every part
of the name is a plain public identifier, and what it names must be a generated message class.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from functools import cache

from transforms.errors import UserError

__all__ = ["ProtoRefused", "message_class", "refusal"]

PROJECT_PACKAGE = "protos"
_PART = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")  # no leading _: no dunders, no private names


class ProtoRefused(UserError, ImportError):
    """A message name the schema may not use (outside the allowed modules, or not a message)."""


def refusal(path: str, proto_modules: Sequence[str] = ()) -> str:
    """Why ``path`` may not be imported, or ``""`` when its module is an allowed one."""
    module = path.rpartition(".")[0]
    if not all(_PART.match(part) for part in path.split(".")):
        return "each part of the name is a plain public identifier (module.Message)"
    if module == PROJECT_PACKAGE or module.startswith(PROJECT_PACKAGE + "."):
        return ""
    if module in proto_modules:
        return ""
    given = f" (given: {', '.join(proto_modules)})" if proto_modules else ""
    return (
        f"messages come from the project's {PROJECT_PACKAGE} package, or from a module named "
        f"with --proto_module{given}; a schema file alone cannot name another module"
    )


def message_class(path: str, proto_modules: Sequence[str] = ()) -> type:
    """``protos.balloon_pb2.BalloonMeasurement`` → the generated message class;
    :class:`ProtoRefused` for a name outside ``protos`` and ``proto_modules``."""
    return _message_class(path, tuple(proto_modules))


@cache
def _message_class(path: str, proto_modules: tuple[str, ...]) -> type:
    why = refusal(path, proto_modules)
    if why:
        raise ProtoRefused(why)
    from google.protobuf.message import Message

    module, _, name = path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    if not (isinstance(cls, type) and issubclass(cls, Message)):
        raise ProtoRefused(f"{path} is not a protobuf message class")
    return cls
