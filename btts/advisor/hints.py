"""What the declarations do not say, modelled per table for the advisor.

A :class:`~transforms.schema.TableDecl` holds a table's key recipe and families, but not how hard
it is written, how many distinct values each key field takes, whether a numeric field is assigned
sequentially, how many columns a row holds, or which findings are deliberate. The advisor needs
those to judge hotspots and row growth, so they are modelled here, one :class:`Hints` per table,
with defaults taken from the SPEC's worked examples (SPEC §5: 100,000 hosts every 5 s, 10,000,000
meters every 15 min, …) or, where the SPEC gives no number, a stated assumption.

Everything here is meant to move into the declarations later (a ``workload=`` and an
``acknowledge=`` argument of ``declare``); until then :func:`hints_for` is the one place to look.

Field cardinality is *nested*: the number of distinct values of a field under one value of the key
fields before it (50 balloons per location), so the product over a key's fields is the number of
distinct rows alive at one moment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# Writes per second one SSD node sustains (Bigtable's published figure for small rows).
NODE_WRITES_PER_S = 14_000

# What a field's values are, when its name does not say (FieldModel.kind).
FIELD_KINDS = {
    "label": "an identifier compared for equality only (text, or a number used as given)",
    "integer": "an integer whose numeric order matters: it must be zero-padded in keys",
    "sequential": "an integer assigned in increasing order; the newest values are the busiest",
    "monotonic": "a value that grows with time (a timestamp, a counter, a version)",
    "hash": "a hash of other values: no meaningful order",
    "bytes": "raw binary data",
    "pii": "personal data (e-mail, phone number, a person's name…)",
}


@dataclass(frozen=True)
class FieldModel:
    """One key field: how many distinct values it takes (under one value of the fields before
    it) and what kind of value it is (``None``: guessed from its name)."""

    cardinality: int = 1000
    kind: str | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if self.kind is not None and self.kind not in FIELD_KINDS:
            raise ValueError(f"unknown field kind {self.kind!r}; use one of {sorted(FIELD_KINDS)}")
        if self.cardinality < 1:
            raise ValueError("a field's cardinality is at least 1")


@dataclass(frozen=True)
class FamilyLoad:
    """What one event writes into a family, and how many columns a row of it can hold
    (``columns=None``: unbounded, the qualifiers are data)."""

    cells_per_event: float = 1.0
    columns: int | None = 1
    qualifier_bytes: int = 8
    value_bytes: int = 8
    qualifiers: tuple[str, ...] = ()


@dataclass(frozen=True)
class DerivedTables:
    """Tables a job creates from a declaration over time (one per day, per tenant…)."""

    name: str
    per_year: float
    keep: int | None
    guard: int | None
    note: str = ""


@dataclass(frozen=True)
class Workload:
    """How a table is written: events per second, its key fields, its families' cells."""

    events_per_s: float = 1000.0
    fields: Mapping[str, FieldModel] = field(default_factory=dict)
    families: Mapping[str, FamilyLoad] = field(default_factory=dict)
    # Fields every main query of the table knows, so they could lead the key (promotion).
    query_fields: tuple[str, ...] = ()
    derived: tuple[DerivedTables, ...] = ()
    source: str = "assumed: no model for this table"

    def field(self, name: str) -> FieldModel:
        return self.fields.get(name, FieldModel())

    def family(self, name: str) -> FamilyLoad:
        return self.families.get(name, FamilyLoad())


@dataclass(frozen=True)
class Hints:
    """A table's workload, the findings it accepts (rule id → reason) and, for a documented
    anti-pattern kept for demonstrations, why it exists."""

    workload: Workload = field(default_factory=Workload)
    acknowledged: Mapping[str, str] = field(default_factory=dict)
    anti_pattern: str = ""


# -- the shipped tables -------------------------------------------------------------------------

_HOSTS = 100_000
_METRIC_RATE = _HOSTS / 5  # SPEC §5.2: 100,000 machines every 5 seconds
_METRICS = FamilyLoad(cells_per_event=100, columns=100, qualifier_bytes=12, value_bytes=9)
_HOST = FieldModel(_HOSTS, "label", "SPEC §5.2: 100,000 machines")

_METERS = 10_000_000
_METER_RATE = _METERS / 900  # SPEC §5.3: 10,000,000 meters, one reading every 15 minutes
_METER = FieldModel(_METERS, "integer", "SPEC §5.3: numeric meter ids, zero-padded to 10 digits")
_METER_ROW = FamilyLoad(cells_per_event=2, columns=97, qualifier_bytes=4, value_bytes=6)
_SENSOR_COPIES = DerivedTables(
    "SENSOR_YYYYMMDD",
    per_year=365,
    keep=30,
    guard=990,
    note="the nightly job's per_day_table layout, scheduled with --keep_days=30 "
    "(templates/nightly) and refusing to create a table once the instance holds 990",
)

_PHONES = 1_000_000
_BATTERY = Workload(
    events_per_s=_PHONES / 60,
    fields={
        "user": FieldModel(_PHONES, "label", "assumed: a million phones"),
    },
    families={"METRIC": FamilyLoad(cells_per_event=2, columns=2, value_bytes=6)},
    source="assumed (SPEC §5.4 gives no rate): a million phones reporting once a minute, "
    "more than one node's 14,000 writes/s",
)

_BALLOON_FIELDS = {
    "location": FieldModel(20, "label", "assumed: 20 regions"),
    "balloon_id": FieldModel(
        50,
        "label",
        "ids may be text or numbers (transforms.weather_balloons); SPEC §4 keeps them as given "
        "(us-west2#3698#…) and queries match them exactly",
    ),
    "metric": FieldModel(4, "label", "pressure, temperature, humidity, altitude"),
}
_BALLOON_RATE = 1000 / 60  # assumed: 1,000 balloons, one event a minute (SPEC §4)
_BALLOON_SOURCE = "SPEC §4: one event a minute per balloon; assumed 1,000 balloons"

_WORKLOADS: dict[str, Workload] = {
    "METRIC": Workload(
        _METRIC_RATE,
        {"hostname": _HOST},
        {"METRIC": _METRICS},
        query_fields=("hostname",),
        source="SPEC §5.2: 100,000 machines × 100 metrics every 5 s",
    ),
    "CURRENT_METRIC": Workload(
        _METRIC_RATE,
        {"hostname": _HOST},
        {"METRIC": _METRICS},
        query_fields=("hostname",),
        source="SPEC §5.2: every reading overwrites its host's row",
    ),
    "METRIC_RECENT": Workload(
        _METRIC_RATE,
        {"hostname": _HOST},
        {"METRIC": _METRICS},
        query_fields=("hostname",),
        source="SPEC §5.2 rates; newest-first copy of METRIC (SPEC §3.6)",
    ),
    "METRIC_HOURLY": Workload(
        _HOSTS / 3600,
        {"hostname": _HOST},
        {"sum": _METRICS, "count": _METRICS},
        query_fields=("hostname",),
        source="SPEC §3.13: one AddToCell per host and hour from the rollup",
    ),
    "QUOTE": Workload(
        50_000,
        {
            "exchange": FieldModel(20, "label", "assumed: 20 exchanges"),
            "symbol": FieldModel(400, "label", "SPEC §5.1: a few hundred symbols carry 90%"),
        },
        {"MD": FamilyLoad(cells_per_event=7, columns=7, qualifier_bytes=7, value_bytes=7)},
        query_fields=("exchange", "symbol"),
        source="assumed: 50,000 quotes/s (SPEC §5.1 gives no rate)",
    ),
    "TRADE": Workload(
        20_000,
        {
            "exchange": FieldModel(20, "label", "assumed: 20 exchanges"),
            "symbol": FieldModel(400, "label", "SPEC §5.1: a few hundred symbols carry 90%"),
        },
        {"MD": FamilyLoad(cells_per_event=6, columns=6, qualifier_bytes=8, value_bytes=7)},
        query_fields=("exchange", "symbol"),
        source="assumed: 20,000 trades/s (SPEC §5.1 gives no rate)",
    ),
    "SENSOR": Workload(
        _METER_RATE,
        {"meter": _METER},
        {"METER": _METER_ROW},
        query_fields=("meter",),
        derived=(_SENSOR_COPIES,),
        source="SPEC §5.3: 10,000,000 meters, one reading every 15 minutes",
    ),
    "SENSOR_DAILY": Workload(
        _METERS / 3600,
        {"meter": _METER},
        {"METER": FamilyLoad(cells_per_event=97, columns=97, qualifier_bytes=4, value_bytes=6)},
        source="the nightly copy: 10,000,000 day rows re-keyed in about an hour (assumed)",
    ),
    "SENSOR_HOURLY": Workload(
        _METERS / 3600,
        {"meter": FieldModel(_METERS, "label", "the meter id as SENSOR's key has it (padded)")},
        {"sum": FamilyLoad(), "count": FamilyLoad()},
        query_fields=("meter",),
        source="SPEC §5.3: one AddToCell per meter and hour from the rollup",
    ),
    "BATTERY": _BATTERY,
    "BATTERY_SALTED": _BATTERY,  # time-range reads over every user: nothing to promote
    "BATTERY_TS_FIRST": _BATTERY,
    "GAME_BY_PLAYER": Workload(
        200,
        {
            "game": FieldModel(20, "label", "assumed: 20 games"),
            "player": FieldModel(1_000_000, "label", "assumed: a million players"),
        },
        {"GAME": FamilyLoad(cells_per_event=2, columns=2, qualifier_bytes=3, value_bytes=5)},
        query_fields=("game", "player"),
        source="assumed: 200 results/s (SPEC §5.5 gives no rate)",
    ),
    "GAME_BY_DATE": Workload(
        200,
        {
            "game": FieldModel(20, "label", "assumed: 20 games"),
            "player": FieldModel(1_000_000, "label", "assumed: a million players"),
        },
        {"GAME": FamilyLoad(cells_per_event=2, columns=2, qualifier_bytes=3, value_bytes=5)},
        query_fields=("game",),
        source="assumed: 200 results/s (SPEC §5.5 gives no rate)",
    ),
    "GARDEN_DAILY": Workload(
        10_000 / 86400,
        {"garden": FieldModel(10_000, "label", "assumed: 10,000 gardens")},
        {"DAILY": FamilyLoad(qualifier_bytes=4, value_bytes=5)},
        query_fields=("garden",),
        source="SPEC §5.6: one temperature per garden per day",
    ),
    "GARDEN_MONTHLY": Workload(
        10_000 / 86400,
        {"garden": FieldModel(10_000, "label", "assumed: 10,000 gardens")},
        {"TEMP": FamilyLoad(columns=31, qualifier_bytes=2, value_bytes=5)},
        query_fields=("garden",),
        source="SPEC §5.6: one temperature per garden per day, a row per month",
    ),
    "STOCK_PRICE": Workload(
        10_000 / 86400,
        {"symbol": FieldModel(10_000, "label", "assumed: 10,000 symbols")},
        {"STOCK": FamilyLoad(columns=1, qualifier_bytes=5, value_bytes=7)},
        query_fields=("symbol",),
        source="SPEC §5.6: one closing price per symbol and day, rare corrections",
    ),
    "FRIENDS": Workload(
        100,
        {"person": FieldModel(1_000_000, "label", "assumed: a million people")},
        {"Friends": FamilyLoad(columns=5_000, qualifier_bytes=10, value_bytes=8)},
        query_fields=("person",),
        source="assumed: at most 5,000 friends a person (qualifiers are data, SPEC §5.6)",
    ),
    "DEVICE": Workload(
        1_000_000 / 60,
        {
            "tenant": FieldModel(100, "label", "assumed: 100 tenants"),
            "kind": FieldModel(5, "label", "assumed: 5 device kinds"),
            "device": FieldModel(2_000, "label", "assumed: 2,000 devices per tenant and kind"),
        },
        {"STATS": FamilyLoad(cells_per_event=4, columns=4, qualifier_bytes=6, value_bytes=6)},
        query_fields=("tenant", "kind", "device"),
        source="assumed: a million devices, 4 readings a minute each",
    ),
    "WEB_PAGES": Workload(
        1_000_000 / 86400,
        {"domain": FieldModel(1_000_000, "label", "assumed: a million sites crawled daily")},
        {"CRAWL": FamilyLoad(cells_per_event=2, columns=2, qualifier_bytes=6, value_bytes=6)},
        query_fields=("domain",),
        source="SPEC §5.6: one crawl result per site and day",
    ),
    "USER_ACTIVITY": Workload(
        10_000,
        {
            "user_id": FieldModel(
                10_000_000, "sequential", "SPEC §3.10: sequential numeric user ids"
            ),
        },
        {"ACT": FamilyLoad(qualifier_bytes=6, value_bytes=10)},
        query_fields=("user_id",),
        source="assumed: 10,000 events/s from 10,000,000 users",
    ),
    "SALES_MONTHLY": Workload(
        100,
        {"employee": FieldModel(10_000, "label", "assumed: 10,000 employees")},
        {"sum": FamilyLoad(cells_per_event=2, columns=2, qualifier_bytes=6)},
        query_fields=("employee",),
        source="assumed: 100 sales/s (SPEC §5.6 gives no rate)",
    ),
    "BALLOON_TB_COL": Workload(
        4 * _BALLOON_RATE,
        _BALLOON_FIELDS,
        {"m": FamilyLoad(columns=None, qualifier_bytes=6, value_bytes=0)},
        query_fields=("location", "balloon_id", "metric"),
        source=_BALLOON_SOURCE + "; one row write per metric",
    ),
    "BALLOON_TB_CELL": Workload(
        _BALLOON_RATE,
        _BALLOON_FIELDS,
        {"measurements": FamilyLoad(cells_per_event=4, columns=4, qualifier_bytes=11)},
        query_fields=("location", "balloon_id"),
        source=_BALLOON_SOURCE,
    ),
    "BALLOON_TS_BLOB": Workload(
        _BALLOON_RATE,
        _BALLOON_FIELDS,
        {"m": FamilyLoad(value_bytes=40, qualifiers=("measurements_blob",), qualifier_bytes=17)},
        query_fields=("location", "balloon_id"),
        source=_BALLOON_SOURCE + "; a ~40-byte protobuf per event",
    ),
    "BALLOON_TS_COLS": Workload(
        _BALLOON_RATE,
        _BALLOON_FIELDS,
        {"m": FamilyLoad(cells_per_event=4, columns=4, qualifier_bytes=11, value_bytes=6)},
        query_fields=("location", "balloon_id"),
        source=_BALLOON_SOURCE,
    ),
}

_ACKNOWLEDGED: dict[str, dict[str, str]] = {
    "SENSOR_DAILY": {
        "HOT-TIME-FIRST": "date first on purpose (transforms/declarations/nightly.py): only the "
        "nightly batch copy writes this table, once a day at a quiet hour, never the live "
        "readings, and the date-first key makes 'all meters of one day' one prefix scan without "
        "a table per day (SPEC §5.3). Each night's copy lands on the tablets of one new day.",
    },
}

_ANTI_PATTERNS = {
    "BATTERY_TS_FIRST": "SPEC §5.4's documented anti-pattern, kept only for the advisor and its "
    "demo: it must be flagged",
}


def hints_for(table: str) -> Hints:
    """The modelled hints of a declared table (defaults for a table nobody modelled)."""
    return Hints(
        workload=_WORKLOADS.get(table, Workload()),
        acknowledged=_ACKNOWLEDGED.get(table, {}),
        anti_pattern=_ANTI_PATTERNS.get(table, ""),
    )


def modelled_tables() -> list[str]:
    return sorted(_WORKLOADS)
