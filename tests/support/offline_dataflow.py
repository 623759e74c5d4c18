"""Dataflow with no network: the flags of a ``--dry_run`` on the DataflowRunner, and an
environment with no emulator and no credentials, in which anything that called Google would
fail or hang (the dry-run tests, the remote-path tests)."""

from __future__ import annotations

import os

DATAFLOW = [
    "--runner=DataflowRunner",
    "--project=test-project",
    "--region=europe-west1",
    "--temp_location=gs://test-bucket/tmp",
    "--dry_run=True",
    "--bigtable_instance=test-instance",
]


def offline_env() -> dict[str, str]:
    """No emulator and no credentials: anything that called Google would fail or hang."""
    env = {k: v for k, v in os.environ.items() if "EMULATOR" not in k}
    env.pop("GOOGLE_APPLICATION_CREDENTIALS", None)
    env["CLOUDSDK_CONFIG"] = "/nonexistent"  # no gcloud credentials either
    return env
