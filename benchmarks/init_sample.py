"""``btts init`` on CSV files of growing size: the draft's time and memory stay flat, because it
is made from a bounded sample (btts/draft/sample.py: the head and a spread of windows); the
check that follows (btts/draft/check.py) reads the whole file up to 1 GB.

    python -m benchmarks.init_sample                 # 10 MB, 100 MB and 1 GB files
    python -m benchmarks.init_sample --sizes 10M,1G --dir /tmp/btts-init-bench

The files are generated once into ``--dir`` (default: a directory under the system's temporary
directory, kept for the next run; never in the repository): metrics of 200 hosts every 10 s.
Each size is drafted in a fresh Python process, which reports its own wall time for the draft
(the imports excluded: they are the same for every size), the bytes it read and its peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["generate", "main", "measure"]

HOSTS = 200
_CHILD = """
import json, resource, sys, time
from btts.draft import draft
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
result = draft([sys.argv[1]])
seconds = time.perf_counter() - start
sample = result.samples[0]
print(json.dumps({
    "seconds": seconds, "bytes_read": sample.bytes_read, "records": len(sample.records),
    "rss_before_kib": before, "rss_peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    "key": [c.value for c in result.schema.key],
}))
"""


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    if text[-1:] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def generate(path: Path, size: int) -> Path:
    """A CSV of host metrics (host, time, cpu, mem) of about ``size`` bytes, made once."""
    if path.exists() and path.stat().st_size >= size:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    start_ms = 1_714_557_600_000  # 2024-05-01T10:00:00Z
    written = 0
    step = 0
    with open(path, "w", encoding="ascii") as out:
        out.write("host,time,cpu,mem\n")
        while written < size:
            t = start_ms + step * 10_000
            rows = "".join(
                f"host{h:03d},{t},{(h * 7 + step) % 100}.{h % 10},{(h + step) % 64}\n"
                for h in range(HOSTS)
            )
            out.write(rows)
            written += len(rows)
            step += 1
    return path


def measure(path: Path) -> dict:
    """One draft of ``path`` in a fresh process: its report (see the module's docstring)."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="btts init's time and memory on CSV files of growing size",
        epilog="example: python -m benchmarks.init_sample --sizes 10M,1G",
    )
    parser.add_argument("--sizes", default="10M,100M,1G", help="file sizes (K, M, G)")
    parser.add_argument(
        "--dir",
        default=os.path.join(tempfile.gettempdir(), "btts-init-bench"),
        help="where the generated files are kept (never the repository)",
    )
    args = parser.parse_args(argv)
    print(f"{'file':>10} {'read':>10} {'records':>8} {'draft s':>8} {'peak RSS MiB':>13}")
    for text in args.sizes.split(","):
        size = _size(text)
        path = generate(Path(args.dir) / f"metrics-{text.strip()}.csv", size)
        report = measure(path)
        print(
            f"{path.stat().st_size / (1 << 20):>8.0f}MB {report['bytes_read'] / (1 << 20):>8.1f}MB "
            f"{report['records']:>8,} {report['seconds']:>8.2f} "
            f"{report['rss_peak_kib'] / 1024:>13.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
