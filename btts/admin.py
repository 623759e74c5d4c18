"""Table administration driven by the declarations: create, check, list, and read back.

Works against the emulator (``BIGTABLE_EMULATOR_HOST``) or a real instance.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from google.api_core import exceptions as gexc
from google.cloud import bigtable
from google.cloud.bigtable_admin_v2 import types as admin_types
from google.protobuf import duration_pb2

from btts.config import Target
from btts.errors import ConfigError
from transforms.table_model import Family, TableDecl

__all__ = ["Admin", "drop_tenant", "preflight"]


def gc_rule(family: Family) -> admin_types.GcRule | None:
    from google.cloud.bigtable_admin_v2 import types as admin_types

    rules = []
    if family.max_versions:
        rules.append(admin_types.GcRule(max_num_versions=family.max_versions))
    if family.max_age:
        seconds = int(family.max_age.total_seconds())
        rules.append(admin_types.GcRule(max_age=duration_pb2.Duration(seconds=seconds)))
    if len(rules) < 2:
        return rules[0] if rules else None
    return admin_types.GcRule(union=admin_types.GcRule.Union(rules=rules))


def column_family(family: Family) -> admin_types.ColumnFamily:
    from google.cloud.bigtable_admin_v2 import types as admin_types

    kwargs = {}
    rule = gc_rule(family)
    if rule is not None:
        kwargs["gc_rule"] = rule
    if family.aggregate:
        if family.aggregate != "sum":
            raise ValueError(f"family {family.name}: only 'sum' aggregates are supported")
        kwargs["value_type"] = admin_types.Type(
            aggregate_type=admin_types.Type.Aggregate(
                input_type=admin_types.Type(int64_type=admin_types.Type.Int64()),
                sum=admin_types.Type.Aggregate.Sum(),
            )
        )
    return admin_types.ColumnFamily(**kwargs)


class Admin:
    """A thin wrapper over the table admin client (reached through ``bigtable.Client(admin=
    True)``, which is what honours the emulator)."""

    def __init__(self, target: Target) -> None:

        self.target = target
        self._client = bigtable.Client(project=target.project, admin=True)
        self.api = self._client.table_admin_client

    def close(self) -> None:
        self.api.transport.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def list_tables(self) -> list[str]:
        return sorted(
            t.name.rsplit("/", 1)[-1]
            for t in self.api.list_tables(parent=self.target.instance_path)
        )

    def get_families(self, table: str) -> dict[str, admin_types.ColumnFamily] | None:
        from google.cloud.bigtable_admin_v2 import types as admin_types

        try:
            got = self.api.get_table(
                request={"name": self.target.table_path(table), "view": admin_types.Table.View.FULL}
            )
        except gexc.NotFound:
            return None
        return dict(got.column_families)

    def ensure(self, decl: TableDecl) -> list[str]:
        """Create the table or its missing families. Returns what was done, one line each; a
        family whose GC rule or type differs from the declaration is reported, never changed."""
        from google.cloud.bigtable_admin_v2 import types as admin_types

        existing = self.get_families(decl.name)
        if existing is None:
            table = admin_types.Table(
                column_families={f.name: column_family(f) for f in decl.families}
            )
            try:
                self.api.create_table(
                    parent=self.target.instance_path, table_id=decl.name, table=table
                )
            except gexc.AlreadyExists:  # created meanwhile by another run: check it instead
                return self.ensure(decl)
            families = ", ".join(f"{f.name} ({f.gc_description()})" for f in decl.families)
            return [f"created table {decl.name} with families {families}"]
        done = []
        missing = [f for f in decl.families if f.name not in existing]
        if missing:
            mods = [
                admin_types.ModifyColumnFamiliesRequest.Modification(
                    id=f.name, create=column_family(f)
                )
                for f in missing
            ]
            self.api.modify_column_families(
                name=self.target.table_path(decl.name), modifications=mods
            )
            done += [
                f"added family {f.name} to {decl.name} ({f.gc_description()})" for f in missing
            ]
        for f in decl.families:
            if f.name in existing and not _same_family(existing[f.name], column_family(f)):
                done.append(
                    f"WARNING: {decl.name} family {f.name} differs from its declaration "
                    f"({f.gc_description()}); left unchanged"
                )
        return done

    def problems(self, decls: Iterable[TableDecl]) -> list[str]:
        """What is missing for these declarations (empty when ready to write)."""
        out = []
        for decl in decls:
            existing = self.get_families(decl.name)
            if existing is None:
                out.append(f"table {decl.name} does not exist")
                continue
            out += [
                f"table {decl.name} has no column family {f.name}"
                for f in decl.families
                if f.name not in existing
            ]
        return out

    def drop(self, table: str) -> None:
        self.api.delete_table(name=self.target.table_path(table))


def drop_tenant(target: Target, table: TableDecl | str, tenant: str) -> bytes:
    """Offboard ``tenant``: drop the row range of its prefix (``tenant#``) in one admin call,
    so ``acme`` never takes ``acme2``'s rows. Returns the prefix dropped. Refuses a table whose
    key does not start with the tenant."""
    from transforms.schema import builtin_tables
    from transforms.text import keys

    decl = builtin_tables.get(table) if isinstance(table, str) else table
    if decl.key.segments[0].kind != "tenant":
        raise ValueError(f"{decl.name}: its key does not start with a tenant; nothing to drop")
    prefix = keys.tenant_prefix(tenant, decl.key.delimiter)
    with Admin(target) as client:
        client.api.drop_row_range(
            request={"name": target.table_path(decl.name), "row_key_prefix": prefix}
        )
    return prefix


def _same_family(a: admin_types.ColumnFamily, b: admin_types.ColumnFamily) -> bool:
    return a.gc_rule == b.gc_rule and a.value_type == b.value_type


def preflight(
    target: Target, decls: Sequence[TableDecl], create: bool = False, schema: str | None = None
) -> list[str]:
    """Check (or, with ``create``, make) every table a job writes, before any data moves.
    Raises :class:`ConfigError` naming what is missing and how to create it (from the schema
    file ``schema``, when the tables are a user's)."""
    with Admin(target) as admin:
        if create:
            return [line for decl in decls for line in admin.ensure(decl)]
        problems = admin.problems(decls)
    if problems:
        names = " ".join(f"--table {d.name}" for d in decls)
        given = f" --schema {schema}" if schema else ""
        raise ConfigError(
            "; ".join(problems)
            + f" in {target.describe()}. Create them with `btts tables create{given} {names}` "
            "or run the job with --create_tables."
        )
    return []


# -- reading back -----------------------------------------------------------------------------
