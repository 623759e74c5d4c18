"""Battery levels → BATTERY, BATTERY_SALTED or BATTERY_TS_FIRST (docs/patterns.md §5.4), batch from
files.

--battery_layout picks the table: ``promoted`` (default; ``BATTERY#USER#YYYYMMDDHHMMSSmmm``),
``salted`` (``BATTERY#<salt>#YYYYMMDDHHMMSSmmm``) or ``timestamp_first`` (the documented
anti-pattern, kept for the schema advisor's demo). Keys use UTC times.

The salt bucket count belongs to the table declaration: changing it after data exists splits
rows of one time between old and new buckets and reads over the new count miss the old ones.
--salt_buckets must therefore equal the count a declared salted table holds (3 for
BATTERY_SALTED); another count needs its own declared table.

    python -m pipelines.battery --input 'battery/*.jsonl' --battery_layout salted --create_tables
"""

from __future__ import annotations

import argparse

from apache_beam.options.pipeline_options import PipelineOptions

from btts import errors
from pipelines import common
from transforms import schema as schema_lib

__all__ = ["JOB", "OPTION_CLASSES", "build", "run"]

NAME = "battery"
SCHEMA = schema_lib.builtin(NAME)
# --battery_layout → table
LAYOUTS = {
    "promoted": "BATTERY",
    "salted": "BATTERY_SALTED",
    "timestamp_first": "BATTERY_TS_FIRST",
}


def salt_count(table: str) -> int | None:
    """The bucket count a table's declaration fixes for its salt segment (None: not salted)."""
    segments = SCHEMA.table(table).decl.key.segments
    return next((s.width for s in segments if s.kind == "salt"), None)


def salted_tables() -> dict[int, str]:
    """Salted battery tables by bucket count: the only counts a salted job may use."""
    out: dict[int, str] = {}
    for table in SCHEMA.table_names:
        count = salt_count(table)
        if count is not None:
            if count in out:
                raise ValueError(f"{out[count]} and {table} both salt into {count} buckets")
            out[count] = table
    return out


SALT_BUCKETS = salt_count(LAYOUTS["salted"])
# The default layout's job (field promotion); job_for() gives the one the flags choose.
JOB = common.builtin_job(NAME, __doc__, tables=(LAYOUTS["promoted"],))


class BatteryLayoutOptions(PipelineOptions):
    """The battery job's own flags (names prefixed: Beam registers each flag once)."""

    @classmethod
    def _add_argparse_args(cls, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("Battery layout")
        group.add_argument(
            "--battery_layout",
            default="promoted",
            choices=tuple(LAYOUTS),
            help="promoted (default): user before the time, table BATTERY; salted: a stable "
            "salt before the time, table BATTERY_SALTED; timestamp_first: the hotspotting "
            "anti-pattern, table BATTERY_TS_FIRST (for demonstrations only).",
        )
        group.add_argument(
            "--salt_buckets",
            type=int,
            help="Salt bucket count of --battery_layout=salted. It must equal the count the "
            f"salted table declares ({SALT_BUCKETS} for BATTERY_SALTED, the default): changing "
            "it after data exists loses rows from reads, so another count needs another "
            "declared table.",
        )


# What run() parses and --help shows.
OPTION_CLASSES = (common.FileInputOptions, common.BigtableOptions, BatteryLayoutOptions)


def job_for(options: PipelineOptions) -> common.JobSpec:
    """The job for the chosen layout; a --salt_buckets no declaration holds is refused."""
    opts = options.view_as(BatteryLayoutOptions)
    layout, buckets = opts.battery_layout, opts.salt_buckets  # argparse checked the layout
    if layout != "salted" and buckets is not None:
        raise errors.ConfigError(
            f"--salt_buckets only applies to --battery_layout=salted (got layout {layout})"
        )
    if layout == "promoted":
        return JOB
    table = LAYOUTS[layout]
    if layout == "salted":
        salted = salted_tables()
        if buckets is None:
            buckets = SALT_BUCKETS
        if buckets not in salted:
            declared = ", ".join(f"{t} ({n} buckets)" for n, t in sorted(salted.items()))
            raise errors.ConfigError(
                f"--salt_buckets={buckets} matches no declared salted battery table "
                f"(declared: {declared}). The bucket count is part of a table's declaration: "
                "changing it after data exists puts new rows of a time in other buckets than "
                "the old ones and reads fanning out over the new count miss rows. To use "
                f"{buckets} buckets, declare a new table in transforms/declarations/battery.yaml: "
                f"a copy of BATTERY_SALTED named BATTERY_SALTED_{buckets} whose salt segment "
                f"says 'buckets: {buckets}', and write to it."
            )
        table = salted[buckets]
    return common.builtin_job(NAME, __doc__, tables=(table,))


ENTRY = common.IngestEntry(NAME, __doc__, OPTION_CLASSES, job_for)
build, run = ENTRY.build, ENTRY.run

if __name__ == "__main__":
    ENTRY.main()
