"""Whether the workers share the launcher's disk, and the file paths a job may give them: local
inputs that exist, or only remote URIs.

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

import dataclasses
import glob
import ipaddress
from collections.abc import Sequence

from apache_beam.options.pipeline_options import (
    GoogleCloudOptions,
    PipelineOptions,
    PortableOptions,
    StandardOptions,
)

from btts import config as targets
from btts import errors

__all__ = [
    "Runner",
    "check_local_inputs",
    "check_worker_paths",
    "remote_dead_letter_base",
    "runner_of",
]

# The local runners, the one list: Beam's DirectRunner by any of its names (``direct``,
# ``DirectRunner``, ``SwitchingDirectRunner``: run in this process, without Beam's first try of
# Prism, see :func:`pipelines.common.runner.new_pipeline`), then Beam's other in-process ones.
DIRECT = frozenset({"directrunner", "switchingdirectrunner"})
IN_PROCESS = DIRECT | frozenset(
    {
        "bundlebaseddirectrunner",
        "testdirectrunner",
        "fnapirunner",
        "prismrunner",
        "interactiverunner",
    }
)
_LOCAL_ENDPOINTS = frozenset({"", "embed", "[local]", "[auto]"})
_WORKERS_HERE = frozenset({"LOOPBACK", "PROCESS"})


@dataclasses.dataclass(frozen=True)
class Runner:
    """Where a run runs, decided once from the options (:func:`runner_of`): every later step
    (the pipeline made, the paths checked, flow control, a dry run's line) reads this."""

    label: str  # the runner's class name as the user named it (``DirectRunner`` by default)
    direct: bool  # Beam's DirectRunner, by any of its names (see DIRECT)
    remote: bool  # the workers may run where the launcher's files are not
    dataflow: bool  # Google Cloud Dataflow (flow control's ``auto`` is on there)
    project: str | None  # --project
    region: str | None  # --region
    temp_location: str | None  # --temp_location
    streaming: bool  # Beam's --streaming (implied by --input_subscription)

    def bigtable(self, project: str | None, instance: str | None) -> targets.Target:
        """The Bigtable instance a job writes: ``instance`` (``--bigtable_instance``) in
        ``project`` (``--bigtable_project``), by default the runner's project (``--project``);
        a ConfigError of one line when neither names one (:func:`btts.config.resolve_target`)."""
        return targets.resolve_target(project or self.project, instance)


def runner_of(options: PipelineOptions) -> Runner:
    """The :class:`Runner` the options name (see the module docstring for what is local)."""
    given = options.view_as(StandardOptions).runner or "DirectRunner"
    name = given if isinstance(given, str) else type(given).__name__
    label = name.rsplit(".", 1)[-1]
    key = label.lower() if label.lower().endswith("runner") else f"{label.lower()}runner"
    cloud = options.view_as(GoogleCloudOptions)
    return Runner(
        label=label,
        direct=isinstance(given, str) and key in DIRECT,  # an instance given is used as it is
        remote=_is_remote(key, options),
        dataflow="dataflow" in str(given).lower(),
        project=cloud.project,
        region=cloud.region,
        temp_location=cloud.temp_location,
        streaming=bool(options.view_as(StandardOptions).streaming),
    )


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


def _is_remote(name: str, options: PipelineOptions) -> bool:
    """Whether runner ``name`` (lower case, ``…runner``) has workers that may run where the
    launcher's files are not (see the module docstring for what counts as local)."""
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


def remote_dead_letter_base(runner: Runner, job: str) -> str | None:
    """Where a remote run's dead letters go without ``--dead_letter``: under
    ``--temp_location`` (a bucket the workers can write), or None where it is not a URI."""
    temp = runner.temp_location or ""
    return f"{temp.rstrip('/')}/dead-letters/{job}" if "://" in temp else None


def _local_path_problem(flag: str, path: str, runner: str, what: str) -> str:
    name = path.rstrip("/").rsplit("/", 1)[-1] or "FILE"
    return (
        f"{flag} {path} is a local path, which {runner}'s workers cannot {what} (they run on "
        f"other machines); pass a gs:// URI, e.g. {flag} gs://BUCKET/{name}"
    )


def check_local_inputs(patterns: Sequence[str]) -> None:
    """For a runner whose workers share the launcher's disk: every local input pattern matches
    a file, so a typo or an empty glob is one line naming the pattern now, not a Beam traceback
    after the pipeline started. Remote patterns (gs://) are left to the read: checking them
    would need the cloud at launch (a dry run works offline).
    Raises ConfigError (a UserError: one line naming what to change)."""
    for pattern in patterns:
        if "://" in pattern:
            continue
        if not glob.glob(pattern, recursive=True):
            what = "no file matches" if any(c in pattern for c in "*?[") else "no such file"
            raise errors.ConfigError(f"--input {pattern}: {what}")


def check_worker_paths(
    runner: str,
    job: str,
    inputs: Sequence[str],
    dead_letter: str | None,
    writes_dead_letter_files: bool,
) -> None:
    """For a runner whose workers run elsewhere (``runner``, as the user named it): every input
    pattern is a URI, and dead-letter files (when the run writes any) go under a URI:
    ``dead_letter`` is ``--dead_letter`` or the default under ``--temp_location``
    (:func:`remote_dead_letter_base`), None where neither is given. A ConfigError of one line
    otherwise."""
    for pattern in inputs:
        if "://" not in pattern:
            raise errors.ConfigError(_local_path_problem("--input", pattern, runner, "read"))
    if not writes_dead_letter_files:
        return
    if dead_letter is None:
        raise errors.ConfigError(
            f"--dead_letter: the default, dead-letters/{job}, is on each {runner} worker's own "
            f"disk and vanishes with it; pass --dead_letter gs://BUCKET/dead-letters/{job} (or "
            "--temp_location gs://BUCKET/tmp, under which dead letters then go)"
        )
    if "://" not in dead_letter:
        raise errors.ConfigError(
            _local_path_problem("--dead_letter", dead_letter, runner, "write to")
        )
