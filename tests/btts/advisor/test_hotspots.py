"""The hotspot simulator reproduces the documented cases (docs/patterns.md §5.3, §5.4):
timestamp-first keys
put every write of a moment on one node, field promotion and 3-bucket salting on 3 nodes spread
them, and a date-first DATE#METER key sends the midnight burst to one node where METER#DATE does
not. Deterministic, fast, and drawn as heatmap PNGs."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import pytest

from btts.advisor import hotspots
from btts.advisor.workload import NODE_WRITES_PER_S, FieldModel, Workload, hints_for
from btts_cli import advise_command
from tests.support import REPO
from transforms.schema import builtin_tables
from transforms.table_model import Family, KeyRecipe, Segment, TableDecl

MIDNIGHT_MS = 1501113600000  # 2017-07-27T00:00:00Z: the documented cases' new day

CASES = {case.name: case for case in hotspots.DOCUMENTED}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def results() -> dict[str, hotspots.SimResult]:
    out = {}
    for name, case in CASES.items():
        out[name] = hotspots.run_case(case)
    return out


def test_timestamp_first_puts_every_write_on_one_node(results):
    ts_first = results["battery_ts_first"]
    nodes = ts_first.config.nodes
    # Every slice: all writes are newer than every existing key, so in the last tablet.
    assert all(r == pytest.approx(nodes) for r in ts_first.ratios)
    assert ts_first.peak_share == pytest.approx(1.0)
    assert ts_first.hottest_node_writes_per_s == pytest.approx(ts_first.events_per_s)
    assert ts_first.hottest_node_writes_per_s > NODE_WRITES_PER_S
    assert ts_first.throughput_limit == NODE_WRITES_PER_S  # more nodes do not help
    assert "HOTSPOT" in ts_first.summary() and "adding nodes does not help" in ts_first.summary()


@pytest.mark.parametrize("nodes", [2, 5, 8])
def test_timestamp_first_max_over_mean_is_the_node_count_for_any_cluster(nodes):
    config = dataclasses.replace(CASES["battery_ts_first"].config, nodes=nodes, slices=10)
    result = hotspots.simulate(builtin_tables.get("BATTERY_TS_FIRST"), config=config)
    assert result.mean_ratio == pytest.approx(nodes)
    # However the tablets are placed: the one tablet past the last split takes everything.
    config = dataclasses.replace(config, assign="round_robin")
    assert hotspots.simulate(builtin_tables.get("BATTERY_TS_FIRST"), config=config).mean_ratio == (
        pytest.approx(nodes)
    )


def test_field_promotion_spreads_writes(results):
    promoted = results["battery_promoted"]
    assert promoted.peak_ratio < 1.2
    assert promoted.mean_ratio == pytest.approx(1.0, abs=0.05)
    assert promoted.hottest_node_writes_per_s < NODE_WRITES_PER_S
    assert "ok: writes spread" in promoted.summary()


def test_salting_three_buckets_on_three_nodes_spreads_writes(results):
    salted = results["battery_salted"]
    assert salted.config.nodes == 3
    assert salted.peak_ratio < 1.3
    assert salted.mean_ratio == pytest.approx(1.0, abs=0.1)
    # Three hot ranges, one per bucket: the heatmap has writes in three separate key bands
    # per slice, each a third of the key space apart.
    for column in range(len(salted.slice_starts_ms)):
        lit = [i for i, row in enumerate(salted.heat) if row[column]]
        bands = 1 + sum(1 for a, b in itertools.pairwise(lit) if b - a > 2)
        assert bands == 3


def test_date_first_concentrates_the_midnight_burst_meter_first_spreads_it(results):
    date_first = results["sensor_date_first"]
    meter_first = results["sensor_meter_first"]
    nodes = date_first.config.nodes
    midnight = MIDNIGHT_MS
    assert date_first.config.start_ms < midnight < date_first.config.start_ms + 86_400_000
    # At midnight every meter writes into the new day's range, past every existing key.
    assert date_first.ratio_at(midnight) == pytest.approx(nodes)
    assert meter_first.ratio_at(midnight) < 1.2
    # Before midnight (and once the new day's range is split) date-first spreads too: the burst
    # is the problem, not the whole day.
    assert date_first.ratio_at(midnight - 3_600_000) < 1.2
    assert date_first.ratio_at(midnight + 3_600_000) < 1.3
    assert meter_first.peak_ratio < 1.2
    assert date_first.peak_ratio == pytest.approx(nodes)


def test_the_new_day_is_a_separate_band_of_the_key_space(results):
    date_first = results["sensor_date_first"]
    at = date_first.slice_starts_ms.index(MIDNIGHT_MS)
    before = {i for i, row in enumerate(date_first.heat) if row[at - 1]}
    after = {i for i, row in enumerate(date_first.heat) if row[at]}
    assert before and after and max(before) <= min(after)  # one bucket may hold the boundary
    first = date_first.bucket_first_keys
    assert first[0].startswith(b"20170726#") and first[max(after)].startswith(b"20170727#")


def test_deterministic_for_a_seed_and_different_for_another():
    decl = builtin_tables.get("BATTERY")
    config = dataclasses.replace(CASES["battery_promoted"].config, slices=5)
    a = hotspots.simulate(decl, config=config)
    b = hotspots.simulate(decl, config=config)
    c = hotspots.simulate(decl, config=dataclasses.replace(config, seed=1))
    assert a.node_writes == b.node_writes and a.heat == b.heat
    assert a.node_writes != c.node_writes


def test_workload_overrides_and_cardinality():
    key = KeyRecipe((Segment("text", "host"), Segment("epoch_ms", "ts")))
    decl = TableDecl("HOSTS", (Family("F", max_versions=1),), key, "TS-COLS")
    config = hotspots.SimConfig(nodes=4, slices=6)
    # A single host is a timestamp-first key in disguise; many hosts spread.
    one = hotspots.simulate(decl, Workload(1000), config, cardinality={"host": 1})
    many = hotspots.simulate(decl, Workload(1000, {"host": FieldModel(10_000)}), config)
    assert one.mean_ratio == pytest.approx(4)
    assert many.mean_ratio < 1.3
    faster = hotspots.simulate(decl, Workload(1000), config, events_per_s=50_000)
    assert faster.events_per_s == 50_000
    with pytest.raises(ValueError, match="no key field"):
        hotspots.simulate(decl, Workload(), config, cardinality={"user": 3})


def test_modelled_workloads_cover_the_documented_cases():
    assert hints_for("BATTERY").workload.events_per_s > NODE_WRITES_PER_S
    assert hints_for("SENSOR").workload.fields["meter"].cardinality == 10_000_000


def test_heatmap_png_is_written_small(results, tmp_path):
    path = hotspots.draw(results["battery_salted"], tmp_path / "salted.png", "salting")
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) < 150_000


def test_documented_heatmaps_are_in_the_docs():
    for name in CASES:
        png = REPO / "docs" / "advisor" / f"{name}.png"
        assert png.exists(), f"run `btts advise hotspots --documented` to write {png}"
        assert png.read_bytes().startswith(PNG_MAGIC) and png.stat().st_size < 150_000


def test_hotspots_command(tmp_path, capsys):
    png = tmp_path / "ts.png"
    argv = ["hotspots", "BATTERY_TS_FIRST", "--nodes", "4", "--slices", "6", "--png", str(png)]
    assert advise_command.main(argv) == 0
    out = capsys.readouterr().out
    assert "peak 4.00" in out and "HOTSPOT" in out and png.read_bytes().startswith(PNG_MAGIC)
    argv = ["hotspots", "SENSOR_DAILY", "--workload_of", "SENSOR", "--nodes", "3"]
    argv += ["--start", "2017-07-26T23:00:00Z", "--span", "2h", "--slices", "24"]
    assert advise_command.main(argv) == 0
    assert "peak 3.00 (slice 2017-07-27 00:00)" in capsys.readouterr().out
    assert advise_command.main(["hotspots", "BATTERY", "--cardinality", "user"]) == 2
    assert "FIELD=N" in capsys.readouterr().err
    assert advise_command.main(["hotspots"]) == 2


def test_documented_command_writes_every_case(tmp_path, capsys):
    assert advise_command.main(["hotspots", "--documented", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in Path(tmp_path).iterdir()) == sorted(f"{n}.png" for n in CASES)
    assert capsys.readouterr().out.count("per-node load max/mean") == len(CASES)
