"""The bad-input corpus (tests/data/bad/*.json): every bad line of every dataset reaches the dead
letters with its own reason and its raw bytes, the good lines beside it land untouched, and the
counts reconcile exactly.

A manifest (one per dataset, or per dataset and format) holds::

    {"job": "server_metrics", "flags": [...], "format": "json" | "csv", "header": "...",
     "good": [lines...], "duplicates": [indexes into good, repeated verbatim],
     "blank": [whitespace-only lines], "aggregate": true (AddToCell jobs),
     "cases": [{"id", "category", "line" | "line_base64" | "generate", "reason",
                "xfail" (optional: why the product does not refuse it yet), "note"}]}

``generate`` builds a huge line without storing it: ``{"template": "…@@…", "fill": "9",
"times": N}`` puts ``fill * N`` at ``@@``; ``{"template", "item": "\\"m{i}\\": 1", "sep": ", ",
"times": N}`` puts N numbered items there. ``line_base64`` holds lines that are not UTF-8.

Each job runs ONCE per manifest, on a file with the bad lines interleaved with the good ones,
blank lines and duplicates; the per-case tests then look up their dead letter. Cases marked
``xfail`` are kept out of that run (the product would write them) and run through the same
parse-and-build transform in memory instead, strictly: the day the product refuses them, the
test reports it and the mark must go.
"""

from __future__ import annotations

import base64
import json
import random
import struct
import uuid
from collections import Counter
from functools import cache
from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from btts import config
from btts.query import engine
from pipelines import common, load
from tests.support import REPO
from tests.support.jobs import dump, read_dead_letters, run_job
from transforms.ingest.build_rows import DEAD_LETTER, BuildRows, as_block, decoder
from transforms.ingest.dead_letters import WriteDeadLetters
from transforms.mutations import AddCell, RowMutation
from transforms.schema import builtin_tables

CORPUS = REPO / "tests" / "data" / "bad"
SOURCE = "corpus-input"  # the source name of lines built outside a job
# What the issue asks the corpus to cover; a manifest edit that drops one fails a test.
CATEGORIES = {
    "invalid-json",
    "invalid-utf8",
    "missing-field",
    "extra-field",
    "wrong-type",
    "nan-infinity",
    "empty-string",
    "negative-timestamp",
    "overflowing-timestamp",
    "far-future-timestamp",
    "delimiter-in-key",
    "control-char-in-key",
    "key-over-4k",
    "value-over-cell-limit",
    "metric-name-with-space",
    "huge-line",
}
DATASETS = {
    "server_metrics",
    "market_data",
    "smart_meters",
    "weather_balloons",
    "battery",
    "game_results",
    "garden",
    "sales",
}


# -- the manifests ----------------------------------------------------------------------------


@cache
def manifests() -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted(CORPUS.glob("*.json"))}


def case_bytes(case: dict) -> bytes:
    """The raw input line of a case (without its newline)."""
    if "line" in case:
        return case["line"].encode("utf-8")
    if "line_base64" in case:
        return base64.b64decode(case["line_base64"])
    spec = case["generate"]
    if "item" in spec:
        middle = spec["sep"].join(spec["item"].format(i=i) for i in range(spec["times"]))
    else:
        middle = spec["fill"] * spec["times"]
    before, after = spec["template"].split("@@")
    return (before + middle + after).encode("utf-8")


def job_spec(manifest: dict) -> common.JobSpec:
    """The job's spec for the manifest's flags: the very builder the job runs."""
    module = load(manifest["job"])
    if hasattr(module, "job_for"):
        return module.job_for(PipelineOptions(list(manifest["flags"])))
    return module.JOB


def element(manifest: dict, raw: bytes) -> tuple:
    """A line as the job's reader hands it over: ``(source, raw)`` or, for CSV, with the header."""
    if manifest.get("format") == "csv":
        return (SOURCE, raw, tuple(manifest["header"].split(",")))
    return (SOURCE, raw)


def builder_rows(manifest: dict, line: str) -> list[RowMutation]:
    spec = job_spec(manifest)
    # The reader strips the line ending (\n or \r\n): the builder sees the line without it.
    raw = line.removesuffix("\r").encode("utf-8")
    decode = decoder(as_block(element(manifest, raw)), spec.csv_adapter)
    return list(spec.builder(decode(raw)))


def good_lines(manifest: dict) -> list[str]:
    """Every good line the input holds, duplicates included."""
    return manifest["good"] + [manifest["good"][i] for i in manifest["duplicates"]]


def input_lines(name: str, manifest: dict, cases: list[dict]) -> list[bytes]:
    """Good lines, duplicates, blank lines and bad lines, shuffled the same way every run."""
    lines = [line.encode("utf-8") for line in good_lines(manifest)]
    lines += [line.encode("utf-8") for line in manifest["blank"]]
    lines += [case_bytes(c) for c in cases]
    random.Random(name).shuffle(lines)
    if manifest.get("format") == "csv":
        lines.insert(0, manifest["header"].encode("utf-8"))
    return lines


def run_cases(manifest: dict) -> list[dict]:
    return [c for c in manifest["cases"] if "xfail" not in c]


def all_cases():
    for name, manifest in manifests().items():
        for case in manifest["cases"]:
            marks = ()
            if "xfail" in case:
                marks = (pytest.mark.xfail(reason=case["xfail"], strict=True),)
            yield pytest.param(name, case["id"], id=f"{name}/{case['id']}", marks=marks)


# -- one job run per manifest -----------------------------------------------------------------


class Run:
    """A finished job on one manifest's input: counters, dead letters by raw bytes, target."""

    def __init__(self, name: str, manifest: dict, target: config.Target, folder: Path) -> None:
        suffix = ".csv" if manifest.get("format") == "csv" else ".jsonl"
        source = folder / f"{name}{suffix}"
        with source.open("wb") as out:
            for line in input_lines(name, manifest, run_cases(manifest)):
                out.write(line + b"\n")
        self.source = source
        self.target = target
        self.result = run_job(manifest["job"], target, source, folder / "dead" / name,
                              manifest["flags"])  # fmt: skip
        self.counters = self.result.counters
        self.letters = read_dead_letters(folder / "dead" / name)
        self.by_raw: dict[bytes, list[dict]] = {}
        for letter in self.letters:
            raw = (
                base64.b64decode(letter["raw_base64"])
                if "raw_base64" in letter
                else letter["raw"].encode("utf-8")
            )
            self.by_raw.setdefault(raw, []).append(letter)


@pytest.fixture(scope="module")
def corpus_run(bigtable_emulator, tmp_path_factory):
    """``corpus_run(name)``: the manifest's job, run once for the whole module."""
    runs: dict[str, Run] = {}

    def get(name: str) -> Run:
        if name not in runs:
            target = config.Target("test-project", f"bad{uuid.uuid4().hex[:10]}")
            runs[name] = Run(name, manifests()[name], target, tmp_path_factory.mktemp(name))
        return runs[name]

    return get


# -- the manifests themselves -----------------------------------------------------------------


def test_the_corpus_covers_every_dataset_and_kind_of_bad_input():
    found = manifests()
    assert {m["job"] for m in found.values()} == DATASETS
    cases = [c for m in found.values() for c in m["cases"]]
    assert len(cases) >= 40
    assert {c["category"] for c in cases} == CATEGORIES
    for name, manifest in found.items():
        ids = [c["id"] for c in manifest["cases"]]
        assert len(ids) == len(set(ids)), f"{name}: repeated case ids"
        raws = [case_bytes(c) for c in manifest["cases"]] + [g.encode() for g in manifest["good"]]
        assert len(raws) == len(set(raws)), f"{name}: two lines are the same"
        assert all(b"\n" not in raw for raw in raws), f"{name}: a line holds a newline"
        assert manifest["duplicates"], f"{name}: no duplicate event"
        for case in manifest["cases"]:
            assert case["reason"], f"{name}/{case['id']}: no expected reason"


def test_the_good_lines_are_good():
    """A good line the builder refuses would pass for a dead letter of a bad case."""
    for name, manifest in manifests().items():
        for line in manifest["good"]:
            assert builder_rows(manifest, line), f"{name}: {line!r} makes no rows"


# -- every bad case -------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "case_id"), list(all_cases()))
def test_a_bad_line_is_dead_lettered_with_its_reason_and_raw_input(
    name, case_id, corpus_run, tmp_path
):
    manifest = manifests()[name]
    case = next(c for c in manifest["cases"] if c["id"] == case_id)
    raw = case_bytes(case)
    if "xfail" in case:
        letters = _build_in_memory(manifest, raw, tmp_path / "dead")
    else:
        run = corpus_run(name)
        letters = run.by_raw.get(raw, [])
        assert all(d["source"].endswith(run.source.name) for d in letters)
    assert len(letters) == 1, f"{len(letters)} dead letters for this line (want exactly 1)"
    (letter,) = letters
    assert case["reason"] in letter["reason"], letter["reason"]
    assert letter["pipeline"] == manifest["job"]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:  # the raw bytes travel as base64, and readably escaped
        assert base64.b64decode(letter["raw_base64"]) == raw
        assert letter["raw"] == raw.decode("utf-8", errors="backslashreplace")
    else:
        assert letter["raw"] == text and "raw_base64" not in letter


def _build_in_memory(manifest: dict, raw: bytes, prefix: Path) -> list[dict]:
    """The job's own parse-and-build step and dead-letter writer on one line, without writing
    any row: the dead letters it routes (none when the line makes rows)."""
    spec = job_spec(manifest)
    with beam.Pipeline(options=PipelineOptions(["--runner=DirectRunner"])) as pipeline:
        built = (
            pipeline
            | beam.Create([element(manifest, raw)])
            | BuildRows(spec.builder, spec.name, spec.csv_adapter)
        )
        built[DEAD_LETTER] | WriteDeadLetters(str(prefix))
    return read_dead_letters(prefix)


# -- per dataset: the good lines, the counts, the duplicates ---------------------------------


def _families_of_one_version(table: str) -> set[str]:
    return {f.name for f in builtin_tables.get(table).families if f.max_versions == 1}


def _expected_cells(manifest: dict) -> dict[str, Counter]:
    """Cells the builder makes from every good line (duplicates included), per table, as a
    count per cell: SetCell of the same coordinates twice is one cell; AddToCell adds."""
    out: dict[str, Counter] = {}
    for line in good_lines(manifest):
        for row in builder_rows(manifest, line):
            cells = out.setdefault(row.table, Counter())
            for cell in row.cells:
                if type(cell) is AddCell:
                    cells[(row.key, cell.family, cell.qualifier, cell.timestamp_us)] += cell.amount
                else:
                    cells[(row.key, cell.family, cell.qualifier, cell.value, cell.timestamp_us)] = 1
    return out


def _latest(cells) -> set[tuple]:
    newest: dict[tuple, tuple] = {}
    for cell in cells:
        column = cell[:3]
        if column not in newest or cell[4] > newest[column][4]:
            newest[column] = cell
    return set(newest.values())


@pytest.mark.parametrize("name", sorted(manifests()))
def test_good_lines_land_untouched_and_counts_reconcile(name, corpus_run):
    manifest = manifests()[name]
    run = corpus_run(name)
    c = run.counters
    good = good_lines(manifest)
    bad = run_cases(manifest)

    assert c["lines_read"] == len(good) + len(manifest["blank"]) + len(bad)
    assert c["lines_read"] == c["events_valid"] + c["dead_letters"] + c.get("blank_lines", 0)
    assert c["events_valid"] == len(good)
    assert c["dead_letters"] == len(bad) == len(run.letters)
    assert c.get("blank_lines", 0) == len(manifest["blank"])
    assert c.get("unexpected_errors", 0) == 0, "a builder raised something else than InvalidEvent"
    assert sorted(run.by_raw) == sorted(case_bytes(case) for case in bad)

    expected = _expected_cells(manifest)
    built_rows = Counter(r.table for line in good for r in builder_rows(manifest, line))
    for table, cells in expected.items():
        assert c[f"rows_{table}"] == built_rows[table], table
        if manifest.get("aggregate"):
            stored = {(*cell[:3], cell[4]): cell[3] for cell in dump(run.target, table)}
            assert {k: struct.unpack(">q", v)[0] for k, v in stored.items()} == dict(cells)
            continue
        want = set(cells)
        one_version = _families_of_one_version(table)
        everything = dump(run.target, table)
        assert len(set(everything)) == len(everything)
        # Nothing else, not even an older version the emulator has not collected yet.
        assert set(everything) <= want, f"{table}: cells no good line makes"
        if not one_version:
            assert set(everything) == want, table
        else:  # families of one version keep the newest cell per column (GC'd lazily)
            latest = set(dump(run.target, table, latest_only=True))
            assert latest == _latest(want), table


@pytest.mark.parametrize("name", sorted(manifests()))
def test_a_duplicated_event_lands_once(name, corpus_run):
    """The same line again is the same event: its cells are written again with the same
    timestamps, so they stay one cell each (SetCell replaces the cell of the same coordinates).
    The sales job adds (AddToCell is not idempotent, see pipelines/sales.py): there a copy
    counts again, which is why sales inputs must be read once."""
    manifest = manifests()[name]
    run = corpus_run(name)
    copies = Counter(manifest["duplicates"])
    for index, extra in copies.items():
        rows = builder_rows(manifest, manifest["good"][index])
        for row in rows:
            # No other good line touches this row: its cells are this event's alone.
            others = [
                r.key
                for i, line in enumerate(manifest["good"])
                if i != index
                for r in builder_rows(manifest, line)
                if r.table == row.table
            ]
            assert row.key not in others, f"{name}: pick a duplicate whose rows are its own"
            stored = engine.read_rows(run.target, row.table, row.key, row.key + b"\x00")
            assert len(stored) == 1
            cells = stored[0].cells
            if manifest.get("aggregate"):
                assert sorted((c.qualifier, struct.unpack(">q", c.value)[0]) for c in cells) == (
                    sorted((cell.qualifier, cell.amount * (1 + extra)) for cell in row.cells)
                )
            else:
                assert sorted((c.family, c.qualifier, c.value, c.timestamp_us) for c in cells) == (
                    sorted(tuple(cell) for cell in row.cells)
                ), f"{row.table} {row.key!r}: {1 + extra} copies must leave one set of cells"


# -- findings that need a change in shared code (see the issue-9 report) ----------------------


def test_a_csv_header_with_a_byte_order_mark_names_its_first_column():
    from transforms.text.events import parse_csv_header

    assert parse_csv_header(b"\xef\xbb\xbfhostname,timestamp,cpu")[0] == "hostname"
