"""Every section of ``make bench`` runs at toy size here (``python -m benchmarks.run --toy``), so
a change that breaks one fails the suite, not the next hour-long benchmark; and a run keeps what
it measured: each section's figures are in the report file as the section ends, and a failing
section is named there (exit status 1) after the others ran. No timing is asserted."""

from __future__ import annotations

import json

import pytest

from benchmarks import run


def _toy(tmp_path, *args: str) -> tuple[int, dict]:
    out = tmp_path / "toy.json"
    status = run.main(["--toy", "--out", str(out), *args])
    return status, json.loads(out.read_text())


@pytest.mark.parametrize("dataset", list(run.SIZES))
def test_the_datasets_section_runs_every_case_of(tmp_path, dataset):
    status, report = _toy(tmp_path, "--sections", "datasets", "--datasets", dataset)
    assert (status, report["failed"]) == (0, {})
    got = report["datasets"][dataset]
    assert {"core", "ours", "ours_nocheck", "naive", "ceiling_1p", "wire_1p"} <= set(got)
    summary = got["summary"]
    assert summary["ours_rows_per_s"] > 0 and "ours_cpu_vs_core" in summary
    assert got["ours"]["events"] == run.SIZES[dataset][0] == got["core"]["events"]
    assert got["ours"]["rows"] == got["ceiling_1p"]["rows"] == got["wire_1p"]["rows"]
    assert dataset in run.table(report)


SECTIONS = [name for name in run.SECTIONS if name not in ("datasets", "startup")]


@pytest.mark.parametrize("section", SECTIONS)
def test_each_other_section_runs_and_reports(tmp_path, section):
    status, report = _toy(tmp_path, "--sections", section)
    assert (status, report["failed"]) == (0, {})
    assert report[section]
    run.table(report)  # the printed summary reads every figure it names


def test_the_index_cost_section_gives_the_index_its_own_codes_share(tmp_path):
    """Beside the paired difference: the CPU the job timed of the index (its drains) and the
    builder's fold, measured apart, over each run with the index."""
    status, report = _toy(tmp_path, "--sections", "index_cost")
    assert (status, report["failed"]) == (0, {})
    cost = report["index_cost"]
    runs = cost["cpu_s_runs"]
    assert len(runs["index_own"]) == len(runs["index"]) == cost["rounds"]
    assert all(own > 0 for own in runs["index_own"])  # every run with it timed its drain
    assert isinstance(cost["fold_ns_per_event"], float)
    own = run.own_share(runs["index_own"], runs["index"])  # 0.0 at toy size: rounded
    assert cost["own_cpu_share"] == own
    assert "own code" in run.table(report)


def test_startup_ingests_into_the_tables_the_job_writes(tmp_path):
    """The start-up section's ingest landed the rows its query reads (its tables, the series
    index too, made by the job itself): issue 58's `SERVER_METRICS_SERIES does not exist`."""
    status, report = _toy(tmp_path, "--sections", "startup")
    assert (status, report["failed"]) == (0, {})
    assert report["startup"]["median_s"]["ingest"] > 0 and report["startup"]["query_vs_floor"]
    assert "startup (medians of 1)" in run.table(report)


def test_a_failing_section_is_named_and_the_others_are_kept(tmp_path, monkeypatch):
    out = tmp_path / "toy.json"
    seen_on_disk = []

    def broken(_run):
        raise run.StepFailed("benchmark step ours metrics failed (1)")

    def first(_run):
        return {"figure": 1}

    def last(_run):
        seen_on_disk.append(json.loads(out.read_text()))  # what a crash now would leave
        return {"figure": 3}

    monkeypatch.setattr(run, "SECTIONS", {"first": first, "broken": broken, "last": last})
    status = run.main(["--toy", "--out", str(out)])
    report = json.loads(out.read_text())
    assert status == 1
    assert report["first"] == {"figure": 1} and report["last"] == {"figure": 3}
    assert report["failed"] == {"broken": "StepFailed: benchmark step ours metrics failed (1)"}
    (before_last,) = seen_on_disk
    assert before_last["first"] == {"figure": 1} and "broken" in before_last["failed"]


def test_a_sections_figures_are_on_disk_before_the_next_section_runs(tmp_path, monkeypatch):
    """A run killed in a section keeps the figures of the one before it, even when every
    section before it passed."""
    out = tmp_path / "toy.json"
    seen_on_disk = []

    def second(_run):
        seen_on_disk.append(json.loads(out.read_text()))
        return {"figure": 2}

    monkeypatch.setattr(run, "SECTIONS", {"first": lambda _run: {"figure": 1}, "second": second})
    assert run.main(["--toy", "--out", str(out)]) == 0
    (before_second,) = seen_on_disk
    assert before_second["first"] == {"figure": 1}
    assert json.loads(out.read_text())["second"] == {"figure": 2}


def test_an_unknown_section_is_refused_by_name(capsys):
    with pytest.raises(SystemExit):
        run.main(["--toy", "--sections", "datasets,nosuch"])
    assert "nosuch" in capsys.readouterr().err
