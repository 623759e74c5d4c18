"""Row-key builders (docs/patterns.md §3, rule 10 and §5): pure functions, no I/O.

Every builder returns ``str`` segments; a key recipe (:mod:`transforms.table_model`) joins them,
checking each free-text segment with :func:`check_segment` so that no field value can forge a
delimiter.
"""

from __future__ import annotations

import hashlib
import unicodedata

from transforms.errors import InvalidEvent
from transforms.limits import MAX_ROW_KEY_BYTES

__all__ = [
    "DELIMITER",
    "LONG_MAX",
    "check_key_size",
    "check_segment",
    "epoch_ms",
    "prefix_end",
    "reverse_domain",
    "reverse_timestamp",
    "salt",
    "salt_buckets",
    "tenant_id",
    "tenant_prefix",
    "unreverse_timestamp",
    "zero_pad",
]

DELIMITER = "#"
LONG_MAX = 9223372036854775807  # Java's Long.MAX_VALUE, used by the guidance for reversed times
_LONG_DIGITS = 19
EPOCH_MS_DIGITS = 13


def check_segment(segment: str, name: str = "segment", delimiter: str = DELIMITER) -> str:
    """Reject a segment that is empty, holds the delimiter, or holds a control character.
    Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
    if not isinstance(segment, str):
        raise InvalidEvent(f"{name}: expected text, got {type(segment).__name__}")
    if not segment:
        raise InvalidEvent(f"{name}: empty")
    if delimiter in segment:
        raise InvalidEvent(f"{name}: contains the key delimiter {delimiter!r}")
    if not segment.isprintable():
        raise InvalidEvent(f"{name}: contains a control or unprintable character")
    return segment


def check_key_size(key: bytes) -> bytes:
    """Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
    if len(key) > MAX_ROW_KEY_BYTES:
        raise InvalidEvent(f"row key is {len(key)} bytes; Bigtable's limit is {MAX_ROW_KEY_BYTES}")
    return key


def zero_pad(number: int, width: int) -> str:
    """Left-pad a non-negative integer with zeros so that text order equals numeric order.
    Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
    if isinstance(number, bool) or not isinstance(number, int):
        raise InvalidEvent(f"expected an integer, got {number!r}")
    if number < 0:
        raise InvalidEvent(f"{number} is negative: zero padding only orders non-negative numbers")
    text = str(number)
    if len(text) > width:
        raise InvalidEvent(f"{number} has more than {width} digits")
    return text.zfill(width)


def epoch_ms(ms: int) -> str:
    """13-digit epoch milliseconds; zero-padded so that keys sort in time order."""
    return zero_pad(ms, EPOCH_MS_DIGITS)


def reverse_timestamp(ms: int) -> str:
    """``Long.MAX_VALUE - ts``, zero-padded to 19 digits: the newest row sorts first.
    Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
    if isinstance(ms, bool) or not isinstance(ms, int) or not 0 <= ms <= LONG_MAX:
        raise InvalidEvent(f"timestamp {ms!r} is outside 0..{LONG_MAX}")
    return str(LONG_MAX - ms).zfill(_LONG_DIGITS)


def unreverse_timestamp(text: str) -> int:
    return LONG_MAX - int(text)


def reverse_domain(domain: str) -> str:
    """``maps.google.com`` → ``com.google.maps``: rows of one site sort together.
    Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
    labels = domain.split(".")
    if not domain or any(not label for label in labels):
        raise InvalidEvent(f"domain {domain!r} has an empty label")
    return ".".join(reversed(labels))


def site_ranges(domain: str, delimiter: str = DELIMITER) -> list[tuple[bytes, bytes]]:
    """``[start, end)`` ranges of a reversed-domain key holding a site (``com.google#…``) and its
    subdomains (``com.google.maps#…``), and not ``com.googleusercontent``: two contiguous
    ranges."""
    base = reverse_domain(domain.lower()).encode("utf-8")
    return [(p, prefix_end(p)) for p in (base + delimiter.encode("utf-8"), base + b".")]


# Scripts that may share one id (Japanese writes Han with kana; Korean Han with Hangul).
_SCRIPT_SETS = ({"CJK", "HIRAGANA", "KATAKANA"}, {"CJK", "HANGUL"})
# Letters of other scripts drawn like Latin ones: an id made only of these passes for Latin.
_LATIN_LOOKALIKES = frozenset("аеорсухіјѕԁԛԝһӏвкмнтАВЕКМНОРСТХІЈЅαοκνρτυιΑΒΕΖΗΙΚΜΝΟΡΤΥΧ")


def _script(ch: str) -> str | None:
    """The script of a letter, from its Unicode name (``LATIN SMALL LETTER A`` → LATIN);
    None for digits, punctuation and symbols, which any script may use."""
    if not ch.isalpha():
        return None
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0] if name else "UNKNOWN"


def tenant_id(tenant: str, delimiter: str = DELIMITER, what: str = "field 'tenant'") -> str:
    """A tenant id as it becomes key bytes: NFC, so ``acmé`` typed precomposed or with a
    combining accent is one tenant; refused (InvalidEvent) when it could pass for another
    tenant: compatibility forms (fullwidth ``ａｃｍｅ``), invisible characters, letters of
    several scripts (a Cyrillic ``а`` in ``acme``) or only Latin look-alikes of another script."""
    if not isinstance(tenant, str):
        raise InvalidEvent(f"{what}: expected text, got {type(tenant).__name__}")
    nfc = unicodedata.normalize("NFC", tenant)
    check_segment(nfc, what, delimiter)  # also refuses invisible (format) characters
    if unicodedata.normalize("NFKC", nfc) != nfc:
        raise InvalidEvent(
            f"{what}: {nfc!r} holds compatibility characters (e.g. fullwidth or ligatures) "
            f"that read as {unicodedata.normalize('NFKC', nfc)!r}; use that form"
        )
    scripts = {s for s in map(_script, nfc) if s}
    if len(scripts) > 1 and not any(scripts <= allowed for allowed in _SCRIPT_SETS):
        raise InvalidEvent(
            f"{what}: {nfc!r} mixes scripts ({', '.join(sorted(scripts))}), which lets one "
            "id pass for another"
        )
    letters = [ch for ch in nfc if ch.isalpha()]
    if scripts and scripts != {"LATIN"} and all(ch in _LATIN_LOOKALIKES for ch in letters):
        raise InvalidEvent(
            f"{what}: {nfc!r}: its {next(iter(scripts)).title()} letters all look Latin, so it "
            "passes for a Latin id"
        )
    return nfc


def tenant_prefix(tenant: str, delimiter: str = DELIMITER) -> bytes:
    """The row-key prefix that holds exactly one tenant's rows (delimiter included, so that
    ``acme`` never matches ``acme2``)."""
    return (tenant_id(tenant, delimiter) + delimiter).encode("utf-8")


def salt_width(buckets: int) -> int:
    return len(str(buckets))


def salt(material: str | bytes, buckets: int) -> str:
    """A stable salt bucket: the same in every process and every run (unlike ``hash()``)."""
    if buckets < 1:
        raise ValueError("salt bucket count must be at least 1")
    data = material.encode("utf-8") if isinstance(material, str) else material
    digest = hashlib.blake2b(data, digest_size=8).digest()
    return str(int.from_bytes(digest, "big") % buckets).zfill(salt_width(buckets))


def salt_buckets(buckets: int) -> list[str]:
    """Every salt label, in key order: a time-range read scans one range per label."""
    width = salt_width(buckets)
    return [str(i).zfill(width) for i in range(buckets)]


def prefix_end(prefix: bytes) -> bytes:
    """The smallest key greater than every key that starts with ``prefix`` ('' = end of table)."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return b""
    return stripped[:-1] + bytes([stripped[-1] + 1])
