"""Server metrics (SPEC §5.2): one JSON event → a METRIC row and a CURRENT_METRIC row.

``{"hostname": "server1.bbb.com", "timestamp": "2015-03-16T19:53:32.045Z",
"metrics": {"cpu/cpu1_usr": 0.02}}`` → ``METRIC`` row ``server1.bbb.com#1426535612045`` and
``CURRENT_METRIC`` row ``server1.bbb.com``, both with ``METRIC:CPU/CPU1_USR = 0.02`` at the event
time. Both rows share one tuple of cells: they are the same facts, keyed for two queries.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from transforms import events, timefmt
from transforms import rollup_core as rollup
from transforms.declarations.server_metrics import CURRENT_METRIC, METRIC, METRIC_HOURLY
from transforms.errors import InvalidEvent
from transforms.events import Num
from transforms.mutations import RowMutation, cells_at

FIELDS = ("hostname", "timestamp", "metrics")
FAMILY = "METRIC"
MAX_HOSTNAME = 253  # DNS limit
MAX_METRICS = 10_000
MAX_QUALIFIER_BYTES = 16 * 1024
_new = tuple.__new__  # NamedTuple construction without its Python-level __new__ (hot path)
_METRIC_KEY = METRIC.key.build
_CURRENT_KEY = CURRENT_METRIC.key.build


@lru_cache(maxsize=65536)  # the latest-value row of a host: the same key for every reading
def _current_key(hostname: str) -> bytes:
    return _CURRENT_KEY({"hostname": hostname})


class MetricEvent(NamedTuple):
    hostname: str
    ts_ms: int
    metrics: tuple[tuple[bytes, bytes], ...]  # (qualifier, value text), in source order


@lru_cache(maxsize=65536)  # a fleet reports the same few hundred names over and over
def qualifier_for(name: object) -> bytes:
    """Metric names become upper-case qualifiers. Whitespace and control characters are
    refused rather than stripped: ``cpu usr`` and ``cpuusr`` must not merge silently."""
    if type(name) is not str or not name:
        raise InvalidEvent(f"metric name {name!r}: expected a non-empty string")
    if not name.isprintable() or any(ch.isspace() for ch in name):
        raise InvalidEvent(f"metric name {name[:80]!r}: contains whitespace or a control character")
    qualifier = name.upper().encode("utf-8")
    if len(qualifier) > MAX_QUALIFIER_BYTES:
        raise InvalidEvent(f"metric name {name[:40]!r}…: over Bigtable's 16 KiB qualifier limit")
    return qualifier


def _check_qualifiers(names: tuple) -> tuple[bytes, ...]:
    qualifiers = tuple([qualifier_for(name) for name in names])
    if len(set(qualifiers)) != len(qualifiers):
        seen: dict[bytes, str] = {}
        for name, qualifier in zip(names, qualifiers, strict=True):
            if qualifier in seen:
                raise InvalidEvent(
                    f"metric name {name!r}: collides with {seen[qualifier]!r} once upper-cased"
                )
            seen[qualifier] = name
    return qualifiers


# A host reports the same names in the same order every time: one lookup per event, not one
# per metric plus a collision check.
_cached_qualifiers = lru_cache(maxsize=4096)(_check_qualifiers)
_CACHED_NAMES = 64  # longer name lists are checked without being kept


def _encoded_values(metrics: dict) -> list[bytes]:
    values = []
    append = values.append
    for value in metrics.values():
        if type(value) is not Num:
            break
        append(value.encode("ascii"))
    else:
        return values  # every value a JSON number: the common case
    values = []
    for name, value in metrics.items():
        if type(value) is not Num:
            value = events.as_number(value)
            if type(value) is not Num:
                raise InvalidEvent(
                    f"metric {name!r}: expected a number, got {events.describe(value)}"
                )
        values.append(value.encode("ascii"))
    return values


def _validated(obj: dict) -> tuple[str, int, tuple[bytes, ...], list[bytes]]:
    """hostname, event time, qualifiers and encoded values, in source order."""
    events.check_fields(obj, FIELDS)
    hostname = events.text_field(obj, "hostname", MAX_HOSTNAME)
    ts_ms = timefmt.parse_event_time(obj["timestamp"])
    metrics = obj["metrics"]
    if type(metrics) is not dict:
        raise InvalidEvent(f"field 'metrics': expected an object, got {events.describe(metrics)}")
    if not metrics:
        raise InvalidEvent("field 'metrics': empty; an event needs at least one metric")
    if len(metrics) > MAX_METRICS:
        raise InvalidEvent(f"field 'metrics': {len(metrics)} metrics, more than {MAX_METRICS}")
    names = tuple(metrics)
    if len(names) <= _CACHED_NAMES:
        qualifiers = _cached_qualifiers(names)
    else:
        qualifiers = _check_qualifiers(names)
    return hostname, ts_ms, qualifiers, _encoded_values(metrics)


def parse(obj: dict) -> MetricEvent:
    hostname, ts_ms, qualifiers, values = _validated(obj)
    return MetricEvent(hostname, ts_ms, tuple(zip(qualifiers, values, strict=True)))


def _rows(hostname: str, ts_ms: int, pairs) -> list[RowMutation]:
    cells = cells_at(FAMILY, pairs, timefmt.micros(ts_ms))
    return [
        _new(RowMutation, ("METRIC", _METRIC_KEY({"hostname": hostname, "ts": ts_ms}), cells)),
        _new(RowMutation, ("CURRENT_METRIC", _current_key(hostname), cells)),
    ]


def rows(event: MetricEvent) -> list[RowMutation]:
    return _rows(event.hostname, event.ts_ms, event.metrics)


def build(record: dict) -> list[RowMutation]:
    """The pipeline's builder: record → rows for both tables, or :class:`InvalidEvent`.
    (:func:`parse` then :func:`rows`, without the intermediate event: the hot path.)"""
    hostname, ts_ms, qualifiers, values = _validated(record)
    return _rows(hostname, ts_ms, zip(qualifiers, values, strict=True))


def from_csv(record: dict) -> dict:
    """CSV is flat: ``hostname,timestamp,<metric>,<metric>…``; every other column is a metric."""
    metrics = {k: v for k, v in record.items() if k not in ("hostname", "timestamp")}
    out = {k: record[k] for k in ("hostname", "timestamp") if k in record}
    out["metrics"] = metrics
    return out


TABLES = ("METRIC", "CURRENT_METRIC")


def rollup_points(row: RowMutation) -> list[rollup.RollupPoint]:
    """A METRIC row's values as rollup points (entity = host)."""
    host = row.key.rsplit(b"#", 1)[0].decode("utf-8")
    return [
        rollup.point(host, c.qualifier, c.timestamp_us // 1000, c.value.decode("ascii"))
        for c in row.cells
    ]


def rollup_key(host: str, start_ms: int) -> bytes:
    return METRIC_HOURLY.key.build({"hostname": host, "hour": start_ms})


ROLLUP = rollup.RollupSpec("METRIC", "METRIC_HOURLY", rollup_points, rollup_key)
