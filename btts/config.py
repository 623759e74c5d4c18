"""What every command and job resolves first: which instance (a :class:`Target`) and which schema
file; a wrong setting is a :class:`~btts.errors.ConfigError`, a wrong schema file a
:class:`~transforms.errors.SchemaError` (both user errors)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from btts.emulator import EMULATOR_INSTANCE, EMULATOR_PROJECT, ENV_HOST
from btts.errors import ConfigError

__all__ = ["Target", "load_schema", "resolve_target"]


def load_schema(path: str, proto_modules: Sequence[str] = ()):
    """A user's schema file: its problems are a SchemaError, a file that cannot be read a
    ConfigError. ``proto_modules``: modules besides ``protos`` its protobuf messages may come
    from."""
    from transforms import schema as schema_lib

    try:
        return schema_lib.load(path, proto_modules)
    except OSError as err:
        raise ConfigError(f"cannot read the schema {path}: {err}") from err


@dataclass(frozen=True)
class Target:
    project: str
    instance: str

    @property
    def instance_path(self) -> str:
        return f"projects/{self.project}/instances/{self.instance}"

    def table_path(self, table: str) -> str:
        return f"{self.instance_path}/tables/{table}"

    def describe(self) -> str:
        host = os.environ.get(ENV_HOST)
        where = f"emulator {host}" if host else "Cloud Bigtable"
        return f"{self.instance_path} ({where})"


def resolve_target(project: str | None, instance: str | None) -> Target:
    """Fill defaults for the emulator; on a real instance both must be given.
    Raises ConfigError (a UserError: one line naming what to change)."""
    if os.environ.get(ENV_HOST):
        return Target(project or EMULATOR_PROJECT, instance or EMULATOR_INSTANCE)
    if not project or not instance:
        raise ConfigError(
            "no Bigtable instance: pass --project and --instance for Cloud Bigtable, or set "
            f"{ENV_HOST} (e.g. by `btts emulator start`) to use the emulator"
        )
    return Target(project, instance)
