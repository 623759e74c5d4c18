"""Flow control and safe resends, against an in-process Bigtable service
(tests/support/fake_bigtable.py) that answers with ``RateLimitInfo``, ``RESOURCE_EXHAUSTED`` and
partial failures, none of which the emulator does."""

from __future__ import annotations

import base64
import threading
import time
import uuid

import apache_beam as beam
import grpc
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from google.cloud.bigtable.row import DirectRow
from google.cloud.bigtable_v2.types import feature_flags

from btts.emulator import ENV_HOST
from tests.support.fake_bigtable import Answer, FakeBigtable
from transforms.bigtable import transport
from transforms.bigtable.channel import open_channel
from transforms.bigtable.write import BoundedWriteToBigTable
from transforms.builder import wire
from transforms.mutations import Cell, RowMutation

UNAVAILABLE, RESOURCE_EXHAUSTED = 14, 8


@pytest.fixture
def fake(monkeypatch):
    with FakeBigtable() as server:
        monkeypatch.setenv(ENV_HOST, server.endpoint)
        yield server


def _table() -> str:
    return f"projects/p/instances/i/tables/T{uuid.uuid4().hex[:8]}"  # limiters are per table


def _row(key: bytes, timestamp_us: int = 1_000_000, table: str = "T") -> RowMutation:
    return RowMutation(table, key, (Cell("f", b"q", b"v", timestamp_us),))


def _batch(table: str, rows) -> transport.Batch:
    entries = [wire.framed(wire.entry(row)) for row in rows]
    return transport.Batch(wire.request_head(table), entries, [row.key for row in rows])


def _sender(table: str, flow: bool = True, limiter=None, in_flight=None, timeout_s=30.0):
    return transport.RequestSender(
        transport.mutate_rows_call(open_channel(), table, flow), timeout_s, limiter, in_flight
    )


# -- the rate limiter's rules (the Java client's), on a clock the test moves -------------------


class _Info:
    def __init__(self, factor, seconds):
        self.factor = factor
        self.period = type("P", (), {"seconds": seconds})()


class _Response:
    def __init__(self, info=None):
        self.rate_limit_info = info

    def HasField(self, name):
        return self.rate_limit_info is not None


def test_the_rate_follows_factors_once_per_period_capped_and_turns_off_without_them():
    now = [100.0]
    limiter = transport.RateLimiter(clock=lambda: now[0], sleep=lambda s: None)
    assert not limiter.enabled and limiter.acquire() == 0.0
    limiter.on_response(_Response(_Info(0.5, 2)))  # capped to 0.7; enables
    assert limiter.enabled and limiter.rate == pytest.approx(7.0)
    limiter.on_response(_Response(_Info(0.5, 2)))  # within the period: ignored
    assert limiter.rate == pytest.approx(7.0)
    now[0] += 2.5
    limiter.on_response(_Response(_Info(5.0, 1)))  # capped to 1.3
    assert limiter.rate == pytest.approx(9.1)
    now[0] += 1.5
    limiter.on_overload()  # RESOURCE_EXHAUSTED and the like: 0.7, for 10 s
    assert limiter.rate == pytest.approx(6.37)
    limiter.on_response(_Response(_Info(1.3, 1)))
    assert limiter.rate == pytest.approx(6.37)
    limiter.on_response(_Response(_Info(0.0, 1)))  # invalid info: as none, but inside the period
    assert limiter.enabled
    now[0] += 10.5
    limiter.on_response(_Response())
    assert not limiter.enabled  # the period passed without RateLimitInfo: off, rate kept
    assert limiter.rate == pytest.approx(6.37)
    limiter.on_response(_Response(_Info(1.0, 1)))
    assert limiter.enabled
    waits = [limiter.acquire() for _ in range(3)]  # spaced at 1/rate on the frozen clock
    assert waits == pytest.approx([0.0, 1 / 6.37, 2 / 6.37])


def test_requests_opt_in_to_flow_control_only_when_it_is_on(fake):
    table = _table()
    for flow in (True, False):
        outcome = _sender(table, flow)(_batch(table, [_row(b"a")]))
        assert outcome.errors == []
    on, off = fake.calls[-2].metadata, fake.calls[-1].metadata
    assert transport.FEATURES_HEADER not in off
    flags = feature_flags.FeatureFlags.deserialize(
        base64.urlsafe_b64decode(on[transport.FEATURES_HEADER])
    )
    assert flags.mutate_rows_rate_limit and flags.mutate_rows_rate_limit2


def test_the_request_rate_follows_the_factors_and_recovers_when_they_lift(fake):
    """Four threads send as fast as they may: the server's factors set the pace."""
    table = _table()
    limiter = transport.RateLimiter()
    state = {"factor": 1.0}

    def answer(call, index):
        if state["factor"] == "lift":
            return Answer()
        if state["factor"] == 0.7 and limiter.rate < 5.0:  # two steps down: hold there
            state["factor"] = 1.0
        return Answer(factor=state["factor"], period_s=1)

    fake.answer = answer
    sender = _sender(table, limiter=limiter, in_flight=transport.InFlightLimit(4, 10**9))
    stop = threading.Event()
    keys = iter(range(10**9))
    lock = threading.Lock()

    def work():
        while not stop.is_set():
            with lock:
                rows = [_row(b"k%d" % next(keys)) for _ in range(5)]
            assert sender(_batch(table, rows)).errors == []

    threads = [threading.Thread(target=work) for _ in range(4)]
    start = time.monotonic()
    for t in threads:
        t.start()
    try:
        time.sleep(2.5)  # factor 1.0: the starting 10 requests per second
        steady = _rate(fake, start + 0.5, time.monotonic())
        state["factor"] = 0.7
        deadline = time.monotonic() + 5
        while state["factor"] == 0.7 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert limiter.rate == pytest.approx(10 * 0.7**2)  # what the factors allow
        slowed_from = time.monotonic() + 0.3
        time.sleep(3.3)
        slowed = _rate(fake, slowed_from, time.monotonic())
        state["factor"] = "lift"  # no RateLimitInfo: off once the period has passed
        lifted_from = time.monotonic() + 1.5
        time.sleep(2.5)
        lifted = _rate(fake, lifted_from, time.monotonic())
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert steady == pytest.approx(10.0, rel=0.2)
    assert slowed == pytest.approx(10 * 0.7**2, rel=0.2)
    assert lifted > 3 * 10.0
    assert sorted(fake.applied.values()) == [1] * len(fake.applied)


def _rate(fake: FakeBigtable, start: float, end: float) -> float:
    """Calls per second between the first and last arrival in ``[start, end)``."""
    times = sorted(c.at for c in fake.calls if start <= c.at < end)
    assert len(times) >= 4, f"too few calls to measure a rate: {len(times)}"
    return (len(times) - 1) / (times[-1] - times[0])


def test_the_in_flight_cap_holds_across_threads(fake):
    table = _table()
    fake.answer = lambda call, index: Answer(delay_s=0.03)
    sender = _sender(table, in_flight=transport.InFlightLimit(3, 10**9))
    threads = [
        threading.Thread(
            target=lambda n=n: [
                sender(_batch(table, [_row(b"t%d-%d" % (n, i))])) for i in range(10)
            ]
        )
        for n in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fake.peak_in_flight == 3
    assert len(fake.applied) == 80


def test_the_byte_cap_lets_one_large_request_through_alone():
    limit = transport.InFlightLimit(10, 100)
    limit.acquire(500)  # larger than the cap, nothing else in flight: goes
    assert limit.peak_bytes == 500
    blocked = threading.Thread(target=limit.acquire, args=(1,))
    blocked.start()
    blocked.join(0.2)
    assert blocked.is_alive()  # waits for room
    limit.release(500)
    blocked.join(1)
    assert not blocked.is_alive()


# -- resends: only what is idempotent ----------------------------------------------------------


def test_a_transient_error_resends_only_the_idempotent_entries(fake):
    """A batch mixing cells with timestamps and a server-timestamp cell (-1): the first two are
    re-sent and land once, the third is not re-sent and fails naming its row."""
    table = _table()
    fake.answer = lambda call, index: Answer(
        codes=dict.fromkeys(range(3), UNAVAILABLE) if index == 0 else {}
    )
    rows = [_row(b"safe1"), _row(b"server-time", -1), _row(b"safe2")]
    outcome = _sender(table, flow=False)(_batch(table, rows))
    assert [c.keys for c in fake.calls] == [
        [b"safe1", b"server-time", b"safe2"],
        [b"safe1", b"safe2"],
    ]
    assert fake.applied == {b"safe1": 1, b"safe2": 1}
    (failed,) = outcome.errors
    assert (failed.key, failed.index) == (b"server-time", 1)
    error = str(failed)
    assert error.startswith("row b'server-time': not re-sent")
    assert "server's timestamp (-1)" in error and "give every cell a timestamp" in error


def test_a_failed_call_does_not_resend_an_add(fake):
    table = _table()
    fake.answer = lambda call, index: Answer(
        error=grpc.StatusCode.UNAVAILABLE if index == 0 else None
    )
    add = bigtable_types_entry_with_add(b"counter")
    batch = _batch(table, [_row(b"safe")])
    batch = transport.Batch(batch.head, [*batch.entries, add], [b"safe", b"counter"])
    outcome = _sender(table, flow=False)(batch)
    assert fake.applied == {b"safe": 1}
    assert (
        outcome.errors
        and "add_to_cell" in str(outcome.errors[0])
        and "b'counter'" in str(outcome.errors[0])
        and (outcome.errors[0].key, outcome.errors[0].index) == (b"counter", 1)
    )


def bigtable_types_entry_with_add(key: bytes) -> bytes:
    from google.cloud.bigtable_v2.types import bigtable as bigtable_types

    entry = bigtable_types.MutateRowsRequest.Entry(
        row_key=key,
        mutations=[
            {"add_to_cell": {"family_name": "sum", "column_qualifier": {"raw_value": b"n"}}}
        ],
    )
    return wire.framed(bigtable_types.MutateRowsRequest.Entry.serialize(entry))


def test_direct_rows_with_server_timestamps_are_not_resent_by_the_client(fake):
    """DirectRows go through the client's own Table.mutate_rows, which retries idempotent
    entries only: the job fails naming the server-timestamp row, the other lands once."""
    table_id = f"T{uuid.uuid4().hex[:8]}"
    fake.answer = lambda call, index: Answer(
        codes={0: UNAVAILABLE, 1: UNAVAILABLE} if index == 0 else {}
    )
    timed, untimed = DirectRow(b"timed"), DirectRow(b"untimed")
    import datetime as dt

    timed.set_cell("f", b"q", b"v", timestamp=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc))
    untimed.set_cell("f", b"q", b"v")  # the server's time: not safe to resend
    with (
        pytest.raises(Exception, match=r"row b'untimed': code 14") as failure,
        beam.Pipeline() as p,
    ):
        _ = (
            p
            | beam.Create([timed, untimed])
            | BoundedWriteToBigTable("p", "i", table_id, flow_control=False, timeout_s=20)
        )
    assert "timed'" not in str(failure.value).replace("untimed'", "")
    assert fake.applied == {b"timed": 1}


# -- the whole job ------------------------------------------------------------------------------


def test_a_throttled_job_lands_every_row_exactly_once_within_the_cap(fake):
    table_id = f"T{uuid.uuid4().hex[:8]}"
    keys = [b"row%04d" % i for i in range(400)]

    def answer(call, index):
        if index % 4 == 1:
            return Answer(error=grpc.StatusCode.RESOURCE_EXHAUSTED, delay_s=0.01)
        codes = {0: RESOURCE_EXHAUSTED, 3: UNAVAILABLE} if index % 4 == 2 else {}
        return Answer(codes=codes, factor=1.3, period_s=1, delay_s=0.02)

    fake.answer = answer
    flow = transport.FlowControl(max_requests=2, max_bytes=10**6)
    with beam.Pipeline() as p:
        _ = (
            p
            | beam.Create([_row(k, table=table_id) for k in keys])
            | BoundedWriteToBigTable("p", "i", table_id, flush_count=25, flow_control=flow)
        )
    assert fake.applied == dict.fromkeys(keys, 1)
    assert fake.peak_in_flight <= 2
    assert all(transport.FEATURES_HEADER in c.metadata for c in fake.calls)
    limiter, in_flight = flow.shared(f"projects/p/instances/i/tables/{table_id}")
    assert limiter.enabled and in_flight.peak_requests <= 2


@pytest.mark.parametrize(
    "setting, expected",
    [(False, False), (True, True), (transport.FlowControl(max_requests=2), True)],
)
def test_the_connector_uses_flow_control_only_when_asked(setting, expected):
    """Whether a run wants it is the job's decision (--flow_control, below), made once; the
    writer takes the answer, on whatever runner."""
    from apache_beam.transforms.display import DisplayData

    write = BoundedWriteToBigTable("p", "i", "T", flow_control=setting)
    items = {i.key: i.value for i in DisplayData.create_from(write._fn).items}
    assert items["flowControl"] is expected


@pytest.mark.parametrize(
    "flag, runner, expected",
    [
        ("on", None, True),
        ("off", "DataflowRunner", False),
        ("auto", None, False),
        ("auto", "DataflowRunner", True),
    ],
)
def test_the_job_flag_is_resolved_once_and_reaches_the_write(flag, runner, expected):
    from apache_beam.transforms.display import DisplayData

    from pipelines import common, server_metrics

    argv = [f"--flow_control={flag}", "--input=gs://b/in.jsonl", "--dead_letter=gs://b/dead"]
    argv += ["--bigtable_instance=i", "--project=p", *([f"--runner={runner}"] if runner else [])]
    options = PipelineOptions(argv)
    assert options.view_as(common.BigtableOptions).flow_control == flag
    config = common.job_config(options, server_metrics.JOB)
    assert config.flow_control is expected
    pipeline = beam.Pipeline()
    common.ingest(pipeline, config)

    def nodes(node):
        yield node
        for part in node.parts:
            yield from nodes(part)

    writers = [
        n.transform
        for n in nodes(pipeline.transforms_stack[0])
        if isinstance(n.transform, BoundedWriteToBigTable)
    ]
    assert writers
    for writer in writers:
        items = {i.key: i.value for i in DisplayData.create_from(writer._fn).items}
        assert items["flowControl"] is expected


@pytest.mark.parametrize(
    "flag, subscription, expected",
    [("auto", None, False), ("auto", "projects/p/subscriptions/s", True), ("on", None, True)],
)
def test_collapse_latest_is_resolved_with_the_input(flag, subscription, expected):
    from pipelines import common, server_metrics

    argv = [f"--collapse_latest={flag}", "--dead_letter_topic=t", "--bigtable_instance=i"]
    argv += [f"--input_subscription={subscription}" if subscription else "--input=gs://b/x"]
    options = PipelineOptions([*argv, "--project=p"])
    assert common.job_config(options, server_metrics.JOB).collapse_latest is expected


def test_a_mistyped_flow_control_setting_fails_loudly():
    with pytest.raises(TypeError, match="expected a FlowControl, True or False"):
        BoundedWriteToBigTable("p", "i", "T", flow_control="yes")


# -- a drop-in for WriteToBigTable: arguments, elements, metrics by name (on the emulator) ------


def test_the_constructor_takes_write_to_bigtables_arguments():
    import inspect

    from apache_beam.io.gcp.bigtableio import WriteToBigTable

    ours = inspect.signature(BoundedWriteToBigTable).parameters
    for name, param in inspect.signature(WriteToBigTable).parameters.items():
        assert name in ours, name
        assert (ours[name].kind, ours[name].default) == (param.kind, param.default), name


def test_beams_sink_metrics_and_display_data_by_name(target):
    """ "Written Row" in Beam's sink namespace, the sink lineage, the display data keys and
    labels of Beam's sink; our status counters; DirectRows and RowMutations both land."""
    import datetime as dt

    from apache_beam.io.gcp import bigtableio
    from apache_beam.metrics import Metrics
    from apache_beam.metrics.metric import Lineage, MetricsFilter
    from apache_beam.transforms.display import DisplayData

    from btts import admin
    from btts.query import engine
    from transforms.bigtable import write
    from transforms.table_model import Family, KeyRecipe, Segment, TableDecl

    decl = TableDecl("DROPIN", (Family("f"),), KeyRecipe((Segment("text", "k"),)), "TS-COLS")
    with admin.Admin(target) as api:
        api.ensure(decl)
    rows = [
        RowMutation("DROPIN", b"r%02d" % i, (Cell("f", b"q", b"v%d" % i, 5_000),))
        for i in range(30)
    ]
    direct = DirectRow(b"direct")
    direct.set_cell("f", b"q", b"dv", timestamp=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc))
    p = beam.Pipeline()
    _ = (
        p
        | beam.Create([*rows, direct])
        | BoundedWriteToBigTable(target.project, target.instance, "DROPIN", flush_count=7)
    )
    result = p.run()
    result.wait_until_finish()
    stored = {r.key: r.latest()[("f", b"q")] for r in engine.read_rows(target, "DROPIN")}
    assert stored == {**{r.key: r.cells[0].value for r in rows}, b"direct": b"dv"}

    metrics = result.metrics()
    (written,) = metrics.query(MetricsFilter().with_name("Written Row"))["counters"]
    assert written.key.metric.namespace == Metrics.get_namespace(bigtableio._BigTableWriteFn)
    assert written.committed == 31
    ok = metrics.query(MetricsFilter().with_namespace(write.REQUESTS_NAMESPACE).with_name("ok"))[
        "counters"
    ]
    assert sum(c.committed for c in ok) == 31
    sinks = Lineage.query(metrics, Lineage.SINK)
    assert any(
        target.project in s and target.instance in s and "DROPIN" in s and s.startswith("bigtable")
        for s in sinks
    ), sinks

    ids = (target.project, target.instance, "DROPIN")
    ours = {
        i.key: (i.value, i.label)
        for i in DisplayData.create_from(
            BoundedWriteToBigTable(*ids, flush_count=7, max_row_bytes=10)._fn
        ).items
    }
    beams = {
        i.key: (i.value, i.label)
        for i in DisplayData.create_from(bigtableio._BigTableWriteFn(*ids, 7, 10)).items
    }
    assert beams and all(ours[key] == value for key, value in beams.items())
