"""The schema linter: every table declaration checked against the guidance (docs/patterns.md §3).

Each rule reads the declaration (key recipe, families, GC rules, column pattern) and, where the
declaration is silent, the workload its schema file's ``advisor:`` section declares
(:mod:`~btts.advisor.workload`: event rate, field cardinalities and kinds, columns per row). A
field with no declared kind is judged by its name (``user_email`` is personal data, ``order_id``
a sequential integer), and the message says so. A key that starts with a time or a sequential id
is judged against that workload's rate too (:func:`hot_prefix_severity`).

A finding is *open* unless the table's ``advisor:`` section acknowledges that rule with a reason
(a deliberate design, shown with the finding) or names the table a documented anti-pattern kept
to be flagged (``BATTERY_TS_FIRST``). ``btts advise lint`` fails when an open finding reaches
``--fail_on``.

The rules, findings and report are :mod:`~btts.advisor.findings`; the row-size estimate
:mod:`~btts.advisor.rows`; the kinds guessed from names :mod:`~btts.advisor.naming`; Bigtable's
limits :mod:`transforms.limits`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from btts.advisor.findings import (
    RULES,
    SEVERITIES,
    Finding,
)
from btts.advisor.naming import guess_kind, looks_like_personal_data
from btts.advisor.rows import (
    bucket_seconds,
    count_text,
    entity_fields,
    estimate_row,
    human_bytes,
    rate_text,
)
from btts.advisor.workload import (
    NODE_WRITES_PER_S,
    Hints,
    Workload,
    hints_for,
    hints_from_advisor,
)
from transforms.limits import (
    MAX_FAMILIES_PER_TABLE,
    MAX_TABLES_PER_INSTANCE,
    ROW_ADVISED_BYTES,
    ROW_HARD_BYTES,
)
from transforms.schema import builtin_tables
from transforms.table_model import TIME_KINDS, Segment, TableDecl

__all__ = ["lint_all", "lint_schema"]


# The guidance's budgets (docs/patterns.md §3 rule 7); Bigtable's own limits: transforms.limits.
# Names longer than this are "long" when, with the qualifier, they outweigh the cell's value.
LONG_NAME_BYTES = 12
# A salt is a small bucket count (about the node count); past this it is a hash of the key.
MAX_SALT_BUCKETS = 64
# A field with at least this many distinct values can lead the key instead of a salt.
PROMOTABLE_CARDINALITY = 100
# A key that starts with a time (or a sequential id) sends every write to the one tablet holding
# the newest keys, whatever the cluster size; how much that matters is how many writes that is.
# The rule, in shares of one node's sustained writes (NODE_WRITES_PER_S): from 1% (140 writes/s)
# the hot tablet takes a share of a node that no split or added node relieves and that grows with
# the workload: an error. Below 0.01% (1.4 writes/s, about 120,000 rows a day) one tablet absorbs
# it for good, with four orders of magnitude to spare: information. In between: a warning.
HOT_ERROR_WRITES_PER_S = NODE_WRITES_PER_S / 100
HOT_WARNING_WRITES_PER_S = NODE_WRITES_PER_S / 10_000
# Patterns where a column holds one cell per row (a second version is a second event).
ONE_CELL_PATTERNS = ("TS-COLS", "TS-BLOB", "SHORT-WIDE", "LATEST", "QUALIFIER-DATA")
# Patterns whose rows keep receiving cells (versions or new columns) after they are created.
ACCUMULATING_PATTERNS = ("TB-CELL", "TB-COL", "LATEST", "VERSIONED", "SHORT-WIDE", "QUALIFIER-DATA")


def hot_prefix_severity(writes_per_s: float) -> str:
    """The severity of a key that sends ``writes_per_s`` to one tablet (see
    HOT_ERROR_WRITES_PER_S)."""
    if writes_per_s >= HOT_ERROR_WRITES_PER_S:
        return "error"
    if writes_per_s >= HOT_WARNING_WRITES_PER_S:
        return "warning"
    return "info"


def _milder(a: str, b: str) -> str:
    return min(a, b, key=SEVERITIES.index)


def _hot_load(rate: float, severity: str) -> str:
    """What the declared rate means for the one tablet taking every write."""
    share = rate / NODE_WRITES_PER_S
    text = (
        f"At the declared {rate_text(rate)} events/s that tablet takes {share:.2%} of one node's "
        f"{NODE_WRITES_PER_S:,} writes/s"
    )
    if severity == "info":
        return (
            f"{text}: harmless at this rate (under {HOT_WARNING_WRITES_PER_S:g} writes/s), but "
            "it hotspots if the workload grows."
        )
    if share > 1:
        return f"{text}: more than one node can take, and adding nodes does not help."
    return f"{text}."


def _how(guessed: bool) -> str:
    return (
        " (guessed from its name: give the field's kind in the schema file's advisor: section)"
        * guessed
    )


# -- the rules ----------------------------------------------------------------------------------


class _Checker:
    def __init__(self, decl: TableDecl, workload: Workload, declared_tables: int) -> None:
        self.decl = decl
        self.workload = workload
        self.declared_tables = declared_tables
        self.findings: list[Finding] = []
        self.key = decl.key.describe()

    def add(self, rule: str, severity: str, message: str) -> None:
        self.findings.append(Finding(self.decl.name, rule, severity, message, RULES[rule].spec))

    def kind(self, seg: Segment) -> tuple[str | None, bool]:
        """The kind of a key segment's field and whether it was only guessed from its name."""
        if seg.field is None:
            return None, False
        model = self.workload.fields.get(seg.field)
        if model is not None and model.kind is not None:
            return model.kind, False
        return guess_kind(seg.field), True

    def run(self) -> list[Finding]:
        for check in (
            self.leading_segment,
            self.narrow_prefix,
            self.unpadded,
            self.hashed,
            self.raw_bytes,
            self.pii,
            self.long_names,
            self.family_count,
            self.row_size,
            self.versions,
            self.gc,
            self.tables,
            self.salting,
        ):
            check()
        return self.findings

    def lead(self) -> tuple[int, Segment | None]:
        for index, seg in enumerate(self.decl.key.segments):
            if seg.kind != "const":
                return index, seg
        return -1, None

    def leading_segment(self) -> None:
        index, seg = self.lead()
        if seg is None:
            return
        rate = self.workload.events_per_s
        what = None
        if seg.kind == "reverse_ts":
            what = (
                f"a reversed timestamp ({seg.label}): the newest keys sort first, so every write "
                "of a moment goes to the tablet at the start of the key space"
            )
        elif seg.kind in TIME_KINDS:
            what = f"a timestamp ({seg.label})"
        else:
            kind, guessed = self.kind(seg)
            if kind == "monotonic" and seg.kind not in ("reverse_id", "salt"):
                what = f"{seg.label}, a value that grows with time{_how(guessed)}"
            elif kind == "sequential" and seg.kind in ("text", "zero_pad", "space_pad"):
                # Judged as if every write went to the newest IDs: the workload cannot say less.
                severity = _milder("warning" if guessed else "error", hot_prefix_severity(rate))
                self.add(
                    "HOT-SEQUENTIAL-ID",
                    severity,
                    f"key {self.key} starts with {seg.label}, a sequential numeric ID"
                    f"{_how(guessed)}: new IDs sort after every existing key, so the busiest "
                    "(newest) IDs all land on the last tablet. "
                    f"{_hot_load(rate, severity)} Reverse it (reverse_id: 12345 → 54321) or put "
                    "a higher-cardinality field first.",
                )
                return
        if what is None:
            return
        after = " after only constant segments" if index else ""
        severity = hot_prefix_severity(rate)
        self.add(
            "HOT-TIME-FIRST",
            severity,
            f"key {self.key} starts with {what}{after}. Every write of a moment goes to the "
            "tablet holding the newest keys, so one node takes all the writes whatever the "
            f"cluster size. {_hot_load(rate, severity)} Promote a high-cardinality field "
            "(host, user, meter…) in front of the time; salt only when no field can lead.",
        )

    def narrow_prefix(self) -> None:
        _, seg = self.lead()
        if seg is None or seg.kind in TIME_KINDS:
            return  # no key, or HOT-TIME-FIRST already says it
        prefix = 1
        names = []
        for s in self.decl.key.segments:
            if s.kind in TIME_KINDS:
                break
            if s.kind == "salt":
                prefix *= s.width or 1
                names.append(f"{s.width} salt buckets")
            elif s.kind != "const":
                card = self.workload.field(s.field).cardinality
                prefix *= card
                names.append(f"{card:,} {s.label}")
        else:
            return  # no time segment: nothing grows at the end of a prefix
        per_range = self.workload.events_per_s / prefix
        if per_range > NODE_WRITES_PER_S:
            self.add(
                "HOT-NARROW-PREFIX",
                "warning",
                f"key {self.key}: the time follows only {' × '.join(names)} = {prefix:,} "
                f"distinct prefixes; at {rate_text(self.workload.events_per_s)} events/s each "
                f"prefix's newest range takes {per_range:,.0f} writes/s, more than one node's "
                f"{NODE_WRITES_PER_S:,}. Put a higher-cardinality field before the time.",
            )

    def unpadded(self) -> None:
        for seg in self.decl.key.segments:
            if seg.kind not in ("text", "tenant"):
                continue
            kind, guessed = self.kind(seg)
            if kind in ("integer", "sequential"):
                self.add(
                    "KEY-UNPADDED-INT",
                    "warning",
                    f"key {self.key}: {seg.label} holds integers{_how(guessed)} as unpadded text, "
                    "so '10' sorts before '9' and numeric ranges are not contiguous. Zero-pad it "
                    "to its widest value (zero_padded(field, width)).",
                )

    def hashed(self) -> None:
        lead_index, _ = self.lead()
        for index, seg in enumerate(self.decl.key.segments):
            if seg.kind == "salt" and (seg.width or 1) > MAX_SALT_BUCKETS:
                what = f"a salt of {seg.width:,} buckets is a hash of the key"
            elif seg.kind in ("text", "tenant"):
                kind, guessed = self.kind(seg)
                if kind != "hash":
                    continue
                what = f"{seg.label} is a hash{_how(guessed)}"
            else:
                continue
            whole = index == lead_index
            self.add(
                "KEY-HASHED",
                "error" if whole else "warning",
                f"key {self.key}: {what}"
                + (
                    ", and it leads the key: keys sort in hash order, so no range or prefix "
                    "scan (a host's hour, a day) is possible, only single-row reads."
                    if whole
                    else ": ranges over the segments after it are scattered."
                )
                + " Keep readable segments; to spread writes promote a field or salt with a "
                "few buckets.",
            )

    def raw_bytes(self) -> None:
        texts = [("delimiter", self.decl.key.delimiter)] + [
            (f"constant {s.arg!r}", s.arg or "")
            for s in self.decl.key.segments
            if s.kind == "const"
        ]
        for what, text in texts:
            if not (text.isascii() and text.isprintable()):
                self.add(
                    "KEY-RAW-BYTES",
                    "error",
                    f"key {self.key}: the {what} is not printable ASCII. Raw bytes make keys "
                    "unreadable in tools and error-prone to build and compare; use readable text.",
                )
        for seg in self.decl.key.segments:
            kind, guessed = self.kind(seg)
            if kind == "bytes":
                self.add(
                    "KEY-RAW-BYTES",
                    "error",
                    f"key {self.key}: {seg.label} holds raw bytes{_how(guessed)}. Encode it as "
                    "readable text (hex, or a decimal id) before it goes in a key.",
                )

    def pii(self) -> None:
        for seg in self.decl.key.segments:
            kind, guessed = self.kind(seg)
            if kind == "pii":
                self.add(
                    "KEY-PII",
                    "error",
                    f"key {self.key}: {seg.label} looks like personal data{_how(guessed)}. Keys "
                    "and family names are not encrypted per field and show in logs, metrics and "
                    "Key Visualizer: key on an opaque id instead.",
                )
        for fam in self.decl.families:
            names = [("family", fam.name)] + [
                ("qualifier", q) for q in self.workload.family(fam.name).qualifiers
            ]
            for what, name in names:
                if looks_like_personal_data(name):
                    self.add(
                        "KEY-PII",
                        "error",
                        f"{what} {name!r} is personal data (an e-mail address or phone number): "
                        "names travel with every cell and show in metadata, logs and Key "
                        "Visualizer. Name columns by what they hold, not whose they are.",
                    )

    def long_names(self) -> None:
        for fam in self.decl.families:
            load = self.workload.family(fam.name)
            names = [("family", fam.name, load.qualifier_bytes)] + [
                ("qualifier", q, len(q.encode())) for q in load.qualifiers
            ]
            for what, name, qualifier_bytes in names:
                size = len(name.encode())
                overhead = len(fam.name.encode()) + qualifier_bytes
                if size > LONG_NAME_BYTES and overhead > load.value_bytes:
                    self.add(
                        "NAME-LONG",
                        "warning",
                        f"{what} {name!r} is {size} bytes: with its "
                        f"{'qualifier' if what == 'family' else 'family'} every cell carries "
                        f"{overhead} bytes of names for a ~{load.value_bytes}-byte value. Use a "
                        "short name (CELL, not CELLPHONE_NUMBER).",
                    )

    def family_count(self) -> None:
        if len(self.decl.families) > MAX_FAMILIES_PER_TABLE:
            self.add(
                "FAMILIES-TOO-MANY",
                "error",
                f"{len(self.decl.families)} column families: Bigtable advises at most "
                f"{MAX_FAMILIES_PER_TABLE} per table. Group what one query reads into one family.",
            )

    def row_size(self) -> None:
        est = estimate_row(self.decl, self.workload)
        if est.bytes <= ROW_ADVISED_BYTES:
            return
        unbounded = math.isinf(est.bytes)
        severity = "error" if unbounded or est.bytes > ROW_HARD_BYTES else "warning"
        verdict = (
            "grows without bound"
            if unbounded
            else f"reaches {human_bytes(est.bytes)}"
            + (" (past the 256 MB hard limit)" if est.bytes > ROW_HARD_BYTES else "")
        )
        self.add(
            "ROW-TOO-BIG",
            severity,
            f"a row {verdict}; keep rows under 100 MB. Declared workload: {est.detail} "
            f"({self.workload.source}). Use a smaller time bucket, a GC rule, or one row per "
            "event.",
        )

    def versions(self) -> None:
        timed = math.isfinite(bucket_seconds(self.decl))
        for fam in self.decl.families:
            if fam.aggregate:
                continue
            keeps = fam.max_versions if fam.max_versions else math.inf
            if not timed and keeps > 1:
                self.add(
                    "VERSIONS-FOR-EVENTS",
                    "error",
                    f"family {fam.name} keeps {count_text(keeps)} versions and the key "
                    f"{self.key} has no time segment: every new event of a row's entity "
                    "becomes another version "
                    "of its columns. Write a new row per event (a time segment in the key); keep "
                    "versions for corrections of one value.",
                )
            elif keeps > 1 and fam.max_versions and self.decl.pattern in ONE_CELL_PATTERNS:
                self.add(
                    "VERSIONS-FOR-EVENTS",
                    "warning",
                    f"family {fam.name} keeps {fam.max_versions} versions in a "
                    f"{self.decl.pattern} table, where a column holds one cell per row: extra "
                    "versions can only be new events written over old ones. Write a new row "
                    "per event; versions are for corrections (pattern VERSIONED).",
                )

    def gc(self) -> None:
        timed = math.isfinite(bucket_seconds(self.decl))
        for fam in self.decl.families:
            if fam.aggregate or fam.max_versions or fam.max_age:
                continue
            if timed and self.decl.pattern not in ACCUMULATING_PATTERNS:
                continue  # one event per row: nothing piles up
            why = (
                "docs/patterns.md §4: a new-cell-per-event family needs a GC rule that keeps at "
                "least one bucket's cells and no more"
                if self.decl.pattern == "TB-CELL"
                else f"cells accumulate in {self.decl.pattern} rows"
            )
            self.add(
                "GC-MISSING",
                "warning" if timed else "error",
                f"family {fam.name} has no GC rule ({why}): every cell written is kept forever"
                + ("" if timed else " in rows that never close")
                + ". Set max_versions (one bucket's events) and/or max_age on the family.",
            )

    def tables(self) -> None:
        match = re.search(r"_(\d{4}|\d{6}|\d{8}|\d{4}_?W\d{2})$", self.decl.name)
        if match:
            self.add(
                "TABLES-GROWTH",
                "warning",
                f"table name {self.decl.name} ends with a period ({match.group(1)}): one table "
                "per day/month/year counts against the 1,000 tables of an instance. Put the "
                "period in the key of one table.",
            )
        for derived in self.workload.derived:
            if derived.keep is None:
                years = (MAX_TABLES_PER_INSTANCE - self.declared_tables) / derived.per_year
                stop = (
                    f"the job refuses new tables at {derived.guard:,}, so it stops working"
                    if derived.guard
                    else "then table creation fails"
                )
                self.add(
                    "TABLES-GROWTH",
                    "warning" if derived.guard else "error",
                    f"{derived.name}: {derived.per_year:g} new tables a year and no retention "
                    f"reach the {MAX_TABLES_PER_INSTANCE:,}-table limit in {years:.1f} years "
                    f"({stop}). Keep a bounded number ({derived.note}).",
                )
                continue
            total = derived.keep + self.declared_tables
            if total > 0.8 * MAX_TABLES_PER_INSTANCE:
                self.add(
                    "TABLES-GROWTH",
                    "error" if total > MAX_TABLES_PER_INSTANCE else "warning",
                    f"{derived.name}: keeping {derived.keep:,} tables plus "
                    f"{self.declared_tables} declared ones makes {total:,} of the "
                    f"{MAX_TABLES_PER_INSTANCE:,} an instance allows ({derived.note}). Keep "
                    "fewer or use one table keyed by the period.",
                )

    def salting(self) -> None:
        segments = self.decl.key.segments
        salts = [
            i
            for i, s in enumerate(segments)
            if s.kind == "salt" and (s.width or 1) <= MAX_SALT_BUCKETS
        ]
        if not salts:
            return
        # The entity fields after the first salt, then the fields every main query knows.
        after = entity_fields(segments[salts[0] + 1 :])
        candidates = [
            name
            for name in dict.fromkeys([*after, *self.workload.query_fields])
            if self.workload.field(name).cardinality >= PROMOTABLE_CARDINALITY
        ]
        if candidates:
            shown = ", ".join(
                f"{n.upper()} ({self.workload.field(n).cardinality:,} values)" for n in candidates
            )
            self.add(
                "SALT-PROMOTABLE",
                "warning",
                f"key {self.key} is salted, but {shown} could lead the key instead: field "
                "promotion spreads writes just as well and keeps one contiguous range per query, "
                "while a salted read fans out over every bucket. Salt only when no field can be "
                "promoted.",
            )


def lint(
    decl: TableDecl, hints: Hints | None = None, declared_tables: int | None = None
) -> list[Finding]:
    """Every finding for one declaration, with its acknowledgement status from the hints."""
    hints = hints if hints is not None else hints_for(decl.name)
    if declared_tables is None:
        declared_tables = len(builtin_tables.all_tables())
    out = []
    for f in _Checker(decl, hints.workload, declared_tables).run():
        if f.rule in hints.acknowledged:
            f = replace(f, status="acknowledged", reason=hints.acknowledged[f.rule])
        elif hints.anti_pattern:
            f = replace(f, status="anti-pattern", reason=hints.anti_pattern)
        out.append(f)
    return out


def lint_all(decls: Iterable[TableDecl] | None = None) -> dict[str, list[Finding]]:
    """Findings per table for these declarations (default: every shipped one)."""
    declared = builtin_tables.all_tables()
    chosen = list(declared.values()) if decls is None else list(decls)
    return {d.name: lint(d, declared_tables=len(declared)) for d in chosen}


def lint_schema(schema, tables: Sequence[str] | None = None) -> dict[str, list[Finding]]:
    """Findings per table of a loaded schema file (:class:`transforms.schema.Schema`),
    judged against its own ``advisor:`` workload."""
    chosen = [schema.table(t).decl for t in tables] if tables else list(schema.decls().values())
    return {
        d.name: lint(d, hints_from_advisor(schema.advisor, d.name), len(schema.tables))
        for d in chosen
    }
