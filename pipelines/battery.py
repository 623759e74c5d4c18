# The battery job. Its docstring, what its --help prints, is DESCRIPTION in
# pipelines/flags/battery.py, where --help reads it without importing Beam.

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

from btts import errors
from pipelines import common
from pipelines.flags import battery as job_flags

__doc__ = job_flags.DESCRIPTION
__all__ = ["JOB", "OPTION_CLASSES", "build", "run"]

NAME = "battery"
LAYOUTS, salt_count = job_flags.LAYOUTS, job_flags.salt_count  # --battery_layout → table
SCHEMA = job_flags.schema()


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


# What run() parses and --help shows.
OPTION_CLASSES = common.option_classes(NAME)


def job_for(options: PipelineOptions) -> common.JobSpec:
    """The job for the chosen layout; a --salt_buckets no declaration holds is refused."""
    opts = options.view_as(common.options_class(job_flags.GROUP))
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
