"""The server-metrics builder (docs/patterns.md §5.2): exact rows from one event, precise
refusals."""

from __future__ import annotations

import json

import pytest

from tests.support.jobs import compiled
from transforms.errors import InvalidEvent
from transforms.mutations import Cell, RowMutation
from transforms.text import events

LINE = (
    '{"hostname": "server1.bbb.com", "timestamp": "2015-03-16T19:53:32.045Z", '
    '"metrics": {"cpu/cpu1_usr": 0.02, "cpu/cpu1_nice": 0.00, "io/blk_read": 253453634, '
    '"io/blk_wrtn": 657365234}}'
)


def build(line: str | bytes):
    return compiled("server_metrics")(events.parse_json_object(line))


def test_one_event_fans_out_to_both_tables_with_the_same_cells():
    ts = 1426535612045000
    cells = (
        Cell("METRIC", b"CPU/CPU1_USR", b"0.02", ts),
        Cell("METRIC", b"CPU/CPU1_NICE", b"0.00", ts),
        Cell("METRIC", b"IO/BLK_READ", b"253453634", ts),
        Cell("METRIC", b"IO/BLK_WRTN", b"657365234", ts),
    )
    assert build(LINE) == [
        RowMutation("METRIC", b"server1.bbb.com#1426535612045", cells),
        RowMutation("CURRENT_METRIC", b"server1.bbb.com", cells),
    ]


def test_key_time_is_13_digits_even_before_2001():
    line = '{"hostname": "h", "timestamp": "1999-01-01T00:00:00Z", "metrics": {"a": 1}}'
    assert build(line)[0].key == b"h#0915148800000"


def _event(**changes) -> str:
    event = {"hostname": "web1", "timestamp": "2015-03-16T19:53:32.045Z", "metrics": {"cpu": 1}}
    event.update(changes)
    return json.dumps({k: v for k, v in event.items() if v is not ...})


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (_event(hostname=...), "missing field.*hostname"),
        (_event(extra=1), "unexpected field.*extra"),
        (_event(hostname=""), "'hostname': empty"),
        (_event(hostname=7), "'hostname': expected a string, got number"),
        (_event(hostname="web#1"), "'hostname': contains the key delimiter"),
        (_event(hostname="web\u00001"), "'hostname': contains a control"),
        (_event(hostname="h" * 254), "longer than 253"),
        (_event(timestamp="2015-03-16 19:53"), "no UTC offset"),
        (_event(timestamp=None), "'timestamp'"),
        (_event(metrics=[1]), "'metrics': expected an object, got array"),
        (_event(metrics={}), "'metrics': empty"),
        (_event(metrics={"cpu usr": 1}), "whitespace"),
        (_event(metrics={"": 1}), "non-empty"),
        (_event(metrics={"cpu": "1"}), "expected a number, got string"),
        (_event(metrics={"cpu": True}), "expected a number, got boolean"),
        (_event(metrics={"cpu": None}), "expected a number, got null"),
        (_event(metrics={"cpu": 1, "CPU": 2}), "collides"),
        (_event(metrics={"q" * 20000: 1}), "16 KiB"),
    ],
)
def test_bad_events_are_refused_with_a_specific_reason(line, reason):
    with pytest.raises(InvalidEvent, match=reason):
        build(line)


def test_csv_record_becomes_the_same_rows():
    header = events.parse_csv_header("hostname,timestamp,cpu/cpu1_usr,cpu/cpu1_nice")
    record = events.parse_csv_line("server1.bbb.com,2015-03-16T19:53:32.045Z,0.02,0.00", header)
    rows = compiled("server_metrics")(compiled("server_metrics").csv_adapter(record))
    assert rows[0].key == b"server1.bbb.com#1426535612045"
    assert [(c.qualifier, c.value) for c in rows[0].cells] == [
        (b"CPU/CPU1_USR", b"0.02"),
        (b"CPU/CPU1_NICE", b"0.00"),
    ]
