"""Table declarations as data (docs/patterns.md §2).

One declaration per table says its name, its column families with their GC rules, its row-key
recipe and its column pattern. From it the code builds keys, creates the table, computes query
ranges, and the advisor checks it: nothing about a table is written down twice.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from transforms import limits
from transforms.errors import InvalidEvent, Undeclared
from transforms.text import keys, timefmt

__all__ = [
    "BUCKET_UNITS",
    "CELL_TIMESTAMPS",
    "EPOCH_KEY_KINDS",
    "FREE_TEXT_KINDS",
    "PATTERNS",
    "TIME_FORMATS",
    "TIME_KINDS",
    "Family",
    "KeyRecipe",
    "Segment",
    "TableDecl",
    "bucket_start_ms",
    "cell_micros",
    "segment_builder",
]

PATTERNS = {
    "TS-COLS": "single timestamp per row, one column per measurement",
    "TS-BLOB": "single timestamp per row, the event serialized as one protobuf cell",
    "TB-COL": "time bucket per row, a new column per event (qualifier is the value)",
    "TB-CELL": "time bucket per row, a new timestamped cell per event in fixed columns",
    "SHORT-WIDE": "bounded short-wide row (one row per period, one column per sub-period)",
    "LATEST": "one row per entity overwritten in place; the family keeps one version",
    "VERSIONED": "one row per entity and period; corrections are newer versions of a cell",
    "QUALIFIER-DATA": "qualifiers are data (one column per related entity)",
    "AGGREGATE": "aggregate cells updated with AddToCell",
}


@dataclass(frozen=True)
class Family:
    """A column family. GC rules: ``max_versions`` and ``max_age`` (both set = keep a cell only
    while it satisfies both, i.e. Bigtable's union of the two deletion rules). ``aggregate`` makes
    the family an aggregate (``"sum"`` over int64) written with AddToCell."""

    name: str
    max_versions: int | None = None
    max_age: dt.timedelta | None = None
    aggregate: str | None = None
    doc: str = ""

    def gc_description(self) -> str:
        parts = []
        if self.max_versions:
            parts.append(f"max {self.max_versions} version(s)")
        if self.max_age:
            parts.append(f"max age {self.max_age}")
        if self.aggregate:
            parts.append(f"aggregate {self.aggregate}(int64)")
        return " or ".join(parts) if parts else "keep everything"


@dataclass(frozen=True)
class Segment:
    """One row-key segment. ``kind`` names a builder of :func:`segment_builder`; ``field`` names
    the event field it reads (unused for ``const``); ``width``/``arg`` parameterise it."""

    kind: str
    field: str | None = None
    width: int | None = None
    arg: str | None = None
    of: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        if self.kind == "const":
            return self.arg or ""
        return (self.field or self.kind).upper()


TIME_FORMATS: dict[str, Callable[[int], str]] = {
    "hour": timefmt.hour_label,
    "day": timefmt.day_label,
    "week": timefmt.iso_week_label,
    "month": timefmt.month_label,
    "minute": timefmt.minute_label,
    "yyyymmdd": timefmt.compact_day,
    "yyyymm": timefmt.compact_month,
    "yyyymmddhhmmssmmm": timefmt.compact_millis,
}


BUCKET_UNITS = ("hour", "day", "week", "month")
# How a table's cell timestamps hold event times (docs/user-guide.md "Times before 1970").
# Bigtable keeps cell timestamps > 0, so ``unix`` (µs since 1970, the default) holds no earlier
# time; ``offset`` counts µs since 0001-01-01T00:00Z and holds every time a field may declare
# (from 0001-01-02: timefmt.MIN_EPOCH_MS) as a timestamp > 0.
CELL_TIMESTAMPS = ("unix", "offset")


def cell_micros(ms: int, cell_timestamp: str = "unix") -> int:
    """The cell timestamp (µs) stamping event time ``ms`` in a table of ``cell_timestamp``:
    every writer goes through it (or :meth:`TableDecl.cell_micros`)."""
    if cell_timestamp == "unix":
        return ms * 1000
    if cell_timestamp == "offset":
        return (ms - timefmt.YEAR_ONE_MS) * 1000
    raise ValueError(f"unknown cell_timestamp {cell_timestamp!r}; use one of {CELL_TIMESTAMPS}")


def event_ms(micros: int, cell_timestamp: str = "unix") -> int:
    """The event time (epoch ms) of a cell timestamp read back: the inverse of
    :func:`cell_micros`, which every reader goes through."""
    if cell_timestamp == "unix":
        return micros // 1000
    if cell_timestamp == "offset":
        return micros // 1000 + timefmt.YEAR_ONE_MS
    raise ValueError(f"unknown cell_timestamp {cell_timestamp!r}; use one of {CELL_TIMESTAMPS}")


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def bucket_start_ms(ms: int, unit: str, tz: dt.tzinfo = timefmt.UTC) -> int:
    """Epoch ms of the first instant of the hour, day, ISO week (Monday) or month holding
    ``ms`` in ``tz``: the row of a reversed bucket key, the stamp of an aggregate cell."""
    local = timefmt.to_datetime(ms, tz)
    if unit == "hour":
        start = local.replace(minute=0, second=0, microsecond=0)
    elif unit in ("day", "week"):
        day = local.date() - dt.timedelta(days=local.weekday() if unit == "week" else 0)
        start = dt.datetime.combine(day, dt.time(), tzinfo=tz)
    elif unit == "month":
        start = dt.datetime(local.year, local.month, 1, tzinfo=tz)
    else:
        raise ValueError(f"unknown bucket {unit!r}; use one of {list(BUCKET_UNITS)}")
    return (start - _EPOCH) // dt.timedelta(milliseconds=1)


SegmentBuilder = Callable[[Mapping[str, object], dt.tzinfo], str]


def segment_builder(seg: Segment) -> SegmentBuilder:
    """Compile one segment to a function of the event's values and the zone of its calendar
    labels (done once per declaration).
    Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
    name = seg.field
    if seg.kind == "const":
        value = keys.check_segment(seg.arg or "", "constant segment")
        return lambda values, tz: value
    if seg.kind == "text":
        return lambda values, tz: values[name]
    if seg.kind == "tenant":  # normalised, look-alikes refused: one tenant, one prefix
        what = f"field {name!r}"
        return lambda values, tz: keys.tenant_id(values[name], what=what)
    if seg.kind == "epoch_ms":
        return lambda values, tz: keys.epoch_ms(values[name])
    if seg.kind == "reverse_ts":
        if seg.arg:
            unit = seg.arg
            return lambda values, tz: keys.reverse_timestamp(
                bucket_start_ms(values[name], unit, tz)
            )
        return lambda values, tz: keys.reverse_timestamp(values[name])
    if seg.kind == "zero_pad":
        width = seg.width
        return lambda values, tz: keys.zero_pad(values[name], width)
    if seg.kind == "space_pad":
        width = seg.width

        def space_pad(values: Mapping[str, object], tz: dt.tzinfo) -> str:
            """Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
            text = values[name]
            if len(text) > width:  # name the field: the key alone does not say which
                raise InvalidEvent(f"field {name!r}: {text!r} is longer than {width} characters")
            return text.ljust(width)

        return space_pad
    if seg.kind == "time":
        fmt = TIME_FORMATS[seg.arg]
        return lambda values, tz: fmt(values[name], tz)
    if seg.kind == "reverse_id":

        def reverse_id(values: Mapping[str, object], tz: dt.tzinfo) -> str:
            """Raises InvalidEvent (a DataError: the record's dead-letter reason)."""
            text = str(values[name])
            if not text.isascii() or not text.isdigit():  # name the field, as space_pad does
                raise InvalidEvent(f"field {name!r}: expected a numeric id, got {text[:40]!r}")
            return text[::-1]

        return reverse_id
    if seg.kind == "reverse_domain":
        return lambda values, tz: keys.reverse_domain(values[name])
    raise ValueError(f"unknown key segment kind {seg.kind!r}")


# Segment kinds holding the event time (a row per time bucket; a range of them is a time range).
TIME_KINDS = ("epoch_ms", "time", "reverse_ts")
# Of those, the ones holding the time as digits counted from 1970: no earlier time fits them.
EPOCH_KEY_KINDS = ("epoch_ms", "reverse_ts")
FREE_TEXT_KINDS = frozenset({"text", "tenant", "space_pad", "reverse_id", "reverse_domain"})


@dataclass(frozen=True)
class KeyRecipe:
    """An ordered list of segments joined by the delimiter."""

    segments: tuple[Segment, ...]
    delimiter: str = keys.DELIMITER
    _compiled: tuple = field(default=(), init=False, repr=False, compare=False)
    _checked: tuple = field(default=(), init=False, repr=False, compare=False)
    _salt_at: int = field(default=-1, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        builders = []
        for index, seg in enumerate(self.segments):
            if seg.kind == "salt":
                builders.append(None)  # filled from the other segments' text in build()
            else:
                builders.append(segment_builder(seg))
            if seg.kind == "tenant" and index != 0:
                raise ValueError("a tenant segment must come first")
        object.__setattr__(self, "_compiled", tuple(builders))
        # Segments whose text comes from the event need checking; built ones (digits, labels,
        # constants checked above) cannot hold a delimiter or a control character.
        checked = tuple(
            (index, f"field {seg.field!r}" if seg.field else "key")
            for index, seg in enumerate(self.segments)
            if seg.kind in FREE_TEXT_KINDS
        )
        object.__setattr__(self, "_checked", checked)
        object.__setattr__(self, "_salt_at", builders.index(None) if None in builders else -1)

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(s.field for s in self.segments if s.field)

    def build(self, values: Mapping[str, object], tz: dt.tzinfo = timefmt.UTC) -> bytes:
        """The row key for one event's values; calendar labels (days, hours…) are in ``tz``.
        Raises :class:`InvalidEvent` for bad values. (The hot path: one call per row.)"""
        salt_at = self._salt_at
        try:
            if salt_at < 0:
                parts = [builder(values, tz) for builder in self._compiled]
            else:  # the salt's text comes from the other segments, filled in below
                parts = [b(values, tz) if b is not None else "" for b in self._compiled]
        except KeyError as missing:
            raise InvalidEvent(f"key field {missing} has no value") from None
        delimiter = self.delimiter
        for index, name in self._checked:
            part = parts[index]
            # Cheap test first; check_segment says precisely what is wrong.
            if not part or delimiter in part or not part.isprintable():
                keys.check_segment(part, name, delimiter)
        if salt_at >= 0:
            seg = self.segments[salt_at]
            by_field = {s.field: p for s, p in zip(self.segments, parts, strict=True) if s.field}
            material = delimiter.join(by_field[f] for f in seg.of)
            parts[salt_at] = keys.salt(material, seg.width or 1)
        key = delimiter.join(parts).encode("utf-8")
        if len(key) > limits.MAX_ROW_KEY_BYTES:
            keys.check_key_size(key)
        return key

    def describe(self) -> str:
        out = []
        for seg in self.segments:
            if seg.kind == "salt":
                out.append(f"<salt {seg.width} of {'+'.join(f.upper() for f in seg.of)}>")
            else:
                out.append(seg.label)
        return self.delimiter.join(out)


@dataclass(frozen=True)
class TableDecl:
    name: str
    families: tuple[Family, ...]
    key: KeyRecipe
    pattern: str
    doc: str = ""
    spec: str = ""
    cell_timestamp: str = "unix"  # one of CELL_TIMESTAMPS: how cell timestamps hold times

    def __post_init__(self) -> None:
        if self.cell_timestamp not in CELL_TIMESTAMPS:
            choices = ", ".join(CELL_TIMESTAMPS)
            raise ValueError(f"cell_timestamp is one of {choices}, not {self.cell_timestamp!r}")

    def cell_micros(self, ms: int) -> int:
        """The timestamp (µs) of this table's cells for event time ``ms``."""
        return cell_micros(ms, self.cell_timestamp)

    def event_ms(self, micros: int) -> int:
        """The event time (epoch ms) of one of this table's cell timestamps."""
        return event_ms(micros, self.cell_timestamp)

    def family(self, name: str) -> Family:
        """Raises Undeclared (a UserError naming the names there are)."""
        for fam in self.families:
            if fam.name == name:
                return fam
        raise Undeclared(f"{self.name} has no family {name!r}")

    def row_key(self, values: Mapping[str, object], tz: dt.tzinfo = timefmt.UTC) -> bytes:
        return self.key.build(values, tz)
