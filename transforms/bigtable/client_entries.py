"""A data client ``RowMutationEntry`` as the framed ``MutateRowsRequest`` entry the lean
writer sends (:mod:`transforms.bigtable.write`), from the entry's public attributes: what the
client itself would send for it.

Also the official counterpart of :mod:`transforms.builder.wire` (``BTTS_OFFICIAL=wire``): a
builder row's entry and a request's head serialized by the protobuf runtime the client uses,
not written by hand."""

from __future__ import annotations

from collections.abc import Callable

from google.cloud.bigtable.data import mutations as data_mutations
from google.cloud.bigtable_v2.types import bigtable as bigtable_types

from transforms import official
from transforms.builder import wire
from transforms.mutations import AddCell

__all__ = ["encoding", "entry_bytes"]

_Request = bigtable_types.MutateRowsRequest.pb()  # the raw protobuf, no proto-plus wrapper


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


def protobuf_head(table_name: str, app_profile_id: str = "") -> bytes:
    """A request's fields before its entries, serialized by the protobuf runtime."""
    return _Request(table_name=table_name, app_profile_id=app_profile_id).SerializeToString()


def protobuf_entry(row) -> bytes:
    """A builder row ``(table, key, cells)`` of SetCells as its framed request entry (field 2
    of ``MutateRowsRequest``), serialized by the protobuf runtime: what
    ``wire.framed(wire.entry(row))`` writes by hand."""
    _table, key, cells = row
    request = _Request()
    entry = request.entries.add(row_key=key)
    for cell in cells:
        if type(cell) is AddCell:
            raise TypeError("AddToCell rows go through WriteAggregates, not WriteToBigTable")
        family, qualifier, value, timestamp_us = cell
        if type(family) is not str:  # protobuf would take UTF-8 bytes: the fork does not
            raise TypeError(f"a column family is text, not {type(family).__name__}")
        set_cell = entry.mutations.add().set_cell
        set_cell.SetInParent()
        set_cell.family_name = family
        set_cell.column_qualifier = qualifier
        set_cell.value = value
        set_cell.timestamp_micros = timestamp_us
    return request.SerializeToString()


def encoding(table_name: str) -> tuple[Callable, bytes]:
    """The writer's entry encoder and request head for ``table_name``: written by hand
    (:class:`transforms.builder.wire.EntryEncoder`, which learns the table's layouts: keep it), or
    by the protobuf runtime with ``BTTS_OFFICIAL=wire``."""
    if official.uses("wire"):
        return protobuf_entry, protobuf_head(table_name)
    return wire.EntryEncoder(), wire.request_head(table_name)
