"""Weather-balloon tables: the four column patterns of SPEC §4 for one event stream.

A balloon at a location reports pressure, temperature, humidity and altitude once a minute. The
same events land in whichever of the four tables the job's ``--balloon_pattern`` chooses.

GC rules. A time-bucket row is one balloon's week (UTC ISO week), so the versions of one of its
columns are that week's events: at one event a minute, at most 7 × 24 × 60 = 10,080. A family
keeping the newest 10,080 versions therefore keeps a whole bucket, whatever its age, and caps a
runaway sender's TB-CELL row at 4 × 10,080 cells (a few MB, far below the 100 MB guidance). No
``max_age``: Bigtable's GC would then delete whole past weeks, turning a storage rule into a
retention policy nobody asked for. Re-running the same input rewrites the same cells (same
timestamp), so re-runs add no versions. Single-timestamp rows hold one event, hence one version.
"""

from __future__ import annotations

from transforms.schema import Family, declare, text, time_label

# One event a minute for a UTC ISO week (which always has 7 × 24 hours).
MINUTES_PER_WEEK = 7 * 24 * 60

BALLOON_TB_COL = declare(
    "BALLOON_TB_COL",
    key=[text("location"), text("balloon_id"), text("metric"), time_label("ts", "week")],
    families=[
        Family(
            "m",
            max_versions=MINUTES_PER_WEEK,
            doc="qualifier = the measured value's text, value empty, cell ts = event time; a "
            "value seen twice in a week is two versions of one column, so keep a week of them",
        )
    ],
    pattern="TB-COL",
    doc="One row per balloon, metric and ISO week; every event adds a column named by its value. "
    "A metric's week is one row read; a range of weeks is one contiguous scan.",
    spec="4",
)

BALLOON_TB_CELL = declare(
    "BALLOON_TB_CELL",
    key=[text("location"), text("balloon_id"), time_label("ts", "week")],
    families=[
        Family(
            "measurements",
            max_versions=MINUTES_PER_WEEK,
            doc="pressure, temperature, humidity, altitude; every event adds a timestamped cell "
            "to each, so the family keeps one week of minutes (a whole bucket)",
        )
    ],
    pattern="TB-CELL",
    doc="One row per balloon and ISO week; every event adds a cell (timestamp = event time) to "
    "each of the four measurement columns.",
    spec="4",
)

BALLOON_TS_BLOB = declare(
    "BALLOON_TS_BLOB",
    key=[text("location"), text("balloon_id"), time_label("ts", "minute")],
    families=[
        Family(
            "m",
            max_versions=1,
            doc="measurements_blob: the event as a btts.balloon.BalloonMeasurement protobuf",
        )
    ],
    pattern="TS-BLOB",
    doc="One row per balloon and minute holding the whole event serialized as one protobuf "
    "cell, for queries that are uncertain or change.",
    spec="4",
)

BALLOON_TS_COLS = declare(
    "BALLOON_TS_COLS",
    key=[text("location"), text("balloon_id"), time_label("ts", "minute")],
    families=[
        Family("m", max_versions=1, doc="pressure, temperature, humidity, altitude; one cell each")
    ],
    pattern="TS-COLS",
    doc="One row per balloon and minute with one column per measurement (tall and narrow).",
    spec="4",
)
