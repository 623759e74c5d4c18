"""OpenTSDB 2.x requests, parsed and checked (pure).

Everything a client sends is hostile input: a bad time, interval, aggregator, filter or regular
expression is a :class:`BadRequest` (a 400 in OpenTSDB's error shape), never a traceback.
Regular expressions run on RE2 (:mod:`btts.tsdb.patterns`): linear time for any pattern, so
none is refused for its shape; back-references, lookarounds and long patterns are.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from btts.tsdb import patterns, series

__all__ = [
    "FILL_POLICIES",
    "FILTER_TYPES",
    "MAX_FILTER_VALUES",
    "MAX_QUERIES",
    "MAX_REGEX",
    "UNITS_MS",
    "BadRequest",
    "Downsample",
    "Rate",
    "SubQuery",
    "TagFilter",
    "TsQuery",
    "check_regex",
    "from_tags",
    "parse_body",
    "parse_downsample",
    "parse_get",
    "parse_interval",
    "parse_m",
    "parse_time",
    "sub_query",
    "tag_filter",
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
_RELATIVE = re.compile(r"([0-9]{1,12})(ms|s|m|h|d|w|n|y)-ago\Z")
_ABSOLUTE_FORMATS = ("%Y/%m/%d-%H:%M:%S", "%Y/%m/%d %H:%M:%S", "%Y/%m/%d-%H:%M", "%Y/%m/%d")
FILL_POLICIES = ("none", "nan", "null", "zero")
FILTER_TYPES = {
    "literal_or": "One or more exact values, pipe separated: web01|web02",
    "iliteral_or": "literal_or ignoring case",
    "not_literal_or": "Every value but the ones given, pipe separated",
    "wildcard": "A value matching * wildcards: web*",
    "regexp": "A regular expression in RE2 syntax (no back-references or lookarounds)",
}


class BadRequest(ValueError):
    """A request the server refuses: ``code`` is the HTTP status (400, 413, 504…)."""

    def __init__(self, message: str, code: int = 400) -> None:
        super().__init__(message)
        self.code = code


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
    interval_ms: int  # 0: one bucket for the whole range ("0all")
    aggregator: str
    fill: str = "none"

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


@dataclass(frozen=True)
class TsQuery:
    start_ms: int
    end_ms: int
    queries: tuple[SubQuery, ...]
    ms_resolution: bool = False
    show_query: bool = False


# -- times and intervals ----------------------------------------------------------------------


def parse_interval(text: str) -> int:
    match = _INTERVAL.match(text.strip())
    if not match:
        raise BadRequest(f"Invalid interval {text[:40]!r}: expected <number><ms|s|m|h|d|w|n|y>")
    return int(match.group(1)) * UNITS_MS[match.group(2)]


def parse_time(value: object, now_ms: int, what: str) -> int:
    """Epoch seconds or milliseconds (a number or its text), ``<n><unit>-ago``, ``now`` or
    ``yyyy/MM/dd[-HH:mm[:ss]]`` (UTC)."""
    if isinstance(value, bool) or value is None:
        raise BadRequest(f"Missing or invalid {what} time")
    if isinstance(value, (int, float)):
        number = int(value)
    else:
        text = str(value).strip()
        if text == "now":
            return now_ms
        relative = _RELATIVE.match(text)
        if relative:
            return now_ms - int(relative.group(1)) * UNITS_MS[relative.group(2)]
        if text.isdigit() and len(text) <= 13:
            number = int(text)
        else:
            for fmt in _ABSOLUTE_FORMATS:
                try:
                    moment = dt.datetime.strptime(text, fmt).replace(tzinfo=dt.timezone.utc)
                except ValueError:
                    continue
                return int(moment.timestamp() * 1000)
            raise BadRequest(f"Invalid {what} time {text[:40]!r}")
    if number < 0 or number > 99_999_999_999_999:
        raise BadRequest(f"Invalid {what} time {number}")
    return number * 1000 if number < 10_000_000_000 else number  # seconds when ≤ 10 digits


def parse_downsample(text: str) -> Downsample:
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
    ms = 0 if interval == "0all" else parse_interval(interval)
    if ms == 0 and interval != "0all":
        raise BadRequest("Invalid interval 0: use 0all for one bucket")
    return Downsample(ms, agg, fill)


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


def from_tags(tags: Mapping[str, object]) -> list[TagFilter]:
    """OpenTSDB 1.x-style ``tags``: every one groups; ``*``/``x*`` wildcards, ``a|b`` lists."""
    out = []
    for tagk, value in tags.items():
        if not isinstance(value, str):
            raise BadRequest(f"Tag {str(tagk)[:40]!r}: its value must be text")
        kind = "wildcard" if "*" in value else "literal_or"
        out.append(tag_filter(tagk, kind, value, True))
    return out


# -- whole requests ---------------------------------------------------------------------------


def sub_query(index: int, raw: object) -> SubQuery:
    if not isinstance(raw, dict):
        raise BadRequest("Each query must be a JSON object")
    metric = raw.get("metric")
    if not isinstance(metric, str) or not metric:
        raise BadRequest(f"Query {index}: missing the metric")
    agg = raw.get("aggregator")
    if not isinstance(agg, str) or agg not in series.AGGREGATORS:
        raise BadRequest(f"No such aggregator: {str(agg)[:20]!r}")
    down = raw.get("downsample")
    downsample = parse_downsample(down) if down else None
    rate = None
    if raw.get("rate"):
        opts = raw.get("rateOptions") or {}
        if not isinstance(opts, dict):
            raise BadRequest("rateOptions must be an object")
        try:
            cmax = opts.get("counterMax")
            rate = Rate(
                bool(opts.get("counter")),
                float(cmax) if cmax not in (None, "") else None,
                float(opts.get("resetValue") or 0),
                bool(opts.get("dropResets")),
            )
        except (TypeError, ValueError):
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
                tag_filter(f.get("tagk"), f.get("type"), f.get("filter"), f.get("groupBy"))
            )
    elif raw.get("tags"):
        if not isinstance(raw["tags"], dict):
            raise BadRequest("tags must be an object")
        filters = from_tags(raw["tags"])
    return SubQuery(index, metric, agg, downsample, rate, tuple(filters), raw)


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
    queries = tuple(sub_query(i, q) for i, q in enumerate(raw_queries))
    return TsQuery(start, end, queries, bool(body.get("msResolution")), bool(body.get("showQuery")))


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
    }
    return parse_body(body, now_ms)
