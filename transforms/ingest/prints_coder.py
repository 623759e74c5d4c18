"""The coder of the overwrite check's fingerprints: what the build step hands to the check's
shuffle, ``(shard, Prints)`` (:class:`~transforms.ingest.fingerprints.Prints`).

Why: a :class:`Prints` is a few numpy arrays (8 bytes a row) and a little text. Beam codes a
value of a type it does not know by pickling it, every array on its own, and every shard's
element of one handover carried that handover's flushes (16 arrays) again; Beam also sizes
elements as they pass by coding them once more. Here an element is raw bytes: a short header
(the tables, the flushes' lengths, the sources), then every array's bytes as they lie in memory
(little-endian 64-bit words, 8-byte aligned). Decoded, the arrays are read-only views on those
bytes, no copy; sized, an element is its arrays' bytes, nothing coded. The header lists tables
and sources sorted, so one value codes to one string of bytes in any process.

Registered for :class:`Prints`, the type the build step declares for its ``prints`` output.
"""

from __future__ import annotations

import json
import struct

import numpy as np
from apache_beam import coders

from transforms.errors import SystemFailure
from transforms.ingest.fingerprints import Prints

__all__ = []

_MAGIC = b"BTP1"  # the format's name and version
_HEAD = struct.Struct("<4sI")  # magic, header length
_WORD = np.dtype("<u8")


def prints_bytes(prints: Prints) -> bytes:
    """``prints`` as bytes (see the module docstring)."""
    ids = sorted(prints.ids.items())
    keys = sorted(prints.keys.items())
    header = json.dumps(
        [
            [[table, len(values)] for table, values in ids],
            [[table, len(values)] for table, values in keys],
            [len(flush) for flush in prints.flushes],
            sorted([sid, sorted(names)] for sid, names in prints.sources.items()),
            sorted(prints.keyed),
        ],
        separators=(",", ":"),
    ).encode("ascii")  # (a source's name escaped, whatever it holds)
    pad = -(_HEAD.size + len(header)) % 8
    arrays = [values for _, values in ids] + [values for _, values in keys] + list(prints.flushes)
    words = np.concatenate(arrays, dtype=_WORD) if arrays else b""
    return b"".join((_HEAD.pack(_MAGIC, len(header)), header, b"\0" * pad, memoryview(words)))


def prints_from_bytes(data: bytes) -> Prints:
    """The :class:`Prints` :func:`prints_bytes` made ``data`` of; its arrays are read-only
    views on ``data``. Raises :class:`SystemFailure` for bytes it did not make (a runner
    handing the check something else: never the user's input)."""
    if len(data) < _HEAD.size or data[:4] != _MAGIC:
        raise SystemFailure("overwrite check: fingerprints came back in a format it never wrote")
    _magic, size = _HEAD.unpack_from(data)
    start = _HEAD.size + size
    ids, keys, flushes, sources, keyed = json.loads(data[_HEAD.size : start])
    start += -start % 8
    total = sum(n for _, n in ids) + sum(n for _, n in keys) + sum(flushes)
    if len(data) != start + 8 * total:
        raise SystemFailure("overwrite check: its fingerprints came back cut short or too long")
    words = np.frombuffer(data, _WORD, total, start) if total else np.zeros(0, _WORD)
    at = 0

    def take(count: int) -> np.ndarray:
        nonlocal at
        at += count
        return words[at - count : at]

    return Prints(
        {table: take(n) for table, n in ids},
        {table: take(n) for table, n in keys},
        tuple(take(n) for n in flushes),
        {sid: set(names) for sid, names in sources},
        frozenset(keyed),
    )


class PrintsCoder(coders.Coder):
    """Codes a :class:`Prints` as :func:`prints_bytes`; sizes it by its arrays' bytes."""

    def encode(self, value: Prints) -> bytes:
        return prints_bytes(value)

    def decode(self, encoded: bytes) -> Prints:
        return prints_from_bytes(encoded)

    def is_deterministic(self) -> bool:
        return True  # one value, one string of bytes (tables and sources sorted)

    def estimate_size(self, value: Prints) -> int:
        arrays = (*value.ids.values(), *value.keys.values(), *value.flushes)
        return 64 + sum(values.nbytes for values in arrays)

    def to_type_hint(self):
        return Prints

    def __eq__(self, other) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


coders.registry.register_coder(Prints, PrintsCoder)
