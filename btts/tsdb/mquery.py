"""OpenTSDB's query-string forms (pure): ``GET /api/query?start=…&m=…`` and its ``m=``
expression ``agg:[interval-agg[-fill]:][rate[{counter[,max[,reset]]}]:][explicit_tags:]metric
[{tags}][{filters}]``, read as OpenTSDB 2.4.1's ``QueryRpc.parseMTypeSubQuery`` and
``Tags.parseWithMetricAndFilters`` read them: the result is the JSON form of the request, which
:func:`btts.tsdb.request.parse_body` then checks like any body.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from btts.tsdb import request
from btts.tsdb.errors import BadRequest
from btts.tsdb.request import TagFilter

__all__ = ["flag", "parse_get", "parse_metric"]

MAX_LONG = 2**63 - 1


def _pair(text: str) -> tuple[str, str]:
    """``tagk=value`` (``Tags.parse``): exactly one ``=``, both sides non-empty."""
    parts = text.split("=")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        raise BadRequest(f"invalid tag: {text[:80]}")
    return parts[0], parts[1]


def parse_metric(text: str) -> tuple[str, list[TagFilter]]:
    """``metric[{tags}][{filters}]`` → the metric and its filters: the second braces first, as
    filters that do not group, then the first braces' tags, each grouping (one equal to a
    filter already there makes that filter group instead: ``TagVFilter.mapToFilters``)."""
    if not text:
        raise BadRequest("Metric cannot be null or empty")
    curly = text.find("{")
    if curly < 0:
        return text, []
    if not text.endswith("}"):
        raise BadRequest(f"Missing '}}' at the end of: {text[:80]}")
    if curly == len(text) - 2:  # "metric{}"
        return text[:-2], []
    close = text.find("}")
    filters: list[TagFilter] = []
    if close != len(text) - 1:  # metric{…}{tagk=filter,…}
        for piece in text[text.rfind("{") + 1 : -1].split(","):
            if not piece:
                break
            filters.append(request.filter_of_tag(*_pair(piece), group_by=False))
    for piece in text[curly + 1 : close].split(","):
        if not piece and close != len(text) - 1:
            break
        filters = request.merge_filters(filters, request.filter_of_tag(*_pair(piece)))
    return text[:curly], filters


def _long(text: str, what: str) -> int:
    if not text.lstrip("-").isdigit() or not -MAX_LONG - 1 <= int(text) <= MAX_LONG:
        raise BadRequest(f"{what} of counter was not a number, received '{text[:40]}'")
    return int(text)


def rate_options(spec: str) -> dict:
    """``rate[{counter|dropcounter[,max[,reset]]}]`` (``QueryRpc.parseRateOptions``) as the
    JSON ``rateOptions``: ``dropcounter`` is a counter that drops its resets."""
    if len(spec) == 4:
        return {"counter": False}
    if len(spec) < 6:
        raise BadRequest(f"Invalid rate options specification: {spec[:40]}")
    parts = spec[5:-1].split(",")
    if len(parts) > 3:
        raise BadRequest(
            "Incorrect number of values in rate options specification, must be "
            f"counter[,counter max value,reset value], received: {len(parts)} parts"
        )
    out: dict = {"counter": parts[0].endswith("counter"), "dropResets": parts[0] == "dropcounter"}
    if len(parts) > 1 and parts[1]:
        out["counterMax"] = _long(parts[1], "Max value")
    if len(parts) > 2 and parts[2]:
        out["resetValue"] = _long(parts[2], "Reset value")
    return out


def _option(out: dict, part: str) -> None:
    """One ``:``-separated option between the aggregator and the metric."""
    lowered = part.lower()
    if not part:
        raise BadRequest("An empty part between ':' in m=")
    if lowered.startswith("rate"):
        out["rate"] = True
        out["rateOptions"] = rate_options(part) if "{" in part else {"counter": False}
    elif part[0].isdigit():
        out["downsample"] = part
    elif lowered.startswith("explicit_tags"):
        out["explicitTags"] = True
    elif lowered.startswith("percentiles"):
        raise BadRequest("Histogram queries (percentiles) are not served: btts keeps numbers")
    # anything else (pre-agg, rollup_…, show-histogram-buckets, or unknown) is ignored, as
    # OpenTSDB ignores it


def parse_m(text: str, index: int = 0) -> dict:
    """One ``m=`` expression → the JSON form of one query."""
    if not text:
        raise BadRequest("The query string was empty")
    parts = text.split(":")
    if not 2 <= len(parts) <= 5:
        few = "not enough" if len(parts) < 2 else "too many"
        raise BadRequest(
            f"Invalid parameter m={text[:80]} ({few} :-separated parts): "
            "expected aggregator:[downsample:][rate:]metric"
        )
    out: dict = {"aggregator": parts[0]}
    metric, filters = parse_metric(parts[-1])
    out["metric"] = metric
    for part in parts[1:-1]:
        _option(out, part)
    out["filters"] = [
        {"type": f.type, "tagk": f.tagk, "filter": f.filter, "groupBy": f.group_by} for f in filters
    ]
    return out


def flag(params: Mapping[str, list[str]], *names: str) -> bool:
    """A query-string flag: present (``&show_query``, ``&ms=true``), unless written false
    (OpenTSDB takes presence alone; ``=false`` here means false)."""
    for name in names:
        values = params.get(name)
        if values is not None:
            return values[0].strip().lower() not in ("false", "0", "no")
    return False


def parse_get(params: Mapping[str, list[str]], now_ms: int | None = None) -> request.TsQuery:
    """``GET /api/query?start=…&m=…`` (one ``m`` per query; ``QueryRpc.parseQuery``)."""
    if params.get("tsuid"):
        raise BadRequest("tsuid= queries are not served (btts has no UIDs): ask with m=")
    if not params.get("m"):
        raise BadRequest("Missing sub queries")
    body: dict = {
        "start": (params.get("start") or [None])[0],
        "end": (params.get("end") or [None])[0],
        "queries": [parse_m(m, i) for i, m in enumerate(params["m"])],
        "msResolution": flag(params, "ms", "msResolution"),
        "showQuery": flag(params, "show_query", "showQuery"),
        "showTSUIDs": flag(params, "show_tsuids", "showTSUIDs"),
        "showStats": flag(params, "show_stats", "showStats"),
        "showSummary": flag(params, "show_summary", "showSummary"),
        "timezone": (params.get("timezone") or [None])[0],
        "useCalendar": flag(params, "use_calendar", "useCalendar"),
    }
    ts_query = request.parse_body(body, now_ms)
    return replace(ts_query, arrays=flag(params, "arrays"))
