"""Remote write and read bodies: snappy's block format around a protobuf (Prometheus'
``prompb``, ``protos/prometheus.proto``). Pure: no client.

Every refusal names what is wrong: a body that is not snappy, one whose decoded size is over
the limit (read from snappy's length header before anything is decoded), bytes that are not the
expected message. They are :class:`BadBody` / :class:`BodyTooLarge` (HTTP 400 / 413: Prometheus
does not retry a 4xx, which is right, since the same bytes would fail again).
"""

from __future__ import annotations

import cramjam
from google.protobuf.message import DecodeError

from btts.tsdb.errors import BadRequest, TooLarge

__all__ = ["compress", "decode"]

MAX_DECODED = 32 << 20  # Prometheus' own limit on a decoded remote-read body (32 MiB)


class BadBody(BadRequest):
    """The body is not snappy, or not the protobuf message expected."""


class BodyTooLarge(TooLarge):
    """The decoded body would be over :data:`MAX_DECODED`."""


def _decoded_length(raw: bytes) -> int:
    """Snappy's block header: the decoded length as an unsigned varint."""
    length = shift = 0
    for at, byte in enumerate(raw[:10]):
        length |= (byte & 0x7F) << shift
        if byte < 0x80:
            return length
        shift += 7
        if at == 4:  # snappy's length is a 32-bit varint
            break
    raise BadBody("the body is not snappy-compressed (no valid snappy length header)")


def decode(raw: bytes, message_type: type, limit: int = MAX_DECODED):
    """The ``message_type`` protobuf in a snappy-compressed body."""
    if not raw:
        raise BadBody("the body is empty: expected a snappy-compressed protobuf")
    length = _decoded_length(raw)
    if length > limit:
        raise BodyTooLarge(
            f"the body decodes to {length:,} bytes, over the limit of {limit:,} bytes: "
            "send fewer samples per request (queue_config max_samples_per_send)"
        )
    try:
        data = bytes(cramjam.snappy.decompress_raw(raw))
    except cramjam.DecompressionError as exc:
        raise BadBody(f"the body is not valid snappy block data ({exc})") from None
    message = message_type()
    try:
        message.ParseFromString(data)
    except DecodeError as exc:
        name = message_type.DESCRIPTOR.full_name
        raise BadBody(f"the body is not a {name} protobuf ({exc})") from None
    return message


def compress(data: bytes) -> bytes:
    """Snappy block format, as Prometheus expects an answer."""
    return bytes(cramjam.snappy.compress_raw(data))
