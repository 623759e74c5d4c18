"""The nightly job's option classes and its :class:`Plan`: what a run does (source, days, layout,
retention, verification), decided and checked before anything moves."""

from __future__ import annotations

import dataclasses
import datetime as dt

from apache_beam.options.pipeline_options import PipelineOptions

from btts import config, errors
from pipelines import common
from pipelines.flags import nightly as job_flags
from pipelines.nightly import dates
from pipelines.nightly.dates import (
    daily_table,
    day_label,
    parse_day,
    retention_cutoff,
    run_days,
    single_table,
)
from transforms.schema import builtin_tables
from transforms.table_model import TableDecl

__all__ = ["OPTION_CLASSES", "Plan", "make_plan"]

LAYOUTS = job_flags.LAYOUTS


# What run() parses and --help shows.
OPTION_CLASSES = common.option_classes("nightly")


@dataclasses.dataclass(frozen=True)
class Plan:
    target: config.Target
    source: TableDecl
    days: tuple[str, ...]
    layout: str
    keep_days: int | None
    verify: bool
    check_source: bool
    runner: common.Runner  # where it runs, decided once (as every job's JobConfig)
    write_timeout_s: float = 300.0
    flow_control: bool = False  # --flow_control, as every job resolves it

    @property
    def run_day(self) -> dt.date:
        return parse_day(max(self.days))

    @property
    def destinations(self) -> tuple[str, ...]:
        if self.layout == "single_table":
            return (single_table(self.source.name),)
        return tuple(daily_table(self.source.name, d) for d in self.days)

    def destination_decls(self) -> list[TableDecl]:
        if self.layout == "single_table":
            return [builtin_tables.get(single_table(self.source.name))]
        return [
            dataclasses.replace(
                self.source,
                name=name,
                doc=f"One day of {self.source.name}, copied by the nightly job.",
            )
            for name in self.destinations
        ]

    def where(self, day: str) -> str:
        """Where the copy of ``day`` lives, for messages."""
        if self.layout == "single_table":
            return f"{single_table(self.source.name)} (prefix {day}#)"
        return daily_table(self.source.name, day)


def _source_decl(name: str) -> TableDecl:
    try:
        decl = builtin_tables.get(name)
    except KeyError as err:
        raise errors.ConfigError(f"--source_table: {err.args[0]}") from None
    last = decl.key.segments[-1]
    if decl.key.delimiter != "#" or last.kind != "time" or last.arg != "yyyymmdd":
        raise errors.ConfigError(
            f"--source_table {name}: its key ({decl.key.describe()}) does not end with "
            "#YYYYMMDD, so its rows cannot be split by day"
        )
    return decl


def make_plan(options: PipelineOptions) -> Plan:
    """Validate the flags into a :class:`Plan` (raises :class:`errors.ConfigError`)."""
    own = options.view_as(common.options_class(job_flags.GROUP))
    tz = common.timezone(options)
    source = _source_decl(own.source_table)
    days = run_days(own.date, own.dates, dates.today(tz))
    if own.keep_days is not None:
        retention_cutoff(days[-1], own.keep_days)
    runner = common.runner_of(options)
    target = common.resolve_target(options, runner)  # after the flags: a bad day is named first
    plan = Plan(
        target=target,
        source=source,
        days=tuple(day_label(d) for d in days),
        layout=own.layout,
        keep_days=own.keep_days,
        verify=bool(own.verify),
        check_source=not options.view_as(common.BigtableOptions).skip_preflight,
        runner=runner,
        write_timeout_s=options.view_as(common.BigtableOptions).write_timeout_seconds,
        flow_control=common.flow_control(options, runner),
    )
    if plan.layout == "single_table":
        try:
            decl = plan.destination_decls()[0]
        except KeyError:
            raise errors.ConfigError(
                f"--layout single_table needs a declared table {single_table(source.name)}"
            ) from None
        if [f.name for f in decl.families] != [f.name for f in source.families]:
            raise errors.ConfigError(f"{decl.name} must have the families of {source.name}")
    return plan
