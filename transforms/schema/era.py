"""Times before 1970 in a schema file (docs/user-guide.md "Times and their formats"): a time
field's ``earliest:`` day, a table's ``cell_timestamp:``, and the tables that could not hold
what a field's earliest lets in (an epoch key, cells stamped as Unix microseconds). The rules
are pure functions returning the problem's text (empty: none); :func:`table_era` reports a
table's with their lines."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence

from transforms.schema.problems import Problems
from transforms.schema.yaml_lines import Map, line_of
from transforms.table_model import CELL_TIMESTAMPS, EPOCH_KEY_KINDS, Segment
from transforms.text import timefmt

__all__ = ["earliest_day", "stamp_problem", "table_era"]


def table_era(
    problems: Problems,
    node: Map,
    what: str,
    segments: Sequence[Segment],
    refs: Mapping[str, object],
    stamping: Sequence[object],
) -> str:
    """The table's ``cell_timestamp`` (``unix`` when missing or wrong), its problems reported:
    a key segment that cannot hold its field's early times (on the segment's line), cells
    stamped (by the ``stamping`` fields) with early times as Unix microseconds."""
    cell_timestamp = problems.text(node, "cell_timestamp", what, default="unix")
    why = cell_timestamp_problem(cell_timestamp, what)
    if why:
        problems.bad(line_of(node, "cell_timestamp"), why)
        cell_timestamp = "unix"
    for index, why in key_problems(what, segments, refs):
        problems.bad(line_of(node.get("key"), index, line_of(node, "key")), why)
    why = stamp_problem(what, cell_timestamp, stamping)
    if why:
        problems.bad(line_of(node, "cell_timestamp"), why)
    return cell_timestamp


def earliest_day(value: object, what: str) -> tuple[str, str]:
    """``(YYYY-MM-DD, "")`` for a usable ``earliest:`` value (a YAML date or its text), else
    ``("", why not)``."""
    if isinstance(value, dt.datetime):
        return "", f"{what}: earliest is a day (YYYY-MM-DD), not a time"
    if isinstance(value, dt.date):
        text = value.isoformat()
    elif isinstance(value, str):
        text = value.strip()
    else:
        return "", f"{what}: earliest is a day YYYY-MM-DD, got {type(value).__name__}"
    try:
        ms = timefmt.day_ms(text)
    except ValueError:
        return "", f"{what}: earliest {text!r} is not a day YYYY-MM-DD (e.g. 1850-01-01)"
    if ms < timefmt.MIN_EPOCH_MS:
        return "", f"{what}: earliest is a day from 0001-01-02 on, not {text}"
    if ms > timefmt.MAX_EPOCH_MS:
        return "", f"{what}: earliest {text} is after 2286-11-20, the last time a field holds"
    return text, ""


def cell_timestamp_problem(value: object, what: str) -> str:
    if value in CELL_TIMESTAMPS:
        return ""
    return (
        f"{what}: cell_timestamp is one of {', '.join(CELL_TIMESTAMPS)} (default: unix; "
        "offset holds times before 1970)"
    )


def _early(spec) -> bool:
    return spec is not None and spec.type == "time" and spec.earliest_ms < 0


def key_problems(
    what: str, segments: Iterable[Segment], refs: Mapping[str, object]
) -> list[tuple[int, str]]:
    """``(segment index, problem)`` for each epoch-millisecond or reversed-timestamp segment of
    a field that declares times before 1970: its digits count from 1970 and cannot hold them."""
    out = []
    for index, seg in enumerate(segments):
        spec = refs.get(seg.field or "")
        if seg.kind in EPOCH_KEY_KINDS and _early(spec):
            out.append(
                (
                    index,
                    f"{what}: key segment {seg.kind}: {seg.field} declares earliest: "
                    f"{spec.earliest}, but {seg.kind} digits count from 1970 and hold no earlier "
                    f"time; key the table by a calendar label instead ({{time: {seg.field}, "
                    "format: yyyymmdd}, or yyyymm, day, hour…), which holds any year",
                )
            )
    return out


def stamp_problem(what: str, cell_timestamp: str, stamping: Sequence[object]) -> str:
    """A table stamping its cells with a field that declares times before 1970 must store
    them as offsets: Bigtable keeps cell timestamps > 0."""
    early = [spec for spec in stamping if _early(spec)]
    if not early or cell_timestamp == "offset":
        return ""
    spec = early[0]
    return (
        f"{what}: its cells are stamped with field {spec.name!r}, which declares earliest: "
        f"{spec.earliest}, but Bigtable keeps cell timestamps after 1970; declare "
        "cell_timestamp: offset (microseconds since 0001-01-01; every read gives the true time)"
    )
