"""The queries each schema was designed for, as functions returning plain Python records.

Every query is planned from the table declarations (:mod:`transforms.key_ranges` computes the row
keys, prefixes and key ranges; nothing here spells a key by hand), executed with the Bigtable
data client against the emulator or a real instance, and decoded: numbers as
:class:`~decimal.Decimal` (exact: ``600.60`` stays ``600.60``), booleans, int64 aggregates,
protobuf blobs, times as epoch milliseconds.

    from btts import admin, query_engine
    target = admin.resolve_target(None, None)            # the emulator
    query.host_metrics(target, "server1.bbb.com", start_ms, end_ms)

Each ``<name>(target, …)`` runs ``<name>_query(…)``, a :class:`Query` holding its scans (what
``btts query`` prints with the answer) and its decoder; :func:`run` executes any of them.

=================================  =============================================================
function                           read
=================================  =============================================================
host_metrics                       METRIC range HOSTNAME#start … HOSTNAME#end
latest_metrics                     CURRENT_METRIC: whole table (fleet) or the hosts' rows
recent_metrics                     METRIC_RECENT prefix HOSTNAME#, first N rows (newest first)
meter_day                          SENSOR row METER#YYYYMMDD
meters_of_day                      SENSOR_YYYYMMDD whole table (SENSOR_DAILY prefix YYYYMMDD#)
quotes / trades                    QUOTE / TRADE range EXCHANGE#SYMBOL#start … #end
player_games / games_of_month      GAME_BY_PLAYER GAME#PLAYER#month / GAME_BY_DATE GAME#month
balloon_measurements               one of the four balloon layouts, per time range
battery_levels                     BATTERY_SALTED: one range per salt bucket, merged by time;
                                   BATTERY (promoted): BATTERY#USER#start … #end
tenant_rows / drop_tenant          DEVICE prefix TENANT#; drop that row range
garden_days / garden_month         GARDEN_DAILY range / GARDEN_MONTHLY single row
monthly_sales                      SALES_MONTHLY range EMPLOYEE#start … EMPLOYEE#end
=================================  =============================================================
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal, InvalidOperation
from typing import Generic, NamedTuple, TypeVar

from google.api_core import exceptions as gexc
from google.cloud.bigtable.data import BigtableDataClient, ReadRowsQuery, RowRange, row_filters

from btts.admin import ReadCell, ReadRow, Target
from transforms import key_ranges, keys, salted_reads, schema_file, schema_file_queries, timefmt
from transforms.declarations.game_results import GAME_BY_DATE, GAME_BY_PLAYER
from transforms.declarations.garden import GARDEN_DAILY, GARDEN_MONTHLY
from transforms.declarations.market_data import QUOTE, TRADE
from transforms.declarations.nightly import SENSOR_DAILY
from transforms.declarations.queries import METRIC_RECENT
from transforms.declarations.sales import SALES_MONTHLY
from transforms.declarations.server_metrics import CURRENT_METRIC, METRIC
from transforms.declarations.smart_meters import SENSOR
from transforms.key_ranges import Scan
from transforms.table_model import TableDecl

# Tables of the schema files alone (their hand-written builder modules are going away).
_BATTERY = schema_file.builtin_tables("battery")
DEVICE = schema_file.builtin_tables("devices")["DEVICE"]
_BALLOONS = schema_file.builtin_tables("weather_balloons")
BALLOON_TB_COL = _BALLOONS["BALLOON_TB_COL"]
BALLOON_TB_CELL = _BALLOONS["BALLOON_TB_CELL"]
BALLOON_TS_BLOB = _BALLOONS["BALLOON_TS_BLOB"]
BALLOON_TS_COLS = _BALLOONS["BALLOON_TS_COLS"]

UTC = timefmt.UTC
R = TypeVar("R")


class MissingTable(LookupError):
    """A query reads a table the instance does not have."""


# -- records ----------------------------------------------------------------------------------


class MetricReading(NamedTuple):
    """One reading of one host (METRIC, METRIC_RECENT): metric name (qualifier) → value."""

    host: str
    ts_ms: int
    metrics: dict[str, Decimal]
    key: str = ""


class CurrentMetrics(NamedTuple):
    """A host's latest values (CURRENT_METRIC); ``ts_ms`` is the newest cell's event time."""

    host: str
    ts_ms: int
    metrics: dict[str, Decimal]
    key: str = ""


class MeterDay(NamedTuple):
    """One meter's day (SENSOR and its nightly copies): time of day ``HHMM`` → reading."""

    meter_id: int
    day: str  # YYYYMMDD, in the zone the rows were written with
    readings: dict[str, Decimal]
    key: str = ""


class Quote(NamedTuple):
    exchange: str
    symbol: str
    ts_ms: int
    bid: Decimal
    ask: Decimal
    bid_size: int
    ask_size: int
    key: str = ""


class Trade(NamedTuple):
    exchange: str
    symbol: str
    ts_ms: int
    last_sale: Decimal
    last_size: int
    volume: int
    key: str = ""


class GameResult(NamedTuple):
    game: str
    player: str
    date: str  # YYYY-MM-DD
    win: bool
    kda: Decimal
    key: str = ""


class BalloonMeasurement(NamedTuple):
    """One balloon event, whichever of the four layouts it was read from."""

    location: str
    balloon_id: str
    ts_ms: int
    pressure: Decimal
    temperature: Decimal
    humidity: Decimal
    altitude: Decimal


class BatteryLevel(NamedTuple):
    user: str
    ts_ms: int
    percentage: Decimal
    key: str = ""


class DeviceReading(NamedTuple):
    """One timestamped cell of a tenant's device day row (DEVICE)."""

    tenant: str
    kind: str
    device: str
    ts_ms: int
    reading: str
    value: Decimal
    key: str = ""


class GardenDay(NamedTuple):
    garden: str
    date: str  # YYYY-MM-DD
    temp: Decimal
    key: str = ""


class GardenMonth(NamedTuple):
    """The short-wide month row: day of month → temperature."""

    garden: str
    month: str  # YYYY-MM
    temps: dict[int, Decimal]
    key: str = ""


class MonthlySales(NamedTuple):
    employee: str
    month: str  # YYYY-MM
    amount_cents: int
    count: int
    key: str = ""


# -- planning and running ---------------------------------------------------------------------


@dataclass(frozen=True)
class Query(Generic[R]):
    """A planned query: its scans (pure data from the declarations) and how the rows they
    return (one list per scan) become records."""

    title: str
    scans: tuple[Scan, ...]
    decode: Callable[[list[list[ReadRow]]], list[R]]

    def describe(self) -> str:
        return "\n".join(scan.describe() for scan in self.scans)


def _ms_datetime(ms: int) -> dt.datetime:
    return timefmt.to_datetime(ms)


def row_filter(scan: Scan) -> row_filters.RowFilter | None:
    """The server-side filter of a scan: its cell-time window, then newest cell per column."""
    parts: list[row_filters.RowFilter] = []
    if scan.start_ms is not None or scan.end_ms is not None:
        parts.append(
            row_filters.TimestampRangeFilter(
                start=_ms_datetime(scan.start_ms) if scan.start_ms is not None else None,
                end=_ms_datetime(scan.end_ms) if scan.end_ms is not None else None,
            )
        )
    if scan.latest_only:
        parts.append(row_filters.CellsColumnLimitFilter(1))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else row_filters.RowFilterChain(filters=parts)


def read_query(scan: Scan) -> ReadRowsQuery | None:
    """The client query of a scan; None when it selects nothing."""
    if not scan.ranges and not scan.row_keys:
        return None
    whole = scan.ranges == (key_ranges.WHOLE_TABLE,)
    if whole and scan.row_keys:
        raise ValueError("a scan reads either the whole table or some rows, not both")
    ranges = None  # with no row keys either: the whole table
    if scan.ranges and not whole:
        ranges = [RowRange(start_key=s or None, end_key=e or None) for s, e in scan.ranges]
    return ReadRowsQuery(
        row_keys=list(scan.row_keys) or None,
        row_ranges=ranges,
        limit=scan.limit,
        row_filter=row_filter(scan),
    )


def execute(client: BigtableDataClient, target: Target, scan: Scan) -> list[ReadRow]:
    """The rows of one scan, in key order, cells as stored (newest first per column)."""
    query = read_query(scan)
    if query is None:
        return []
    table = client.get_table(target.instance, scan.table)
    try:
        rows = table.read_rows(query)
    except gexc.NotFound:
        raise MissingTable(
            f"table {scan.table} does not exist in {target.describe()}: run the job that "
            "writes it first"
        ) from None
    return [ReadRow.of(row) for row in rows]


def run(target: Target, query: Query[R]) -> list[R]:
    """Execute every scan of ``query`` (one client for all) and decode the rows."""
    with BigtableDataClient(project=target.project) as client:
        return query.decode([execute(client, target, scan) for scan in query.scans])


# -- decoding helpers -------------------------------------------------------------------------


def number(value: bytes, where: str = "value") -> Decimal:
    """A stored decimal text as an exact Decimal."""
    try:
        return Decimal(value.decode("ascii"))
    except (UnicodeDecodeError, InvalidOperation):
        raise ValueError(f"{where}: {value[:40]!r} is not a decimal number") from None


def int64(value: bytes) -> int:
    """An aggregate (int64 sum) cell: 8 bytes, big-endian, signed."""
    return int.from_bytes(value, "big", signed=True)


def _ms(cell: ReadCell) -> int:
    return cell.timestamp_us // 1000


def _key(row: ReadRow) -> str:
    return row.key.decode("utf-8")


def _columns(row: ReadRow) -> dict[bytes, ReadCell]:
    """The newest cell of each column (cells come newest first per column)."""
    out: dict[bytes, ReadCell] = {}
    for cell in row.cells:
        out.setdefault(cell.qualifier, cell)
    return out


def _label_date(label: str) -> str:
    """``20150301`` → ``2015-03-01``; ``201503`` → ``2015-03``."""
    return f"{label[:4]}-{label[4:6]}" + (f"-{label[6:8]}" if len(label) == 8 else "")


def _only(scans: list[list[ReadRow]]) -> list[ReadRow]:
    (rows,) = scans
    return rows


# -- server metrics (docs/patterns.md §5.2, §3 rule 6) ---------------------------------------------


def _metric_reading(decl: TableDecl, row: ReadRow) -> MetricReading:
    parts = key_ranges.split_key(decl, row.key)
    metrics = {
        q.decode("utf-8"): number(c.value, f"{_key(row)} {q!r}") for q, c in _columns(row).items()
    }
    return MetricReading(parts["hostname"], parts["ts"], metrics, _key(row))


def host_metrics_query(host: str, start_ms: int, end_ms: int) -> Query[MetricReading]:
    scan = key_ranges.time_scan(METRIC, {"hostname": host}, start_ms, end_ms, latest_only=True)
    return Query(
        f"metrics of {host} in [{_iso(start_ms)}, {_iso(end_ms)})",
        (scan,),
        lambda scans: [_metric_reading(METRIC, row) for row in _only(scans)],
    )


def host_metrics(target: Target, host: str, start_ms: int, end_ms: int) -> list[MetricReading]:
    """One host's readings with ``start_ms <= time < end_ms``, oldest first (one range)."""
    return run(target, host_metrics_query(host, start_ms, end_ms))


def _current(row: ReadRow) -> CurrentMetrics:
    parts = key_ranges.split_key(CURRENT_METRIC, row.key)
    columns = _columns(row)
    metrics = {q.decode("utf-8"): number(c.value, f"{_key(row)} {q!r}") for q, c in columns.items()}
    newest = max((_ms(c) for c in columns.values()), default=0)
    return CurrentMetrics(parts["hostname"], newest, metrics, _key(row))


def latest_metrics_query(hosts: Sequence[str] | None = None) -> Query[CurrentMetrics]:
    if hosts:
        scan = key_ranges.row_scan(
            CURRENT_METRIC, [{"hostname": h} for h in hosts], latest_only=True
        )
        what = ", ".join(hosts)
    else:
        scan = key_ranges.prefix_scan(CURRENT_METRIC, {}, latest_only=True)
        what = "the fleet"
    return Query(
        f"latest metrics of {what}",
        (scan,),
        lambda scans: [_current(row) for row in _only(scans)],
    )


def latest_metrics(target: Target, hosts: Sequence[str] | None = None) -> list[CurrentMetrics]:
    """The newest value of every metric of every host (a full scan of the small CURRENT_METRIC
    table) or of the given hosts (point reads), in host order."""
    return run(target, latest_metrics_query(hosts))


def recent_metrics_query(
    host: str, count: int = 10, before_ms: int | None = None
) -> Query[MetricReading]:
    if count < 1:
        raise ValueError("count must be at least 1")
    if before_ms is None:
        scan = key_ranges.prefix_scan(
            METRIC_RECENT, {"hostname": host}, latest_only=True, limit=count
        )
    else:
        span = key_ranges.time_range(METRIC_RECENT, {"hostname": host}, 0, before_ms)
        scan = Scan(METRIC_RECENT.name, ranges=(span,), latest_only=True, limit=count)
    return Query(
        f"latest {count} readings of {host}"
        + (f" before {_iso(before_ms)}" if before_ms is not None else ""),
        (scan,),
        lambda scans: [_metric_reading(METRIC_RECENT, row) for row in _only(scans)],
    )


def recent_metrics(
    target: Target, host: str, count: int = 10, before_ms: int | None = None
) -> list[MetricReading]:
    """A host's ``count`` newest readings (before ``before_ms`` if given), newest first: the
    first rows of its prefix in the reversed-timestamp table METRIC_RECENT."""
    return run(target, recent_metrics_query(host, count, before_ms))


# -- smart meters (docs/patterns.md §5.3) ----------------------------------------------------------


def _meter_day(decl: TableDecl, row: ReadRow) -> MeterDay:
    parts = key_ranges.split_key(decl, row.key)
    readings = {
        q.decode("ascii"): number(c.value, f"{_key(row)} {q!r}")
        for q, c in sorted(_columns(row).items())
        if q != b"ID"
    }
    return MeterDay(parts["meter"], parts["date"], readings, _key(row))


def _day_ms(day: dt.date | str, tz: dt.tzinfo = UTC) -> int:
    if isinstance(day, str):
        day = key_ranges.parse_day(day)
    return key_ranges.day_bounds(day, tz)[0]


def meter_day_query(meter_id: int, day: dt.date | str, tz: dt.tzinfo = UTC) -> Query[MeterDay]:
    scan = key_ranges.row_scan(SENSOR, [{"meter": meter_id, "date": _day_ms(day, tz)}], tz)
    return Query(
        f"meter {meter_id} on {day}",
        (Scan(scan.table, row_keys=scan.row_keys, latest_only=True),),
        lambda scans: [_meter_day(SENSOR, row) for row in _only(scans)],
    )


def meter_day(
    target: Target, meter_id: int, day: dt.date | str, tz: dt.tzinfo = UTC
) -> MeterDay | None:
    """One meter's readings of one day (days in ``tz``, the zone SENSOR was written with): a
    single-row read. None when the meter has no row that day."""
    found = run(target, meter_day_query(meter_id, day, tz))
    return found[0] if found else None


def daily_table(day: dt.date | str, source: str = SENSOR.name) -> str:
    """The nightly job's table of one day (``SENSOR_20170726``)."""
    if isinstance(day, str):
        day = key_ranges.parse_day(day)
    return f"{source}_{day:%Y%m%d}"


def meters_of_day_query(
    day: dt.date | str, layout: str = "per_day_table", tz: dt.tzinfo = UTC
) -> Query[MeterDay]:
    if layout == "per_day_table":
        table = daily_table(day)
        decl = SENSOR  # same keys and families as SENSOR
        scan = Scan(table, ranges=(key_ranges.WHOLE_TABLE,), latest_only=True)
    elif layout == "single_table":
        decl = SENSOR_DAILY
        scan = key_ranges.prefix_scan(
            SENSOR_DAILY, {"date": _day_ms(day, tz)}, tz, latest_only=True
        )
    else:
        raise ValueError(f"layout {layout!r}: use per_day_table or single_table")
    return Query(
        f"all meters on {day} ({layout})",
        (scan,),
        lambda scans: [_meter_day(decl, row) for row in _only(scans)],
    )


def meters_of_day(
    target: Target, day: dt.date | str, layout: str = "per_day_table", tz: dt.tzinfo = UTC
) -> list[MeterDay]:
    """Every meter's readings of one day, from the nightly job's copy: a full scan of the small
    table ``SENSOR_YYYYMMDD`` (or the prefix ``YYYYMMDD#`` of SENSOR_DAILY), in meter order."""
    return run(target, meters_of_day_query(day, layout, tz))


# -- market data (docs/patterns.md §5.1) -----------------------------------------------------------


def _quote(row: ReadRow) -> Quote:
    parts = key_ranges.split_key(QUOTE, row.key)
    c = {q: cell.value for q, cell in _columns(row).items()}
    where = _key(row)
    return Quote(
        parts["exchange"],
        parts["symbol"],
        parts["quote_time"],
        number(c[b"BID"], where),
        number(c[b"ASK"], where),
        int(c[b"BIDSIZE"]),
        int(c[b"ASKSIZE"]),
        where,
    )


def _trade(row: ReadRow) -> Trade:
    parts = key_ranges.split_key(TRADE, row.key)
    c = {q: cell.value for q, cell in _columns(row).items()}
    where = _key(row)
    return Trade(
        parts["exchange"],
        parts["symbol"],
        parts["trade_time"],
        number(c[b"LASTSALE"], where),
        int(c[b"LASTSIZE"]),
        int(c[b"VOLUME"]),
        where,
    )


def quotes_query(exchange: str, symbol: str, start_ms: int, end_ms: int) -> Query[Quote]:
    values = {"exchange": exchange, "symbol": symbol}
    scan = key_ranges.time_scan(QUOTE, values, start_ms, end_ms, latest_only=True)
    return Query(
        f"quotes of {exchange}:{symbol} in [{_iso(start_ms)}, {_iso(end_ms)})",
        (scan,),
        lambda scans: [_quote(row) for row in _only(scans)],
    )


def quotes(target: Target, exchange: str, symbol: str, start_ms: int, end_ms: int) -> list[Quote]:
    """Quotes of one exchange + symbol with ``start_ms <= quote time < end_ms`` (one range)."""
    return run(target, quotes_query(exchange, symbol, start_ms, end_ms))


def trades_query(exchange: str, symbol: str, start_ms: int, end_ms: int) -> Query[Trade]:
    values = {"exchange": exchange, "symbol": symbol}
    scan = key_ranges.time_scan(TRADE, values, start_ms, end_ms, latest_only=True)
    return Query(
        f"trades of {exchange}:{symbol} in [{_iso(start_ms)}, {_iso(end_ms)})",
        (scan,),
        lambda scans: [_trade(row) for row in _only(scans)],
    )


def trades(target: Target, exchange: str, symbol: str, start_ms: int, end_ms: int) -> list[Trade]:
    """Trades of one exchange + symbol with ``start_ms <= trade time < end_ms`` (one range)."""
    return run(target, trades_query(exchange, symbol, start_ms, end_ms))


# -- game results (docs/patterns.md §5.5) ----------------------------------------------------------


def _game(decl: TableDecl, row: ReadRow) -> GameResult:
    parts = key_ranges.split_key(decl, row.key)
    c = {q: cell.value for q, cell in _columns(row).items()}
    win = c[b"WIN"]
    if win not in (b"true", b"false"):
        raise ValueError(f"{_key(row)}: GAME:WIN is {win!r}, not true/false")
    return GameResult(
        parts["game"],
        parts["player"],
        _label_date(parts["date"]),
        win == b"true",
        number(c[b"KDA"], _key(row)),
        _key(row),
    )


def _month(year: int, month: int) -> str:
    return f"{year:04d}-{month:02d}"


def player_games_query(game: str, player: str, year: int, month: int) -> Query[GameResult]:
    start, end = key_ranges.month_bounds(year, month)
    scan = key_ranges.time_scan(
        GAME_BY_PLAYER, {"game": game, "player": player}, start, end, latest_only=True
    )
    return Query(
        f"{player}'s {game} games in {_month(year, month)}",
        (scan,),
        lambda scans: [_game(GAME_BY_PLAYER, row) for row in _only(scans)],
    )


def player_games(target: Target, game: str, player: str, year: int, month: int) -> list[GameResult]:
    """One player's results of one game in one month, by date (GAME_BY_PLAYER, one range)."""
    return run(target, player_games_query(game, player, year, month))


def games_of_month_query(game: str, year: int, month: int) -> Query[GameResult]:
    start, end = key_ranges.month_bounds(year, month)
    scan = key_ranges.time_scan(GAME_BY_DATE, {"game": game}, start, end, latest_only=True)
    return Query(
        f"all {game} games in {_month(year, month)}",
        (scan,),
        lambda scans: [_game(GAME_BY_DATE, row) for row in _only(scans)],
    )


def games_of_month(target: Target, game: str, year: int, month: int) -> list[GameResult]:
    """Every result of one game in one month, by date then player (GAME_BY_DATE, one range)."""
    return run(target, games_of_month_query(game, year, month))


# -- weather balloons (docs/patterns.md §4) --------------------------------------------------------

BALLOON_TABLES = {
    "TB-COL": BALLOON_TB_COL,
    "TB-CELL": BALLOON_TB_CELL,
    "TS-BLOB": BALLOON_TS_BLOB,
    "TS-COLS": BALLOON_TS_COLS,
}
_BALLOON_SCHEMA = schema_file.builtin("weather_balloons")
# The measured fields: the ones BALLOON_TB_COL unpivots into one row each (schema order).
_BALLOON_METRICS: tuple[str, ...] = _BALLOON_SCHEMA.table(BALLOON_TB_COL.name).rows_per.fields
_METRIC_BYTES = tuple(m.encode("ascii") for m in _BALLOON_METRICS)


def _blob_column(table: str) -> schema_file.ColumnSpec:
    """The protobuf column the schema declares for a TS-BLOB table."""
    for col in _BALLOON_SCHEMA.table(table).columns:
        if col.value[:1] == ("protobuf",):
            return col
    raise ValueError(f"{table}: the schema declares no protobuf column")


def _decode_blob(col: schema_file.ColumnSpec, blob: bytes) -> dict[str, object]:
    """The schema fields a protobuf cell holds, by the column's declared message and mapping."""
    _, message, mapping = col.value
    msg = schema_file.message_class(message).FromString(blob)
    return {name: getattr(msg, proto_field) for proto_field, name in mapping}


def _measurements(
    location: str, balloon_id: str, by_time: dict[int, dict[str, Decimal]]
) -> list[BalloonMeasurement]:
    out = []
    for ts, values in sorted(by_time.items()):
        missing = [m for m in _BALLOON_METRICS if m not in values]
        if missing:
            raise ValueError(
                f"balloon {location}/{balloon_id} at {_iso(ts)}: no {', '.join(missing)}"
            )
        out.append(
            BalloonMeasurement(location, balloon_id, ts, *(values[m] for m in _BALLOON_METRICS))
        )
    return out


def _decode_balloons(
    pattern: str, location: str, balloon_id: str, scans: list[list[ReadRow]]
) -> list[BalloonMeasurement]:
    by_time: dict[int, dict[str, Decimal]] = defaultdict(dict)
    if pattern == "TS-BLOB":
        out = []
        for row in _only(scans):
            col = _blob_column(BALLOON_TS_BLOB.name)
            cell = _columns(row)[col.qualifier.encode("utf-8")]
            event = _decode_blob(col, cell.value)
            values = [number(str(event[m]).encode("ascii"), _key(row)) for m in _BALLOON_METRICS]
            ts = int(event[_BALLOON_SCHEMA.time])
            out.append(BalloonMeasurement(event["location"], event["balloon_id"], ts, *values))
        return out
    if pattern == "TB-COL":  # one scan per metric; the qualifier is the value
        for metric, rows in zip(_BALLOON_METRICS, scans, strict=True):
            for row in rows:
                for cell in row.cells:
                    by_time[_ms(cell)][metric] = number(cell.qualifier, _key(row))
    else:  # TS-COLS: one cell per column; TB-CELL: one timestamped cell per event and column
        for row in _only(scans):
            for cell in row.cells:
                if cell.qualifier in _METRIC_BYTES:
                    by_time[_ms(cell)][cell.qualifier.decode()] = number(cell.value, _key(row))
    return _measurements(location, balloon_id, by_time)


def balloon_measurements_query(
    pattern: str, location: str, balloon_id: str | int, start_ms: int, end_ms: int
) -> Query[BalloonMeasurement]:
    if pattern not in BALLOON_TABLES:
        raise ValueError(f"balloon pattern {pattern!r}: use one of {', '.join(BALLOON_TABLES)}")
    decl = BALLOON_TABLES[pattern]
    balloon_id = str(balloon_id)
    values = {"location": location, "balloon_id": balloon_id}
    if pattern == "TB-COL":  # the metric comes before the week: one range per metric
        scans = tuple(
            key_ranges.time_scan(decl, {**values, "metric": m}, start_ms, end_ms)
            for m in _BALLOON_METRICS
        )
    else:
        # Every cell of a bucket row is one event: all versions within the window, not the newest
        scans = (key_ranges.time_scan(decl, values, start_ms, end_ms),)
    return Query(
        f"balloon {location}/{balloon_id} in [{_iso(start_ms)}, {_iso(end_ms)}) from {decl.name}",
        scans,
        lambda rows: _decode_balloons(pattern, location, balloon_id, rows),
    )


def balloon_measurements(
    target: Target, pattern: str, location: str, balloon_id: str | int, start_ms: int, end_ms: int
) -> list[BalloonMeasurement]:
    """One balloon's measurements with ``start_ms <= time < end_ms``, oldest first, read from
    the table of one column pattern (TB-COL, TB-CELL, TS-BLOB or TS-COLS): the same records
    whichever layout holds them."""
    return run(target, balloon_measurements_query(pattern, location, balloon_id, start_ms, end_ms))


# -- battery (docs/patterns.md §5.4) ---------------------------------------------------------------


def _battery(decl: TableDecl, row: ReadRow) -> BatteryLevel:
    parts = key_ranges.split_key(decl, row.key)
    columns = _columns(row)
    level = columns[b"PERCENTAGE"]
    user = parts.get("user") or columns[b"USER"].value.decode("utf-8")
    return BatteryLevel(user, _ms(level), number(level.value, _key(row)), _key(row))


def battery_levels_query(
    start_ms: int, end_ms: int, user: str | None = None, buckets: int | None = None
) -> Query[BatteryLevel]:
    if user is not None:  # field promotion: one contiguous range
        decl = _BATTERY["BATTERY"]
        scan = key_ranges.time_scan(decl, {"user": user}, start_ms, end_ms, latest_only=True)
        return Query(
            f"battery levels of {user} in [{_iso(start_ms)}, {_iso(end_ms)}) from {decl.name}",
            (scan,),
            lambda scans: [_battery(decl, row) for row in _only(scans)],
        )
    decl = _salted_table(buckets)
    scans = tuple(
        Scan(decl.name, ranges=(span,), latest_only=True)
        for span in salted_reads.salted_time_ranges(decl, start_ms, end_ms)
    )
    return Query(
        f"battery levels in [{_iso(start_ms)}, {_iso(end_ms)}) from {decl.name} "
        f"({len(scans)} salt buckets merged in time order)",
        scans,
        lambda rows: [_battery(decl, r) for r in salted_reads.merge_in_time_order(decl, rows)],
    )


def _salted_table(buckets: int | None) -> TableDecl:
    if buckets is None:
        return _BATTERY["BATTERY_SALTED"]
    salted: dict[int, TableDecl] = {}
    for decl in _BATTERY.values():
        for segment in decl.key.segments:
            if segment.kind == "salt":
                salted[segment.width] = decl
    if buckets not in salted:
        raise ValueError(
            f"no salted battery table has {buckets} buckets; declared: {sorted(salted)}"
        )
    return salted[buckets]


def battery_levels(
    target: Target,
    start_ms: int,
    end_ms: int,
    user: str | None = None,
    buckets: int | None = None,
) -> list[BatteryLevel]:
    """Battery levels with ``start_ms <= time < end_ms``, oldest first. Without ``user``: every
    user's, from the salted table (one scan per bucket, merged by time). With ``user``: that
    user's, from the promoted table BATTERY (one range)."""
    return run(target, battery_levels_query(start_ms, end_ms, user, buckets))


# -- tenants (docs/patterns.md §3 rule 11, §5.6) ---------------------------------------------------


def _device_readings(row: ReadRow) -> list[DeviceReading]:
    parts = key_ranges.split_key(DEVICE, row.key)
    return [
        DeviceReading(
            parts["tenant"],
            parts["kind"],
            parts["device"],
            _ms(cell),
            cell.qualifier.decode("utf-8"),
            number(cell.value, _key(row)),
            _key(row),
        )
        for cell in sorted(row.cells, key=lambda c: (c.timestamp_us, c.qualifier))
    ]


def tenant_rows_query(tenant: str) -> Query[DeviceReading]:
    scan = key_ranges.prefix_scan(DEVICE, {"tenant": tenant})
    return Query(
        f"device data of tenant {tenant}",
        (scan,),
        lambda scans: [r for row in _only(scans) for r in _device_readings(row)],
    )


def tenant_rows(target: Target, tenant: str) -> list[DeviceReading]:
    """Every reading of one tenant (the row range of its prefix ``TENANT#``): rows in key order
    (kind, device, day), each row's readings by time then name."""
    return run(target, tenant_rows_query(tenant))


def drop_tenant(target: Target, tenant: str) -> int:
    """Offboard a tenant: drop the row range of its prefix in one admin call
    (only ``TENANT#…``: ``acme`` never takes ``acme2``'s rows). Returns how many rows it held."""
    from btts import admin

    prefix = keys.tenant_prefix(tenant, DEVICE.key.delimiter)  # never empty: never the table
    scan = key_ranges.prefix_scan(DEVICE, {"tenant": tenant})
    with BigtableDataClient(project=target.project) as client:
        table = client.get_table(target.instance, DEVICE.name)
        start, end = scan.ranges[0]
        query = ReadRowsQuery(row_ranges=RowRange(start, end), row_filter=_KEYS_ONLY)
        try:
            count = sum(1 for _ in table.read_rows(query))
        except gexc.NotFound:
            raise MissingTable(f"table DEVICE does not exist in {target.describe()}") from None
    with admin.Admin(target) as client:
        client.api.drop_row_range(
            request={"name": target.table_path(DEVICE.name), "row_key_prefix": prefix}
        )
    return count


# -- garden and sales (docs/patterns.md §5.6, §3 rule 13) ------------------------------------------


def garden_days_query(garden: str, start_ms: int, end_ms: int) -> Query[GardenDay]:
    scan = key_ranges.time_scan(
        GARDEN_DAILY, {"garden": garden}, start_ms, end_ms, latest_only=True
    )

    def decode(scans: list[list[ReadRow]]) -> list[GardenDay]:
        out = []
        for row in _only(scans):
            parts = key_ranges.split_key(GARDEN_DAILY, row.key)
            temp = number(_columns(row)[b"TEMP"].value, _key(row))
            out.append(GardenDay(parts["garden"], _label_date(parts["date"]), temp, _key(row)))
        return out

    return Query(f"{garden}'s days in [{_iso(start_ms)}, {_iso(end_ms)})", (scan,), decode)


def garden_days(target: Target, garden: str, start_ms: int, end_ms: int) -> list[GardenDay]:
    """A garden's daily temperatures of the days in ``[start_ms, end_ms)`` (GARDEN_DAILY)."""
    return run(target, garden_days_query(garden, start_ms, end_ms))


def garden_month_query(garden: str, year: int, month: int) -> Query[GardenMonth]:
    start, _ = key_ranges.month_bounds(year, month)
    scan = key_ranges.row_scan(
        GARDEN_MONTHLY, [{"garden": garden, "date": start}], latest_only=True
    )

    def decode(scans: list[list[ReadRow]]) -> list[GardenMonth]:
        out = []
        for row in _only(scans):
            parts = key_ranges.split_key(GARDEN_MONTHLY, row.key)
            temps = {
                int(q): number(c.value, _key(row))
                for q, c in sorted(_columns(row).items(), key=lambda item: int(item[0]))
            }
            out.append(GardenMonth(parts["garden"], _label_date(parts["date"]), temps, _key(row)))
        return out

    return Query(f"{garden}'s month {_month(year, month)}", (scan,), decode)


def garden_month(target: Target, garden: str, year: int, month: int) -> GardenMonth | None:
    """A garden's month as one short-wide row (GARDEN_MONTHLY, a single-row read)."""
    found = run(target, garden_month_query(garden, year, month))
    return found[0] if found else None


def monthly_sales_query(
    employee: str, start: tuple[int, int], end: tuple[int, int], tz: dt.tzinfo = UTC
) -> Query[MonthlySales]:
    """Months ``start`` … ``end`` inclusive, as (year, month)."""
    low, _ = key_ranges.month_bounds(*start, tz)
    _, high = key_ranges.month_bounds(*end, tz)
    span = key_ranges.time_range(SALES_MONTHLY, {"employee": employee}, low, high, tz)
    scan = Scan(SALES_MONTHLY.name, ranges=(span,))

    def decode(scans: list[list[ReadRow]]) -> list[MonthlySales]:
        out = []
        for row in _only(scans):
            parts = key_ranges.split_key(SALES_MONTHLY, row.key)
            c = {q: cell.value for q, cell in _columns(row).items()}
            out.append(
                MonthlySales(
                    parts["employee"],
                    _label_date(parts["ts"]),
                    int64(c.get(b"AMOUNT", bytes(8))),
                    int64(c.get(b"COUNT", bytes(8))),
                    _key(row),
                )
            )
        return out

    return Query(f"{employee}'s sales {_month(*start)} … {_month(*end)}", (scan,), decode)


def monthly_sales(
    target: Target, employee: str, start: tuple[int, int], end: tuple[int, int]
) -> list[MonthlySales]:
    """An employee's monthly totals (AddToCell sums) for months ``start`` … ``end``."""
    return run(target, monthly_sales_query(employee, start, end))


def _iso(ms: int) -> str:
    return timefmt.to_datetime(ms).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def count_rows(target: Target, table: str) -> int:
    """How many rows a table holds (keys only travel: one stripped cell per row)."""
    with BigtableDataClient(project=target.project) as client:
        handle = client.get_table(target.instance, table)
        return sum(1 for _ in handle.read_rows(ReadRowsQuery(row_filter=_KEYS_ONLY)))


# Keys only: the first cell of each row, its value stripped.
_KEYS_ONLY = row_filters.RowFilterChain(
    filters=[row_filters.CellsRowLimitFilter(1), row_filters.StripValueTransformerFilter(True)]
)


# -- declared queries (the ``queries:`` section of a schema file) ------------------------------


def declared(schema: schema_file.Schema, name: str) -> schema_file_queries.QuerySpec:
    """The query ``name`` of ``schema``; a clear error naming the declared ones otherwise."""
    for spec in schema.queries:
        if spec.name == name:
            return spec
    known = ", ".join(s.name for s in schema.queries) or "none"
    raise ValueError(f"schema {schema.dataset} declares no query {name!r}; declared: {known}")


def plan_declared(
    schema: schema_file.Schema,
    spec: schema_file_queries.QuerySpec,
    values: dict[str, object],
    start_ms: int | None = None,
    end_ms: int | None = None,
    tz: dt.tzinfo = UTC,
) -> tuple[Scan, ...]:
    """The scans of a declared query, from the same key recipe that built the keys."""
    decl = schema.table(spec.table).decl
    missing = [f for f in spec.select if values.get(f) in (None, "")]
    if missing:
        raise ValueError(f"query {spec.name}: give {', '.join('--' + m for m in missing)}")
    fixed = {f: values[f] for f in spec.select}
    if spec.read == "table":
        scans = (Scan(decl.name, ranges=(key_ranges.WHOLE_TABLE,), latest_only=spec.latest),)
    elif spec.read == "row":
        scans = (key_ranges.row_scan(decl, [fixed], tz, latest_only=spec.latest),)
    elif spec.read == "prefix":
        scans = (key_ranges.prefix_scan(decl, fixed, tz, latest_only=spec.latest),)
    else:
        if start_ms is None or end_ms is None:
            raise ValueError(f"query {spec.name}: give --start and --end")
        if any(s.kind == "salt" for s in decl.key.segments):
            ranges = salted_reads.salted_time_ranges(decl, start_ms, end_ms, tz)
            scans = tuple(
                Scan(decl.name, ranges=(r,), start_ms=start_ms, end_ms=end_ms) for r in ranges
            )
        elif spec.per:
            unpivoted = schema.table(spec.table).rows_per.fields
            scans = tuple(
                key_ranges.time_scan(decl, {**fixed, spec.per: f}, start_ms, end_ms, tz)
                for f in unpivoted
            )
        else:
            scans = (key_ranges.time_scan(decl, fixed, start_ms, end_ms, tz),)
        if spec.latest:
            scans = tuple(replace(s, latest_only=True) for s in scans)
    if spec.limit is not None:
        scans = tuple(replace(s, limit=spec.limit) for s in scans)
    return scans


def decode_value(schema: schema_file.Schema, col: schema_file.ColumnSpec, value: bytes):
    """A cell's value by the column's declared source: decimal text as an exact Decimal, int64
    sums, booleans, integers, JSON and protobuf blobs as dicts, other text as text."""
    if col.add is not None:
        return int64(value)
    kind = col.value[:1]
    if kind == ("protobuf",):
        _, message, mapping = col.value
        msg = schema_file.message_class(message).FromString(value)
        return {name: getattr(msg, proto) for proto, name in mapping}
    if kind == ("json",):
        return json.loads(value.decode("utf-8"))
    if kind == ("field",):
        spec = schema.field_by_ref().get(col.value[1])
        text = value.decode("utf-8")
        if spec is not None and spec.type == "number":
            return number(value, col.value[1])
        if spec is not None and spec.type == "integer" and text.lstrip("-").isdigit():
            return int(text)
        if spec is not None and spec.type == "boolean":
            return text.lower() in ("true", "1")
        return text
    return value.decode("utf-8", "replace")


def _column_names(table: schema_file.TableSpec) -> dict[bytes, schema_file.ColumnSpec]:
    """Literal qualifiers → their column rule (qualifiers from data are decoded as text)."""
    return {c.qualifier.encode("utf-8"): c for c in table.columns if isinstance(c.qualifier, str)}


def decode_declared(
    schema: schema_file.Schema, spec: schema_file_queries.QuerySpec, scans: list[list[ReadRow]]
) -> list[dict]:
    """Plain records: one per row and cell time, the key's fields, ``ts_ms`` and each column
    by its qualifier (or ``value`` for a TB-COL row, whose qualifier is the value)."""
    table = schema.table(spec.table)
    decl = table.decl
    named = _column_names(table)
    if any(s.kind == "salt" for s in decl.key.segments):
        rows = salted_reads.merge_in_time_order(decl, scans)
    else:
        rows = [row for scan in scans for row in scan]
    out: list[dict] = []
    for row in rows:
        parts = key_ranges.split_key(decl, row.key)
        parts.pop("salt", None)
        by_time: dict[int, dict] = {}
        for cell in sorted(row.cells, key=lambda c: (c.timestamp_us, c.qualifier)):
            record = by_time.setdefault(_ms(cell), {**parts, "ts_ms": _ms(cell)})
            qualifier = cell.qualifier.decode("utf-8", "replace")
            col = named.get(cell.qualifier)
            if table.rows_per is not None and col is None:
                record[table.rows_per.value] = qualifier
            elif col is not None:
                record[qualifier] = decode_value(schema, col, cell.value)
            else:  # qualifier from data (maps, time of day): the value as its text or number
                try:
                    record[qualifier] = number(cell.value)
                except ValueError:
                    record[qualifier] = cell.value.decode("utf-8", "replace")
        out.extend(by_time[t] for t in sorted(by_time))
    if spec.per or (len(scans) > 1 and not any(s.kind == "salt" for s in decl.key.segments)):
        out.sort(key=lambda r: r["ts_ms"])
    return out


def declared_query(
    schema: schema_file.Schema,
    name: str,
    values: dict[str, object],
    start_ms: int | None = None,
    end_ms: int | None = None,
    tz: dt.tzinfo = UTC,
) -> Query[dict]:
    """A named query of a schema file, planned and ready for :func:`run`."""
    spec = declared(schema, name)
    scans = plan_declared(schema, spec, values, start_ms, end_ms, tz)
    shown = ", ".join(f"{f}={values[f]}" for f in spec.select)
    window = f" in [{_iso(start_ms)}, {_iso(end_ms)})" if spec.read == "time" else ""
    return Query(
        f"{name}({shown}){window} from {spec.table}",
        scans,
        lambda rows: decode_declared(schema, spec, rows),
    )
