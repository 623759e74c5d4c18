"""The benchmark compares like with like: its ceiling and wire writers land exactly the rows the
real jobs land (no timings are asserted anywhere; the benchmark prints, the note reports)."""

from __future__ import annotations

import json
import os
import uuid

import pytest

from benchmarks import cases, data, run
from btts import admin, config
from tests.support.jobs import dump, run_job


def _instance(dataset: str) -> config.Target:
    target = config.Target(cases.PROJECT, f"b{uuid.uuid4().hex[:12]}")
    decls = cases.schema_of(dataset).decls()
    admin.preflight(target, [decls[t] for t in run.TABLES[dataset]], create=True)
    return target


def _tables(target: config.Target, dataset: str) -> dict[str, list]:
    return {t: dump(target, t, latest_only=True) for t in run.TABLES[dataset]}


@pytest.mark.parametrize("dataset", list(run.SIZES))
def test_ceiling_and_wire_write_what_the_job_writes(bigtable_emulator, tmp_path, dataset):
    source = tmp_path / f"{dataset}.jsonl"
    getattr(data, dataset)(source, 300)

    ours = _instance(dataset)
    if dataset in cases.USER_SCHEMAS:  # a user's schema: the generic job
        schema = f"--schema={cases.USER_SCHEMAS[dataset]}"
        run_job("generic", ours, source, tmp_path / "dead", [schema])
    else:
        run_job(cases.JOBS[dataset], ours, source, tmp_path / "dead")
    expected = _tables(ours, dataset)
    assert sum(len(cells) for cells in expected.values()) > 300

    ceiling = _instance(dataset)
    by_table, _ = cases._entries(dataset, str(source))
    cases._write_entries(ceiling.instance, by_table, 0, 1)
    assert _tables(ceiling, dataset) == expected

    wire = _instance(dataset)
    requests, rows, _ = cases._requests(dataset, str(source), wire.instance, 50)
    assert sum(len(entries) for _table, entries in requests) == rows
    cases._send_requests(requests, 0, 1)
    assert _tables(wire, dataset) == expected


def test_the_report_table_names_every_figure_and_flags_quick_runs():
    summary = {
        "core_events_per_s": 120_000.0,
        "ours_rows_per_s": 30_000.0,
        "ours_mode": "in_process",
        "ceiling_rows_per_s": 20_000.0,
        "naive_rows_per_s": 10_000.0,
        "wire_rows_per_s": 150_000.0,
        "ours_vs_ceiling": 1.5,
        "ours_vs_naive": 3.0,
        "ours_vs_wire": 0.2,
        "ours_vs_core": 0.125,
        "ours_vs_core_bound": 0.25,
        "ours_cpu_vs_core": 0.4,
        "ours_cpu_s": 2.0,
        "ours_cpu_s_no_check": 1.9,
        "check_cpu_share": 0.05,
        "check_own_cpu_share": 0.031,
    }
    report = {
        "quick": True,
        "datasets": {"meters": {"summary": summary, "ours": {"peak_rss_mb": 199.0}}},
        "scaling": {
            "time_ratio": 9.5,
            "rss_ratio": 1.1,
            "large": {"events": 1_000_000, "peak_rss_mb": 251.4},
        },
        "nightly": {
            "ours": {"rows_per_s": 600.0},
            "ceiling": {"rows_per_s": 700.0},
            "ours_copy_only": {"rows_per_s": 900.0},
            "ceiling_copy_only": {"rows_per_s": 700.0},
            "ours_vs_ceiling": 0.86,
            "copy_only_vs_ceiling": 1.29,
            "rows_read_from_server": 2000,
            "day_rows": 2000,
            "sensor_rows": 8000,
        },
    }
    text = run.table(report)
    meters = next(line for line in text.splitlines() if line.startswith("meters"))
    assert meters.split() == [
        "meters", "120,000", "30,000", "in-proc", "20,000", "10,000", "150,000",
        "1.50", "3.00", "0.20", "0.12", "0.25", "0.40", "199", "2.00", "1.90", "5.0%", "3.1%",
    ]  # fmt: skip
    assert "10x events -> 9.50x time, 1.10x peak RSS (1,000,000 events: 251 MB)" in text
    assert "rows read from the server 2,000 for a day of 2,000" in text
    assert "copy without verification 900 rows/s against 700, 1.29" in text
    assert "quick run" in text
    assert "quick run" not in run.table({**report, "quick": False})


def test_the_cpu_summary_bounds_ours_by_the_emulators_share_of_the_machine(monkeypatch):
    monkeypatch.setattr(run.os, "cpu_count", lambda: 2)
    # builder 1 s of CPU, the job's process 2.5 s, the emulator 3 s storing the same rows:
    # two cores could at best finish in (1 + 3) / 2 = 2 s, so ours/core cannot pass 0.5
    summary = run.cpu_summary({"seconds": 1.0}, {"cpu_s": 2.5, "emulator_cpu_s": 3.0})
    assert summary == {
        "ours_cpu_s": 2.5,
        "emulator_cpu_s": 3.0,
        "ours_cpu_vs_core": 0.4,
        "ours_vs_core_bound": 0.5,
    }
    idle = run.cpu_summary({"seconds": 1.0}, {"cpu_s": 1.2, "emulator_cpu_s": 0.2})
    assert idle["ours_vs_core_bound"] == 1.0  # never more than the builder alone
    assert "ours_vs_core_bound" not in run.cpu_summary({"seconds": 1.0}, {"cpu_s": 1.2})


def test_the_check_summary_is_the_share_of_the_jobs_cpu_the_overwrite_check_costs():
    pair = {
        "ours_nocheck": {"cpu_s": 9.4},
        "check_cpu_s_runs": {"ours": [10.0], "ours_nocheck": [9.4]},
    }
    assert run.check_summary(pair) == {"ours_cpu_s_no_check": 9.4, "check_cpu_share": 0.06}
    assert run.check_summary({}) == {"ours_cpu_s_no_check": None}


def test_a_share_is_the_median_of_the_rounds_differences_not_the_difference_of_medians():
    """A round's two runs share what the machine was doing then: 10.9 against 10.7 is 0.2,
    though 10.9 is the slowest run with the step and 10.7 the slowest without."""
    with_step, without = [10.0, 10.9, 10.2, 10.4, 10.1], [9.9, 10.7, 9.8, 10.3, 9.0]
    # differences 0.1, 0.2, 0.4, 0.1, 1.1: median 0.2; the median run with the step 10.2
    assert run.paired_share(with_step, without) == round(0.2 / 10.2, 3)
    assert (sorted(with_step)[2] - sorted(without)[2]) / 10.2 > 0.02  # what medians said
    assert run.paired_share([10.0, 11.0], [9.0, 10.6]) == round(0.7 / 10.0, 3)  # even: mean
    assert run.paired_share([], []) is None


def test_the_pairs_take_turns_in_an_order_turned_round_every_other_round():
    calls = []

    def side(name):
        return lambda: calls.append(name) or {"cpu_s": float(len(calls)), "name": name}

    got = run.alternating({"a": side("a"), "b": side("b")}, 5)
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a", "a", "b"]
    assert [r["cpu_s"] for r in got["a"]] == [1.0, 4.0, 5.0, 8.0, 9.0]  # rounds' order kept
    assert [r["cpu_s"] for r in got["b"]] == [2.0, 3.0, 6.0, 7.0, 10.0]


def test_the_check_pair_takes_turns_and_each_side_is_its_median_run(monkeypatch):
    """A load that comes and goes falls on both sides: the runs alternate, each side is its
    run of median CPU, and the share is the median of the rounds' differences, never the
    best of one side against the other's."""
    cpu = {"ours": iter([10.9, 10.0, 10.4]), "ours_nocheck": iter([9.0, 9.9, 9.5])}
    calls = []

    def measure_fresh(tables, case, dataset, path, *flags):
        mode = "ours_nocheck" if flags == ("nocheck",) else "ours"
        calls.append((case, dataset, path, mode))
        return {"cpu_s": next(cpu[mode]), "run": len(calls)}

    monkeypatch.setattr(run, "measure_fresh", measure_fresh)
    monkeypatch.setattr(run, "log", lambda message: None)
    got = run.run_check_pair(["T"], "metrics", "in.jsonl", 3)
    turns = ["ours", "ours_nocheck", "ours_nocheck", "ours", "ours", "ours_nocheck"]
    assert [mode for *_, mode in calls] == turns
    assert {(case, dataset, path) for case, dataset, path, _ in calls} == {
        ("ours", "metrics", "in.jsonl")
    }
    assert got["ours"] == {"cpu_s": 10.4, "run": 5}
    assert got["ours_nocheck"] == {"cpu_s": 9.5, "run": 6}
    assert got["check_cpu_s_runs"] == {
        "ours": [10.9, 10.0, 10.4],
        "ours_nocheck": [9.0, 9.9, 9.5],
        "check_own": [0.0, 0.0, 0.0],  # these runs timed no check inside
    }
    summary = run.check_summary(got)  # differences 1.9, 0.1, 0.9: median 0.9 of 10.4
    assert summary == {
        "ours_cpu_s_no_check": 9.5,
        "check_cpu_share": 0.087,
        "check_own_cpu_share": 0.0,
    }


def test_the_checks_own_share_is_its_timed_cpu_over_its_runs_the_median_of_them():
    runs = {"ours": [10.0, 12.0, 8.0], "ours_nocheck": [9.8, 11.0, 7.9]}
    runs["check_own"] = [0.3, 0.3, 0.4]  # 3.0%, 2.5%, 5.0% of their runs: median 3.0%
    summary = run.check_summary({"ours_nocheck": {"cpu_s": 9.8}, "check_cpu_s_runs": runs})
    assert summary["check_own_cpu_share"] == 0.03
    assert summary["check_cpu_share"] == round(0.2 / 10.0, 3)  # differences 0.2, 1.0, 0.1


def test_a_steps_own_share_is_the_median_of_its_runs_shares():
    # 3.0%, 2.5%, 5.0% (a run of no CPU left out): the middle one
    assert run.own_share([0.3, 0.3, 0.4, 0.1], [10.0, 12.0, 8.0, 0.0]) == 0.03
    assert run.own_share([0.3, 0.4], [10.0, 8.0]) == 0.03  # even: the lower middle
    assert run.own_share([], []) is None
    with pytest.raises(ValueError):  # a run without its own figure is a bug, not a skip
        run.own_share([0.3], [10.0, 12.0])


def test_soak_verdict_never_says_lost_and_all_accounted_for_at_once():
    from benchmarks.soak import accounting

    base = {"drain_seconds": 180.0, "accounted_for_within_s": 4.0}
    ok = accounting({**base, "accounted_for": True, "lost": 0, "dead_letters_missing": 0})
    assert ok == "all events accounted for 4.0s after the last publish"
    late = accounting({**base, "accounted_for": False, "lost": 0, "dead_letters_missing": 0})
    assert "only at the final check" in late and "NOT" not in late
    for seen in (True, False):  # a timed-out drain, or a poll that over-counted
        lost = accounting({**base, "accounted_for": seen, "lost": 3, "dead_letters_missing": 1})
        assert lost.startswith("NOT all events accounted for: 3 good events without a row")


def test_a_step_is_sustained_only_when_its_backlog_stays_within_the_tolerance():
    from benchmarks.soak import step_verdict

    start = {"t_s": 10.0, "published": 1_000, "landed_rows": 900, "backlog": 100}
    kept_up = {"t_s": 20.0, "published": 11_000, "landed_rows": 9_900, "backlog": 1_100}
    verdict = step_verdict(start, kept_up, tolerance_s=0.1)  # 1,000/s offered: 100 allowed
    assert verdict["offered_per_s"] == 1_000.0
    assert verdict["landed_per_s"] == 900.0  # what landed, not what was published
    assert not verdict["sustained"]  # the backlog grew by 1,000 events
    assert step_verdict(start, kept_up, tolerance_s=1.0)["sustained"]


def test_soak_ceiling_steps_the_rate_and_checks_every_event_and_rollup(tmp_path):
    """The ceiling mode at a CI size: two short steps, then the full check (no event lost or
    duplicated, every dead letter received, every host-hour's exact rollup equal to the
    publisher's own totals). No rate is asserted: a shared machine decides those."""
    from benchmarks import soak

    output = tmp_path / "ceiling.json"
    argv = ["--ceiling", "--rate=300", "--step_factor=3", "--max_rate=1000"]
    argv += ["--step_seconds=3", "--warmup_seconds=2", "--report_every=1.5", "--hosts=10"]
    soak.main([*argv, f"--output={output}"])
    report = json.loads(output.read_text())
    summary = report["summary"]
    assert [round(s["rate"]) for s in report["steps"]] in ([300], [300, 900])
    assert all(s["landed_per_s"] > 0 for s in report["steps"])
    assert summary["published_good"] > 0 and summary["published_bad"] > 0
    assert summary["lost"] == 0 and summary["duplicates"] == 0
    assert summary["dead_letters_missing"] == 0 and summary["publish_errors"] == 0
    assert summary["rollup_checked"] and summary["rollup_rows_expected"] in (
        10,
        20,
    )  # an hour or two
    assert summary["rollup_mismatches"] == 0 and summary["rollup_unexpected_rows"] == 0
    assert summary["accounted_for"] and summary["job_cancelled"]


def test_the_startup_section_pairs_each_command_with_its_floor():
    median = {
        "python": 0.05, "import_data_client": 0.8, "read_floor": 1.0, "cbt_read": 2.0,
        "query": 1.2, "check": 1.9, "ingest": 2.4, "help": 0.1, "help query": 0.2,
        "help nightly": 0.12, "help demo": 0.11, "help ingest sales": 0.15,
    }  # fmt: skip
    section = {
        "repeats": 7, "answer_rows": 100, "median_s": median, "worst_help": "help query",
        "help_vs_python": 4.0, "query_vs_floor": 1.2, "check_vs_floor": 1.9,
        "worst_job_help": "help ingest sales", "job_help_vs_python": 3.0,
    }  # fmt: skip
    text = run.table({"quick": False, "datasets": {}, "startup": section})
    assert "startup (medians of 7): python 0.050s" in text
    assert "cbt read 2.00s" in text
    assert "worst `help query` 0.200s = 4.0x python; query 1.20s = 1.20x floor" in text
    assert "a job's flags: worst `help ingest sales` 0.150s = 3.0x python" in text
    assert f"machine: {run.MACHINE['cpu_model']}, {run.MACHINE['cpu_count']} cores" in text


def test_every_figure_names_the_machine_it_ran_on():
    assert run.MACHINE["cpu_model"] and run.MACHINE["cpu_count"] and run.MACHINE["python"]


def test_the_one_file_verdict_needs_both_workers_reading_at_once():
    from benchmarks import one_file

    def share(lines, start, end):
        return {"lines": lines, "cpu_s": 1.0, "start": start, "end": end}

    both = {1: share(500, 0.0, 10.0), 2: share(500, 1.0, 9.0)}
    assert one_file.verdict(both, 1_000)["both_busy"]
    lopsided = {1: share(900, 0.0, 10.0), 2: share(100, 1.0, 9.0)}
    assert not one_file.verdict(lopsided, 1_000)["both_busy"]  # one did a tenth
    in_turn = {1: share(500, 0.0, 5.0), 2: share(500, 5.0, 10.0)}
    assert not one_file.verdict(in_turn, 1_000)["both_busy"]  # one after the other
    assert not one_file.verdict({1: share(1_000, 0.0, 10.0)}, 1_000)["both_busy"]


def test_worker_tallies_add_up_per_process(tmp_path, monkeypatch):
    """What the runner tests and the one-file benchmark read: per step and process, the items
    of every bundle, the latest CPU figure and the whole span."""
    from transforms.metrics import WORKER_TALLY_ENV, WorkerTally, read_worker_tallies

    tally = WorkerTally("read")
    tally.add(5)
    tally.flush()  # no directory named: nothing written
    monkeypatch.setenv(WORKER_TALLY_ENV, str(tmp_path))
    tally = WorkerTally("read")
    for bundle in ([3, 4], [], [10]):
        for count in bundle:
            tally.add(count)
        tally.flush()
    (tmp_path / "9999999.tally").write_text("9999999 write 2 0.5 1.0 2.0\n")
    found = read_worker_tallies(str(tmp_path))
    mine = found["read"][os.getpid()]
    assert mine.items == 17 and mine.start <= mine.end and mine.cpu_s > 0
    assert found["write"] == {9999999: (2, 0.5, 1.0, 2.0)}


def test_the_documents_show_the_kept_reports_figures():
    """The README's and docs/benchmarks.md's figures are rendered from the committed report:
    a figure edited by hand, or a report kept without rendering, fails here."""
    from benchmarks import publish

    assert publish.stale() == [], "run: python -m benchmarks.publish"


def test_a_figure_edited_by_hand_is_stale(tmp_path):
    from benchmarks import publish

    doc = tmp_path / "doc.md"
    marker = f"<!-- figures: {publish.KEPT.relative_to(publish.ROOT)} -->\n"
    doc.write_text(f"{marker}| by hand |\n<!-- /figures -->\n")
    blocks = {"figures": (doc, publish.headline)}
    assert publish.stale(blocks) == ["doc.md (figures)"]
    doc.write_text(publish.rendered(doc.read_text(), "figures", publish.headline))
    assert publish.stale(blocks) == []
    assert "ours / client batcher" in doc.read_text()


def test_publishing_the_kept_report_itself_renders_it_again(tmp_path, monkeypatch):
    """`python -m benchmarks.publish docs/benchmarks/full.json` is the kept report: rendered
    again, not a copy of a file onto itself (a traceback once)."""
    from benchmarks import publish

    kept = tmp_path / publish.KEPT.relative_to(publish.ROOT)
    kept.parent.mkdir(parents=True)
    kept.write_text(publish.KEPT.read_text(encoding="utf-8"), encoding="utf-8")
    doc = tmp_path / "doc.md"
    doc.write_text(
        f"<!-- figures: {publish.KEPT.relative_to(publish.ROOT)} -->\n<!-- /figures -->\n"
    )
    monkeypatch.setattr(publish, "KEPT", kept)
    monkeypatch.setattr(publish, "BLOCKS", {"figures": (doc, publish.headline)})
    monkeypatch.setattr(publish, "ROOT", tmp_path)
    assert publish.main([str(kept)]) == 0
    assert "ours / client batcher" in doc.read_text()


def test_the_headline_gives_the_index_its_share_of_the_job_and_its_rounds():
    from benchmarks import publish

    cost = {
        "noindex": {"cpu_s": 11.2},
        "index": {"cpu_s": 11.9},
        "cpu_ratio": 1.062,
        "events": 1_000_000,
        "rounds": 5,
        "cpu_share": 0.046,
    }
    (line,) = publish._read_lines({"index_cost": cost})
    assert line.startswith("series index: 4.6% of the job's CPU, over 5 rounds")
    assert "11.2 s → 11.9 s for 1,000,000 events" in line
    assert "own code" not in line  # a report from before the index's own code was timed
    (own,) = publish._read_lines({"index_cost": {**cost, "own_cpu_share": 0.031}})
    assert own.endswith("; its own code 3.1%")
    (old,) = publish._read_lines({"index_cost": {**cost, "cpu_share": None}})
    assert old.startswith("series index: 6% more job CPU")
