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

from btts.query.render import MAX_DICT_COLUMNS

__all__ = ["FORMATS", "NothingToPlot", "save"]

FORMATS = (".png", ".svg")
SKIP = ("key", "ts_ms", "time")  # never a series: the row key and the event time


class NothingToPlot(ValueError):
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


def _wide(records: Sequence[Mapping], entity: Sequence[str]) -> list[Series]:
    """Records whose dict fields are all wide rows (a meter's day, a garden's month): each
    record's dict drawn against its qualifiers, one line per record and field."""
    out = []
    for record in records:
        who = _entity(record, entity)
        for name, value in record.items():
            if isinstance(value, dict) and value and all(_number(v) for v in value.values()):
                label = f"{name} ({who})" if who else name
                x = tuple(str(k) for k in value)
                out.append(Series(label, name, x, tuple(float(v) for v in value.values())))
    return out


def _all_wide(records: Sequence[Mapping]) -> bool:
    dicts = [v for r in records for v in r.values() if isinstance(v, dict)]
    return bool(dicts) and all(len(d) > MAX_DICT_COLUMNS for d in dicts)


def series(records: Sequence[Mapping], entity: Sequence[str] = ()) -> list[Series]:
    """The lines the records make, in the order their fields first appear; raises
    :class:`NothingToPlot` (with why) when there is none."""
    if not records:
        raise NothingToPlot("the query returned no records")
    entity = [f for f in entity if f not in SKIP]
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
    for line in lines:
        x = [dt.datetime.fromtimestamp(ms / 1000, tz) for ms in line.x] if timed else line.x
        ax.plot(x, line.y, marker="." if len(x) < 200 else None, label=line.label)
    if timed:
        locator = mdates.AutoDateLocator(tz=tz)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=tz))
        ax.set_xlabel(f"time ({_zone_name(tz)})")
    else:
        ax.set_xlabel("column (qualifier)")
        ax.tick_params(axis="x", labelrotation=90, labelsize=6)
    fields = list(dict.fromkeys(line.field.split(".")[0] for line in lines))
    ax.set_ylabel(", ".join(fields))
    if title:
        ax.set_title(title, fontsize=9)
    if len(lines) <= 20:
        ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    return fig


def save(
    records: Sequence[Mapping],
    path: str | Path,
    *,
    entity: Sequence[str] = (),
    tz: dt.tzinfo = dt.timezone.utc,
    title: str = "",
) -> list[Series]:
    """Draw the records into ``path`` (``.png`` or ``.svg``); the series drawn. Raises
    :class:`NothingToPlot` before writing anything when there is nothing to draw."""
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"--plot {path}: the file must end in .png or .svg")
    lines = series(records, entity)
    figure(lines, tz, title).savefig(path)
    return lines
