# The generic job. Its docstring, what its --help prints, is DESCRIPTION in
# pipelines/flags/generic.py, where --help reads it without importing Beam.

from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions

from btts import config, errors
from pipelines import common
from pipelines.flags import generic as job_flags

__doc__ = job_flags.DESCRIPTION
__all__ = ["OPTION_CLASSES", "build", "run"]

NAME = "generic"


# What run() parses and --help shows.
OPTION_CLASSES = common.option_classes(NAME)


def job_for(options: PipelineOptions) -> common.JobSpec:
    """Raises ConfigError (a UserError: one line naming what to change)."""
    own = options.view_as(common.options_class(job_flags.GROUP))
    if not own.schema:
        raise errors.ConfigError("pass --schema with the schema file describing the events")
    return common.schema_job(
        config.load_schema(own.schema, own.proto_module or ()),
        description=__doc__,
        tables=own.schema_table,
        tz=common.timezone(options),
        builtin=False,
    )


ENTRY = common.IngestEntry(NAME, __doc__, OPTION_CLASSES, job_for)
build, run = ENTRY.build, ENTRY.run

if __name__ == "__main__":
    ENTRY.main()
