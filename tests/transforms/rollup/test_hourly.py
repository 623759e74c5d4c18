"""The hourly rollup: exact sums, on-time and late panes, too-late points routed (TestStream)."""

from __future__ import annotations

from decimal import Decimal

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.test_stream import TestStream
from apache_beam.testing.util import assert_that, equal_to
from apache_beam.utils.timestamp import Timestamp

from transforms.errors import InvalidEvent
from transforms.mutations import AddCell, Cell, RowMutation
from transforms.rollup import core
from transforms.rollup import hourly as rollup

H0 = 1426532400000  # 2015-03-16T19:00:00Z
MIN = 60_000


def test_scale_is_exact_for_decimal_text():
    assert core.scale("0.02") == 20_000
    assert core.scale("253453634") == 253_453_634_000_000
    assert core.scale("-1.5") == -1_500_000
    assert core.scale("0.0000005") == 0  # half-even
    assert core.scale("0.0000015") == 2
    assert core.unscale(20_000) == Decimal("0.02")
    with pytest.raises(InvalidEvent, match="int64"):
        core.scale("1e20")


def _key(entity: str, start: int) -> bytes:
    return f"{entity}#{start}".encode()


def _point(ts: int, value: str, entity: str = "h1", metric: bytes = b"CPU"):
    return core.point(entity, metric, ts, value)


def _row(start: int, total: str, count: int, entity: str = "h1") -> RowMutation:
    ts = start * 1000
    return RowMutation(
        "ROLL",
        _key(entity, start),
        (AddCell("sum", b"CPU", core.scale(total), ts), AddCell("count", b"CPU", count, ts)),
    )


def _streaming() -> PipelineOptions:
    options = PipelineOptions()
    options.view_as(StandardOptions).streaming = True
    return options


def _at(ms: int) -> Timestamp:
    return Timestamp(micros=ms * 1000)


def test_on_time_pane_then_late_delta_then_too_late():
    stream = (
        TestStream()
        .advance_watermark_to(_at(H0))
        .add_elements([_point(H0 + 1 * MIN, "0.02"), _point(H0 + 2 * MIN, "0.05")])
        .add_elements([_point(H0 + 61 * MIN, "1.00")])  # next hour
        .advance_watermark_to(_at(H0 + 60 * MIN))  # hour 0 closes: on-time pane
        .add_elements([_point(H0 + 3 * MIN, "0.10")])  # late, within 30 min: its own delta
        .advance_watermark_to(_at(H0 + 95 * MIN))  # hour 0 lateness over
        .add_elements([_point(H0 + 4 * MIN, "9.99")])  # too late: routed, not lost
        # The DirectRunner does not hold the output watermark for a timer re-armed inside a
        # timer callback when the input jumps straight to +inf; a real source advances.
        .advance_watermark_to(_at(H0 + 200 * MIN))
        .advance_watermark_to_infinity()
    )
    with TestPipeline(options=_streaming()) as p:
        out = p | stream | rollup.HourlyRollup("ROLL", _key, allowed_lateness_ms=30 * MIN)
        assert_that(
            out["rows"],
            equal_to(
                [
                    _row(H0, "0.07", 2),
                    _row(H0, "0.10", 1),
                    _row(H0 + 60 * MIN, "1.00", 1),
                ]
            ),
        )
        assert_that(
            out[rollup.TOO_LATE]
            | beam.Map(lambda r: (r["pipeline"], '"value": "9.99"' in r["raw"])),
            equal_to([("rollup:ROLL", True)]),
            label="TooLate",
        )


def test_entities_and_metrics_are_kept_apart():
    points = [
        _point(H0 + MIN, "1", entity="a"),
        _point(H0 + MIN, "2", entity="b"),
        _point(H0 + 2 * MIN, "3", entity="a", metric=b"MEM"),
        _point(H0 + 3 * MIN, "4", entity="a"),
    ]
    stream = (
        TestStream()
        .add_elements(points)
        .advance_watermark_to(_at(H0 + 120 * MIN))
        .advance_watermark_to_infinity()
    )
    with TestPipeline(options=_streaming()) as p:
        out = p | stream | rollup.HourlyRollup("ROLL", _key, allowed_lateness_ms=0)
        ts = H0 * 1000
        assert_that(
            out["rows"],
            equal_to(
                [
                    RowMutation(
                        "ROLL",
                        _key("a", H0),
                        (
                            AddCell("sum", b"CPU", 5_000_000, ts),
                            AddCell("count", b"CPU", 2, ts),
                            AddCell("sum", b"MEM", 3_000_000, ts),
                            AddCell("count", b"MEM", 1, ts),
                        ),
                    ),
                    _row(H0, "2", 1, entity="b"),
                ]
            ),
        )


def test_batch_input_is_one_pane_per_window():
    points = [_point(H0 + i * MIN, "0.5") for i in range(0, 180, 7)]
    with TestPipeline() as p:
        out = p | beam.Create(points) | rollup.HourlyRollup("ROLL", _key, allowed_lateness_ms=0)
        counts = out["rows"] | beam.Map(lambda r: (r.key, r.cells[1].amount))
        assert_that(
            counts,
            equal_to(
                [
                    (_key("h1", H0), 9),
                    (_key("h1", H0 + 60 * MIN), 9),
                    (_key("h1", H0 + 120 * MIN), 8),
                ]
            ),
        )


def _exact(start: int, total: str, count: int, pane: int = 0, entity: str = "h1") -> RowMutation:
    ts = (start + pane) * 1000
    return RowMutation(
        "ROLL",
        _key(entity, start),
        (
            Cell("exact_sum", b"CPU", core.scale(total).to_bytes(8, "big", signed=True), ts),
            Cell("exact_count", b"CPU", count.to_bytes(8, "big", signed=True), ts),
        ),
    )


def test_exact_mode_writes_running_totals_late_points_included():
    """The on-time pane writes the window's totals; each late point rewrites the updated totals
    (SetCell, a newer pane); a too-late point changes nothing and is routed."""
    stream = (
        TestStream()
        .advance_watermark_to(_at(H0))
        .add_elements([_point(H0 + 1 * MIN, "0.02"), _point(H0 + 2 * MIN, "0.05")])
        .add_elements([_point(H0 + 61 * MIN, "1.00")])
        .advance_watermark_to(_at(H0 + 60 * MIN))  # hour 0 closes: on-time pane
        .add_elements([_point(H0 + 3 * MIN, "0.10")])  # late: totals 0.17 / 3, pane 1
        .add_elements([_point(H0 + 4 * MIN, "-1.5")])  # late: totals -1.33 / 4, pane 2
        .advance_watermark_to(_at(H0 + 95 * MIN))  # hour 0 lateness over
        .add_elements([_point(H0 + 5 * MIN, "9.99")])  # too late
        .advance_watermark_to(_at(H0 + 200 * MIN))
        .advance_watermark_to_infinity()
    )
    with TestPipeline(options=_streaming()) as p:
        out = (
            p
            | stream
            | rollup.HourlyRollup("ROLL", _key, allowed_lateness_ms=30 * MIN, mode="exact")
        )
        assert_that(
            out["rows"],
            equal_to(
                [
                    _exact(H0, "0.07", 2),
                    _exact(H0, "0.17", 3, pane=1),
                    _exact(H0, "-1.33", 4, pane=2),
                    _exact(H0 + 60 * MIN, "1.00", 1),
                ]
            ),
        )
        assert_that(
            out[rollup.TOO_LATE]
            | beam.Map(lambda r: (r["pipeline"], '"value": "9.99"' in r["raw"])),
            equal_to([("rollup:ROLL", True)]),
            label="TooLate",
        )


def test_exact_mode_batch_is_one_total_per_window():
    points = [_point(H0 + i * MIN, "0.5") for i in range(0, 180, 7)]
    with TestPipeline() as p:
        out = (
            p
            | beam.Create(points)
            | rollup.HourlyRollup("ROLL", _key, allowed_lateness_ms=0, mode="exact")
        )
        assert_that(
            out["rows"],
            equal_to(
                [
                    _exact(H0, "4.5", 9),
                    _exact(H0 + 60 * MIN, "4.5", 9),
                    _exact(H0 + 120 * MIN, "4.0", 8),
                ]
            ),
        )


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="rollup mode"):
        rollup.HourlyRollup("ROLL", _key, allowed_lateness_ms=0, mode="twice")
