"""Prometheus' XOR chunk encoding (Gorilla: delta-of-delta times, XOR-ed values), bit for bit
as ``tsdb/chunkenc/xor.go`` writes it, for remote read's ``STREAMED_XOR_CHUNKS``; and the
framing of a streamed answer (``storage/remote/chunked.go``). Pure: no client.

A chunk is a 2-byte big-endian sample count, then a bit stream: the first time as a signed
varint and the first value's 64 bits; the second time's delta as an unsigned varint; every later
time as its delta of deltas in a 0/14/17/20/64-bit class; every value after the first as the XOR
with the previous one (a 0 bit when equal, else its meaningful bits, reusing the previous
leading/trailing zero counts when they fit). Values go through as their bits, so NaN payloads
(the staleness marker) and ±Inf come back exactly.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence

import google_crc32c

from transforms.errors import DataError

__all__ = ["chunks", "frame", "uvarint"]

MAX_SAMPLES_PER_CHUNK = 120  # what Prometheus' head and its remote read cut a chunk at
_BITS = struct.Struct(">Q")
_DOUBLE = struct.Struct(">d")
# the delta-of-delta classes: prefix bits, prefix width, payload width
_CLASSES = ((0b10, 2, 14), (0b110, 3, 17), (0b1110, 4, 20))


class _Bits:
    """A bit stream written most significant bit first into one Python int, its length in
    bytes kept as Prometheus' ``bstream`` keeps it: whole bytes go through ``writeByte``, which
    always opens the next byte, so a stream that ends on a byte boundary after one has a
    trailing zero byte, and Prometheus' chunks hold it."""

    __slots__ = ("acc", "count", "free", "size")

    def __init__(self) -> None:
        self.acc = 0
        self.count = 0  # bits written
        self.size = 0  # bytes of the stream
        self.free = 0  # bits left in its last byte

    def put(self, value: int, width: int) -> None:
        self.acc = (self.acc << width) | (value & ((1 << width) - 1))
        self.count += width
        whole, rest = divmod(width, 8)
        if whole:
            if self.free == 0:
                self.size += 1
                self.free = 8
            self.size += whole
        for _ in range(rest):
            if self.free == 0:
                self.size += 1
                self.free = 8
            self.free -= 1

    def put_bytes(self, data: bytes) -> None:
        for byte in data:
            self.put(byte, 8)

    def to_bytes(self) -> bytes:
        return (self.acc << (self.size * 8 - self.count)).to_bytes(self.size, "big")


def uvarint(n: int) -> bytes:
    """A protobuf (and Go ``binary.PutUvarint``) unsigned varint."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _varint(n: int) -> bytes:
    """Go's ``binary.PutVarint``: zig-zag, then unsigned."""
    return uvarint((n << 1) ^ (n >> 63))


def _in_range(dod: int, width: int) -> bool:
    return -((1 << (width - 1)) - 1) <= dod <= 1 << (width - 1)


def encode(samples: Sequence[tuple[int, float]]) -> bytes:
    """One XOR chunk of ``samples`` ((ms, value) in time order, at most 65,535): the bytes
    Prometheus' ``XORChunk`` holds after appending them one by one."""
    out = _Bits()
    out.put(len(samples), 16)
    out.size, out.free = 2, 0  # the count is the chunk's 2-byte header, outside the stream
    t_prev = delta_prev = v_prev = 0
    leading, trailing = 0xFF, 0
    for i, (t, v) in enumerate(samples):
        bits = _BITS.unpack(_DOUBLE.pack(v))[0]
        if i == 0:
            out.put_bytes(_varint(t))
            out.put(bits, 64)
        else:
            delta = t - t_prev
            if i == 1:
                out.put_bytes(uvarint(delta))
            else:
                _put_dod(out, delta - delta_prev)
            leading, trailing = _put_value(out, bits ^ v_prev, leading, trailing)
            delta_prev = delta
        t_prev, v_prev = t, bits
    return out.to_bytes()


def _put_dod(out: _Bits, dod: int) -> None:
    if dod == 0:
        out.put(0, 1)
        return
    if _in_range(dod, 14):  # Prometheus writes this class as two whole bytes
        out.put((0b10 << 14) | (dod & 0x3FFF), 16)
        return
    for prefix, width, payload in _CLASSES[1:]:
        if _in_range(dod, payload):
            out.put(prefix, width)
            out.put(dod, payload)
            return
    out.put(0b1111, 4)
    out.put(dod, 64)


def _put_value(out: _Bits, delta: int, leading: int, trailing: int) -> tuple[int, int]:
    if delta == 0:
        out.put(0, 1)
        return leading, trailing
    out.put(1, 1)
    new_leading = min(64 - delta.bit_length(), 31)
    new_trailing = (delta & -delta).bit_length() - 1
    if leading != 0xFF and new_leading >= leading and new_trailing >= trailing:
        out.put(0, 1)
        out.put(delta >> trailing, 64 - leading - trailing)
        return leading, trailing
    out.put(1, 1)
    out.put(new_leading, 5)
    significant = 64 - new_leading - new_trailing
    out.put(significant, 6)  # 64 is written as 0 (never 0 meaningful bits here)
    out.put(delta >> new_trailing, significant)
    return new_leading, new_trailing


class _Reader:
    __slots__ = ("acc", "left")

    def __init__(self, data: bytes) -> None:
        self.acc = int.from_bytes(data, "big")
        self.left = len(data) * 8

    def get(self, width: int) -> int:
        if width > self.left:
            raise DataError("XOR chunk: the bit stream ends before its samples do")
        self.left -= width
        return (self.acc >> self.left) & ((1 << width) - 1)

    def varint_bytes(self) -> int:
        """An unsigned varint read a byte at a time from the bit stream."""
        shift = result = 0
        while True:
            byte = self.get(8)
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result
            shift += 7
            if shift > 63:
                raise DataError("XOR chunk: a varint longer than 64 bits")


def decode(data: bytes) -> list[tuple[int, float]]:
    """The (ms, value) samples of one XOR chunk; :class:`DataError` when it is not one."""
    if len(data) < 2:
        raise DataError("XOR chunk: shorter than its 2-byte sample count")
    count = int.from_bytes(data[:2], "big")
    bits = _Reader(data[2:])
    out: list[tuple[int, float]] = []
    t = delta = v = 0
    leading = trailing = 0
    for i in range(count):
        if i == 0:
            zig = bits.varint_bytes()
            t = (zig >> 1) ^ -(zig & 1)
            v = bits.get(64)
        else:
            if i == 1:
                delta = bits.varint_bytes()
            else:
                delta += _get_dod(bits)
            t += delta
            if bits.get(1):
                if bits.get(1):
                    leading = bits.get(5)
                    significant = bits.get(6) or 64
                    trailing = 64 - leading - significant
                v ^= bits.get(64 - leading - trailing) << trailing
        out.append((t, _DOUBLE.unpack(_BITS.pack(v))[0]))
    return out


def _get_dod(bits: _Reader) -> int:
    ones = 0
    while ones < 4 and bits.get(1):
        ones += 1
    if ones == 0:
        return 0
    width = (14, 17, 20, 64)[ones - 1]
    value = bits.get(width)
    if width == 64:
        return value - (1 << 64) if value >= 1 << 63 else value
    return value - (1 << width) if value > 1 << (width - 1) else value


def chunks(samples: Sequence[tuple[int, float]]) -> Iterator[tuple[int, int, bytes]]:
    """``samples`` cut into XOR chunks of at most :data:`MAX_SAMPLES_PER_CHUNK`: (min ms,
    max ms, bytes) each."""
    for start in range(0, len(samples), MAX_SAMPLES_PER_CHUNK):
        part = samples[start : start + MAX_SAMPLES_PER_CHUNK]
        yield part[0][0], part[-1][0], encode(part)


def frame(messages: Iterable[bytes]) -> bytes:
    """Streamed remote read's framing: each message as its uvarint length, the big-endian
    CRC-32C (Castagnoli) of its bytes, then the bytes."""
    out = bytearray()
    for data in messages:
        out += uvarint(len(data))
        out += google_crc32c.value(data).to_bytes(4, "big")
        out += data
    return bytes(out)
