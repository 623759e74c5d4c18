"""The gRPC channel and headers the raw-bytes paths (:mod:`.rows_stream`, :mod:`.transport`)
send on, made from public APIs only: google-auth's authorized channel, api_core's ``ClientInfo``
and routing header, grpc's own channel.

Why: those paths send ``ReadRows``/``MutateRows`` bytes themselves (the speed they buy is in
benchmarks/forks.py), so they need what the data client would put around them: its endpoint
or the emulator, its credentials and scopes, and the headers its calls carry. Taking these from
the GAPIC transport's insides (its ``create_channel``, a module's ``DEFAULT_CLIENT_INFO`` outside
its ``__all__``) broke whenever the generated code moved; the values stated here are checked
against the library's own by tests/house/test_fork_internals.py (docs/forks.md lists them).
"""

from __future__ import annotations

import os

import google.auth
import grpc
from google import protobuf
from google.api_core import gapic_v1
from google.auth.transport import grpc as auth_grpc
from google.auth.transport import requests as auth_requests
from google.cloud import bigtable

__all__ = ["EMULATOR_ENV", "GRPC_OPTIONS", "client_metadata", "open_channel"]

EMULATOR_ENV = "BIGTABLE_EMULATOR_HOST"
DEFAULT_ENDPOINT = "bigtable.googleapis.com"  # the data API's (BigtableClient.DEFAULT_ENDPOINT)
# the scopes the data client asks the default credentials for (its transport's AUTH_SCOPES)
DATA_SCOPES = (
    "https://www.googleapis.com/auth/bigtable.data",
    "https://www.googleapis.com/auth/bigtable.data.readonly",
    "https://www.googleapis.com/auth/cloud-bigtable.data",
    "https://www.googleapis.com/auth/cloud-bigtable.data.readonly",
    "https://www.googleapis.com/auth/cloud-platform",
    "https://www.googleapis.com/auth/cloud-platform.read-only",
)
GRPC_OPTIONS = (  # as the GAPIC transport opens its channel: no message size limit
    ("grpc.max_send_message_length", -1),
    ("grpc.max_receive_message_length", -1),
)


def open_channel(endpoint: str | None = None, options=GRPC_OPTIONS) -> grpc.Channel:
    """A channel as the data client opens its own: the emulator when ``BIGTABLE_EMULATOR_HOST``
    is set (insecure), else ``endpoint`` (default Bigtable's, port 443 unless given) with the
    application default credentials and the data API's scopes."""
    emulator = os.environ.get(EMULATOR_ENV)
    if emulator:
        return grpc.insecure_channel(emulator, options=list(options))
    host = endpoint or DEFAULT_ENDPOINT
    if ":" not in host:  # as the GAPIC transport completes it
        host += ":443"
    credentials, _project = google.auth.default(default_scopes=DATA_SCOPES)
    return auth_grpc.secure_authorized_channel(
        credentials, auth_requests.Request(), host, options=list(options)
    )


def client_metadata(table_name: str, app_profile_id: str = "") -> tuple[tuple[str, str], ...]:
    """The headers the data client's ``read_rows``/``bulk_mutate_rows`` send for a table: the
    client's identity (``x-goog-api-client``, as the data client states it) and the routing
    parameters (``x-goog-request-params``)."""
    info = gapic_v1.client_info.ClientInfo(
        gapic_version=bigtable.__version__,
        client_library_version=f"{bigtable.__version__}-data",
        protobuf_runtime_version=protobuf.__version__,
    )
    params = {"table_name": table_name, "app_profile_id": app_profile_id}
    return (info.to_grpc_metadata(), gapic_v1.routing_header.to_grpc_metadata(params))
