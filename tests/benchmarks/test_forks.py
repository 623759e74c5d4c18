"""benchmarks/forks.py times each fork against the library's path on the same input: its report
names every fork, the doc's figures block is rewritten from it (and only that block), and the
official path it times is the one the switch takes (no timing is asserted: the benchmark
prints, the doc reports)."""

from __future__ import annotations

from benchmarks import forks
from transforms import official


def _report() -> dict:
    def part(unit):
        return forks.compare(unit, 10, lambda: None, lambda: sum(range(1000)), 2)

    parts = {name: part("rows") for name in official.COMPONENTS}
    parts["wire"]["framed_build"] = part("events")
    parts["http"]["fork"].update(slow_clients=5, threads_held=0, request_ms_meanwhile=1.0)
    parts["http"]["official"].update(slow_clients=5, threads_held=5, request_ms_meanwhile=2.0)
    return {"machine": forks.MACHINE, "components": parts}


def test_every_fork_is_timed_against_its_official_path():
    report = _report()
    assert set(forks.WHAT) == set(official.COMPONENTS) == set(report["components"])
    one = report["components"]["read"]
    assert set(one) >= {"fork", "official", "speedup", "unit", "rounds", "figure"}
    assert one["speedup"] == round(one["fork"]["rows_per_s"] / one["official"]["rows_per_s"], 2)
    text = forks.table(report)
    assert all(name in text for name in official.COMPONENTS) and "slow clients" in text


def test_a_full_run_rewrites_only_the_figures_block_of_the_doc(tmp_path):
    doc = tmp_path / "forks.md"
    doc.write_text(f"# Title\n\nbefore\n\n{forks.BEGIN}\nold figures\n{forks.END}\n\nafter\n")
    assert forks.write_doc(_report(), doc)
    text = doc.read_text()
    assert "old figures" not in text and text.startswith("# Title\n\nbefore\n\n")
    assert text.endswith(f"{forks.END}\n\nafter\n") and "| wire | inside the build step" in text
    assert "held 0 threads" in text
    plain = tmp_path / "other.md"
    plain.write_text("no block\n")
    assert not forks.write_doc(_report(), plain) and plain.read_text() == "no block\n"
    assert forks.BEGIN in forks.DOC.read_text() and forks.END in forks.DOC.read_text()
