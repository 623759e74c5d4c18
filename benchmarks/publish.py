"""The figures the README and docs/benchmarks.md show, made from a committed benchmark report.

Figures copied by hand drift from the runs they came from; here a `make bench` report is kept
in the repository (``docs/benchmarks/full.json``: ``benchmarks/results/`` is not committed)
and every figure the documents show is rendered from it between markers::

    <!-- figures: docs/benchmarks/full.json -->   (README: the headline table)
    <!-- details: docs/benchmarks/full.json -->   (docs/benchmarks.md: the whole table)

``tests/benchmarks/test_like_for_like.py`` renders them again and fails when a document differs,
so an edit by hand is caught. Usage::

    python -m benchmarks.publish                               # re-render from the kept report
    python -m benchmarks.publish benchmarks/results/full.json  # keep this run's report, render
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEPT = ROOT / "docs" / "benchmarks" / "full.json"
DATASET_NAMES = {
    "metrics": "server metrics",
    "meters": "smart meters",
    "market": "market data",
    "ticks": "ticks (a user's schema)",
}


def _n(value: float | None, spec: str = ",.0f") -> str:
    return "-" if value is None else format(value, spec)


def headline(report: dict) -> str:
    """Per dataset: what the job lands per second against the data client's own batcher and
    the naive pipeline, and what the overwrite check costs; then the read figures."""
    lines = [
        "| dataset | ours rows/s | ours / client batcher | ours / naive pipeline | "
        "job CPU at {:,} events | of it, the overwrite check |".format(
            report.get("ours_events") or 0
        ),
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, name in DATASET_NAMES.items():
        d = report.get("datasets", {}).get(key)
        if not d:
            continue
        s = d["summary"]
        share, own = s.get("check_cpu_share"), s.get("check_own_cpu_share")
        lines.append(
            f"| {name} | {_n(s['ours_rows_per_s'])} | {_n(s['ours_vs_ceiling'], '.2f')}× | "
            f"{_n(s['ours_vs_naive'], '.2f')}× | {_n(s.get('ours_cpu_s'), '.1f')} s | "
            f"{'-' if share is None else f'{share:.1%}'}"
            f"{'' if own is None else f' (its own code {own:.1%})'} |"
        )
    lines += [f"- {line}" for line in _read_lines(report)]
    machine = report.get("machine", {})
    lines.append(
        f"- machine: {machine.get('cpu_model', '?')}, {machine.get('cpu_count', '?')} cores, "
        f"Python {machine.get('python', '?')}; the emulator shares the cores"
    )
    return "\n".join(lines)


def _read_lines(report: dict) -> list[str]:
    out = []
    cost = report.get("index_cost")
    if cost:
        runs = f"{cost['noindex']['cpu_s']:.1f} s → {cost['index']['cpu_s']:.1f} s for"
        if cost.get("cpu_share") is None:  # a report from before the share was kept
            out.append(
                f"series index: {(cost['cpu_ratio'] - 1):.0%} more job CPU ({runs} "
                f"{cost['events']:,} events)"
            )
        else:
            own = cost.get("own_cpu_share")
            out.append(
                f"series index: {cost['cpu_share']:.1%} of the job's CPU, over "
                f"{cost['rounds']} rounds with and without it ({runs} {cost['events']:,} "
                "events, the runs of median CPU)"
                + ("" if own is None else f"; its own code {own:.1%}")
            )
    for r in (report.get("read_scale") or {}).get("results", []):
        if "star_error" not in r:
            out.append(
                f"{r['series']:,} series: suggest p50 {r['suggest_p50_ms']} ms, lookup p50 "
                f"{r['lookup_p50_ms']} ms, `*` {r['star_vs_floor']}× the data client's read"
            )
    flights = report.get("flights")
    if flights:
        out.append(
            f"flights ({flights['landing']['pairs']:,} series): every metric with `carrier=*, "
            f"flight=*` in at most {flights['slowest_s']:.1f} s"
        )
    return out


def details(report: dict) -> str:
    """The whole table `make bench` prints."""
    from benchmarks import run

    return "```text\n" + run.table(report) + "\n```"


BLOCKS: dict[str, tuple[Path, Callable[[dict], str]]] = {
    "figures": (ROOT / "README.md", headline),
    "details": (ROOT / "docs" / "benchmarks.md", details),
}


def _pattern(marker: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- {marker}: (\S+) -->\n)(.*?)(<!-- /{marker} -->)", re.S)


def rendered(text: str, marker: str, render: Callable[[dict], str]) -> str:
    """``text`` with its ``marker`` block rendered from the report the block names."""

    def fill(match: re.Match[str]) -> str:
        report = json.loads((ROOT / match.group(2)).read_text(encoding="utf-8"))
        return f"{match.group(1)}{render(report)}\n{match.group(4)}"

    return _pattern(marker).sub(fill, text)


def stale(blocks: dict[str, tuple[Path, Callable[[dict], str]]] = BLOCKS) -> list[str]:
    """The documents whose blocks are missing or differ from what their reports render."""
    out = []
    for marker, (doc, render) in blocks.items():
        text = doc.read_text(encoding="utf-8")
        if _pattern(marker).search(text) is None or rendered(text, marker, render) != text:
            out.append(f"{doc.name} ({marker})")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.publish",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("report", nargs="?", help="a `make bench` report to keep first")
    args = parser.parse_args(argv)
    if args.report:
        source = Path(args.report)
        if not source.is_file():
            parser.error(f"{source}: no such report (make bench writes benchmarks/results/)")
        KEPT.parent.mkdir(parents=True, exist_ok=True)
        if not (KEPT.exists() and source.samefile(KEPT)):  # the kept report: render it again
            shutil.copyfile(source, KEPT)
    for marker, (doc, render) in BLOCKS.items():
        text = doc.read_text(encoding="utf-8")
        doc.write_text(rendered(text, marker, render), encoding="utf-8")
        print(f"{doc.relative_to(ROOT)}: {marker} rendered")
    return 0


if __name__ == "__main__":
    sys.exit(main())
