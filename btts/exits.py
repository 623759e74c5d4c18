"""How a command ends: the one place an error of the tree (:mod:`transforms.errors`) becomes an
exit status and its one line on stderr, never a traceback.

Two kinds of command line end here: ``btts`` (:mod:`btts_cli`), and a job's own ``run(argv)``,
which ``btts ingest`` calls and so do ``python -m pipelines.<job>`` and a Dataflow template. A
job module cannot import btts_cli (lower layers never import higher ones), so this sits below
both. Code elsewhere raises typed errors and never ends the process itself (``make lint``).

======================  ====  ===========  =================================================
error                   btts  a job's run
======================  ====  ===========  =================================================
FlagValueError          2     2            argparse's status for a bad flag value
another UserError       2     1            a job's: its line, as Python prints a SystemExit's
the clients' errors     2     (traceback)  no credentials, no permission, no instance
RunFailed (JobFailed)   1     1            the job ran and did not do its work
anything else           (a traceback)      a bug
======================  ====  ===========  =================================================
"""

from __future__ import annotations

import sys

from btts.errors import FlagValueError
from transforms.errors import RunFailed, UserError

__all__ = ["ending", "stop"]


def _client_errors() -> tuple[type[BaseException], ...]:
    """The clients' errors a user fixes (credentials, permission, a missing instance), from a
    command that imported them: one that did not need not pay for the import."""
    found = []
    for module, name in (
        ("google.auth.exceptions", "GoogleAuthError"),
        ("google.api_core.exceptions", "GoogleAPIError"),
    ):
        if module in sys.modules:
            found.append(getattr(sys.modules[module], name))
    return tuple(found)


def ending(err: BaseException, command: str = "btts", job: bool = False) -> tuple[int, str] | None:
    """``(exit status, line for stderr)`` ending ``command`` for ``err`` (see the table above),
    or None for a bug, whose traceback should show. ``job``: ``err`` ends a job's own run. An
    error naming its own command (a job's JobFailed) is said under that one."""
    line = f"{getattr(err, 'command', None) or command}: error: {err}"
    if isinstance(err, FlagValueError):
        return 2, line
    if isinstance(err, RunFailed):
        return 1, line
    if isinstance(err, UserError):
        return (1 if job else 2), line
    if not job and isinstance(err, _client_errors()):
        return 2, line
    return None


def stop(err: BaseException, command: str) -> SystemExit:
    """The SystemExit ending a job's run for ``err``, a user error or a failed run (see
    :func:`ending`): for status 1 it carries the line (Python prints it at exit; a caller can
    read it), for 2 the line is printed here, as argparse prints its own."""
    status, line = ending(err, command, job=True) or (1, f"{command}: error: {err}")
    if status == 1:
        return SystemExit(line)
    print(line, file=sys.stderr, flush=True)
    return SystemExit(status)
