"""The library's errors, in the project's one tree (:mod:`transforms.errors`): each a mistake
a user can fix, and so one line on the command line."""

from transforms.errors import UserError

__all__ = ["ConfigError", "EmulatorError", "FlagValueError", "MissingTable"]


class ConfigError(UserError, RuntimeError):
    """A wrong or missing setting, reported before any work is done; ``command``: the command
    whose line it is said under, when not the one that ran (``btts serve: error: …``)."""

    def __init__(self, message: str, command: str | None = None) -> None:
        super().__init__(message)
        self.command = command


class FlagValueError(ConfigError):
    """A flag's value is not one it takes: argparse's kind of error, so one line and the exit
    status argparse gives it (2), without a usage text."""


class MissingTable(UserError, LookupError):
    """A query reads a table the instance does not have."""


class EmulatorError(UserError, RuntimeError):
    """The local Bigtable emulator cannot be found, started or reached: install or start it."""
