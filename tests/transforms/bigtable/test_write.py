"""The write step's encoding and batching: byte-exact requests, whatever shortcut builds them,
and a failure that names what was not written (the emulator-backed tests prove the rows land)."""

from __future__ import annotations

from collections import Counter

import pytest
from google.api_core import exceptions as api_exceptions
from google.cloud.bigtable.data.mutations import DeleteAllFromRow, RowMutationEntry, SetCell
from google.cloud.bigtable_v2.types import bigtable as bigtable_types
from google.rpc import status_pb2

from transforms.bigtable import write as bigtable_write
from transforms.bigtable.transport import Attempt, Batch, RequestSender
from transforms.bigtable.write import _LeanBatcher
from transforms.builder import wire
from transforms.mutations import AddCell, Cell, RowMutation

ROW = RowMutation(
    "METRIC",
    b"server1.bbb.com#1426535612045",
    (
        Cell("METRIC", b"CPU/CPU1_USR", b"0.02", 1426535612045000),
        Cell("METRIC", b"IO/BLK_READ", b"253453634", 1426535612045000),
    ),
)
TABLE = "projects/p/instances/i/tables/METRIC"


@pytest.fixture(scope="module")
def clients_own():
    """``clients_own(entry)``: the MutateRows entry the data client sends for ``entry``,
    caught by an in-process server."""
    import os

    from google.cloud.bigtable.data import BigtableDataClient

    from tests.support.fake_bigtable import FakeBigtable

    with FakeBigtable() as fake:
        before = os.environ.get("BIGTABLE_EMULATOR_HOST")
        os.environ["BIGTABLE_EMULATOR_HOST"] = fake.endpoint
        try:
            client = BigtableDataClient(project="p")
        finally:  # the client read the setting; the emulator's tests need theirs back
            if before is None:
                del os.environ["BIGTABLE_EMULATOR_HOST"]
            else:
                os.environ["BIGTABLE_EMULATOR_HOST"] = before
        table = client.get_table("i", "METRIC")

        def send(entry: RowMutationEntry):
            fake.calls.clear()
            table.bulk_mutate_rows([entry])
            ((only,),) = [call.request.entries for call in fake.calls]
            return only

        yield send
        client.close()


def _set_cells(row: RowMutation) -> RowMutationEntry:
    mutations = [SetCell(c.family, c.qualifier, c.value, c.timestamp_us) for c in row.cells]
    return RowMutationEntry(row.key, mutations)


def _requests(pool) -> list:
    """What the batcher handed to the pool, as the protobuf the server will parse."""
    return [bigtable_types.MutateRowsRequest.pb().FromString(b.to_bytes()) for b in pool.requests]


def test_aggregate_cells_are_refused_here():
    row = RowMutation("AGG", b"k", (AddCell("SUM", b"n", 1, 0),))
    with pytest.raises(TypeError, match="WriteAggregates"):
        wire.entry(row)


class _Inline:
    """A pool that runs the sender at once: batching decisions without threads."""

    def __init__(self) -> None:
        self.requests = []

    def submit(self, sender, request):
        from concurrent.futures import Future

        self.requests.append(request)
        future = Future()
        future.set_result(Attempt(len(request.entries)))  # a Batch
        return future


def test_requests_split_by_row_count_and_client_entries_are_accepted(clients_own):
    # Any mutation the data client's public RowMutationEntry holds, not only SetCell. (The
    # legacy DirectRow goes through the client's own Table.mutate_rows: test_direct_rows_*.)
    pool = _Inline()
    batcher = _LeanBatcher(TABLE, 2, 10**9, pool, sender=None)
    direct = RowMutationEntry(b"direct", [DeleteAllFromRow()])
    for row in (ROW, ROW, direct):
        batcher.add(row)
    batcher.close()
    requests = _requests(pool)
    assert [len(r.entries) for r in requests] == [2, 1]
    assert all(r.table_name == TABLE for r in requests)
    own = clients_own(_set_cells(ROW)).SerializeToString()
    assert requests[0].entries[0].SerializeToString() == own
    assert requests[1].entries[0] == clients_own(RowMutationEntry(b"direct", [DeleteAllFromRow()]))
    assert len(batcher.done) == 2


def test_requests_stay_under_the_mutation_limit(monkeypatch):
    monkeypatch.setattr(bigtable_write, "MAX_MUTATIONS_PER_REQUEST", 3)
    pool = _Inline()
    batcher = _LeanBatcher(TABLE, 100, 10**9, pool, sender=None)
    for _ in range(3):
        batcher.add(ROW)  # two mutations each: two rows would make four
    batcher.close()
    assert [len(r.entries) for r in pool.requests] == [1, 1, 1]


@pytest.mark.parametrize("flush_count", [1, 3, 7, 100])
@pytest.mark.parametrize("flush_bytes", [60, 250, 10**9])
@pytest.mark.parametrize("max_mutations", [3, 9, 100_000])
def test_a_batch_of_rows_makes_the_requests_rows_one_by_one_make(
    monkeypatch, flush_count, flush_bytes, max_mutations
):
    monkeypatch.setattr(bigtable_write, "MAX_MUTATIONS_PER_REQUEST", max_mutations)
    rows = [
        (ROW.table, b"k%d" % i, ROW.cells[: 1 + i % 2]) for i in range(23)
    ]  # plain tuples, as the builders make them, one or two cells each
    # anything else goes row by row from there
    rows[11] = RowMutationEntry(b"direct", [SetCell("METRIC", b"Q", b"v", -1)])
    batches = [rows[:5], rows[5:6], rows[6:20], rows[20:]]

    def requests(add) -> list:
        pool = _Inline()
        batcher = _LeanBatcher(TABLE, flush_count, flush_bytes, pool, sender=None)
        add(batcher)
        batcher.close()
        return [b.to_bytes() for b in pool.requests]

    one_by_one = requests(lambda b: [b.add(row) for batch in batches for row in batch])
    batched = requests(lambda b: [b.add_rows(batch) for batch in batches])
    assert batched == one_by_one
    if flush_count < len(rows):  # the limits were met, not only the end
        assert len(one_by_one) > 1


def test_a_bad_element_leaves_no_half_built_entry():
    pool = _Inline()
    batcher = _LeanBatcher(TABLE, 100, 10**9, pool, sender=None)
    batcher.add(ROW)
    with pytest.raises(TypeError, match="expected RowMutation or DirectRow"):
        batcher.add({"not": "a row"})
    batcher.close()
    assert [len(r.entries) for r in pool.requests] == [1]


class _Stub:
    """Answers MutateRows from a script: per call, a status code per entry or an exception."""

    def __init__(self, script) -> None:
        self.script = list(script)
        self.sent: list[list[bytes]] = []

    def __call__(self, request: bytes, timeout: float):
        raw = bigtable_types.MutateRowsRequest.pb().FromString(request)
        assert raw.table_name == TABLE
        self.sent.append([e.row_key for e in raw.entries])
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        response = bigtable_types.MutateRowsResponse.pb()()
        for index, code in enumerate(step):
            answer = response.entries.add()
            answer.index = index
            answer.status.CopyFrom(status_pb2.Status(code=code, message=f"code {code}"))
        return [response]


def _request(*keys: bytes) -> Batch:
    rows = [RowMutation("METRIC", key, ROW.cells) for key in keys]
    entries = [wire.framed(wire.entry(row)) for row in rows]
    return Batch(wire.request_head(TABLE), entries, list(keys))


def test_transient_entries_are_resent_alone_until_written():
    stub = _Stub([[0, 14, 0, 4], api_exceptions.ServiceUnavailable("down"), [0, 0]])
    outcome = RequestSender(stub, timeout_s=10)(_request(b"a", b"b", b"c", b"d"))
    assert stub.sent == [[b"a", b"b", b"c", b"d"], [b"b", b"d"], [b"b", b"d"]]
    assert outcome.errors == []
    assert outcome.codes == Counter({0: 4, 14: 1, 4: 1})


def test_a_permanent_error_is_reported_with_its_row_and_not_retried():
    stub = _Stub([[0, 3]])
    outcome = RequestSender(stub, timeout_s=10)(_request(b"a", b"b"))
    assert len(stub.sent) == 1
    assert [str(e) for e in outcome.errors] == ["row b'b': code 3: code 3"]
    (failed,) = outcome.errors  # a value: the entry's key, its index in the request, its cause
    assert (failed.key, failed.index, failed.code, failed.cause) == (b"b", 1, 3, "code 3")


def test_a_failure_after_a_resend_names_the_entrys_index_in_the_first_request():
    stub = _Stub([[0, 14, 0, 14], [0, 3]])
    outcome = RequestSender(stub, timeout_s=10)(_request(b"a", b"b", b"c", b"d"))
    assert stub.sent == [[b"a", b"b", b"c", b"d"], [b"b", b"d"]]
    assert [(e.key, e.index, e.code) for e in outcome.errors] == [(b"d", 3, 3)]


def test_retries_stop_at_the_timeout_with_the_last_error():
    stub = _Stub([api_exceptions.ServiceUnavailable("down")] * 1000)
    outcome = RequestSender(stub, timeout_s=0.2)(_request(b"a"))
    assert 1 < len(stub.sent) < 1000
    assert len(outcome.errors) == 1
    assert "still not written after 0.2s" in str(outcome.errors[0])
    assert "ServiceUnavailable" in str(outcome.errors[0])
    assert outcome.errors[0].key is None and outcome.errors[0].index is None


def test_all_written_is_a_response_of_every_entry_written_in_order():
    from transforms.bigtable.transport import all_written, parse_response

    response = parse_response(all_written(3))
    assert [(e.index, e.status.code, e.HasField("status")) for e in response.entries] == [
        (0, 0, True),
        (1, 0, True),
        (2, 0, True),
    ]
    assert not response.HasField("rate_limit_info")
    assert all_written(0) == b""


class _BytesStub(_Stub):
    """The same script, answered as the channel answers: response bytes."""

    def __call__(self, request: bytes, timeout: float):
        return [response.SerializeToString() for response in super().__call__(request, timeout)]


def test_response_bytes_other_than_all_written_are_read_entry_by_entry():
    stub = _BytesStub([[0, 14, 0, 0], [0]])
    outcome = RequestSender(stub, timeout_s=10)(_request(b"a", b"b", b"c", b"d"))
    assert stub.sent == [[b"a", b"b", b"c", b"d"], [b"b"]]
    assert outcome.errors == []
    assert outcome.codes == Counter({0: 4, 14: 1})
    stub = _BytesStub([[0, 3]])
    outcome = RequestSender(stub, timeout_s=10)(_request(b"a", b"b"))
    assert [str(e) for e in outcome.errors] == ["row b'b': code 3: code 3"]


def test_the_emulator_answers_all_written_so_rows_are_not_read_back_one_by_one(target):
    """The write step's fast path (one comparison per response) must be the path the server
    takes: if the emulator's answer ever differs, this fails instead of the job slowing down."""
    from btts.admin import preflight
    from transforms.bigtable.channel import open_channel
    from transforms.bigtable.transport import all_written, mutate_rows_call
    from transforms.schema import builtin_tables

    preflight(target, [builtin_tables.get("METRIC")], create=True)
    channel = open_channel()
    name = target.table_path("METRIC")
    rows = [RowMutation("METRIC", b"host#%d" % i, ROW.cells) for i in range(300)]
    request = wire.request_head(name) + b"".join(wire.framed(wire.entry(r)) for r in rows)
    assert list(mutate_rows_call(channel, name)(request, 30)) == [all_written(300)]
    channel.close()


@pytest.mark.parametrize("batched", [True, False])
def test_the_set_cell_sink_refuses_a_row_of_another_table(monkeypatch, batched):
    """As the AddToCell sink does: a row routed to the wrong writer fails the bundle before
    any of it is sent, naming both tables (on many workers nothing checks it afterwards)."""
    import apache_beam as beam

    from tests.support.fake_bigtable import FakeBigtable
    from transforms.bigtable.write import BoundedWriteToBigTable

    mine = ROW._replace(key=b"mine")
    theirs = ROW._replace(table="CURRENT_METRIC", key=b"theirs")
    elements = [[mine, theirs]] if batched else [mine, theirs]
    with FakeBigtable() as fake:
        monkeypatch.setenv("BIGTABLE_EMULATOR_HOST", fake.endpoint)
        with (
            pytest.raises(Exception, match="row for table 'CURRENT_METRIC' reached the METRIC"),
            beam.Pipeline() as p,
        ):
            _ = p | beam.Create(elements) | BoundedWriteToBigTable("p", "i", "METRIC")
        assert not fake.applied if batched else b"theirs" not in fake.applied
