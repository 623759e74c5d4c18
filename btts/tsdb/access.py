"""Who may call ``btts serve``: basic-auth users and bearer tokens, and its TLS context.

Grafana's OpenTSDB data source can send basic auth or a custom ``Authorization`` header and
speak TLS, so a server reachable beyond loopback asks for credentials (it refuses to start
without any) and can serve HTTPS. Secrets are compared in constant time and every configured
credential is compared on every request, so the time of a refusal says nothing about which
part was wrong.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
import os
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ENV_TOKEN", "MAX_CONNECTIONS", "Access", "is_loopback", "load_access", "tls_context"]

MAX_CONNECTIONS = 2048  # open connections at once; beyond, a 503

ENV_TOKEN = "BTTS_SERVE_TOKEN"


@dataclass(frozen=True)
class Access:
    """The credentials a request must carry (none configured: every request passes)."""

    users: tuple[tuple[bytes, bytes], ...] = ()  # (user, password) for basic auth
    tokens: tuple[bytes, ...] = ()  # bearer tokens

    @property
    def required(self) -> bool:
        return bool(self.users or self.tokens)

    def allows(self, authorization: str | None) -> bool:
        """True when the ``Authorization`` header carries one of the credentials."""
        if not self.required:
            return True
        scheme, _, value = (authorization or "").strip().partition(" ")
        scheme = scheme.lower()
        if scheme == "bearer":
            given = value.strip().encode("utf-8", "replace")
            return _any_equal(self.tokens, given)
        if scheme == "basic":
            try:
                pair = base64.b64decode(value.strip(), validate=True)
            except (binascii.Error, ValueError):
                return False
            user, sep, password = pair.partition(b":")
            ok = False
            for known_user, known_password in self.users:
                same_user = hmac.compare_digest(known_user, user)
                ok |= same_user & hmac.compare_digest(known_password, password) & bool(sep)
            return ok
        return False


def _any_equal(secrets: tuple[bytes, ...], given: bytes) -> bool:
    ok = False
    for secret in secrets:
        ok |= hmac.compare_digest(secret, given)
    return ok


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{what} {path}: cannot read it ({exc})") from None


def load_access(
    auth_file: str | None, token_file: str | None, environ: Mapping[str, str] = os.environ
) -> Access:
    """The credentials of ``--auth_file`` (``USER:PASSWORD`` lines, ``#`` comments),
    ``--token_file`` (one token, its first line) and :data:`ENV_TOKEN`; a ValueError
    naming the file and line of a mistake."""
    users: list[tuple[bytes, bytes]] = []
    if auth_file:
        for number, line in enumerate(_read(auth_file, "--auth_file").splitlines(), 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            user, sep, password = text.partition(":")
            if not sep or not user or not password:
                raise ValueError(f"--auth_file {auth_file} line {number}: expected USER:PASSWORD")
            users.append((user.encode("utf-8"), password.encode("utf-8")))
        if not users:
            raise ValueError(f"--auth_file {auth_file}: no USER:PASSWORD line")
    tokens: list[bytes] = []
    if token_file:
        lines = _read(token_file, "--token_file").strip().splitlines()
        if not lines or not lines[0].strip():
            raise ValueError(f"--token_file {token_file}: the file is empty")
        tokens.append(lines[0].strip().encode("utf-8"))
    if environ.get(ENV_TOKEN, "").strip():
        tokens.append(environ[ENV_TOKEN].strip().encode("utf-8"))
    return Access(tuple(users), tuple(tokens))


def is_loopback(bind: str) -> bool:
    """True when ``bind`` only listens on this machine (127.0.0.0/8, ::1, localhost)."""
    try:
        return ipaddress.ip_address(bind).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(bind, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)


def tls_context(cert: str, key: str | None) -> ssl.SSLContext:
    """A server context of ``--tls_cert``/``--tls_key`` (PEM; TLS 1.2 or later)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"--tls_cert {cert}: cannot load the certificate/key ({exc})") from None
    return context
