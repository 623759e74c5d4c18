"""The library's errors, in the project's one tree (:mod:`transforms.errors`): each a mistake
a user can fix, and so one line on the command line."""

from transforms.errors import UserError

__all__ = ["ConfigError", "EmulatorError", "MissingTable"]


class ConfigError(UserError, RuntimeError):
    """A wrong or missing setting, reported before any work is done."""


class MissingTable(UserError, LookupError):
    """A query reads a table the instance does not have."""


class EmulatorError(UserError, RuntimeError):
    """The local Bigtable emulator cannot be found, started or reached: install or start it."""
