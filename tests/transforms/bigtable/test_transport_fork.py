"""MutateRows by hand (transforms/builder/wire.py's bytes, transforms/bigtable/transport.py's
sender) against the data client's own ``bulk_mutate_rows`` (``BTTS_OFFICIAL=wire,mutate``), both
caught by one in-process gRPC server (tests/support/fake_bigtable.py) that answers from a script of
faults: whole calls refused (UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, a permanent
code), entries refused one by one (transient or not), rows that must not be sent twice.

For generated rows and scripts, the two send the same request bytes and headers on every call
(first attempt and every retry), so the server applies the same rows the same number of times,
and both end in the same outcome (all written, or which rows were not)."""

from __future__ import annotations

import os
import time

import grpc
import pytest
from google.cloud.bigtable.data import BigtableDataClient, RowMutationEntry, SetCell
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.fake_bigtable import Answer, FakeBigtable
from transforms.bigtable import client_entries, transport
from transforms.bigtable.channel import EMULATOR_ENV, open_channel
from transforms.builder import wire
from transforms.mutations import Cell, RowMutation

TABLE = "projects/p/instances/i/tables/t"
CODES = {  # whole-call errors: the gRPC code, and whether both retry it
    "unavailable": grpc.StatusCode.UNAVAILABLE,
    "deadline": grpc.StatusCode.DEADLINE_EXCEEDED,
    "exhausted": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "denied": grpc.StatusCode.PERMISSION_DENIED,
}


@pytest.fixture(scope="module")
def server():
    """The fake server, a channel of the fork's and a data client table, both pointed at it."""
    with FakeBigtable() as fake:
        before = os.environ.get(EMULATOR_ENV)
        os.environ[EMULATOR_ENV] = fake.endpoint
        try:
            client = BigtableDataClient(project="p")
            channel = open_channel()
        finally:
            if before is None:
                del os.environ[EMULATOR_ENV]
            else:
                os.environ[EMULATOR_ENV] = before
        yield fake, channel, client.get_table("i", "t")
        channel.close()
        client.close()


_key = st.binary(min_size=1, max_size=6)
_cell = st.builds(
    Cell,
    st.sampled_from(["f", "METRIC", "é"]),
    st.binary(max_size=4),
    st.binary(max_size=200),
    st.integers(0, 2**50).map(lambda ms: ms * 1000) | st.just(-1),  # -1: the server's time
)
_rows = st.lists(
    st.tuples(_key, st.lists(_cell, min_size=1, max_size=3)), min_size=1, max_size=6
).map(lambda rows: [RowMutation("t", k, tuple(cells)) for k, cells in dict(rows).items()])
_answer = st.one_of(
    st.builds(Answer),
    st.builds(Answer, error=st.sampled_from(list(CODES.values()))),
    st.builds(
        Answer,
        codes=st.dictionaries(st.integers(0, 5), st.sampled_from([14, 4, 8, 3]), max_size=3),
    ),
)


def _batch(rows, encode=None, head=wire.request_head) -> transport.Batch:
    encode = encode or wire.EntryEncoder()
    return transport.Batch(head(TABLE), [encode(r) for r in rows], [r.key for r in rows])


def _run(fake, script, send, batch):
    """``send(batch)`` against the scripted server: its calls and the rows it applied."""
    fake.calls.clear()
    fake.applied.clear()
    fake.answer = lambda call, n: script[n] if n < len(script) else Answer()
    outcome = send(batch)
    return outcome, [(c.request.SerializeToString(), _headers(c)) for c in fake.calls]


def _headers(call) -> tuple:
    return tuple(call.metadata.get(h) for h in ("x-goog-request-params", "x-goog-api-client"))


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(rows=_rows, script=st.lists(_answer, max_size=3))
def test_the_fork_sends_and_resends_what_the_data_client_does(server, rows, script):
    fake, channel, table = server
    fork = transport.RequestSender(transport.mutate_rows_call(channel, TABLE), 20.0)
    ours, our_calls = _run(fake, script, fork, _batch(rows))
    our_applied = dict(fake.applied)
    official = transport.client_sender(table, 20.0)
    theirs, their_calls = _run(
        fake, script, official, _batch(rows, client_entries.protobuf_entry, wire.request_head)
    )
    assert our_calls == their_calls  # the same bytes and headers, call after call
    assert our_applied == dict(fake.applied)
    assert bool(ours.errors) == bool(theirs.errors)
    refused = {e.key for e in theirs.errors if e.key is not None}  # failures as values
    said = [str(e) for e in ours.errors]
    if said and not any(e.startswith(("PermissionDenied", "row")) for e in said):
        pytest.fail(f"an error that names neither the rows nor the call: {said}")
    for key in refused:  # a row the data client names as failed, the fork names too (or the
        assert any(e.key == key for e in ours.errors) or any(  # call failed for good)
            e.startswith("PermissionDenied") for e in said
        )


def test_the_data_clients_own_request_is_the_forks_byte_for_byte(server):
    """Not through the converter of the official sender: the data client's RowMutationEntry
    and SetCell of the same cells, as a user would write them."""
    fake, channel, table = server
    rows = [RowMutation("t", b"r%d" % i, (Cell("f", b"q", b"v%d" % i, 1000 * i),)) for i in (1, 2)]
    entries = [RowMutationEntry(r.key, [SetCell(*c) for c in r.cells]) for r in rows]
    fake.calls.clear()
    fake.answer = lambda call, n: Answer()
    table.bulk_mutate_rows(entries)
    list(transport.mutate_rows_call(channel, TABLE)(_batch(rows).to_bytes(), 10))
    theirs, ours = fake.calls
    assert ours.request.SerializeToString() == theirs.request.SerializeToString()
    assert _headers(ours) == _headers(theirs)


def test_a_request_head_and_entries_are_the_protobuf_runtimes():
    rows = [RowMutation("t", b"k%d" % i, (Cell("f", b"q", b"v" * i, 5000),)) for i in (1, 200)]
    ours = _batch(rows).to_bytes()
    theirs = _batch(rows, client_entries.protobuf_entry, client_entries.protobuf_head).to_bytes()
    assert ours == theirs
    assert client_entries.protobuf_head(TABLE, "profile") == wire.request_head(TABLE, "profile")


def test_the_official_sender_counts_and_names_what_failed(server):
    fake, _channel, table = server
    rows = [RowMutation("t", b"a", (Cell("f", b"q", b"v", 1000),))]
    rows.append(RowMutation("t", b"b", (Cell("f", b"q", b"v", 2000),)))
    script = [Answer(codes={1: 3})]
    outcome, _calls = _run(fake, script, transport.client_sender(table, 5.0), _batch(rows))
    assert outcome.codes == {0: 1, 3: 1}
    assert len(outcome.errors) == 1 and str(outcome.errors[0]).startswith("row b'b': code 3")
    failed = outcome.errors[0]  # the data client's entry, index and cause, kept as values
    assert (failed.key, failed.index, failed.code) == (b"b", 1, 3) and failed.cause is not None
    started = time.monotonic()
    outcome, _ = _run(
        fake,
        [Answer(error=CODES["unavailable"])] * 50,
        transport.client_sender(table, 0.5),
        _batch(rows),
    )
    assert outcome.errors and time.monotonic() - started < 10  # bounded, as the fork is
