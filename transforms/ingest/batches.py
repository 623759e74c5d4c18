"""The coder of row batches: what flows from the build step to the writers.

Why: Beam samples the size of elements as they pass from step to step, by encoding them. A
batch is a block's rows (hundreds of rows, thousands of cells), so a sampled batch cost more to
size than to build; a batch made by the builder already knows its size (its request entries'
bytes). Registered for :class:`~transforms.mutations.FramedRows`, the type the build and split
steps declare for their batches; a plain list or a single row in the same collection is coded
and sized as Beam codes any value.
"""

from __future__ import annotations

from apache_beam import coders

from transforms.mutations import FramedRows

__all__ = []

_FRAMED, _OTHER = b"F", b"P"


class RowBatchCoder(coders.Coder):
    """Codes a :class:`FramedRows` as its rows and entries (a batch crossing a process keeps
    the entries the builder made), anything else as :class:`~apache_beam.coders.
    FastPrimitivesCoder` does; sizes a batch from its entries without encoding it."""

    def __init__(self) -> None:
        self._values = coders.FastPrimitivesCoder()

    def encode(self, value) -> bytes:
        if type(value) is FramedRows:
            return _FRAMED + self._values.encode((list(value), value.entries))
        return _OTHER + self._values.encode(value)

    def decode(self, encoded: bytes):
        value = self._values.decode(encoded[1:])
        if encoded[:1] == _FRAMED:
            rows, entries = value
            return FramedRows(rows, entries)
        return value

    def is_deterministic(self) -> bool:
        return False  # never a key

    def estimate_size(self, value) -> int:
        if type(value) is FramedRows and value:
            entries = value.entries
            made = [entry for entry in entries if entry is not None]
            if len(made) == len(entries):  # what the rows weigh on the wire
                return sum(map(len, made)) + 8 * len(made)
            # some rows left to the writer: the first row's coded size stands for each
            return len(self._values.encode(value[0])) * len(value)
        return len(self.encode(value))

    def to_type_hint(self):
        return FramedRows

    def __eq__(self, other) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


coders.registry.register_coder(FramedRows, RowBatchCoder)
