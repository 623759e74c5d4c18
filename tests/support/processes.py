"""What a snippet of Python prints in fresh processes with different ``PYTHONHASHSEED`` s:
Python's own ``hash`` of text differs between processes, so a value meant to be equal on every
worker (a fingerprint, a coded element) is compared across two of them."""

from __future__ import annotations

import subprocess
import sys

__all__ = ["printed_under_hash_seeds"]


def printed_under_hash_seeds(code: str, seeds: tuple[str, ...] = ("1", "2")) -> set[str]:
    """The distinct stdouts of ``python -c code`` run once per seed of ``seeds`` (a set of one
    when every process printed the same); raises CalledProcessError when a run fails."""
    return {
        subprocess.run(
            [sys.executable, "-c", code],
            env={"PYTHONHASHSEED": seed, "PATH": ""},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in seeds
    }
