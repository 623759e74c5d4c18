"""The nightly job's admin steps, run before any data moves: retention (drop expired daily
tables or day prefixes), the table-count guard, creating the destinations and clearing what a
re-run replaces."""

from __future__ import annotations

import datetime as dt
import logging

from google.cloud.bigtable.data import BigtableDataClient, ReadRowsQuery

from btts import admin, config, errors
from pipelines.nightly.dates import as_day, expired_tables, retention_cutoff, single_table
from pipelines.nightly.plan import Plan
from transforms import limits
from transforms.bigtable.filters import KEYS_ONLY

__all__ = ["prepare"]

# Refuse to create a table when the instance already holds this many (Bigtable's limit is 1,000).
TABLE_GUARD = 990
_LOG = logging.getLogger(__name__)


def _first_key(target: config.Target, table: str) -> bytes | None:
    query = ReadRowsQuery(limit=1, row_filter=KEYS_ONLY)
    with BigtableDataClient(project=target.project) as client:
        rows = client.get_table(target.instance, table).read_rows(query)
    return bytes(rows[0].row_key) if rows else None


def _drop_rows(api: admin.Admin, table: str, prefix: bytes | None = None) -> None:
    """Drop the rows of ``table`` under ``prefix``, or all of them when no prefix is given (an
    empty prefix is sent as one, never taken to mean the whole table)."""
    which = (
        {"row_key_prefix": prefix} if prefix is not None else {"delete_all_data_from_table": True}
    )
    api.api.drop_row_range(request={"name": api.target.table_path(table), **which})


def _expire_day_prefixes(api: admin.Admin, table: str, cutoff: dt.date) -> list[str]:
    """Single-table retention: drop the oldest day prefix while it is before ``cutoff``."""
    done: list[str] = []
    last = None
    while True:
        key = _first_key(api.target, table)
        if key is None:
            return done
        text = key[:8].decode("ascii", "replace")
        day = as_day(text) if key[8:9] == b"#" else None
        if day is None:
            _LOG.warning("%s: first key %r has no YYYYMMDD# prefix; retention stops", table, key)
            return done
        if day >= cutoff or text == last:
            return done
        _drop_rows(api, table, key[:9])
        done.append(f"dropped day {text} from {table} (older than --keep_days)")
        last = text


def prepare(plan: Plan) -> list[str]:
    """The admin steps, before any data moves. Returns what was done, one line each.
    Raises ConfigError (a UserError: one line naming what to change)."""
    done: list[str] = []
    with admin.Admin(plan.target) as api:
        if plan.check_source:
            problems = api.problems([plan.source])
            if problems:
                raise errors.ConfigError(
                    "; ".join(problems) + f" in {plan.target.describe()}: nothing to copy from"
                )
        existing = set(api.list_tables())
        if plan.keep_days is not None:
            cutoff = retention_cutoff(plan.run_day, plan.keep_days)
            if plan.layout == "single_table":
                if single_table(plan.source.name) in existing:
                    done += _expire_day_prefixes(api, single_table(plan.source.name), cutoff)
            else:
                for name in expired_tables(
                    existing, plan.source.name, plan.run_day, plan.keep_days, plan.destinations
                ):
                    api.drop(name)
                    existing.discard(name)
                    done.append(f"dropped table {name} (older than --keep_days {plan.keep_days})")
        missing = [name for name in plan.destinations if name not in existing]
        if missing and len(existing) + len(missing) > TABLE_GUARD:
            raise errors.ConfigError(
                f"{plan.target.describe()} holds {len(existing)} tables; creating "
                f"{', '.join(missing[:3])}{' …' if len(missing) > 3 else ''} would pass "
                f"{TABLE_GUARD}, this job's guard below Bigtable's "
                f"{limits.MAX_TABLES_PER_INSTANCE:,}-tables-per-instance limit. Refusing to "
                "create it: drop old daily tables (--keep_days N), or use --layout single_table."
            )
        for decl in plan.destination_decls():
            if decl.name in existing:
                if plan.layout == "single_table":
                    for day in plan.days:
                        _drop_rows(api, decl.name, day.encode("ascii") + b"#")
                    done.append(f"cleared days {', '.join(plan.days)} of {decl.name} to re-copy")
                else:
                    _drop_rows(api, decl.name)
                    done.append(f"cleared {decl.name} to re-copy it")
            done += api.ensure(decl)
    return done
