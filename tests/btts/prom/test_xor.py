"""The XOR chunk codec against Prometheus' own: ``promtool tsdb create-blocks-from openmetrics``
(Debian's Prometheus, ``make prometheus``) writes blocks of chunks from samples this test
chooses; every chunk of its chunk files decodes here to those samples, and encoding them here
gives Prometheus' bytes exactly. Skipped, saying why, where promtool is not installed."""

from __future__ import annotations

import math
import random
import shutil
import struct
import subprocess

import google_crc32c
import pytest

from btts.prom import xor
from tests.support.prom import uvarint_at
from transforms.errors import DataError

PROMTOOL = shutil.which("promtool")
T0 = 1_700_000_000_000


def _series(rng: random.Random) -> dict[str, list[tuple[int, float]]]:
    """Series meant to reach every branch: constant, counting, noisy, huge and tiny values,
    NaN and ±Inf, regular and irregular steps (every delta-of-delta class)."""
    out = {}
    steps = {
        "regular": lambda i: 1000,
        "jitter": lambda i: 1000 + rng.randint(-300, 300),
        "wide": lambda i: rng.choice([1, 10_000, 100_000, 600_000, 2_000_000, 90_000_000]),
    }
    values = {
        "const": lambda i: 42.0,
        "count": lambda i: float(i * 3),
        "noise": lambda i: rng.uniform(-1e6, 1e6),
        "extreme": lambda i: rng.choice(
            [1e308, -5e-324, 0.0, -0.0, math.inf, -math.inf, math.nan, 1.0]
        ),
    }
    for step_name, step in steps.items():
        for value_name, value in values.items():
            t, points = T0, []
            for i in range(rng.randint(1, 300)):
                points.append((t, value(i)))
                t += step(i)
            out[f"{step_name}_{value_name}"] = points
    return out


def _openmetrics(series) -> str:
    lines = []
    for name, points in series.items():
        lines.append(f"# TYPE {name} gauge")
        for t, v in points:
            text = "NaN" if math.isnan(v) else ("+Inf" if v == math.inf else repr(v))
            text = "-Inf" if v == -math.inf else text
            lines.append(f"{name} {text} {t // 1000}.{t % 1000:03d}")
    return "\n".join(lines) + "\n# EOF\n"


def _chunks(path) -> list[bytes]:
    """The XOR chunks of one chunk file: a header (magic, version, padding), then per chunk
    its uvarint length, its encoding byte, its data and a CRC-32C of encoding and data."""
    data = path.read_bytes()
    assert data[:4] == bytes.fromhex("85bd40dd")
    at, out = 8, []
    while at < len(data):
        length, at = uvarint_at(data, at)
        encoding, chunk = data[at], data[at + 1 : at + 1 + length]
        crc = data[at + 1 + length : at + 5 + length]
        assert int.from_bytes(crc, "big") == google_crc32c.value(data[at : at + 1 + length])
        assert encoding == 1  # XOR
        out.append(chunk)
        at += 5 + length
    return out


def _bits(v: float) -> bytes:
    return b"nan" if math.isnan(v) else struct.pack(">d", v)


@pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (make prometheus)")
def test_chunks_prometheus_wrote_decode_here_and_encode_back_to_its_bytes(tmp_path):
    series = _series(random.Random(60))
    source = tmp_path / "in.om"
    source.write_text(_openmetrics(series))
    subprocess.run(
        [PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(source), str(tmp_path / "out")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    decoded = []
    for path in sorted((tmp_path / "out").glob("*/chunks/*")):
        for chunk in _chunks(path):
            points = xor.decode(chunk)
            assert xor.encode(points) == chunk  # Prometheus' bytes, bit for bit
            decoded.append(points)
    # promtool cuts chunks at 120 samples and blocks at 2 h: every sample once, none changed
    want = sorted((t, _bits(v)) for points in series.values() for t, v in points)
    assert sorted((t, _bits(v)) for points in decoded for t, v in points) == want
    assert len(decoded) > len(series)  # cut chunks, single-sample ones and long ones


def test_every_bit_pattern_survives_and_cuts_at_120():
    rng = random.Random(7)
    points = [
        (T0 + i * rng.choice([1, 15_000, 86_400_000]), struct.unpack(">d", rng.randbytes(8))[0])
        for i in range(500)
    ]
    points.sort()
    got = []
    for low, high, data in xor.chunks(points):
        part = xor.decode(data)
        assert len(part) <= xor.MAX_SAMPLES_PER_CHUNK and (part[0][0], part[-1][0]) == (low, high)
        got += part
    assert [(t, struct.pack(">d", v)) for t, v in got] == [
        (t, struct.pack(">d", v)) for t, v in points
    ]


def test_a_truncated_chunk_is_a_data_error():
    data = xor.encode([(T0, 1.0), (T0 + 1000, 2.0), (T0 + 2000, 3.5)])
    with pytest.raises(DataError, match="ends before its samples"):
        xor.decode(data[:-3])
