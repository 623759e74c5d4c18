"""The library's exceptions, each a mistake a user can fix and so one line on the command line."""

__all__ = ["ConfigError", "EmulatorError", "MissingTable"]


class ConfigError(RuntimeError):
    """A wrong or missing setting, reported before any work is done."""


class MissingTable(LookupError):
    """A query reads a table the instance does not have."""


class EmulatorError(RuntimeError):
    """The local Bigtable emulator cannot be found, started or reached."""
