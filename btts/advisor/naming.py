"""What a field's name says it holds, when the schema file's ``advisor:`` section does not:
``user_email`` is personal data, ``order_id`` a sequential integer, ``created_ts`` a time.
The advisor's lint says when a finding rests on such a guess.
"""

from __future__ import annotations

import re

__all__ = ["guess_kind", "looks_like_personal_data"]

_PII_WORDS = {
    "email", "mail", "phone", "mobile", "msisdn", "ssn", "passport", "address", "street",
    "birthday", "birthdate", "dob", "iban", "surname", "firstname", "lastname", "fullname",
    "username", "cellphone",
}  # fmt: skip
# "<thing>_name" is a person's name unless the thing is not a person.
_NOT_PERSONS = {
    "host", "domain", "file", "table", "metric", "column", "field", "device", "product", "app",
    "service", "server", "site", "node", "game", "kind", "type", "reading", "sensor",
    "location", "event", "family",
}  # fmt: skip
_HASH_WORDS = {"hash", "md5", "sha", "sha1", "sha256", "digest", "checksum"}
_BYTES_WORDS = {"bytes", "raw", "binary", "bin", "blob"}
_SEQUENTIAL_WORDS = {"id", "seq", "sequence", "serial"}
_INTEGER_WORDS = {"num", "number", "no", "count", "index", "idx"}
_MONOTONIC_WORDS = {"ts", "time", "timestamp", "datetime", "date", "version", "counter"}


def name_tokens(name: str) -> list[str]:
    """``userEmail`` / ``user_email`` / ``USER-EMAIL`` → ``["user", "email"]``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return [t for t in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if t]


def guess_kind(name: str) -> str | None:
    """What a field's name suggests it holds, or None when it says nothing."""
    tokens = name_tokens(name)
    if not tokens:
        return None
    if any(t in _PII_WORDS for t in tokens):
        return "pii"
    for before, token in zip([None, *tokens], tokens, strict=False):
        if token == "name" and before not in _NOT_PERSONS:
            return "pii"
    if any(t in _HASH_WORDS for t in tokens):
        return "hash"
    if any(t in _BYTES_WORDS for t in tokens):
        return "bytes"
    if tokens[-1] in _SEQUENTIAL_WORDS:
        return "sequential"
    if any(t in _INTEGER_WORDS for t in tokens):
        return "integer"
    if any(t in _MONOTONIC_WORDS for t in tokens):
        return "monotonic"
    return None


_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}")
_PHONE = re.compile(r"\+?[0-9][0-9 ().-]{6,}")


def looks_like_personal_data(name: str) -> bool:
    """A family or qualifier *name* that is itself personal data (the words of a field name say
    what a key segment holds; a column named EMAIL holds e-mails but is not one)."""
    if _EMAIL.search(name):
        return True
    return bool(_PHONE.fullmatch(name.strip())) and sum(c.isdigit() for c in name) >= 7
