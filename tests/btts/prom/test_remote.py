"""Remote write and read through ``btts serve --schema prometheus`` over HTTP on the emulator:
samples come back bit for bit (NaN payloads, the staleness marker, ±Inf) as SAMPLES and as
streamed XOR chunks; matchers of all four kinds select from the label index; a 2xx means
durable (a killed server loses nothing); bad requests are 4xx naming what is wrong and write
nothing; a storage failure is a 5xx (Prometheus retries it)."""

from __future__ import annotations

import pytest

from tests.support import prom
from tests.support.serving import Server

EQ, NEQ, RE, NRE = 0, 1, 2, 3
T0, SERIES, EARLY, UP_A, UP_B, REQS = (
    prom.T0,
    prom.SERIES,
    prom.EARLY,
    prom.UP_A,
    prom.UP_B,
    prom.REQS,
)
_expected, _read, _write, _tables = prom.expected, prom.read, prom.write, prom.create_tables


@pytest.fixture
def served(target):
    _tables(target)
    server = Server(target, "--schema", "prometheus")
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("streamed", [False, True], ids=["samples", "xor_chunks"])
def test_samples_come_back_bit_for_bit_and_matchers_select_from_the_index(served, streamed):
    status, _, body = _write(served, SERIES)
    assert status == 204, body
    end = T0 + 400 * 15_000
    want = _expected(SERIES)
    queries = [
        (T0, end, [(EQ, "__name__", "up")]),
        (T0, end, [(EQ, "__name__", "up"), (NEQ, "instance", "a:1")]),
        (T0, end, [(RE, "__name__", "up|http_.*"), (EQ, "job", "api")]),
        (T0, end, [(NRE, "__name__", "up"), (RE, "job", ".+")]),
        (T0 + 1000, T0 + 3000, [(EQ, "instance", "a:1")]),  # no name: the whole index
        (T0, end, [(EQ, "__name__", "nothing")]),
        (0, 5000, [(EQ, "__name__", "early")]),
    ]
    got = _read(served, queries, streamed)
    assert got[0] == {UP_A: want[UP_A], UP_B: want[UP_B]}
    assert got[1] == {UP_B: want[UP_B]}
    assert got[2] == {REQS: want[REQS]}
    assert got[3] == {REQS: want[REQS]}
    assert got[4] == {UP_A: want[UP_A][1:4]}  # start and end inclusive
    assert got[5] == {}
    assert got[6] == {EARLY: want[EARLY]}


def test_a_retried_write_changes_nothing_and_a_killed_server_loses_nothing(target):
    _tables(target)
    server = Server(target, "--schema", "prometheus")
    try:
        assert _write(server, SERIES)[0] == 204
        assert _write(server, SERIES)[0] == 204  # Prometheus resending after a lost answer
    finally:
        server.proc.kill()  # no graceful stop: what was acknowledged must already be stored
        server.proc.wait()
    again = Server(target, "--schema", "prometheus")
    try:
        got = _read(
            again,
            [
                (0, 5000, [(RE, "__name__", ".+")]),
                (T0, T0 + 400 * 15_000, [(RE, "__name__", ".+")]),
            ],
        )
        want = _expected(SERIES)
        assert got[0] == {EARLY: want.pop(EARLY)}
        assert got[1] == want
    finally:
        again.stop()


def _refusal(server, path, body) -> tuple[int, str]:
    status, _, text = prom.post(server.url + path, body)
    return status, text.decode()


def test_bad_requests_are_4xx_naming_what_is_wrong_and_write_nothing(served):
    url = "/api/v1/write"
    status, text = _refusal(served, url, b"plain bytes, not snappy at all")
    assert status == 400 and "snappy" in text
    status, text = _refusal(served, url, prom.snappy(b"\xff\xff\xff not protobuf"))
    assert status == 400 and "prometheus.WriteRequest protobuf" in text
    huge = prom.snappy(b"\0" * (33 << 20))  # over the front's body limit compressed
    status, text = _refusal(served, url, huge)
    assert status == 413 and "larger than" in text
    bomb = b"\x80\x80\x80\x20" + b"\0" * 100  # snappy's header says 64 MiB decoded
    status, text = _refusal(served, url, bomb)
    assert status == 413 and "67,108,864 bytes, over the limit" in text
    before_1970 = {UP_A: [(T0, 1.0)], UP_B: [(-5, 1.0)]}
    status, text = _refusal(served, url, prom.write_request(before_1970))
    assert status == 400 and "nothing of this request was written" in text and "-5" in text
    nameless = {(("job", "x"),): [(T0, 1.0)]}
    status, text = _refusal(served, url, prom.write_request(nameless))
    assert status == 400 and "__name__" in text
    assert _read(served, [(T0 - 10, T0 + 10, [(RE, "__name__", ".+")])]) == [{}]

    read = "/api/v1/read"
    lookahead = prom.read_request([(T0, T0 + 1, [(RE, "job", "(?=x)y")])])
    status, text = _refusal(served, read, lookahead)
    assert status == 400 and "RE2" in text and "job=~" in text
    long_range = prom.read_request([(0, T0, [(EQ, "__name__", "up")])])
    status, text = _refusal(served, read, long_range)
    assert status == 413 and "budget" in text
    empty = prom.read_request([(T0, T0 + 1, [(RE, "job", ".*")])])
    status, text = _refusal(served, read, empty)
    assert status == 400 and "empty" in text


def test_a_write_bigtable_refuses_is_a_5xx_prometheus_retries(target):
    server = Server(target, "--schema", "prometheus")  # no tables: every row refused
    try:
        status, _, body = _write(server, SERIES)
        assert 500 <= status < 600, body
        assert b"nothing acknowledged" in body
    finally:
        server.stop()
