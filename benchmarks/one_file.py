"""One large file, two workers: is the file read by both?

    python -m benchmarks.one_file                  # make bench-one-file: 1 GiB, validate only
    python -m benchmarks.one_file --gib 0.25 --write    # smaller, and landed in the emulator

A JSON-lines file larger than ``SPLIT_BYTES`` (64 MiB) is cut into byte ranges when the job
starts (transforms/ingest/readers.py) and the ranges are reshuffled; on the multi-process
DirectRunner the reshuffled ranges are dealt to the workers, so each should read about half.
This writes one file of ``--gib`` GiB of server-metric events, runs the server_metrics job on
it with ``--direct_running_mode=multi_processing --direct_num_workers=2`` (``--validate_only``
by default: read, parse and build every row, no Bigtable; ``--write`` lands them in a fresh
emulator too) and reports, per worker process, the lines it read, its CPU seconds and when it
read them (:class:`transforms.metrics.WorkerTally`): the workers are **both busy** when each
read at least a quarter of the lines and their reading spans overlap for most of the shorter
one. ``--in_process`` also runs the job in one process, for the speed-up. The JSON report goes
to ``benchmarks/results/one_file.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from btts import emulator
from btts.samples import data as samples
from transforms.ingest import readers
from transforms.metrics import WORKER_TALLY_ENV, read_worker_tallies

ROOT = Path(__file__).resolve().parent
MP = ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]
MIN_SHARE = 0.25  # of the lines, per worker
MIN_OVERLAP = 0.5  # of the shorter reading span


def write_file(path: Path, size: int) -> int:
    """Server-metric events until ``path`` holds ``size`` bytes; the lines written."""
    lines = written = 0
    with path.open("w", encoding="utf-8") as out:
        while written < size:
            start = samples.METRICS_START_MS + lines * 1_000  # every round at later times
            for line in samples.metric_events(hosts=1_000, seconds=600, start_ms=start):
                out.write(line + "\n")
                written += len(line) + 1
                lines += 1
                if written >= size:
                    break
    return lines


def verdict(shares: dict[int, dict], lines: int, workers: int = 2) -> dict:
    """Whether every one of ``workers`` read at least :data:`MIN_SHARE` of the lines, while
    the others read too (reading spans overlapping for :data:`MIN_OVERLAP` of the shorter)."""
    spans = [(s["start"], s["end"]) for s in shares.values()]
    smallest = min((s["lines"] for s in shares.values()), default=0)
    overlap = 0.0
    if len(spans) >= 2:
        (a0, a1), (b0, b1) = sorted(spans, key=lambda s: s[1] - s[0])[:2]
        shorter = max(a1 - a0, 1e-9)
        overlap = max(0.0, min(a1, b1) - max(a0, b0)) / shorter
    return {
        "workers_reading": len(shares),
        "smallest_share": round(smallest / lines, 3) if lines else 0.0,
        "overlap_of_shorter_span": round(overlap, 3),
        "both_busy": len(shares) >= workers
        and smallest >= MIN_SHARE * lines
        and overlap >= MIN_OVERLAP,
    }


def _job(source: Path, flags: list[str], tally: Path | None) -> tuple[float, dict]:
    """The server_metrics job on ``source``: wall seconds and its counters."""
    from pipelines import server_metrics

    if tally:  # the worker processes inherit it
        os.environ[WORKER_TALLY_ENV] = str(tally)
    started = time.monotonic()
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # the job's summary: not ours to print
            report = server_metrics.run([f"--input={source}", "--max_bad_records=0", *flags])
    finally:
        os.environ.pop(WORKER_TALLY_ENV, None)
    return time.monotonic() - started, report.counters


def measure(source: Path, lines: int, write: bool, in_process: bool) -> dict:
    flags = ["--create_tables"] if write else ["--validate_only"]
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="btts-tally-") as tally:
        seconds, counters = _job(source, [*flags, *MP], Path(tally))
        found = read_worker_tallies(tally)
    assert counters["lines_read"] == lines, (counters["lines_read"], lines)
    shares = {
        pid: {"lines": s.items, "cpu_s": s.cpu_s, "start": s.start, "end": s.end}
        for pid, s in found.get("read", {}).items()
    }
    out["two_workers"] = {
        "seconds": round(seconds, 1),
        "lines_per_s": round(lines / seconds),
        "workers": {
            str(pid): {
                "lines": s["lines"],
                "share": round(s["lines"] / lines, 3),
                "cpu_s": round(s["cpu_s"], 1),
                "reading_s": round(s["end"] - s["start"], 1),
            }
            for pid, s in shares.items()
        },
        "rows_written_per_worker": {str(pid): s.items for pid, s in found.get("write", {}).items()},
        **verdict(shares, lines),
    }
    if in_process:
        cpu = time.process_time()
        single, _ = _job(source, flags, None)
        out["in_process"] = {
            "seconds": round(single, 1),
            "lines_per_s": round(lines / single),
            "cpu_s": round(time.process_time() - cpu, 1),  # this process: the job ran here
        }
        out["speedup"] = round(single / seconds, 2)
    return out


def table(report: dict) -> str:
    run = report["two_workers"]
    rows = [
        f"one file: {report['file_mib']:,} MiB, {report['lines']:,} lines, "
        f"{report['ranges']} ranges of {readers.SPLIT_BYTES >> 20} MiB "
        f"({'validate only' if not report['write'] else 'written to the emulator'})",
        f"two workers: {run['seconds']} s, {run['lines_per_s']:,} lines/s",
    ]
    for pid, worker in run["workers"].items():
        rows.append(
            f"  worker {pid}: {worker['lines']:>12,} lines ({worker['share']:.0%})  "
            f"cpu {worker['cpu_s']:>7.1f} s  reading for {worker['reading_s']:>7.1f} s"
        )
    rows.append(
        f"both busy: {run['both_busy']} (smallest share {run['smallest_share']:.0%}, spans "
        f"overlap {run['overlap_of_shorter_span']:.0%} of the shorter)"
    )
    if "in_process" in report:
        single = report["in_process"]
        rows.append(
            f"in process: {single['seconds']} s, cpu {single['cpu_s']} s; "
            f"speed-up {report['speedup']}x"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.one_file",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--gib", type=float, default=1.0, help="file size in GiB (default 1)")
    parser.add_argument("--write", action="store_true", help="land the rows in an emulator")
    parser.add_argument("--in_process", action="store_true", help="also run in one process")
    args = parser.parse_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="btts-one-file-") as tmp:
        source = Path(tmp) / "metrics.jsonl"
        lines = write_file(source, int(args.gib * (1 << 30)))
        size = source.stat().st_size
        report = {
            "file_mib": size >> 20,
            "lines": lines,
            "ranges": len(readers.file_ranges(str(source), size)),
            "write": args.write,
            "cpus": os.cpu_count(),
            "load_average_1min_before": round(os.getloadavg()[0], 2),  # a shared machine?
        }
        context = emulator.Emulator() if args.write else contextlib.nullcontext()
        with context:
            report.update(measure(source, lines, args.write, args.in_process))
    report["seconds"] = round(time.monotonic() - started, 1)
    out = ROOT / "results" / "one_file.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, sort_keys=True))
    print(table(report))
    print(f"report: {out} ({report['seconds']}s)")
    return 0 if report["two_workers"]["both_busy"] else 1


if __name__ == "__main__":
    sys.exit(main())
