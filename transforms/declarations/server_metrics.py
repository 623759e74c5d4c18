"""Server metrics tables (SPEC §5.2)."""

from __future__ import annotations

from transforms.schema import Family, declare, epoch_ms, text

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
