"""OpenTSDB 2.x requests, parsed and checked (pure).

Everything a client sends is hostile input: a bad time, interval, aggregator, filter or regular
expression is a :class:`BadRequest` (a 400 in OpenTSDB's error shape), never a traceback.
Regular expressions run on RE2 (:mod:`btts.tsdb.patterns`): linear time for any pattern, so
none is refused for its shape; back-references, lookarounds and long patterns are.

The JSON body is read as OpenTSDB 2.4.1's Jackson reads it (``TSQuery``, ``TSSubQuery``); the
query-string forms (``m=``, ``{tags}{filters}``) are :mod:`btts.tsdb.mquery`'s.
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
from btts.tsdb.errors import BadRequest, TooLarge
from btts.tsdb.series import Downsample, Rate

__all__ = [
    "EARLIEST_MS",
    "FILTER_TYPES",
    "SubQuery",
    "TagFilter",
    "TsQuery",
    "filter_of_tag",
    "merge_filters",
    "parse_body",
    "tag_filter",
    "truth",
]

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
_INTERVAL = re.compile(r"([0-9]{1,12})(ms|s|m|h|d|w|n|y)\Z", re.IGNORECASE)
_NUMBER = re.compile(r"(-?[0-9]{1,17})(?:\.([0-9]{1,3}))?(ms)?\Z")
EARLIEST_MS = -62_135_596_800_000  # 0001-01-01T00:00:00Z: the earliest a time field holds
LATEST_MS = 99_999_999_999_999
_RELATIVE = re.compile(r"([0-9]{1,12})(ms|s|m|h|d|w|n|y)-ago\Z", re.IGNORECASE)
# DateTime.parseDateTimeString: the format is chosen by the text's length
_ABSOLUTE_FORMATS = {
    10: ("%Y/%m/%d",),
    16: ("%Y/%m/%d-%H:%M", "%Y/%m/%d %H:%M"),
    19: ("%Y/%m/%d-%H:%M:%S", "%Y/%m/%d %H:%M:%S"),
}
FILL_POLICIES = ("none", "nan", "null", "zero")
FILTER_TYPES = {
    "literal_or": "One or more exact values, pipe separated: web01|web02",
    "iliteral_or": "literal_or ignoring case",
    "not_literal_or": "Every value but the ones given, pipe separated",
    "not_iliteral_or": "not_literal_or ignoring case",
    "wildcard": "A value matching * wildcards, case-sensitive: web*",
    "iwildcard": "wildcard ignoring case",
    "regexp": "A regular expression in RE2 syntax (no back-references or lookarounds)",
}
_LITERAL_TYPES = ("literal_or", "iliteral_or", "not_literal_or", "not_iliteral_or")


@dataclass(frozen=True)
class TagFilter:
    tagk: str
    type: str
    filter: str
    group_by: bool

    def literals(self) -> list[str] | None:
        """The exact values this filter allows, when it is a list of them."""
        if self.type == "literal_or":
            return [v for v in self.filter.split("|") if v]
        return None

    def match(self, value: str) -> bool:
        return patterns.matcher(self.type, self.filter)(value)

    def matches(self, tags: Mapping[str, str]) -> bool:
        """``TagVFilter.match`` on a series' tags: a series without the tag passes only a
        ``not_`` filter."""
        value = tags.get(self.tagk)
        if value is None:
            return self.type.startswith("not_")
        return self.match(value)

    def same(self, other: TagFilter) -> bool:
        """OpenTSDB's ``equals``: the same tag, type and values (a literal list in any order;
        an i-type ignoring case), whatever the group-by."""
        return (self.tagk, self.type, self._canonical()) == (
            other.tagk,
            other.type,
            other._canonical(),
        )

    def _canonical(self) -> object:
        ignore_case = self.type in ("iliteral_or", "not_iliteral_or", "iwildcard")
        text = self.filter.lower() if ignore_case else self.filter
        if self.type in _LITERAL_TYPES:
            return frozenset(text.split("|"))
        return text


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
    show_tsuids: bool = False  # each answer lists the series it holds (``tsuids``)
    show_stats: bool = False  # each answer carries its sub-query's ``stats``
    show_summary: bool = False  # a last element ``{"statsSummary": …}``


# -- times and intervals ----------------------------------------------------------------------


def parse_interval(text: str) -> int:
    """``<number><unit>`` (DateTime.parseDuration: the unit in any case) in ms."""
    match = _INTERVAL.match(text.strip())
    if not match:
        raise BadRequest(f"Invalid interval {text[:40]!r}: expected <number><ms|s|m|h|d|w|n|y>")
    return int(match.group(1)) * UNITS_MS[match.group(2).lower()]


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


def zone(name: str | None) -> dt.tzinfo:
    """The time zone a request names (``timezone``), UTC when it names none; an unknown one
    is a 400 with OpenTSDB's words."""
    try:
        return calendar.zone(str(name or "UTC"))
    except ValueError:
        raise BadRequest(f"Invalid timezone name: {str(name)[:40]}") from None


def _absolute(text: str, tz: str | None) -> int | None:
    """``yyyy/MM/dd[-HH:mm[:ss]]`` (or a space for the dash) in ``tz``; None when ``text`` is
    not a date; a 400 when it looks like one but is not."""
    if "/" not in text and ":" not in text:
        return None
    formats = _ABSOLUTE_FORMATS.get(len(text), ())
    for fmt in formats:
        try:
            local = dt.datetime.strptime(text, fmt)
        except ValueError:
            continue
        return int(local.replace(tzinfo=zone(tz)).timestamp() * 1000)
    raise BadRequest(f"Invalid absolute date: {text[:40]}")


def parse_time(value: object, now_ms: int, what: str, tz: str | None = None) -> int:
    """Epoch seconds or milliseconds (a number or its text, negative before 1970, seconds with
    a ``.fff`` fraction, ``<n>ms``), ``<n><unit>-ago``, ``now`` (any case) or
    ``yyyy/MM/dd[-HH:mm[:ss]]`` in the time zone ``tz`` (UTC when none), from year 1 on."""
    if isinstance(value, bool) or value is None or not isinstance(value, (int, float, str)):
        raise BadRequest(f"Missing or invalid {what} time")
    text = repr(value) if isinstance(value, float) else str(value).strip()
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        raise BadRequest(f"Invalid {what} time {text[:40]}")
    if isinstance(value, float) and value == int(value):
        text = str(int(value))
    if text.lower() == "now":
        return now_ms
    relative = _RELATIVE.match(text)
    if relative:
        number = now_ms - int(relative.group(1)) * UNITS_MS[relative.group(2).lower()]
    else:
        number = _epoch(text)
    if number is None:
        moment = _absolute(text, tz)
        if moment is None:
            raise BadRequest(f"Invalid {what} time {text[:40]!r}")
        return moment
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
            f"Unrecognized fill policy: {fill[:20]} (one of {', '.join(FILL_POLICIES)})"
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
    except ValueError:  # TSQuery.validateAndSetQuery's words
        raise BadRequest("The timezone specification could not be found") from None
    return Downsample(ms, agg, fill, Calendar(int(match.group(1)), match.group(2).lower(), tz))


# -- filters ----------------------------------------------------------------------------------


def check_regex(pattern: str) -> object:
    """``pattern`` compiled by RE2, or a :class:`~btts.tsdb.patterns.PatternError` (a 400)
    saying why not."""
    return patterns.compile_regex(pattern)


def tag_filter(tagk: object, kind: object, text: object, group_by: object) -> TagFilter:
    """One filter as OpenTSDB's filter classes take it: a known type (``TagVFilter``'s
    registered list: not ``not_key``), a tag key, and a filter text each type checks."""
    if not isinstance(tagk, str) or not tagk or not isinstance(text, str):
        raise BadRequest("A filter needs a tagk and a filter (text)")
    kind = kind if isinstance(kind, str) else ""
    if kind not in FILTER_TYPES:
        raise BadRequest(
            f"Could not find a tag value filter of the type: {kind[:20]} "
            f"(filter types: {', '.join(FILTER_TYPES)})"
        )
    if not text:
        raise BadRequest(f"Filter cannot be null or empty ({kind} on {tagk[:40]})")
    if kind in _LITERAL_TYPES and text == "|":
        raise BadRequest("Filter must contain more than just a pipe")
    if kind in ("wildcard", "iwildcard") and "*" not in text:
        raise BadRequest(f"Filter must contain an asterisk: {text[:40]!r}")
    if text.count("|") >= MAX_FILTER_VALUES:
        raise BadRequest(f"More than {MAX_FILTER_VALUES} values in one filter")
    out = TagFilter(tagk, kind, text, bool(group_by))
    if kind == "regexp":
        check_regex(text)
    return out


def filter_of_tag(tagk: str, value: object, group_by: bool = True) -> TagFilter:
    """A tag written ``tagk=value`` (``TagVFilter.getFilter``): ``type(expression)`` is that
    filter (the type in any case), a value with a ``*`` an ``iwildcard`` (OpenTSDB's implicit
    wildcard ignores case), anything else a ``literal_or`` of ``|``-separated values."""
    if not isinstance(tagk, str) or not tagk:
        raise BadRequest("A tag needs a key")
    if not isinstance(value, str) or not value:
        raise BadRequest(f"Tag {tagk[:40]!r}: its value must be non-empty text")
    paren = value.find("(")
    if paren >= 0:
        if not value.endswith(")"):
            raise BadRequest(f"Filter must end with a ')': {value[:60]}")
        return tag_filter(tagk, value[:paren].lower(), value[paren + 1 : -1], group_by)
    kind = "iwildcard" if "*" in value else "literal_or"
    return tag_filter(tagk, kind, value, group_by)


def merge_filters(filters: list[TagFilter], new: TagFilter) -> list[TagFilter]:
    """``TagVFilter.mapToFilters``: a group-by filter the list already holds (equal but for
    its group-by) marks that one as group-by instead of being added twice."""
    if new.group_by:
        for i, old in enumerate(filters):
            if old.same(new):
                return [*filters[:i], replace(old, group_by=True), *filters[i + 1 :]]
    return [*filters, new]


def from_tags(tags: Mapping[str, object]) -> list[TagFilter]:
    """OpenTSDB 1.x-style ``tags``: every one groups (:func:`filter_of_tag`)."""
    out: list[TagFilter] = []
    for tagk, value in tags.items():
        out = merge_filters(out, filter_of_tag(tagk, value))
    return out


def _json_filters(raw: object) -> list[TagFilter]:
    if not isinstance(raw, list):
        raise BadRequest("filters must be a list")
    out = []
    for f in raw:
        if not isinstance(f, dict):
            raise BadRequest("Each filter must be an object")
        out.append(
            tag_filter(f.get("tagk"), f.get("type"), f.get("filter"), truth(f.get("groupBy")))
        )
    return out


def filters_of(raw: Mapping) -> list[TagFilter]:
    """A sub-query's filters as Jackson sets them: ``setTags`` and ``setFilters`` each
    replace what the other set, so of ``tags`` and ``filters`` the one written last wins."""
    last = None
    for key in raw:
        if key in ("tags", "filters"):
            last = key
    if last == "filters":
        return _json_filters(raw["filters"]) if raw["filters"] is not None else []
    if last == "tags" and raw["tags"] is not None:
        if not isinstance(raw["tags"], dict):
            raise BadRequest("tags must be an object")
        return from_tags(raw["tags"])
    return []


# -- whole requests ---------------------------------------------------------------------------


def _rate(raw: Mapping) -> Rate | None:
    if not truth(raw.get("rate")):
        return None
    opts = raw.get("rateOptions") or {}
    if not isinstance(opts, dict):
        raise BadRequest("rateOptions must be an object")
    try:
        return Rate(
            truth(opts.get("counter")),
            _counter_max(opts.get("counterMax")),
            float(opts.get("resetValue") or 0),
            truth(opts.get("dropResets")),
        )
    except (TypeError, ValueError, OverflowError):
        raise BadRequest("rateOptions: counterMax and resetValue must be numbers") from None


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
    filters = tuple(filters_of(raw))
    explicit = truth(raw.get("explicitTags"))
    return SubQuery(index, metric, agg, downsample, _rate(raw), filters, raw, explicit)


def _distinct(queries: list[SubQuery]) -> tuple[SubQuery, ...]:
    """The sub-queries without repeats, numbered again (``parseQueryV1`` keeps the first of
    equal ``TSSubQuery`` s: the same metric, aggregator, downsample, rate, filters)."""
    out: list[SubQuery] = []
    for sub in queries:
        mine = (sub.metric, sub.aggregator, sub.downsample, sub.rate, sub.explicit_tags)
        if any(
            (o.metric, o.aggregator, o.downsample, o.rate, o.explicit_tags) == mine
            and _same_filters(o.filters, sub.filters)
            for o in out
        ):
            continue
        out.append(replace(sub, index=len(out)))
    return tuple(out)


def _same_filters(a: tuple[TagFilter, ...], b: tuple[TagFilter, ...]) -> bool:
    """OpenTSDB's list equality of filters: in order, each equal (its group-by not compared)."""
    return len(a) == len(b) and all(x.same(y) for x, y in zip(a, b, strict=True))


def _times(body: Mapping, now_ms: int, tz: str | None) -> tuple[int, int]:
    if body.get("start") in (None, ""):
        raise BadRequest("Missing start time")
    start = parse_time(body.get("start"), now_ms, "start", tz)
    end = now_ms
    if body.get("end") not in (None, ""):
        end = parse_time(body["end"], now_ms, "end", tz)
    if end <= start:
        raise BadRequest(f"End time [{end}] must be greater than the start time [{start}]")
    return start, end


def parse_body(body: object, now_ms: int | None = None) -> TsQuery:
    """The body of ``POST /api/query`` (as Grafana's OpenTSDB data source sends it)."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    if not isinstance(body, dict):
        raise BadRequest("The query body must be a JSON object")
    tz = body.get("timezone") or None
    if tz is not None and not isinstance(tz, str):
        raise BadRequest("timezone must be text: an IANA name (Europe/Paris)")
    start, end = _times(body, now_ms, tz)
    raw_queries = body.get("queries")
    if not isinstance(raw_queries, list) or not raw_queries:
        raise BadRequest("Missing queries")
    if len(raw_queries) > MAX_QUERIES:
        raise TooLarge(f"More than {MAX_QUERIES} queries in one request")
    use_calendar = truth(body.get("useCalendar"))
    queries = _distinct([sub_query(i, raw, tz, use_calendar) for i, raw in enumerate(raw_queries)])
    if tz is not None and any(sub.downsample for sub in queries):
        try:
            calendar.zone(tz)
        except ValueError:  # TSQuery.validateAndSetQuery: a downsample needs a known zone
            raise BadRequest("The timezone specification could not be found") from None
    return TsQuery(
        start,
        end,
        queries,
        truth(body.get("msResolution")) or truth(body.get("ms")),
        truth(body.get("showQuery")),
        show_tsuids=truth(body.get("showTSUIDs")),
        show_stats=truth(body.get("showStats")),
        show_summary=truth(body.get("showSummary")),
    )


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
