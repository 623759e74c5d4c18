"""The shapes suite: corpus files rewritten the ways people's tools write them — European
Excel (``;`` and decimal commas), cp1252, a preamble line before the header, CRLF, a header that
names one column twice, dates as other tools print them (``5-Jan-09``, ``Jan 5 2009``, day first
``31/01/2009``, ``1991 Jul``, ``Jul 1991``, ``1970 Q1``, ``1970Q1``, ``1970-Q1``), a JSON array,
gzip — each drafted by ``btts init`` untouched and landed (tests/corpus.py's harness,
:func:`tests.corpus.draft_and_land`).

    python -m tests.shapes                  # every base file and mutation: the table
    python -m tests.shapes --sample         # the CI sample (tests/btts/draft/test_shapes.py)
    python -m tests.shapes --doc docs/corpus.md

A mutant is compared with its base file (the same records, written plainly: a comma, a dot,
UTF-8, ISO dates), both landed from their own drafts: ``landed`` when every record read back
has the base's time and values (a value by its exact decimal value; field names are not
compared: a mutant's draft may name a repeated column ``x_2``), ``refused`` when ``btts init``
exits 1 with one line, ``lossy`` otherwise (dead letters, a value or time that differs, a
crash). **0 lossy** always, and :data:`LANDED_THRESHOLD` (the share that must land) is
asserted by the CI test and by the full run's exit code.
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import io
import json
import re
import sys
import tempfile
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests import corpus, corpus_doc, wheel_corpus
from tests.support.rdatasets_corpus import canon

__all__ = [
    "BASES",
    "LANDED_THRESHOLD",
    "MUTATIONS",
    "SAMPLE_BASES",
    "Base",
    "land_base",
    "mutants",
    "run",
    "table",
]

# The share of mutants that must land whole and equal (issue 57: 97%), asserted by
# tests/btts/draft/test_shapes.py on its sample and by a full run's exit code.
LANDED_THRESHOLD = 0.97


@dataclass(frozen=True)
class Base:
    """A corpus file as the suite's base: its package file, the column holding its time and
    how often it comes (``day``, ``month`` or ``quarter``; a quarter is ``year`` + ``quarter``)."""

    package: str
    inner: str
    time: str
    every: str

    @property
    def name(self) -> str:
        return Path(self.inner).stem


BASES = (
    Base("vega_datasets", "_data/seattle-weather.csv", "date", "day"),
    Base("vega_datasets", "_data/us-employment.csv", "month", "month"),
    Base("statsmodels", "datasets/macrodata/macrodata.csv", "year", "quarter"),
)
SAMPLE_BASES = BASES[:1]


def _frame(base: Base) -> tuple[list[str], list[list[str]]]:
    """The base file's header and rows as text, its time as ISO dates (a quarter: its year and
    quarter as whole numbers)."""
    frame = wheel_corpus.texts(wheel_corpus.installed(base.package, base.inner))
    header = list(frame.columns)
    rows = [["" if v is None else str(v) for v in row] for row in frame.itertuples(index=False)]
    if base.every == "quarter":
        for row in rows:
            for i in (header.index("year"), header.index("quarter")):
                row[i] = row[i].removesuffix(".0")
    else:
        col = header.index(base.time)
        for row in rows:
            row[col] = row[col].replace("/", "-")
    return header, rows


def _csv(header: list[str], rows: list[list[str]], delimiter: str = ",", end: str = "\n") -> str:
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter, lineterminator=end)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


_DECIMAL = re.compile(r"-?[0-9]+\.[0-9]+\Z")


def _numeric(header, rows) -> list[int]:
    """The columns whose every cell is a number (the base's measurements)."""
    return [
        i for i in range(len(header))
        if all(re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", r[i]) for r in rows)
    ]  # fmt: skip


# -- the mutations: (header, rows, base) → (suffix, bytes), or None where they do not apply


def semicolon_decimal_comma(header, rows, base):
    rows = [[c.replace(".", ",") if _DECIMAL.match(c) else c for c in r] for r in rows]
    return ".csv", _csv(header, rows, ";").encode()


def cp1252(header, rows, base):
    header = list(header)
    col = _numeric(header, rows)[-1]
    header[col] = header[col] + "_été"
    return ".csv", _csv(header, rows).encode("cp1252")


def preamble(header, rows, base):
    return ".csv", (f"{base.name}: exported by hand\n" + _csv(header, rows)).encode()


def crlf(header, rows, base):
    return ".csv", _csv(header, rows, end="\r\n").encode()


def repeated_header(header, rows, base):
    numeric = [i for i in _numeric(header, rows) if header[i] not in ("year", "quarter")]
    if len(numeric) < 2:
        return None
    header = list(header)
    header[numeric[1]] = header[numeric[0]]
    return ".csv", _csv(header, rows).encode()


def json_array(header, rows, base):
    numeric = set(_numeric(header, rows))
    records = [
        {
            h: (json.loads(c) if i in numeric else c)
            for i, (h, c) in enumerate(zip(header, r, strict=True))
            if c
        }
        for r in rows
    ]
    return ".json", json.dumps(records, indent=1).encode()


def gzipped(header, rows, base):
    return ".csv.gz", gzip.compress(_csv(header, rows).encode(), mtime=0)


def _daily(fmt: Callable[[dt.date], str]):
    def mutate(header, rows, base):
        if base.every != "day":
            return None
        col = header.index(base.time)
        return ".csv", _csv(header, [_date_cell(r, col, fmt) for r in rows]).encode()

    return mutate


def _date_cell(row, col, fmt):
    return [fmt(dt.date.fromisoformat(c)) if i == col else c for i, c in enumerate(row)]


def _monthly(fmt: str):
    def mutate(header, rows, base):
        if base.every != "month":
            return None
        col = header.index(base.time)
        dated = [_date_cell(r, col, lambda d: d.strftime(fmt)) for r in rows]
        return ".csv", _csv(header, dated).encode()

    return mutate


def _quarterly(between: str):
    def mutate(header, rows, base):
        if base.every != "quarter":
            return None
        y, q = header.index("year"), header.index("quarter")
        keep = [i for i in range(len(header)) if i not in (y, q)]
        out = [["period", *(header[i] for i in keep)]]
        out += [[f"{r[y]}{between}Q{r[q]}", *(r[i] for i in keep)] for r in rows]
        return ".csv", _csv(out[0], out[1:]).encode()

    return mutate


MUTATIONS: dict[str, Callable] = {
    "semicolon_decimal_comma": semicolon_decimal_comma,
    "cp1252": cp1252,
    "preamble": preamble,
    "crlf": crlf,
    "repeated_header": repeated_header,
    "json_array": json_array,
    "gzip": gzipped,
    "date_5-Jan-09": _daily(lambda d: f"{d.day}-{d.strftime('%b-%y')}"),
    "date_Jan_5_2009": _daily(lambda d: f"{d.strftime('%b')} {d.day} {d.year}"),
    "date_day_first": _daily(lambda d: d.strftime("%d/%m/%Y")),
    "date_1991_Jul": _monthly("%Y %b"),
    "date_Jul_1991": _monthly("%b %Y"),
    "date_1970_Q1": _quarterly(" "),
    "date_1970Q1": _quarterly(""),
    "date_1970-Q1": _quarterly("-"),
}


def mutants(base: Base) -> tuple[bytes, list[tuple[str, str, bytes]]]:
    """The base file (plain CSV) and each mutation that applies to it: (mutation, suffix, bytes)."""
    header, rows = _frame(base)
    out = []
    for name, mutate in MUTATIONS.items():
        made = mutate(header, rows, base)
        if made is not None:
            out.append((name, *made))
    return _csv(header, rows).encode(), out


# -- landing and comparing


@dataclass
class Result:
    base: str
    mutation: str
    verdict: str  # landed | refused | lossy
    reason: str = ""


def events(records: list[dict], schema_time: str | None) -> Counter:
    """Records as compared: the time, and the values without their names."""
    out: Counter = Counter()
    for record in records:
        values = []
        for name, value in record.items():
            if name in ("key", "ts_ms", schema_time):
                continue
            items = value.values() if isinstance(value, dict) else [value]
            values += [v for v in (canon(i) for i in items) if v is not None]
        out[(record["ts_ms"], tuple(sorted(values)))] += 1
    return out


def _landed(path: Path, work: Path) -> tuple[str, Counter | str]:
    """("refused", its line) or ("drafted", the events read back) or ("lossy", why)."""
    refusal, dead, records, time_field = corpus.draft_and_land(path, work)
    if refusal:
        return "refused", refusal
    if dead:
        return "lossy", f"{len(dead)} dead letters (first: {dead[0].get('reason')})"
    return "drafted", events(records, time_field)


def _judge(base: Base, mutation: str, want: Counter, path: Path, work: Path) -> Result:
    try:
        verdict, got = _landed(path, work)
    except Exception as err:  # the suite reports a crash as its outcome, never stops
        return Result(
            base.name, mutation, "lossy", f"CRASH {traceback.format_exception(err)[-1].strip()}"
        )
    if verdict != "drafted":
        return Result(base.name, mutation, verdict, got)
    if got == want:
        return Result(base.name, mutation, "landed")
    missing, extra = want - got, got - want
    return Result(
        base.name, mutation, "lossy",
        f"{sum(missing.values())} of {sum(want.values())} base events not read back "
        f"(e.g. {next(iter(missing), None)}), {sum(extra.values())} read back that the base lacks",
    )  # fmt: skip


def land_base(base: Base, work: Path, echo=print) -> list[Result]:
    """The base landed, then each of its mutants landed and compared with it (on the emulator
    the environment names)."""
    plain, made = mutants(base)
    path = work / f"{base.name}.csv"
    path.write_bytes(plain)
    verdict, want = _landed(path, work)
    if verdict != "drafted":  # the suite's own mistake: a base must land
        return [Result(base.name, "(base)", "lossy", f"the base {verdict}: {want}")]
    results = []
    for mutation, suffix, data in made:
        path = work / f"{base.name}{suffix}"
        path.write_bytes(data)
        results.append(_judge(base, mutation, want, path, work))
        path.unlink()
        r = results[-1]
        echo(f"{r.base:<16} {r.mutation:<24} {r.verdict:<8} {r.reason}")
    return results


def run(bases=BASES, echo=print) -> list[Result]:
    """Each base and its mutants (:func:`land_base`), on one emulator."""
    from btts.emulator import Emulator

    results = []
    with Emulator(), tempfile.TemporaryDirectory() as tmp:
        for base in bases:
            results += land_base(base, Path(tmp), echo)
    return results


HEADING = [
    "## The shapes suite: corpus files as people's tools write them",
    "",
    "Generated by `python -m tests.shapes --doc docs/corpus.md` (tests/shapes.py): base files of",
    "the second corpus (dates written as ISO dates), each rewritten as European Excel writes it",
    "(`;`, decimal commas), in cp1252, with a preamble line, with CRLF, with a header naming one",
    "column twice, with its dates as other tools print them (`5-Jan-09`, `Jan 5 2009`,",
    "`31/01/2009`, `1991 Jul`, `Jul 1991`, `1970 Q1`, `1970Q1`, `1970-Q1`), as a JSON array and",
    "gzipped. Each mutant is drafted by `btts init` untouched, landed and compared with its base",
    "landed the same way (every record's time and values; names aside). `lossy` must stay 0, and",
    "at least `LANDED_THRESHOLD` (tests/shapes.py, 97%) must land:",
    "tests/btts/draft/test_shapes.py asserts both on its sample, and a full run exits 1 when",
    "either fails.",
    "",
]


def table(results: list[Result]) -> list[str]:
    """Markdown: the totals, then per mutation its outcomes and the first refusal."""
    n = len(results)
    landed = sum(r.verdict == "landed" for r in results)
    lossy = sum(r.verdict == "lossy" for r in results)
    share = f"{100 * landed / n:.0f}%" if n else "-"
    threshold = f"{100 * LANDED_THRESHOLD:.0f}%"
    lines = [
        f"{n} mutants of {len({r.base for r in results})} base files: {landed} landed whole and "
        f"equal ({share}), {n - landed - lossy} refused in one line, {lossy} lossy "
        f"(landed threshold: {threshold}).",
        "",
        "| mutation | mutants | landed | refused | lossy | a reason |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for mutation in MUTATIONS:
        mine = [r for r in results if r.mutation == mutation]
        if not mine:
            continue
        count = Counter(r.verdict for r in mine)
        reason = next((r.reason for r in mine if r.reason), "").replace("|", "\\|")
        landed = f"{count['landed']} ({100 * count['landed'] / len(mine):.0f}%)"
        lines.append(
            f"| {mutation} | {len(mine)} | {landed} | {count['refused']} | {count['lossy']} | "
            f"{reason[:160]} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    args = corpus.suite_args(
        argv, __doc__.split("\n\n")[0], "rewrite the suite's table in this file"
    )
    results = run(SAMPLE_BASES if args.sample else BASES)
    lines = table(results)
    print("\n".join(lines))
    if args.doc:
        corpus_doc.write_marked("shapes suite", HEADING + lines, args.doc)
    bad = corpus.failed(results)
    landed = sum(r.verdict == "landed" for r in results)
    return 1 if bad or landed < LANDED_THRESHOLD * len(results) else 0


if __name__ == "__main__":
    sys.exit(main())
