"""One module per job; each has an options class, ``build(pipeline, options)`` and ``run(argv)``.

Ingest jobs also expose ``JOB`` (a :class:`pipelines.common.JobSpec`); they are discovered, so
``btts ingest`` knows a new job as soon as its module exists.
"""

from __future__ import annotations

import importlib
import pkgutil

__all__ = ["job_modules", "load"]

_NOT_JOBS = {"common", "flags", "nightly"}


def job_modules() -> dict[str, str]:
    """Job name → module name, for every ingest job in this package."""
    return {
        info.name: f"{__name__}.{info.name}"
        for info in pkgutil.iter_modules(__path__)
        if info.name not in _NOT_JOBS and not info.name.startswith("_")
    }


def load(name: str):
    return importlib.import_module(job_modules()[name])
