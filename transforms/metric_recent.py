"""Server metrics → METRIC_RECENT, the latest-first copy (SPEC §3 rule 6). Pure: no I/O.

The same event and cells as METRIC (:mod:`transforms.server_metrics` parses and validates it),
keyed ``HOSTNAME#<Long.MAX_VALUE - ts, 19 digits>`` so that a host's newest reading is its first
row: ``server1.bbb.com#9223370610319163762`` for ``2015-03-16T19:53:32.045Z``.
"""

from __future__ import annotations

from transforms import server_metrics, timefmt
from transforms.declarations.queries import METRIC_RECENT
from transforms.mutations import Cell, RowMutation

TABLES = (METRIC_RECENT.name,)
_KEY = METRIC_RECENT.key.build


def rows(event: server_metrics.MetricEvent) -> list[RowMutation]:
    """The event's latest-first row: same cells as its METRIC row, reversed-time key."""
    ts_us = timefmt.micros(event.ts_ms)
    cells = tuple(Cell(server_metrics.FAMILY, q, v, ts_us) for q, v in event.metrics)
    key = _KEY({"hostname": event.hostname, "ts": event.ts_ms})
    return [RowMutation(METRIC_RECENT.name, key, cells)]


def build(record: dict) -> list[RowMutation]:
    """A pipeline builder: a server-metrics record → its METRIC_RECENT row, or InvalidEvent."""
    return rows(server_metrics.parse(record))
