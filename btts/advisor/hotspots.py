"""Hotspot simulator: where a key design's writes land over time, drawn like Key Visualizer.

The model, one time slice at a time (a slice is about as long as Bigtable takes to split and move
tablets, a few minutes):

1. **Events.** ``samples_per_slice`` events at random times inside the slice, each key field
   drawn uniformly from its declared cardinality (nested: N values per value of the fields
   before it), time fields set to the event time; the key is built by the declaration itself
   (``decl.key.build``), salt included.
2. **Tablets.** A table is split into contiguous key ranges only at keys that *already exist*:
   at quantiles of every key written before the slice (splits by size) and at quantiles of the
   previous slice's keys (splits by load), ``nodes × tablets_per_node`` of each. A key written
   now goes to the tablet whose range contains it. This is where monotonic keys hurt: a key
   newer than every existing key is past the last split, so with a timestamp-first key *all*
   writes of the slice fall in the last tablet, however the table was split before.
3. **Nodes.** Tablets are spread over the nodes as well as Bigtable could: greedily by this
   slice's load, the busiest tablet first onto the least-loaded node (``assign="balanced"``; an
   optimistic bound — a design that hot-spots here hot-spots for real), or ``round_robin`` by
   key order.
4. **Load.** Writes per node per slice, scaled to the declared events/s. ``max/mean`` per slice
   is 1 for a perfect spread and equals the node count when one node takes everything.

``history_slices`` slices run first (not measured) so the table already holds keys and splits
when measuring starts, as a live table does. Everything is seeded: the same inputs give the same
numbers and the same picture. The heatmap has key-space buckets (equal numbers of keys, first key
at the top) against time, colour = writes, and below it each node's share of every slice.
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import math
import random
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from btts.advisor.workload import NODE_WRITES_PER_S, Workload, hints_for
from transforms.schema import builtin_tables
from transforms.table_model import TIME_KINDS, Segment, TableDecl
from transforms.text import timefmt

__all__ = ["SimConfig", "draw", "parse_span", "parse_start", "simulate", "write_documented"]

ASSIGNMENTS = ("balanced", "round_robin")
HEAT_BUCKETS = 48


@dataclass(frozen=True)
class SimConfig:
    nodes: int = 3
    start_ms: int = 1425211200000  # 2015-03-01T12:00:00Z
    span_s: float = 3600.0
    slices: int = 30
    history_slices: int = 8
    samples_per_slice: int = 1000
    tablets_per_node: int = 4
    assign: str = "balanced"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.nodes < 1 or self.slices < 1 or self.samples_per_slice < 1:
            raise ValueError("nodes, slices and samples_per_slice must be at least 1")
        if self.assign not in ASSIGNMENTS:
            raise ValueError(f"assign must be one of {ASSIGNMENTS}, got {self.assign!r}")
        if self.span_s <= 0:
            raise ValueError("the span must be positive")

    @property
    def slice_ms(self) -> float:
        return self.span_s * 1000 / self.slices


@dataclass
class SimResult:
    table: str
    key: str
    config: SimConfig
    events_per_s: float
    slice_starts_ms: list[int]
    node_writes: list[list[int]]  # per measured slice, sampled writes per node
    heat: list[list[int]]  # per key bucket (first keys first), sampled writes per measured slice
    bucket_first_keys: list[bytes] = field(default_factory=list)

    @property
    def ratios(self) -> list[float]:
        """max/mean of the node loads of every measured slice."""
        out = []
        for loads in self.node_writes:
            total = sum(loads)
            out.append(max(loads) * len(loads) / total if total else 1.0)
        return out

    @property
    def peak_ratio(self) -> float:
        return max(self.ratios)

    @property
    def mean_ratio(self) -> float:
        return sum(self.ratios) / len(self.ratios)

    @property
    def peak_share(self) -> float:
        """The largest share of a slice's writes that one node took."""
        return self.peak_ratio / self.config.nodes

    @property
    def hottest_node_writes_per_s(self) -> float:
        return self.peak_share * self.events_per_s

    @property
    def throughput_limit(self) -> float:
        """Writes/s the cluster absorbs with this key before its hottest node saturates."""
        return min(self.config.nodes, 1 / self.peak_share) * NODE_WRITES_PER_S

    @property
    def nodes_for_even_spread(self) -> int:
        return max(1, math.ceil(self.events_per_s / NODE_WRITES_PER_S))

    def ratio_at(self, ms: int) -> float:
        """max/mean of the slice containing ``ms``."""
        index = bisect.bisect_right(self.slice_starts_ms, ms) - 1
        if index < 0:
            raise ValueError("before the simulated span")
        return self.ratios[index]

    def summary(self) -> str:
        cfg = self.config
        hot = self.hottest_node_writes_per_s
        worst = self.ratios.index(self.peak_ratio)
        lines = [
            f"{self.table}  key {self.key}  on {cfg.nodes} nodes, "
            f"{self.events_per_s:,.0f} events/s, {cfg.slices} slices of "
            f"{cfg.slice_ms / 60000:g} min from {_iso(cfg.start_ms)} ({cfg.assign} tablets)",
            f"  per-node load max/mean: peak {self.peak_ratio:.2f} "
            f"(slice {_iso(self.slice_starts_ms[worst])}), "
            f"mean {self.mean_ratio:.2f}; 1.00 = even, {cfg.nodes:.2f} = one node takes all",
            f"  hottest node: {hot:,.0f} writes/s = {hot / NODE_WRITES_PER_S:.0%} of one SSD "
            f"node's {NODE_WRITES_PER_S:,}; the cluster absorbs at most "
            f"{self.throughput_limit:,.0f} writes/s with this key "
            f"({cfg.nodes * NODE_WRITES_PER_S:,} if even)",
        ]
        if hot > NODE_WRITES_PER_S:
            verdict = "HOTSPOT: the hottest node is over capacity"
            if self.peak_share > 0.9:
                verdict += "; one node takes ~all writes, so adding nodes does not help"
        elif self.peak_ratio > 1.5:
            verdict = "uneven: within capacity at this rate, but the key concentrates writes"
        else:
            verdict = (
                f"ok: writes spread; even spreading needs {self.nodes_for_even_spread} "
                f"node{'s' * (self.nodes_for_even_spread != 1)} at this rate"
            )
        lines.append(f"  {verdict}")
        return "\n".join(lines)


def _iso(ms: int) -> str:
    return timefmt.to_datetime(int(ms)).strftime("%Y-%m-%d %H:%M")


# -- synthetic events ---------------------------------------------------------------------------


def _letters(index: int, width: int, cardinality: int) -> str:
    """Fixed-length upper-case letters for ``index`` (so text order = numeric order)."""
    length = 1
    while 26**length < cardinality and length < width:
        length += 1
    index %= 26**length
    out = []
    for _ in range(length):
        index, digit = divmod(index, 26)
        out.append(string.ascii_uppercase[digit])
    return "".join(reversed(out))


class _Synth:
    """Draws key field values for one declaration and workload."""

    def __init__(self, decl: TableDecl, workload: Workload, origin_ms: int) -> None:
        self.origin_ms = origin_ms
        self.time_fields = sorted({s.field for s in decl.key.segments if s.kind in TIME_KINDS})
        self.fields: list[tuple[str, Segment, int, str | None]] = []
        seen = set(self.time_fields)
        for seg in decl.key.segments:
            if seg.kind in ("const", "salt") or seg.field in seen:
                continue
            seen.add(seg.field)
            model = workload.field(seg.field)
            card = model.cardinality
            if seg.kind == "zero_pad":
                card = min(card, 10 ** (seg.width or 1))
            self.fields.append((seg.field, seg, card, model.kind))

    def values(self, rng: random.Random, ts_ms: int) -> dict[str, object]:
        out: dict[str, object] = {f: ts_ms for f in self.time_fields}
        for name, seg, card, kind in self.fields:
            if kind in ("sequential", "monotonic"):
                # The newest ``card`` ids are the active ones; a day's worth of new ids a day.
                newest = card + int((ts_ms - self.origin_ms) / 86_400_000 * card)
                index = newest - rng.randrange(card)
            else:
                index = rng.randrange(card)
            out[name] = self._value(name, seg, index, card)
        return out

    @staticmethod
    def _value(name: str, seg: Segment, index: int, card: int) -> object:
        if seg.kind == "zero_pad":
            return index % 10 ** (seg.width or 1)
        if seg.kind == "space_pad":
            return _letters(index, seg.width or 1, card)
        if seg.kind == "reverse_id":
            return str(index + 1)
        if seg.kind == "reverse_domain":
            return f"s{index}.example.com"
        digits = len(str(max(card - 1, 1)))
        return f"{name[:6]}{index:0{digits}d}"


def _quantile_splits(sorted_keys: Sequence[bytes], pieces: int) -> list[bytes]:
    n = len(sorted_keys)
    if n < 2 or pieces < 2:
        return []
    return [sorted_keys[n * i // pieces] for i in range(1, pieces)]


def _assign(loads: Sequence[int], nodes: int, how: str) -> list[int]:
    """Node of each tablet."""
    if how == "round_robin":
        return [i % nodes for i in range(len(loads))]
    heap = [(0, node) for node in range(nodes)]
    owner = [0] * len(loads)
    for tablet in sorted(range(len(loads)), key=lambda t: (-loads[t], t)):
        load, node = heapq.heappop(heap)
        owner[tablet] = node
        heapq.heappush(heap, (load + loads[tablet], node))
    return owner


def simulate(
    decl: TableDecl,
    workload: Workload | None = None,
    config: SimConfig | None = None,
    events_per_s: float | None = None,
    cardinality: Mapping[str, int] | None = None,
) -> SimResult:
    """Replay the workload's keys onto tablets over ``config.nodes`` nodes (see the module doc).
    ``events_per_s`` and ``cardinality`` override the workload's."""
    config = config or SimConfig()
    workload = workload if workload is not None else hints_for(decl.name).workload
    if cardinality:
        fields = dict(workload.fields)
        for name, card in cardinality.items():
            if name not in decl.key.fields:
                raise ValueError(f"{decl.name} has no key field {name!r}")
            if card < 1:
                raise ValueError("a field's cardinality is at least 1")
            fields[name] = dataclasses.replace(workload.field(name), cardinality=card)
        workload = dataclasses.replace(workload, fields=fields)
    rate = events_per_s if events_per_s is not None else workload.events_per_s
    rng = random.Random(config.seed)
    slice_ms = config.slice_ms
    total = config.history_slices + config.slices
    origin = config.start_ms - config.history_slices * slice_ms
    synth = _Synth(decl, workload, int(origin))

    existing: list[bytes] = []
    previous: list[bytes] = []
    measured_keys: list[list[bytes]] = []
    node_writes: list[list[int]] = []
    starts: list[int] = []
    pieces = config.nodes * config.tablets_per_node
    for index in range(total):
        begin = origin + index * slice_ms
        batch = sorted(
            decl.key.build(synth.values(rng, int(begin + rng.random() * slice_ms)))
            for _ in range(config.samples_per_slice)
        )
        bounds = sorted(
            set(_quantile_splits(existing, pieces)) | set(_quantile_splits(previous, pieces))
        )
        if index >= config.history_slices:
            loads = [0] * (len(bounds) + 1)
            for key in batch:
                loads[bisect.bisect_right(bounds, key)] += 1
            owner = _assign(loads, config.nodes, config.assign)
            per_node = [0] * config.nodes
            for tablet, load in enumerate(loads):
                per_node[owner[tablet]] += load
            node_writes.append(per_node)
            starts.append(int(begin))
            measured_keys.append(batch)
        existing = list(heapq.merge(existing, batch))
        previous = batch

    heat, firsts = _heat(existing, measured_keys)
    return SimResult(
        decl.name, decl.key.describe(), config, rate, starts, node_writes, heat, firsts
    )


def _heat(all_keys: Sequence[bytes], slices: Sequence[Sequence[bytes]]):
    """Writes per key bucket per slice; buckets hold equal numbers of all keys written."""
    buckets = min(HEAT_BUCKETS, max(1, len(all_keys)))
    edges = _quantile_splits(all_keys, buckets)
    firsts = [all_keys[0], *edges] if all_keys else []
    heat = [[0] * len(slices) for _ in range(len(edges) + 1)]
    for column, keys in enumerate(slices):
        for key in keys:
            heat[bisect.bisect_right(edges, key)][column] += 1
    return heat, firsts


# -- the picture --------------------------------------------------------------------------------


def draw(result: SimResult, path: str | Path, title: str = "") -> Path:
    """Write the heatmap PNG (Agg, no display needed) and return its path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    cfg = result.config
    fig = Figure(figsize=(8, 5.2))
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(
        2,
        2,
        height_ratios=(3, 1),
        width_ratios=(40, 1),
        hspace=0.35,
        wspace=0.05,
        left=0.25,
        right=0.9,
        top=0.88,
        bottom=0.1,
    )
    ax = fig.add_subplot(grid[0, 0])
    scale = result.events_per_s / cfg.samples_per_slice  # sampled writes → writes/s
    heat = [[v * scale for v in row] for row in result.heat]
    image = ax.imshow(heat, aspect="auto", cmap="inferno", interpolation="nearest")
    bar = fig.colorbar(image, cax=fig.add_subplot(grid[0, 1]))
    bar.set_label("writes/s", fontsize=8)
    bar.ax.tick_params(labelsize=7)
    rows = len(heat)
    ticks = sorted({0, rows // 4, rows // 2, 3 * rows // 4, rows - 1})
    ax.set_yticks(ticks)
    ax.set_yticklabels(
        [result.bucket_first_keys[t].decode("utf-8", "replace")[:22] for t in ticks], fontsize=7
    )
    ax.set_ylabel("key space (first key of bucket)", fontsize=8)
    _time_axis(ax, result, labels=False)
    heading = title or f"{result.table}  key {result.key}"
    ax.set_title(
        f"{heading}\n{cfg.nodes} nodes, max/mean peak {result.peak_ratio:.2f}, "
        f"mean {result.mean_ratio:.2f}",
        fontsize=9,
    )
    nodes_ax = fig.add_subplot(grid[1, 0])
    shares = [
        [loads[n] / max(1, sum(loads)) for loads in result.node_writes] for n in range(cfg.nodes)
    ]
    shown = nodes_ax.imshow(
        shares, aspect="auto", cmap="viridis", vmin=0, vmax=1, interpolation="nearest"
    )
    share_bar = fig.colorbar(shown, cax=fig.add_subplot(grid[1, 1]))
    share_bar.set_label("share", fontsize=8)
    share_bar.ax.tick_params(labelsize=7)
    nodes_ax.set_yticks(range(cfg.nodes))
    nodes_ax.set_yticklabels([f"node {n}" for n in range(cfg.nodes)], fontsize=7)
    _time_axis(nodes_ax, result, labels=True)
    fig.savefig(path, dpi=72, metadata={"Software": None})
    return path


def _time_axis(ax, result: SimResult, labels: bool) -> None:
    n = len(result.slice_starts_ms)
    step = max(1, n // 8)
    ticks = list(range(0, n, step))
    ax.set_xticks(ticks)
    if labels:
        ax.set_xticklabels(
            [timefmt.to_datetime(result.slice_starts_ms[t]).strftime("%H:%M") for t in ticks],
            fontsize=7,
        )
        ax.set_xlabel("time (UTC, slice start)", fontsize=8)
    else:
        ax.set_xticklabels([])


# -- the documented cases -----------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A case of the guidance, simulated for the docs and checked by the tests."""

    name: str
    table: str
    title: str
    config: SimConfig
    workload_of: str = ""  # whose declared workload to use (default: the table's own)
    expect: str = ""


_BATTERY_RUN = SimConfig(nodes=3, start_ms=1425211200000, span_s=3600, slices=30)
# Live meter readings around midnight 2017-07-26/27 UTC, 5-minute slices.
_MIDNIGHT_RUN = SimConfig(
    nodes=4, start_ms=1501106400000, span_s=4 * 3600, slices=48, history_slices=12
)
DOCUMENTED: tuple[Case, ...] = (
    Case(
        "battery_ts_first",
        "BATTERY_TS_FIRST",
        "timestamp first: BATTERY#TS (anti-pattern)",
        _BATTERY_RUN,
        expect="every slice's writes on one node: max/mean = node count",
    ),
    Case(
        "battery_promoted",
        "BATTERY",
        "field promotion: BATTERY#USER#TS",
        _BATTERY_RUN,
        expect="writes spread over every user's range: max/mean ≈ 1",
    ),
    Case(
        "battery_salted",
        "BATTERY_SALTED",
        "salting: BATTERY#<salt of 3>#TS",
        _BATTERY_RUN,
        expect="three hot ranges, one per bucket, on three nodes: max/mean ≈ 1",
    ),
    Case(
        "sensor_date_first",
        "SENSOR_DAILY",
        "date first, live readings: DATE#METER",
        _MIDNIGHT_RUN,
        workload_of="SENSOR",
        expect="at midnight every meter writes into the new day's range: one node",
    ),
    Case(
        "sensor_meter_first",
        "SENSOR",
        "meter first: METER#DATE",
        _MIDNIGHT_RUN,
        expect="the new day's rows sit next to each meter's old ones: spread at midnight too",
    ),
)


def run_case(case: Case) -> SimResult:
    workload = hints_for(case.workload_of or case.table).workload
    return simulate(builtin_tables.get(case.table), workload, case.config)


def write_documented(out_dir: str | Path) -> dict[str, tuple[SimResult, Path]]:
    """Simulate every documented case and write ``<out_dir>/<case>.png``."""
    done = {}
    for case in DOCUMENTED:
        result = run_case(case)
        done[case.name] = (result, draw(result, Path(out_dir) / f"{case.name}.png", case.title))
    return done


def parse_span(text: str) -> float:
    """``90s``, ``30m``, ``4h``, ``2d`` → seconds."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    text = text.strip()
    try:
        if text and text[-1] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except ValueError:
        raise ValueError(f"span {text!r}: use a number with s, m, h or d (e.g. 4h)") from None


def parse_start(text: str) -> int:
    """An ISO time (``2017-07-26T22:00:00Z``) or epoch ms → epoch ms."""
    value: object = int(text) if text.isdigit() else text
    return timefmt.parse_event_time(value, "--start")
