"""What the forks of libraries rely on, checked against the libraries installed: every name and
value docs/forks.md lists under "Internals relied on" has a check here, and a check that fails
names the internal, the fork that relies on it and the doc, with the versions it was verified
with and the ones installed. A library upgrade that moves one of them fails here, not in a job.

The docs' table and this file's list must name the same internals (a test holds them equal)."""

from __future__ import annotations

import contextlib
import http.client
import inspect
import os
import re
from collections.abc import Callable
from importlib import metadata

import pytest

from tests.support import REPO

DOC = REPO / "docs" / "forks.md"
PACKAGES = ("google-cloud-bigtable", "grpcio", "protobuf", "proto-plus", "google-api-core",
            "google-auth", "apache-beam")  # fmt: skip


def _installed() -> str:
    return ", ".join(f"{p} {metadata.version(p)}" for p in PACKAGES)


def _verified() -> str:
    found = re.search(r"Verified with: (.+)", DOC.read_text(encoding="utf-8"))
    return found.group(1).strip() if found else "(no 'Verified with:' line in docs/forks.md)"


# -- the checks: each returns nothing, or raises AssertionError saying what moved ---------------


def wire_field_numbers():
    """transforms/builder/wire.py writes these field numbers and types by hand."""
    from google.cloud.bigtable_v2.types import bigtable, data

    def fields(message):
        return {f.name: (f.number, f.type) for f in message.pb().DESCRIPTOR.fields}

    request = fields(bigtable.MutateRowsRequest)
    assert request["table_name"] == (1, 9) and request["app_profile_id"] == (3, 9), request
    assert request["entries"] == (2, 11), request
    entry = fields(bigtable.MutateRowsRequest.Entry)
    assert entry["row_key"] == (1, 12) and entry["mutations"] == (2, 11), entry
    assert fields(data.Mutation)["set_cell"] == (1, 11)
    set_cell = fields(data.Mutation.SetCell)
    expected = {"family_name": (1, 9), "column_qualifier": (2, 12), "timestamp_micros": (3, 3)}
    assert set_cell == {**expected, "value": (4, 12)}, set_cell


def feature_flags_header():
    """transport.py opts in to batch write flow control with this header, which the library
    calls an internal implementation detail."""
    from google.cloud.bigtable_v2 import FeatureFlags

    assert "``bigtable-features`` metadata key" in FeatureFlags.__doc__
    flags = FeatureFlags(mutate_rows_rate_limit=True, mutate_rows_rate_limit2=True)
    assert FeatureFlags.serialize(flags)


def rate_limit_info():
    """transport.py's RateLimiter reads these fields of every MutateRowsResponse."""
    from google.cloud.bigtable_v2.types import bigtable

    response = bigtable.MutateRowsResponse.pb()()
    response.rate_limit_info.factor = 0.5
    response.rate_limit_info.period.seconds = 1
    assert response.HasField("rate_limit_info")


@contextlib.contextmanager
def _data_client():
    """A data client pointed at a closed port: made without credentials, sends nothing."""
    from google.cloud.bigtable.data import BigtableDataClient

    from transforms.bigtable.channel import EMULATOR_ENV

    before = os.environ.get(EMULATOR_ENV)
    os.environ[EMULATOR_ENV] = "127.0.0.1:9"
    try:
        client = BigtableDataClient(project="p")
    finally:
        if before is None:
            del os.environ[EMULATOR_ENV]
        else:
            os.environ[EMULATOR_ENV] = before
    try:
        yield client
    finally:
        client.close()


def client_retry_sets():
    """rows_stream.py and transport.py retry what the data client retries by default (and
    transport.py RESOURCE_EXHAUSTED too, which its official path passes explicitly)."""
    from google.api_core import exceptions as ex

    from transforms.bigtable import rows_stream

    with _data_client() as client:
        table = client.get_table("i", "t")
        reads = set(table.default_read_rows_retryable_errors)
        writes = set(table.default_mutate_rows_retryable_errors)
    assert reads == set(rows_stream.RETRYABLE), reads
    assert writes == {ex.DeadlineExceeded, ex.ServiceUnavailable}, writes


def rst_stream_retry():
    """rows_stream.py retries an INTERNAL error whose message names RST_STREAM, as the data
    client's read_rows does (by the same words)."""
    from google.cloud.bigtable.data import _helpers

    source = inspect.getsource(_helpers)
    assert '"rst_stream"' in source and '"rst stream"' in source


def mutations_exception_group():
    """transport.client_sender reads the failed entries of bulk_mutate_rows this way."""
    from google.cloud.bigtable.data import RowMutationEntry, SetCell
    from google.cloud.bigtable.data.exceptions import FailedMutationEntryError

    entry = RowMutationEntry(b"k", [SetCell("f", b"q", b"v", 1000)])
    error = FailedMutationEntryError(0, entry, ValueError("x"))
    assert error.entry is entry and error.index == 0 and isinstance(error.__cause__, ValueError)


def data_client_headers():
    """channel.client_metadata states the data client's x-goog-api-client itself."""
    from transforms.bigtable.channel import client_metadata

    with _data_client() as client:
        theirs = client.client_info.to_grpc_metadata()
    ours = dict(client_metadata("projects/p/instances/i/tables/t"))
    assert ours["x-goog-api-client"] == theirs[1], (ours, theirs)


def endpoint_and_scopes():
    """channel.py names the data API's endpoint and scopes itself (it used to take them from
    the GAPIC transport)."""
    from google.cloud.bigtable_v2.services.bigtable import BigtableClient
    from google.cloud.bigtable_v2.services.bigtable.transports.base import BigtableTransport

    from transforms.bigtable import channel

    assert BigtableClient.DEFAULT_ENDPOINT == channel.DEFAULT_ENDPOINT
    assert tuple(BigtableTransport.AUTH_SCOPES) == channel.DATA_SCOPES


def single_threaded_unary_stream():
    """rows_stream.py reads on a channel in gRPC's experimental single-threaded stream mode."""
    import grpc

    assert grpc.experimental.ChannelOptions.SingleThreadedUnaryStream


def filter_attributes():
    """filter_proto.py builds every filter from these attributes, and has a builder for every
    filter class the library has (a new class would be refused)."""
    from google.cloud.bigtable.data import row_filters as rf

    from transforms.bigtable.filter_proto import BUILDERS

    classes = {c for c in vars(rf).values() if isinstance(c, type) and issubclass(c, rf.RowFilter)}
    uncovered = sorted(
        c.__name__
        for c in classes
        if not inspect.isabstract(c) and not any(b in BUILDERS for b in c.__mro__)
    )
    assert not uncovered, f"filter classes without a builder: {uncovered}"
    range_names = ("start_qualifier", "end_qualifier", "inclusive_start", "inclusive_end")
    samples = [
        (rf.ColumnRangeFilter("f", b"a", b"b"), ("family_id", *range_names)),
        (rf.ValueRangeFilter(b"a", b"b"), ("start_value", "end_value", "inclusive_start")),
        (rf.TimestampRangeFilter(), ("range_",)),
        (
            rf.ConditionalRowFilter(rf.PassAllFilter(True)),
            ("predicate_filter", "true_filter", "false_filter"),
        ),
        (rf.RowFilterChain(), ("filters",)),
        (rf.ValueBitmaskFilter(b"x"), ("mask",)),
        (rf.RowSampleFilter(0.5), ("sample",)),
        (rf.CellsColumnLimitFilter(1), ("num_cells",)),
        (rf.ApplyLabelFilter("l"), ("label",)),
        (rf.RowKeyRegexFilter(b"x"), ("regex",)),
        (rf.SinkFilter(True), ("flag",)),
    ]
    for sample, names in samples:
        missing = [n for n in names if not hasattr(sample, n)]
        assert not missing, f"{type(sample).__name__} has no {missing}"


def beam_sink_metrics():
    """write.py counts "Written Row" under the namespace of Beam's own (private) sink DoFn, so
    that dashboards made for WriteToBigTable read it."""
    from apache_beam.io.gcp import bigtableio

    from transforms.bigtable.write import BEAM_SINK_NAMESPACE, WRITTEN_ROW

    sink = getattr(bigtableio, BEAM_SINK_NAMESPACE.rpartition(".")[2])
    assert f"{sink.__module__}.{sink.__name__}" == BEAM_SINK_NAMESPACE
    assert f"Metrics.counter(self.__class__, '{WRITTEN_ROW}')" in inspect.getsource(sink)
    assert bigtableio.FLUSH_COUNT and bigtableio.MAX_ROW_BYTES


def stdlib_http_limits():
    """http_io.py parses under the standard library's limits (private names of http.client)."""
    from btts.tsdb import http_io

    assert http.client._MAXLINE == http_io.MAX_LINE
    assert http.client._MAXHEADERS == http_io.MAX_HEADERS


def stdlib_http_handler():
    """stdlib_front.py overrides and sets these names of http.server and socketserver."""
    import socketserver
    from http.server import BaseHTTPRequestHandler

    params = list(inspect.signature(BaseHTTPRequestHandler.send_error).parameters)
    assert params == ["self", "code", "message", "explain"], params
    for name in ("default_request_version", "disable_nagle_algorithm", "parse_request"):
        assert hasattr(BaseHTTPRequestHandler, name), name
    assert hasattr(socketserver.ThreadingMixIn, "process_request_thread")


INTERNALS: dict[str, tuple[str, Callable[[], None]]] = {
    "MutateRowsRequest field numbers": ("wire", wire_field_numbers),
    "FeatureFlags / bigtable-features": ("mutate", feature_flags_header),
    "MutateRowsResponse.rate_limit_info": ("mutate", rate_limit_info),
    "Table default retryable errors": ("read, mutate", client_retry_sets),
    "RST_STREAM retry by message": ("read", rst_stream_retry),
    "FailedMutationEntryError.entry/.index": ("mutate (official path)", mutations_exception_group),
    "data client x-goog-api-client": ("read, mutate", data_client_headers),
    "BigtableClient.DEFAULT_ENDPOINT, AUTH_SCOPES": ("read, mutate", endpoint_and_scopes),
    "grpc SingleThreadedUnaryStream": ("read", single_threaded_unary_stream),
    "row filter attributes and classes": ("filters", filter_attributes),
    "bigtableio._BigTableWriteFn counter": ("mutate", beam_sink_metrics),
    "http.client._MAXLINE, _MAXHEADERS": ("http", stdlib_http_limits),
    "BaseHTTPRequestHandler hooks": ("http (official path)", stdlib_http_handler),
}


@pytest.mark.parametrize("name", INTERNALS)
def test_an_internal_a_fork_relies_on_is_where_it_was(name):
    fork, check = INTERNALS[name]
    try:
        check()
    except (AssertionError, AttributeError, ImportError, KeyError, TypeError) as err:
        pytest.fail(
            f"{name} moved ({type(err).__name__}: {err}). The {fork} fork relies on it: see "
            f"docs/forks.md ('Internals relied on'), verified with {_verified()}; installed: "
            f"{_installed()}. Fix the fork, or take the library's path meanwhile "
            f"(BTTS_OFFICIAL={fork.split()[0].rstrip(',')}).",
            pytrace=False,
        )


def test_the_doc_lists_the_internals_checked_here():
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Internals relied on", 1)[1].split("\n## ", 1)[0]
    listed = {m.group(1) for m in re.finditer(r"^\| `([^`]+)`", section, re.M)}
    assert listed == set(INTERNALS), (
        sorted(listed - set(INTERNALS)),
        sorted(set(INTERNALS) - listed),
    )
    assert "Verified with:" in text


def test_a_moved_internal_fails_with_a_message_naming_it_and_the_doc(monkeypatch):
    from btts.tsdb import http_io

    monkeypatch.setattr(http_io, "MAX_HEADERS", 64)  # as if the standard library had moved
    with pytest.raises(pytest.fail.Exception, match=r"(?s)_MAXHEADERS moved .*docs/forks.md"):
        test_an_internal_a_fork_relies_on_is_where_it_was("http.client._MAXLINE, _MAXHEADERS")
