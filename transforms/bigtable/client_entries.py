"""A data client ``RowMutationEntry`` as the framed ``MutateRowsRequest`` entry the lean
writer sends (:mod:`transforms.bigtable.write`), from the entry's public attributes: what the
client itself would send for it."""

from __future__ import annotations

from google.cloud.bigtable.data import mutations as data_mutations
from google.cloud.bigtable_v2.types import bigtable as bigtable_types

from transforms.build import wire

__all__ = ["entry_bytes"]


def _mutation_dict(mutation) -> dict:
    """A data client mutation as the fields of its ``Mutation`` message, from its public
    attributes (what the client itself sends for it)."""
    if isinstance(mutation, data_mutations.SetCell):
        return {
            "set_cell": {
                "family_name": mutation.family,
                "column_qualifier": mutation.qualifier,
                "timestamp_micros": mutation.timestamp_micros,
                "value": mutation.new_value,
            }
        }
    if isinstance(mutation, data_mutations.DeleteRangeFromColumn):
        time_range = {
            name: value
            for name, value in (
                ("start_timestamp_micros", mutation.start_timestamp_micros),
                ("end_timestamp_micros", mutation.end_timestamp_micros),
            )
            if value is not None
        }
        return {
            "delete_from_column": {
                "family_name": mutation.family,
                "column_qualifier": mutation.qualifier,
                "time_range": time_range,
            }
        }
    if isinstance(mutation, data_mutations.DeleteAllFromFamily):
        return {"delete_from_family": {"family_name": mutation.family_to_delete}}
    if isinstance(mutation, data_mutations.DeleteAllFromRow):
        return {"delete_from_row": {}}
    raise TypeError(
        f"cannot write a {type(mutation).__name__} here: AddToCell rows go through "
        "WriteAggregates; this sink takes SetCell and deletions"
    )


def entry_bytes(entry: data_mutations.RowMutationEntry) -> bytes:
    """A data client ``RowMutationEntry`` as a framed request entry."""
    message = bigtable_types.MutateRowsRequest.Entry(
        row_key=entry.row_key, mutations=[_mutation_dict(m) for m in entry.mutations]
    )
    return wire.framed(bigtable_types.MutateRowsRequest.Entry.serialize(message))
