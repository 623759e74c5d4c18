"""Whether the workers share the launcher's disk, and the file paths a job may give them.

Why: on Dataflow (or a Flink, Spark or Dask cluster, or Docker workers) a path such as
``--input m.jsonl`` names a file on the launcher only; the workers cannot read it, and dead
letters written to the default ``dead-letters/<job>`` land on a worker's own disk and vanish
with it. A job for such a runner takes remote URIs (``gs://…``) for every file path, and its
dead letters default under ``--temp_location``; a local path is refused before launch, in one
line naming the flag and what to pass.

Local (the workers see the launcher's files): Beam's in-process runners (the Direct family,
FnApiRunner, Prism, Interactive); a portable runner (PortableRunner, Flink, Spark, …) whose job
service is on this machine (not set, ``embed``, a loopback address, ``[local]``/``[auto]``,
``local[…]``) and whose SDK workers are processes here (``--environment_type`` LOOPBACK or
PROCESS, or EXTERNAL at a loopback address; the default, DOCKER, is not: a container sees its
own disk); the Dask runner without a scheduler address or at a loopback one. Anything else is
remote."""

from __future__ import annotations

import ipaddress

from apache_beam.options.pipeline_options import (
    GoogleCloudOptions,
    PipelineOptions,
    PortableOptions,
    StandardOptions,
)

from btts import errors

__all__ = ["check_worker_paths", "is_remote", "remote_dead_letter_base"]

IN_PROCESS = frozenset(
    {
        "directrunner",
        "switchingdirectrunner",
        "bundlebaseddirectrunner",
        "testdirectrunner",
        "fnapirunner",
        "prismrunner",
        "interactiverunner",
    }
)
_LOCAL_ENDPOINTS = frozenset({"", "embed", "[local]", "[auto]"})
_WORKERS_HERE = frozenset({"LOOPBACK", "PROCESS"})


def runner_label(options: PipelineOptions) -> str:
    """The runner's class name as the user named it (``DirectRunner`` by default)."""
    runner = options.view_as(StandardOptions).runner or "DirectRunner"
    name = runner if isinstance(runner, str) else type(runner).__name__
    return name.rsplit(".", 1)[-1]


def _key(options: PipelineOptions) -> str:
    name = runner_label(options).lower()
    return name if name.endswith("runner") else f"{name}runner"  # Beam reads "direct" too


def is_loopback(address: str | None) -> bool:
    """``address`` (``host``, ``host:port``, ``scheme://host:port``, ``[::1]:port``) is on this
    machine."""
    host = (address or "").split("://", 1)[-1]
    if host.startswith("["):
        host = host[1:].split("]", 1)[0]
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _endpoint_is_here(value: object) -> bool:
    text = str(value or "").strip()
    return text in _LOCAL_ENDPOINTS or text.startswith("local[") or is_loopback(text)


def is_remote(options: PipelineOptions) -> bool:
    """Whether the runner's workers may run where the launcher's files are not (see the
    module docstring for what counts as local)."""
    name = _key(options)
    if name in IN_PROCESS:
        return False
    given = options.get_all_options(retain_unknown_options=True)
    if name == "daskrunner":
        return not (given.get("address") is None or is_loopback(given.get("address")))
    if name == "dataflowrunner" or name == "testdataflowrunner":
        return True
    portable = options.view_as(PortableOptions)
    kind = (portable.environment_type or "DOCKER").upper()
    here = kind in _WORKERS_HERE or (
        kind == "EXTERNAL" and is_loopback(portable.environment_config)
    )
    endpoints = (portable.job_endpoint, given.get("flink_master"), given.get("spark_master_url"))
    return not (here and all(_endpoint_is_here(e) for e in endpoints))


def remote_dead_letter_base(options: PipelineOptions, job: str) -> str | None:
    """Where a remote run's dead letters go without ``--dead_letter``: under
    ``--temp_location`` (a bucket the workers can write), or None where it is not a URI."""
    temp = options.view_as(GoogleCloudOptions).temp_location or ""
    return f"{temp.rstrip('/')}/dead-letters/{job}" if "://" in temp else None


def _local_path_problem(flag: str, path: str, runner: str, what: str) -> str:
    name = path.rstrip("/").rsplit("/", 1)[-1] or "FILE"
    return (
        f"{flag} {path} is a local path, which {runner}'s workers cannot {what} (they run on "
        f"other machines); pass a gs:// URI, e.g. {flag} gs://BUCKET/{name}"
    )


def check_worker_paths(
    options: PipelineOptions,
    job: str,
    inputs: list[str],
    dead_letter: str | None,
    writes_dead_letter_files: bool,
) -> None:
    """On a remote runner: every input pattern is a URI, and dead-letter files (when the run
    writes any) go to ``--dead_letter`` as a URI or under a ``--temp_location`` URI. A
    ConfigError of one line otherwise; nothing on a local runner."""
    if not is_remote(options):
        return
    runner = runner_label(options)
    for pattern in inputs:
        if "://" not in pattern:
            raise errors.ConfigError(_local_path_problem("--input", pattern, runner, "read"))
    if not writes_dead_letter_files:
        return
    if dead_letter and "://" not in dead_letter:
        raise errors.ConfigError(
            _local_path_problem("--dead_letter", dead_letter, runner, "write to")
        )
    if not dead_letter and remote_dead_letter_base(options, job) is None:
        raise errors.ConfigError(
            f"--dead_letter: the default, dead-letters/{job}, is on each {runner} worker's own "
            f"disk and vanishes with it; pass --dead_letter gs://BUCKET/dead-letters/{job} (or "
            "--temp_location gs://BUCKET/tmp, under which dead letters then go)"
        )
