"""Server metrics tables (SPEC §5.2)."""

from __future__ import annotations

from transforms.schema import Family, declare, epoch_ms, text, time_label

METRIC = declare(
    "METRIC",
    key=[text("hostname"), epoch_ms("ts")],
    families=[Family("METRIC", max_versions=1, doc="one cell per metric name (upper case)")],
    pattern="TS-COLS",
    doc="Server metrics, one row per host per reading: a host's metrics between two times is one "
    "contiguous range HOSTNAME#start..HOSTNAME#end.",
    spec="5.2",
)

CURRENT_METRIC = declare(
    "CURRENT_METRIC",
    key=[text("hostname")],
    families=[
        Family(
            "METRIC",
            max_versions=1,
            doc="one version: the newest event time wins whatever the arrival order",
        )
    ],
    pattern="LATEST",
    doc="Latest metrics per host, overwritten by every reading in one single-row mutation.",
    spec="5.2",
)

METRIC_HOURLY = declare(
    "METRIC_HOURLY",
    key=[text("hostname"), time_label("hour", "hour")],
    families=[
        Family("sum", aggregate="sum", doc="per metric: sum of the hour's values x 10^6"),
        Family("count", aggregate="sum", doc="per metric: number of values in the hour"),
    ],
    pattern="AGGREGATE",
    doc="Hourly sum and count per host and metric (AddToCell), fed by the rollup: a host's "
    "hours between two times is one range HOSTNAME#start-hour..HOSTNAME#end-hour.",
    spec="3.13",
)
