"""OpenTSDB 2.x requests, parsed and checked (pure).

Everything a client sends is hostile input: a bad time, interval, aggregator, filter or regular
expression is a :class:`BadRequest` (a 400 in OpenTSDB's error shape), never a traceback.
Regular expressions run on RE2 (:mod:`btts.tsdb.patterns`): linear time for any pattern, so
none is refused for its shape; back-references, lookarounds and long patterns are.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from btts.tsdb import calendar, patterns, series
from btts.tsdb.calendar import Calendar

__all__ = [
    "FILTER_TYPES",
    "BadRequest",
    "SubQuery",
    "TagFilter",
    "TsQuery",
    "parse_body",
    "parse_get",
    "parse_m",
    "tag_filter",
    "truth",
]

MAX_REGEX = patterns.MAX_PATTERN
MAX_QUERIES = 50
MAX_FILTER_VALUES = 1000
UNITS_MS = {
    "ms": 1,
    "s": 1000,
    "m": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
    "w": 7 * 86_400_000,
    "n": 30 * 86_400_000,
    "y": 365 * 86_400_000,
}
_INTERVAL = re.compile(r"([0-9]{1,12})(ms|s|m|h|d|w|n|y)\Z")
_NUMBER = re.compile(r"(-?[0-9]{1,17})(?:\.([0-9]{1,3}))?(ms)?\Z")
EARLIEST_MS = -62_135_596_800_000  # 0001-01-01T00:00:00Z: the earliest a time field holds
LATEST_MS = 99_999_999_999_999
_RELATIVE = re.compile(r"([0-9]{1,12})(ms|s|m|h|d|w|n|y)-ago\Z")
_ABSOLUTE_FORMATS = ("%Y/%m/%d-%H:%M:%S", "%Y/%m/%d %H:%M:%S", "%Y/%m/%d-%H:%M", "%Y/%m/%d")
FILL_POLICIES = ("none", "nan", "null", "zero")
FILTER_TYPES = {
    "literal_or": "One or more exact values, pipe separated: web01|web02",
    "iliteral_or": "literal_or ignoring case",
    "not_literal_or": "Every value but the ones given, pipe separated",
    "wildcard": "A value matching * wildcards, case-sensitive: web*",
    "iwildcard": "wildcard ignoring case",
    "regexp": "A regular expression in RE2 syntax (no back-references or lookarounds)",
}


class BadRequest(ValueError):
    """A request the server refuses: ``code`` is the HTTP status (400, 413, 504…); ``details``
    what OpenTSDB adds to some errors (the cause's message)."""

    def __init__(self, message: str, code: int = 400, details: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.details = details


@dataclass(frozen=True)
class TagFilter:
    tagk: str
    type: str
    filter: str
    group_by: bool

    def literals(self) -> list[str] | None:
        """The exact values this filter allows, when it is a list of them."""
        if self.type == "literal_or":
            return self.filter.split("|")
        if self.type == "wildcard" and "*" not in self.filter:
            return [self.filter]
        return None

    def match(self, value: str) -> bool:
        return patterns.matcher(self.type, self.filter)(value)


@dataclass(frozen=True)
class Downsample:
    interval_ms: int  # 0: one bucket for the whole range ("0all"); nominal for a calendar
    aggregator: str
    fill: str = "none"
    calendar: Calendar | None = field(default=None, compare=False)  # buckets on the calendar

    @property
    def text(self) -> str:
        return f"{self.interval_ms}ms-{self.aggregator}-{self.fill}"


@dataclass(frozen=True)
class Rate:
    counter: bool = False
    counter_max: float | None = None
    reset_value: float = 0
    drop_resets: bool = False


@dataclass(frozen=True)
class SubQuery:
    index: int
    metric: str
    aggregator: str
    downsample: Downsample | None = None
    rate: Rate | None = None
    filters: tuple[TagFilter, ...] = ()
    raw: Mapping = field(default_factory=dict, compare=False)
    explicit_tags: bool = False  # only series whose tags are exactly the ones named


@dataclass(frozen=True)
class TsQuery:
    start_ms: int
    end_ms: int
    queries: tuple[SubQuery, ...]
    ms_resolution: bool = False
    show_query: bool = False
    arrays: bool = False  # ?arrays=true: dps as [[ts, value], …]


# -- times and intervals ----------------------------------------------------------------------


def parse_interval(text: str) -> int:
    match = _INTERVAL.match(text.strip())
    if not match:
        raise BadRequest(f"Invalid interval {text[:40]!r}: expected <number><ms|s|m|h|d|w|n|y>")
    return int(match.group(1)) * UNITS_MS[match.group(2)]


def truth(value: object) -> bool:
    """A flag as OpenTSDB reads one: ``true``/``"true"`` (any case), ``1``; ``"false"``, ``""``
    and anything else is false."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value) if isinstance(value, (bool, int, float)) else False


def _epoch(text: str) -> int | None:
    """Epoch seconds (10 digits or fewer, a ``.fff`` fraction allowed) or milliseconds (more
    digits, or an ``ms`` suffix); negative before 1970. None when not a number."""
    match = _NUMBER.match(text)
    if not match:
        return None
    whole, frac, ms = match.groups()
    number = int(whole)
    if ms:
        return None if frac else number
    if frac is not None or abs(number) < 10_000_000_000:
        sign = -1 if whole.startswith("-") else 1
        return number * 1000 + sign * int((frac or "0").ljust(3, "0"))
    return number


def parse_time(value: object, now_ms: int, what: str) -> int:
    """Epoch seconds or milliseconds (a number or its text, negative before 1970, seconds with
    a ``.fff`` fraction, ``<n>ms``), ``<n><unit>-ago``, ``now`` or ``yyyy/MM/dd[-HH:mm[:ss]]``
    (UTC), from year 1 on."""
    if isinstance(value, bool) or value is None or not isinstance(value, (int, float, str)):
        raise BadRequest(f"Missing or invalid {what} time")
    text = repr(value) if isinstance(value, float) else str(value).strip()
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        raise BadRequest(f"Invalid {what} time {text[:40]}")
    if isinstance(value, float) and value == int(value):
        text = str(int(value))
    if text == "now":
        return now_ms
    relative = _RELATIVE.match(text)
    if relative:
        number = now_ms - int(relative.group(1)) * UNITS_MS[relative.group(2)]
    else:
        number = _epoch(text)
    if number is None:
        for fmt in _ABSOLUTE_FORMATS:
            try:
                moment = dt.datetime.strptime(text, fmt).replace(tzinfo=dt.timezone.utc)
            except ValueError:
                continue
            return int(moment.timestamp() * 1000)
        raise BadRequest(f"Invalid {what} time {text[:40]!r}")
    if not EARLIEST_MS <= number <= LATEST_MS:
        raise BadRequest(f"Invalid {what} time {text[:40]}: before year 1 or too far ahead")
    return number


def parse_downsample(text: str, timezone: str = "UTC", use_calendar: bool = False) -> Downsample:
    """``<interval>-<agg>[-<fill>]``; an interval ending in ``c`` (``1dc``), or any interval
    with ``use_calendar``, buckets on the calendar in ``timezone``."""
    parts = str(text).strip().split("-")
    if len(parts) not in (2, 3):
        raise BadRequest(
            f"Invalid downsample {str(text)[:40]!r}: expected <interval>-<agg>[-<fill>]"
        )
    interval, agg = parts[0], parts[1]
    fill = parts[2] if len(parts) == 3 else "none"
    if fill not in FILL_POLICIES:
        raise BadRequest(
            f"Unrecognized fill policy {fill[:20]!r}: one of {', '.join(FILL_POLICIES)}"
        )
    if agg not in series.AGGREGATORS or agg == "none":
        raise BadRequest(f"No such downsampling function: {agg[:20]!r}")
    on_calendar = interval.endswith("c") and interval != "0all"
    interval = interval[:-1] if on_calendar else interval
    ms = 0 if interval == "0all" else parse_interval(interval)
    if ms == 0 and interval != "0all":
        raise BadRequest("Invalid interval 0: use 0all for one bucket")
    if not (on_calendar or use_calendar) or ms == 0:
        return Downsample(ms, agg, fill)
    match = _INTERVAL.match(interval)
    try:
        tz = calendar.zone(str(timezone or "UTC"))
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    return Downsample(ms, agg, fill, Calendar(int(match.group(1)), match.group(2), tz))


# -- filters ----------------------------------------------------------------------------------


def check_regex(pattern: str) -> object:
    """``pattern`` compiled by RE2, or a 400 saying why not."""
    try:
        return patterns.compile_regex(pattern)
    except patterns.PatternError as exc:
        raise BadRequest(str(exc)) from None


def tag_filter(tagk: object, kind: object, text: object, group_by: object) -> TagFilter:
    if not isinstance(tagk, str) or not tagk or not isinstance(text, str):
        raise BadRequest("A filter needs a tagk and a filter (text)")
    kind = kind if isinstance(kind, str) else ""
    if kind not in FILTER_TYPES:
        raise BadRequest(
            f"Unrecognized filter type {kind[:20]!r}: one of {', '.join(FILTER_TYPES)}"
        )
    if text.count("|") >= MAX_FILTER_VALUES:
        raise BadRequest(f"More than {MAX_FILTER_VALUES} values in one filter")
    out = TagFilter(tagk, kind, text, bool(group_by))
    if kind == "regexp":
        check_regex(text)
    return out


_FILTER_TEXT = re.compile(r"([a-z_]+)\((.*)\)\Z", re.DOTALL)


def from_tags(tags: Mapping[str, object]) -> list[TagFilter]:
    """OpenTSDB 1.x-style ``tags``: every one groups; ``*``/``x*`` wildcards, ``a|b`` lists,
    or a filter written ``type(expression)`` (``regexp(web.*)``, ``literal_or(a|b)``)."""
    out = []
    for tagk, value in tags.items():
        if not isinstance(value, str):
            raise BadRequest(f"Tag {str(tagk)[:40]!r}: its value must be text")
        written = _FILTER_TEXT.match(value)
        if written and written.group(1) in FILTER_TYPES:
            out.append(tag_filter(tagk, written.group(1), written.group(2), True))
            continue
        kind = "wildcard" if "*" in value else "literal_or"
        out.append(tag_filter(tagk, kind, value, True))
    return out


# -- whole requests ---------------------------------------------------------------------------


def sub_query(
    index: int, raw: object, timezone: str = "UTC", use_calendar: bool = False
) -> SubQuery:
    if not isinstance(raw, dict):
        raise BadRequest("Each query must be a JSON object")
    metric = raw.get("metric")
    if not isinstance(metric, str) or not metric:
        raise BadRequest(f"Query {index}: missing the metric")
    agg = raw.get("aggregator")
    if not isinstance(agg, str) or agg not in series.AGGREGATORS:
        raise BadRequest(f"No such aggregator: {str(agg)[:20]!r}")
    down = raw.get("downsample")
    downsample = parse_downsample(down, timezone, use_calendar) if down else None
    rate = None
    if truth(raw.get("rate")):
        opts = raw.get("rateOptions") or {}
        if not isinstance(opts, dict):
            raise BadRequest("rateOptions must be an object")
        try:
            cmax = opts.get("counterMax")
            rate = Rate(
                truth(opts.get("counter")),
                _counter_max(cmax),
                float(opts.get("resetValue") or 0),
                truth(opts.get("dropResets")),
            )
        except (TypeError, ValueError, OverflowError):
            raise BadRequest("rateOptions: counterMax and resetValue must be numbers") from None
    filters: list[TagFilter] = []
    raw_filters = raw.get("filters")
    if raw_filters:
        if not isinstance(raw_filters, list):
            raise BadRequest("filters must be a list")
        for f in raw_filters:
            if not isinstance(f, dict):
                raise BadRequest("Each filter must be an object")
            filters.append(
                tag_filter(f.get("tagk"), f.get("type"), f.get("filter"), truth(f.get("groupBy")))
            )
    elif raw.get("tags"):
        if not isinstance(raw["tags"], dict):
            raise BadRequest("tags must be an object")
        filters = from_tags(raw["tags"])
    explicit = truth(raw.get("explicitTags"))
    return SubQuery(index, metric, agg, downsample, rate, tuple(filters), raw, explicit)


def parse_body(body: object, now_ms: int | None = None) -> TsQuery:
    """The body of ``POST /api/query`` (as Grafana's OpenTSDB data source sends it)."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    if not isinstance(body, dict):
        raise BadRequest("The query body must be a JSON object")
    start = parse_time(body.get("start"), now_ms, "start")
    end = parse_time(body["end"], now_ms, "end") if body.get("end") not in (None, "") else now_ms
    if end <= start:
        raise BadRequest("End time must be greater than the start time")
    raw_queries = body.get("queries")
    if not isinstance(raw_queries, list) or not raw_queries:
        raise BadRequest("Missing queries")
    if len(raw_queries) > MAX_QUERIES:
        raise BadRequest(f"More than {MAX_QUERIES} queries in one request", 413)
    tz, use_calendar = body.get("timezone") or "UTC", truth(body.get("useCalendar"))
    if not isinstance(tz, str):
        raise BadRequest("timezone must be text: an IANA name (Europe/Paris)")
    queries = tuple(sub_query(i, q, tz, use_calendar) for i, q in enumerate(raw_queries))
    ms = truth(body.get("msResolution")) or truth(body.get("ms"))
    return TsQuery(start, end, queries, ms, truth(body.get("showQuery")))


def _counter_max(value: object) -> int | float | None:
    """``counterMax``: a whole number stays an exact integer (OpenTSDB's long)."""
    if value in (None, ""):
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    number = float(value)  # type: ignore[arg-type]
    return int(number) if number == int(number) else number


_M = re.compile(r"(?P<metric>[^{}]+)(?:\{(?P<tags>[^{}]*)\})?(?:\{(?P<filters>[^{}]*)\})?\Z")


def parse_m(text: str, index: int = 0) -> dict:
    """``agg:[interval-agg[-fill]:][rate[{counter[,max[,reset]]}]:]metric[{tags}][{filters}]``
    → the JSON form of one query."""
    parts = text.split(":")
    if len(parts) < 2:
        raise BadRequest(f"Invalid m= {text[:60]!r}: expected aggregator:metric")
    out: dict = {"aggregator": parts[0]}
    match = _M.match(parts[-1])
    if not match:
        raise BadRequest(f"Invalid metric expression {parts[-1][:60]!r}")
    out["metric"] = match.group("metric")
    for part in parts[1:-1]:
        if part.startswith("rate"):
            out["rate"] = True
            inner = part[4:].strip("{}")
            bits = inner.split(",") if inner else []
            out["rateOptions"] = {
                "counter": bool(bits) and bits[0] == "counter",
                **({"counterMax": bits[1]} if len(bits) > 1 and bits[1] else {}),
                **({"resetValue": bits[2]} if len(bits) > 2 and bits[2] else {}),
            }
        else:
            out["downsample"] = part
    filters = []
    for group, group_by in (("tags", True), ("filters", False)):
        for pair in filter(None, (match.group(group) or "").split(",")):
            tagk, _, value = pair.partition("=")
            kind, _, inner = value.partition("(")
            if inner.endswith(")") and kind in FILTER_TYPES:
                filters.append(
                    {"type": kind, "tagk": tagk, "filter": inner[:-1], "groupBy": group_by}
                )
            else:
                kind = "wildcard" if "*" in value else "literal_or"
                filters.append({"type": kind, "tagk": tagk, "filter": value, "groupBy": group_by})
    out["filters"] = filters
    return out


def parse_get(params: Mapping[str, list[str]], now_ms: int | None = None) -> TsQuery:
    """``GET /api/query?start=…&end=…&m=…`` (one ``m`` per query)."""
    body: dict = {
        "start": (params.get("start") or [None])[0],
        "end": (params.get("end") or [None])[0],
        "queries": [parse_m(m, i) for i, m in enumerate(params.get("m") or [])],
        "msResolution": (params.get("ms") or params.get("msResolution") or ["false"])[0]
        in ("", "true"),
        "showQuery": (params.get("show_query") or params.get("showQuery") or ["false"])[0]
        in ("", "true"),
        "timezone": (params.get("timezone") or ["UTC"])[0],
        "useCalendar": (params.get("use_calendar") or params.get("useCalendar") or ["false"])[0],
    }
    tq = parse_body(body, now_ms)
    return replace(tq, arrays=truth((params.get("arrays") or ["false"])[0]))
