"""The main job: start an emulator, generate sample data, run the pipelines, show what landed.

make demo          # or: btts demo [--hosts 20 --minutes 10 --output_dir demo-output]
"""

from __future__ import annotations

import argparse
import glob
import json
import logging
import os
import shutil
import subprocess
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from btts import admin, emulator, samples
from pipelines import server_metrics


def _options(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="btts demo", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--output_dir",
        default="demo-output",
        help="where inputs and dead letters are written (default: %(default)s)",
    )
    parser.add_argument("--hosts", type=int, default=20, help="servers (default: %(default)s)")
    parser.add_argument(
        "--minutes",
        type=int,
        default=10,
        help="minutes of metrics at one reading per 5 s (default: %(default)s)",
    )
    return parser.parse_args(argv)


def _write_metrics_input(path: Path, hosts: int, minutes: int) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for line in samples.metric_events(hosts, minutes * 60):
            out.write(line + "\n")
            count += 1
        for line in samples.BAD_METRIC_LINES:
            out.write(line + "\n")
            count += 1
    return count


def _show_rows(title: str, rows: list[admin.ReadRow], limit: int) -> None:
    print(f"\n{title}")
    for row in rows[:limit]:
        cells = ", ".join(
            f"{c.family}:{c.qualifier.decode()}={c.value.decode()}" for c in row.cells
        )
        stamp = admin.cell_time(row.cells[0].timestamp_us) if row.cells else "-"
        print(f"  {row.key.decode():<40} @{stamp}  {cells}")
    if len(rows) > limit:
        print(f"  … {len(rows) - limit:,} more rows")


def _dead_letters(prefix: str) -> list[dict]:
    records = []
    for name in sorted(glob.glob(prefix + "*")):
        with open(name, encoding="utf-8") as f:
            records += [json.loads(line) for line in f if line.strip()]
    return records


def run(argv: Sequence[str] | None = None) -> None:
    opts = _options(argv)
    out = Path(opts.output_dir)
    shutil.rmtree(out / "dead-letters", ignore_errors=True)
    metrics_input = out / "input" / "server_metrics.jsonl"
    n = _write_metrics_input(metrics_input, opts.hosts, opts.minutes)
    print(
        f"Generated {n:,} server-metric lines ({len(samples.BAD_METRIC_LINES)} of them bad) "
        f"in {metrics_input}"
    )

    with emulator.Emulator() as emu:
        print(f"Started the Bigtable emulator on {emu.endpoint} (pid {emu.process.pid})\n")
        target = admin.resolve_target(None, None)
        dead_prefix = str(out / "dead-letters" / "server_metrics")
        server_metrics.run(
            [
                f"--input={metrics_input}",
                f"--dead_letter={dead_prefix}",
                "--create_tables",
            ]
        )

        metric_rows = admin.read_rows(target, "METRIC")
        host = metric_rows[0].key.split(b"#")[0]
        one_host = admin.read_rows(target, "METRIC", host + b"#", host + b"$")
        _show_rows(
            f"METRIC ({len(metric_rows):,} rows) — one host's range {host.decode()}#…", one_host, 3
        )
        current = admin.read_rows(target, "CURRENT_METRIC", latest_only=True)
        _show_rows(f"CURRENT_METRIC ({len(current):,} rows) — latest per host", current, 5)

        dead = _dead_letters(dead_prefix)
        print(f"\nDead letters ({len(dead)}) in {dead_prefix}-*.jsonl, by reason:")
        for reason, count in Counter(d["reason"] for d in dead).most_common():
            print(f"  {count:>4}  {reason}")

        cbt = shutil.which("cbt")
        if cbt:
            command = [
                cbt,
                "-project",
                target.project,
                "-instance",
                target.instance,
                "read",
                "CURRENT_METRIC",
                "count=1",
                "cells-per-column=1",
            ]
            print(f"\nGoogle's cbt sees the same data: {' '.join(['cbt', *command[1:]])}")
            shown = subprocess.run(
                command, capture_output=True, text=True, timeout=60, env=dict(os.environ)
            )
            print("  " + (shown.stdout or shown.stderr).strip().replace("\n", "\n  "))
    print("\nStopped the emulator. Done.")


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    run()
