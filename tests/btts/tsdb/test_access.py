"""``btts serve`` closed to strangers: beyond loopback it will not start without credentials;
with them, a request without them gets a 401 saying nothing about the data, whatever it asks;
basic auth, bearer tokens (file or environment) and TLS with a certificate made here."""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import os
import re
import ssl
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from btts.tsdb import access
from tests.support import serving

TOKEN = "s3cret-token-for-grafana"
PATHS = ["/api/version", "/api/suggest?type=metrics", "/", "/api/nope", "/api/query"]


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_access_checks_basic_and_bearer():
    guard = access.Access(((b"grafana", b"pw"),), (TOKEN.encode(),))
    assert guard.allows(basic("grafana", "pw"))
    assert guard.allows(f"Bearer {TOKEN}")
    for bad in [None, "", basic("grafana", "no"), basic("other", "pw"), "Bearer nope",
                "Basic !!!", "Digest x", f"bearer{TOKEN}"]:  # fmt: skip
        assert not guard.allows(bad), bad
    assert access.Access().allows(None)  # nothing configured: nothing asked


def test_load_access_names_the_mistake(tmp_path):
    users = tmp_path / "users"
    users.write_text("# who may read\ngrafana:pw\n")
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    got = access.load_access(str(users), str(token), {access.ENV_TOKEN: "env-token"})
    assert got.users == ((b"grafana", b"pw"),) and got.tokens == (TOKEN.encode(), b"env-token")
    users.write_text("grafana\n")
    with pytest.raises(ValueError, match="line 1: expected USER:PASSWORD"):
        access.load_access(str(users), None, {})
    with pytest.raises(ValueError, match="cannot read"):
        access.load_access(str(tmp_path / "absent"), None, {})


def test_loopback_addresses():
    assert access.is_loopback("127.0.0.1") and access.is_loopback("::1")
    assert access.is_loopback("localhost")
    assert not access.is_loopback("0.0.0.0") and not access.is_loopback("10.1.2.3")


def serve(target, *extra, env=None) -> tuple[subprocess.Popen, str]:
    argv = [sys.executable, "-m", "btts_cli.main", "serve", "--port", "0"]
    argv += ["--project", target.project, "--instance", target.instance, *extra]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or dict(os.environ)
    )
    line = proc.stdout.readline()
    match = re.search(r"(https?)://[^:]+:([0-9]+)/", line)
    if not match:
        proc.kill()
        raise RuntimeError(f"btts serve did not start: {line}{proc.stderr.read()}")
    return proc, f"{match.group(1)}://127.0.0.1:{match.group(2)}"


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(timeout=20)


def call(url: str, auth: str | None = None, context=None, method: str = "GET"):
    req = urllib.request.Request(url, method=method)
    if auth:
        req.add_header("Authorization", auth)
    try:
        with urllib.request.urlopen(req, timeout=30, context=context) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_beyond_loopback_without_credentials_it_does_not_start(bigtable_emulator):
    target = serving.new_target()
    argv = [sys.executable, "-m", "btts_cli.main", "serve", "--bind", "0.0.0.0", "--port", "0"]
    argv += ["--project", target.project, "--instance", target.instance]
    env = {k: v for k, v in os.environ.items() if k != access.ENV_TOKEN}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "--auth_file" in done.stderr, done.stderr


def test_without_credentials_only_401(bigtable_emulator, tmp_path):
    users = tmp_path / "users"
    users.write_text("grafana:pw\n")
    env = {**os.environ, access.ENV_TOKEN: TOKEN}
    proc, url = serve(serving.new_target(), "--bind", "0.0.0.0", "--auth_file", str(users), env=env)
    try:
        for path in PATHS:
            for method in ("GET", "POST", "OPTIONS", "DELETE"):
                for auth in (None, basic("grafana", "wrong"), "Bearer wrong"):
                    status, text = call(url + path, auth, method=method)
                    assert status == 401, (path, method, auth, text)
                    assert json.loads(text) == {
                        "error": {"code": 401, "message": "Authentication required"}
                    }
        assert call(url + "/api/version", basic("grafana", "pw"))[0] == 200
        assert call(url + "/api/version", f"Bearer {TOKEN}")[0] == 200
        status, text = call(url + "/api/suggest?type=metrics", f"Bearer {TOKEN}")
        assert status == 200 and "market_data.bid" in text
    finally:
        stop(proc)


def certificate(tmp_path) -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(cert_path), str(key_path)


def test_tls_with_a_generated_certificate(bigtable_emulator, tmp_path):
    cert, key = certificate(tmp_path)
    token = tmp_path / "token"
    token.write_text(TOKEN)
    proc, url = serve(
        serving.new_target(), "--tls_cert", cert, "--tls_key", key, "--token_file", str(token)
    )
    try:
        assert url.startswith("https://")
        trusted = ssl.create_default_context(cafile=cert)
        status, text = call(url + "/api/version", f"Bearer {TOKEN}", trusted)
        assert status == 200 and json.loads(text)["version"]
        assert call(url + "/api/version", None, trusted)[0] == 401
        with pytest.raises(urllib.error.URLError):  # an unknown certificate is refused
            call(url + "/api/version", f"Bearer {TOKEN}", ssl.create_default_context())
        plain = "http://" + url.split("://", 1)[1]
        with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
            call(plain + "/api/version", f"Bearer {TOKEN}")
        assert call(url + "/api/version", f"Bearer {TOKEN}", trusted)[0] == 200  # still serving
    finally:
        stop(proc)


def test_a_bad_certificate_is_one_line(bigtable_emulator, tmp_path):
    target = serving.new_target()
    argv = [sys.executable, "-m", "btts_cli.main", "serve", "--port", "0"]
    argv += ["--project", target.project, "--instance", target.instance]
    argv += ["--tls_cert", str(tmp_path / "absent.pem")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--tls_cert" in done.stderr
