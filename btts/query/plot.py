"""Query records as a chart (``btts query … --plot FILE.png|FILE.svg``).

A series is one numeric field of one entity: the records are grouped by the key fields that
name an entity (``hostname``, ``exchange``+``symbol``; :attr:`btts.query.engine.Query.entity`),
and every number in them (``bid``, ``percentage``; an integer or an exact decimal, never a
bool) is one line over ``ts_ms``. A dict field whose qualifiers are data (a host's metrics map)
gives one line per entry, ``metrics.CPU/CPU1_USR``. Records holding only wide dicts (a meter's
day of readings by ``HHMM``, a garden's month by day) have no time per value: each record's
entries are drawn against their qualifiers instead, one line per record.

The time axis is labelled in the query's ``--timezone``; labels are the field names. Drawn with
matplotlib's Agg backend (no display needed); :func:`figure` returns the Figure, so what was
drawn can be read back from its lines.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.dates as mdates
from matplotlib.figure import Figure

from transforms.errors import UserError

__all__ = ["FORMATS", "NothingToPlot", "save"]

FORMATS = (".png", ".svg")
SKIP = ("key", "ts_ms", "time")  # never a series: the row key and the event time


class NothingToPlot(UserError, ValueError):
    """The records hold no number to draw (the reason is the message)."""


@dataclass(frozen=True)
class Series:
    """One line: ``label`` in the legend, ``field`` the record field (or ``field.ENTRY``),
    ``x`` epoch milliseconds (or qualifiers, for a wide row), ``y`` the values."""

    label: str
    field: str
    x: tuple
    y: tuple[float, ...]


def _number(value: object) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def _entity(record: Mapping, entity: Sequence[str]) -> str:
    return ", ".join(f"{f}={record[f]}" for f in entity if f in record)


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


_FULL_MONTHS = tuple(
    m.lower() for m in ("January", "February", "March", "April", "May", "June", "July",
                        "August", "September", "October", "November", "December", "Sept")
)  # fmt: skip


def _period_rank(name: str) -> int | None:
    """Where a qualifier naming a period sorts: ``0015``, ``31``, ``Mar``/``march``, ``Q3``;
    None for any other name (a metric's)."""
    text = str(name).strip().lower()
    if text.isdigit():
        return int(text)
    if text[:3] in _MONTHS and (len(text) == 3 or text.startswith(_FULL_MONTHS)):
        return _MONTHS.index(text[:3]) + 1
    if len(text) == 2 and text[0] == "q" and text[1] in "1234":
        return int(text[1])
    return None


def _wide(records: Sequence[Mapping], entity: Sequence[str]) -> list[Series]:
    """Records whose dict fields are all wide rows (a meter's day, a garden's month, a year's
    months): each record's dict drawn against its qualifiers in period order, one line per
    record and field."""
    out = []
    for record in records:
        who = _entity(record, entity)
        for name, value in record.items():
            if isinstance(value, dict) and value and all(_number(v) for v in value.values()):
                label = f"{name} ({who})" if who else name
                entries = sorted(value.items(), key=lambda kv: _period_rank(kv[0]) or 0)
                x = tuple(str(k) for k, _ in entries)
                out.append(Series(label, name, x, tuple(float(v) for _, v in entries)))
    return out


def _all_wide(records: Sequence[Mapping]) -> bool:
    """Is every dict a row of periods (qualifiers made of times, months, quarters), not a
    map of named measurements drawn over time (however many entries it has)?"""
    dicts = [v for r in records for v in r.values() if isinstance(v, dict)]
    return bool(dicts) and all(
        len(d) > 1 and all(_period_rank(k) is not None for k in d) for d in dicts
    )


def series(
    records: Sequence[Mapping], entity: Sequence[str] = (), fields: Sequence[str] = ()
) -> list[Series]:
    """The lines the records make, in the order their fields first appear (only ``fields``
    and their entries, when given); raises :class:`NothingToPlot` (with why) when there is
    none."""
    if not records:
        raise NothingToPlot("the query returned no records")
    entity = [f for f in entity if f not in SKIP]
    found = _chosen(_series(records, entity), fields)
    if not found:
        raise NothingToPlot(f"no series of field(s) {', '.join(fields)} in the records")
    return found


def _chosen(lines: list[Series], fields: Sequence[str]) -> list[Series]:
    if not fields:
        return lines
    return [s for s in lines if s.field in fields or s.field.split(".")[0] in fields]


def _series(records: Sequence[Mapping], entity: list[str]) -> list[Series]:
    if _all_wide(records):
        found = _wide(records, entity)
        if found:
            return found
    points: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for record in records:
        if "ts_ms" not in record:
            continue
        who = _entity(record, entity)
        for name, value in record.items():
            if name in SKIP or name in entity:
                continue
            if _number(value):
                points.setdefault((who, name), []).append((record["ts_ms"], float(value)))
            elif isinstance(value, dict):
                for k, v in value.items():
                    if _number(v):
                        point = (record["ts_ms"], float(v))
                        points.setdefault((who, f"{name}.{k}"), []).append(point)
    if not points:
        raise NothingToPlot("no numeric field with a time in the records")
    out = []
    for (who, field), pairs in points.items():
        pairs.sort(key=lambda p: p[0])
        label = f"{field} ({who})" if who else field
        out.append(Series(label, field, tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)))
    return out


def _zone_name(tz: dt.tzinfo) -> str:
    return getattr(tz, "key", None) or tz.tzname(None) or str(tz)


def figure(lines: Sequence[Series], tz: dt.tzinfo = dt.timezone.utc, title: str = "") -> Figure:
    """A Figure with one line per series; times as datetimes in ``tz``."""
    fig = Figure(figsize=(10, 5.5), layout="constrained")
    ax = fig.add_subplot()
    timed = not lines or not isinstance(lines[0].x[0], str)
    for line, (colour, style) in zip(lines, styles(len(lines)), strict=True):
        x = [_when(ms, tz) for ms in line.x] if timed else line.x
        marker = "." if len(x) < 200 else None
        ax.plot(x, line.y, marker=marker, label=line.label, color=colour, linestyle=style)
    if timed:
        locator = mdates.AutoDateLocator(tz=tz)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=tz))
        ax.set_xlabel(f"time ({_zone_name(tz)})")
    else:
        ax.set_xlabel("column (qualifier)")
        ax.tick_params(axis="x", labelrotation=90, labelsize=6)
    fields = list(dict.fromkeys(line.field.split(".")[0] for line in lines))
    label = ", ".join(fields)
    ax.set_ylabel(label if len(label) <= 40 else f"{len(fields)} fields (see the legend)")
    if title:
        ax.set_title(title, fontsize=9)
    if len(lines) <= 40:  # beside the plot, so that it never hides a line
        ax.legend(
            fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), ncols=1 + len(lines) // 20
        )
    ax.grid(True, alpha=0.3)
    return fig


def _when(ms: int, tz: dt.tzinfo) -> dt.datetime:
    """Epoch ms as a datetime in ``tz``, any era (fromtimestamp refuses some before 1970)."""
    return (
        dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=ms)
    ).astimezone(tz)


def styles(count: int) -> list[tuple[tuple[float, ...], str]]:
    """A distinct (colour, line style) for each of ``count`` series: the 10 tab10 colours,
    then 20 of tab20, then colours spread over a perceptual map with the style changing every
    10, so that no two lines look the same however many there are."""
    if count <= 10:
        return [(matplotlib.colormaps["tab10"](i), "-") for i in range(count)]
    if count <= 20:
        return [(matplotlib.colormaps["tab20"](i), "-") for i in range(count)]
    cmap = matplotlib.colormaps["turbo"]
    dashes = ("-", "--", "-.", ":")
    return [(cmap(i / (count - 1)), dashes[i % 4]) for i in range(count)]


def save(
    records: Sequence[Mapping],
    path: str | Path,
    *,
    entity: Sequence[str] = (),
    tz: dt.tzinfo = dt.timezone.utc,
    title: str = "",
    fields: Sequence[str] = (),
) -> list[Series]:
    """Draw the records into ``path`` (``.png`` or ``.svg``); the series drawn. Raises
    :class:`NothingToPlot` before writing anything when there is nothing to draw."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"--plot {path}: the file must end in .png or .svg")
    lines = series(records, entity, fields)
    figure(lines, tz, title).savefig(path)
    return lines
