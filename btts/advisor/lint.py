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
``--fail-on``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from btts.admin import MAX_TABLES_PER_INSTANCE as MAX_TABLES
from btts.advisor import workload as workload_mod
from btts.advisor.workload import NODE_WRITES_PER_S, Hints, Workload
from transforms import builtin_tables
from transforms.table_model import Segment, TableDecl

SEVERITIES = ("info", "warning", "error")

# Bigtable's limits and the guidance's budgets (docs/patterns.md §3 rule 7).
ROW_ADVISED_BYTES = 100 * 1024 * 1024
ROW_HARD_BYTES = 256 * 1024 * 1024
KEY_BYTES = 4 * 1024
MAX_FAMILIES = 100
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
# Bigtable cells carry a timestamp of this many bytes besides their family, qualifier, value.
CELL_OVERHEAD_BYTES = 8

TIME_KINDS = ("epoch_ms", "reverse_ts", "time")
BUCKET_SECONDS = {
    "epoch_ms": 0.001,
    "reverse_ts": 0.001,
    "yyyymmddhhmmssmmm": 0.001,
    "minute": 60,
    "hour": 3600,
    "day": 86400,
    "yyyymmdd": 86400,
    "week": 7 * 86400,
    "month": 31 * 86400,
    "yyyymm": 31 * 86400,
}
# Patterns where a column holds one cell per row (a second version is a second event).
ONE_CELL_PATTERNS = ("TS-COLS", "TS-BLOB", "SHORT-WIDE", "LATEST", "QUALIFIER-DATA")
# Patterns whose rows keep receiving cells (versions or new columns) after they are created.
ACCUMULATING_PATTERNS = ("TB-CELL", "TB-COL", "LATEST", "VERSIONED", "SHORT-WIDE", "QUALIFIER-DATA")


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    spec: str


RULES = {
    r.id: r
    for r in (
        Rule("HOT-TIME-FIRST", "key starts with a timestamp or another increasing value", "3.5"),
        Rule("HOT-SEQUENTIAL-ID", "key starts with a sequential numeric ID", "3.5, 3.10"),
        Rule("HOT-NARROW-PREFIX", "too few distinct prefixes in front of the time", "3.5"),
        Rule("KEY-UNPADDED-INT", "integer key segment without zero padding", "3.10"),
        Rule("KEY-HASHED", "hashed key (no range scans)", "3.10"),
        Rule("KEY-RAW-BYTES", "raw bytes in the key", "3.10"),
        Rule("KEY-PII", "personal data in a key, family or qualifier name", "3.10"),
        Rule("NAME-LONG", "long family or qualifier name", "3.1"),
        Rule("FAMILIES-TOO-MANY", "more than 100 column families", "3.7"),
        Rule("ROW-TOO-BIG", "rows can outgrow 100 MB", "3.7, 3.2"),
        Rule("VERSIONS-FOR-EVENTS", "column versions used for new events", "3.3"),
        Rule("GC-MISSING", "no GC rule where cells accumulate", "3.8, 4"),
        Rule("TABLES-GROWTH", "tables per day/tenant growing toward 1,000", "3.11, 3.7"),
        Rule("SALT-PROMOTABLE", "salting where field promotion would do", "3.5"),
    )
}


@dataclass(frozen=True)
class Finding:
    table: str
    rule: str
    severity: str
    message: str
    spec: str
    status: str = "open"  # open | acknowledged | anti-pattern
    reason: str = ""

    @property
    def is_open(self) -> bool:
        return self.status == "open"


# -- field kinds from names ---------------------------------------------------------------------

_PII_WORDS = {
    "email", "mail", "phone", "mobile", "msisdn", "ssn", "passport", "address", "street",
    "birthday", "birthdate", "dob", "iban", "surname", "firstname", "lastname", "fullname",
    "username", "cellphone",
}  # fmt: skip
# "<thing>_name" is a person's name unless the thing is not a person.
_NOT_PERSONS = {
    "host", "domain", "file", "table", "metric", "column", "field", "device", "product", "app",
    "service", "server", "site", "node", "game", "kind", "type", "reading", "sensor",
    "location", "event", "family",
}  # fmt: skip
_HASH_WORDS = {"hash", "md5", "sha", "sha1", "sha256", "digest", "checksum"}
_BYTES_WORDS = {"bytes", "raw", "binary", "bin", "blob"}
_SEQUENTIAL_WORDS = {"id", "seq", "sequence", "serial"}
_INTEGER_WORDS = {"num", "number", "no", "count", "index", "idx"}
_MONOTONIC_WORDS = {"ts", "time", "timestamp", "datetime", "date", "version", "counter"}


def name_tokens(name: str) -> list[str]:
    """``userEmail`` / ``user_email`` / ``USER-EMAIL`` → ``["user", "email"]``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return [t for t in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if t]


def guess_kind(name: str) -> str | None:
    """What a field's name suggests it holds, or None when it says nothing."""
    tokens = name_tokens(name)
    if not tokens:
        return None
    if any(t in _PII_WORDS for t in tokens):
        return "pii"
    for before, token in zip([None, *tokens], tokens, strict=False):
        if token == "name" and before not in _NOT_PERSONS:
            return "pii"
    if any(t in _HASH_WORDS for t in tokens):
        return "hash"
    if any(t in _BYTES_WORDS for t in tokens):
        return "bytes"
    if tokens[-1] in _SEQUENTIAL_WORDS:
        return "sequential"
    if any(t in _INTEGER_WORDS for t in tokens):
        return "integer"
    if any(t in _MONOTONIC_WORDS for t in tokens):
        return "monotonic"
    return None


_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}")
_PHONE = re.compile(r"\+?[0-9][0-9 ().-]{6,}")


def looks_like_personal_data(name: str) -> bool:
    """A family or qualifier *name* that is itself personal data (the words of a field name say
    what a key segment holds; a column named EMAIL holds e-mails but is not one)."""
    if _EMAIL.search(name):
        return True
    return bool(_PHONE.fullmatch(name.strip())) and sum(c.isdigit() for c in name) >= 7


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
        f"At the declared {_rate(rate)} events/s that tablet takes {share:.2%} of one node's "
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


# -- row growth ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RowEstimate:
    """The largest row the declared workload makes: events it receives, cells it keeps, bytes."""

    events: float
    cells: float
    bytes: float
    detail: str


def bucket_seconds(decl: TableDecl) -> float:
    """How long one row keeps receiving events: its finest time segment (inf when none)."""
    spans = [
        BUCKET_SECONDS[seg.arg if seg.kind == "time" else seg.kind]
        for seg in decl.key.segments
        if seg.kind in TIME_KINDS
    ]
    return min(spans) if spans else math.inf


def entity_fields(segments: Sequence[Segment]) -> list[str]:
    """Key fields that name an entity (not time, salt or constant), each once, in key order."""
    out: list[str] = []
    for seg in segments:
        if seg.kind not in (*TIME_KINDS, "const", "salt") and seg.field not in out:
            out.append(seg.field)
    return out


def estimate_row(decl: TableDecl, workload: Workload) -> RowEstimate:
    entities = math.prod(workload.field(f).cardinality for f in entity_fields(decl.key.segments))
    row_rate = workload.events_per_s / entities
    lifetime = bucket_seconds(decl)
    events = row_rate * lifetime if math.isfinite(lifetime) else math.inf
    cells_total = 0.0
    size = 0.0
    parts = []
    for fam in decl.families:
        load = workload.family(fam.name)
        if fam.aggregate:  # AddToCell merges a column's inputs of one timestamp into one cell
            cells = load.columns if load.columns else max(1.0, events) * load.cells_per_event
        else:
            window = lifetime
            if fam.max_age:
                window = min(window, fam.max_age.total_seconds())
            arriving = row_rate * window * load.cells_per_event if math.isfinite(window) else None
            cells = math.inf if arriving is None else max(load.cells_per_event, arriving)
            if fam.max_versions and load.columns is not None:
                cells = min(cells, load.columns * fam.max_versions)
        cell_bytes = len(fam.name) + load.qualifier_bytes + load.value_bytes + CELL_OVERHEAD_BYTES
        cells_total += cells
        size += cells * cell_bytes
        parts.append(f"{fam.name}: {_count(cells)} cells × {cell_bytes} B")
    detail = (
        f"{_rate(workload.events_per_s)} events/s over {_count(entities)} rows alive at once, "
        f"a row open for {_span(lifetime)} → {_count(events)} events a row; " + "; ".join(parts)
    )
    return RowEstimate(events, cells_total, size, detail)


def _count(x: float) -> str:
    return "unbounded" if math.isinf(x) else _rate(x)


def _rate(x: float) -> str:
    return f"{x:,.0f}" if x >= 10 else f"{x:.2g}"


def _span(seconds: float) -> str:
    if math.isinf(seconds):
        return "ever (no time segment)"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)):
        if seconds >= size:
            n = seconds / size
            return f"{n:g} {unit}{'s' * (n != 1)}"
    return f"{seconds * 1000:g} ms"


def human_bytes(n: float) -> str:
    if math.isinf(n):
        return "unbounded"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


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
                f"distinct prefixes; at {_rate(self.workload.events_per_s)} events/s each prefix's "
                f"newest range takes {per_range:,.0f} writes/s, more than one node's "
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
        if len(self.decl.families) > MAX_FAMILIES:
            self.add(
                "FAMILIES-TOO-MANY",
                "error",
                f"{len(self.decl.families)} column families: Bigtable advises at most "
                f"{MAX_FAMILIES} per table. Group what one query reads into one family.",
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
                    f"family {fam.name} keeps {_count(keeps)} versions and the key {self.key} has "
                    "no time segment: every new event of a row's entity becomes another version "
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
                years = (MAX_TABLES - self.declared_tables) / derived.per_year
                stop = (
                    f"the job refuses new tables at {derived.guard:,}, so it stops working"
                    if derived.guard
                    else "then table creation fails"
                )
                self.add(
                    "TABLES-GROWTH",
                    "warning" if derived.guard else "error",
                    f"{derived.name}: {derived.per_year:g} new tables a year and no retention "
                    f"reach the {MAX_TABLES:,}-table limit in {years:.1f} years ({stop}). Keep "
                    f"a bounded number ({derived.note}).",
                )
                continue
            total = derived.keep + self.declared_tables
            if total > 0.8 * MAX_TABLES:
                self.add(
                    "TABLES-GROWTH",
                    "error" if total > MAX_TABLES else "warning",
                    f"{derived.name}: keeping {derived.keep:,} tables plus "
                    f"{self.declared_tables} declared ones makes {total:,} of the "
                    f"{MAX_TABLES:,} an instance allows ({derived.note}). Keep fewer or use one "
                    "table keyed by the period.",
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
    hints = hints if hints is not None else workload_mod.hints_for(decl.name)
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


def failing(findings: Iterable[Finding], fail_on: str = "warning") -> list[Finding]:
    """Open findings at or above ``fail_on`` (``never``: none)."""
    if fail_on == "never":
        return []
    floor = SEVERITIES.index(fail_on)
    return [f for f in findings if f.is_open and SEVERITIES.index(f.severity) >= floor]


def format_report(
    results: dict[str, list[Finding]], decls: dict[str, TableDecl], fail_on: str = "warning"
) -> str:
    """The human report: one block per table, acknowledged findings with their reason."""
    lines = []
    for name, findings in results.items():
        decl = decls[name]
        head = f"{name}  key {decl.key.describe()}  [{decl.pattern}]"
        if not findings:
            lines.append(f"ok    {head}")
            continue
        status = "FAIL" if failing(findings, fail_on) else "note"
        lines.append(f"{status}  {head}")
        for f in findings:
            lines.append(
                f"      {f.severity.upper():<7} {f.rule} (docs/patterns.md §{f.spec}): {f.message}"
            )
            if f.status != "open":
                lines.append(f"              [{f.status}] {f.reason}")
    every = [f for fs in results.values() for f in fs]
    bad = failing(every, fail_on)
    counts = {s: sum(1 for f in every if f.is_open and f.severity == s) for s in SEVERITIES}
    lines.append(
        f"{len(results)} tables: {counts['error']} open errors, {counts['warning']} open "
        f"warnings, {sum(1 for f in every if f.status == 'acknowledged')} acknowledged, "
        f"{sum(1 for f in every if f.status == 'anti-pattern')} on documented anti-patterns"
        f" → {'FAIL' if bad else 'pass'} (--fail-on {fail_on})"
    )
    return "\n".join(lines)


def rules_table() -> Sequence[Rule]:
    return tuple(RULES.values())


def lint_schema(schema, tables: Sequence[str] | None = None) -> dict[str, list[Finding]]:
    """Findings per table of a loaded schema file (:class:`transforms.schema_file.Schema`),
    judged against its own ``advisor:`` workload."""
    chosen = [schema.table(t).decl for t in tables] if tables else list(schema.decls().values())
    return {
        d.name: lint(d, workload_mod.hints_from_advisor(schema.advisor, d.name), len(schema.tables))
        for d in chosen
    }
