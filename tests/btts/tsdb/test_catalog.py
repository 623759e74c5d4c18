"""``btts serve`` finds map entries in every host's rows, and again while it runs: an entry a
late-sorting host sends (after hundreds of rows of other hosts), or one first sent after the
server started, becomes a metric without a restart."""

from __future__ import annotations

import datetime as dt
import json
import time

from btts.samples import data as samples
from tests.support import serving
from tests.support.jobs import run_job, write_lines

START = samples.METRICS_START_MS


def _land(target, work, records, n):
    path = write_lines(work / f"in{n}.jsonl", [json.dumps(r) for r in records])
    result = run_job("server_metrics", target, path, work / f"dead{n}")
    assert result.counters.get("dead_letters", 0) == 0


def _late(host: str, entry: str, value: float) -> dict:
    return {
        "hostname": host,
        "timestamp": samples.iso_ms(START + 5000),
        "metrics": {"cpu/cpu1_usr": 0.5, entry: value},
    }


def test_entries_of_late_hosts_and_new_entries_appear_without_a_restart(
    bigtable_emulator, tmp_path
):
    target = serving.new_target()
    # two hosts × 250 rows first: the first 200 rows of the table are all server0000's
    records = list(samples.metric_records(hosts=2, seconds=250, interval_s=1, start_ms=START))
    _land(target, tmp_path, [*records, _late("zz-late.example.com", "late/at_start", 7)], 0)
    server = serving.Server(target)
    try:
        names = server.call("/api/suggest?type=metrics&q=server_metrics.metrics.LATE&max=100")[1]
        assert names == ["server_metrics.metrics.LATE/AT_START"]
        q = serving.grafana_query("server_metrics.metrics.LATE/AT_START", "sum")
        status, answer = server.call("/api/query", serving.grafana_body([q], START, START + 60_000))
        assert status == 200 and list(answer[0]["dps"].values()) == [7]
        # an entry first sent now: the first query for it looks for new entries
        _land(target, tmp_path, [_late("zz-later.example.com", "late/after_start", 9)], 1)
        time.sleep(5.5)  # REFRESH_MISS_S: an unknown metric refreshes at most this often
        q = serving.grafana_query("server_metrics.metrics.LATE/AFTER_START", "sum")
        status, answer = server.call("/api/query", serving.grafana_body([q], START, START + 60_000))
        assert status == 200, answer
        assert list(answer[0]["dps"].values()) == [9]
    finally:
        server.stop()


def test_a_rollup_answers_only_for_the_series_it_holds(bigtable_emulator, tmp_path):
    target = serving.new_target()
    hour, t0 = 3_600_000, serving.T0  # an hour boundary
    records = list(samples.metric_records(hosts=3, seconds=2 * 3600, interval_s=300, start_ms=t0))
    rolled = [r for r in records if r["hostname"] != samples.host_name(2)]
    path = write_lines(tmp_path / "rolled.jsonl", [json.dumps(r) for r in rolled])
    run_job("server_metrics", target, path, tmp_path / "dead0", ["--hourly_rollup"])
    unrolled = [r for r in records if r["hostname"] == samples.host_name(2)]
    _land(target, tmp_path, unrolled, 1)  # landed without --hourly_rollup
    server = serving.Server(target)
    try:
        q = serving.grafana_query(
            "server_metrics.metrics.CPU/CPU1_USR", "sum", "1h-avg", tags={"hostname": "*"}
        )
        body = {**serving.grafana_body([q], t0, t0 + hour), "showQuery": True}
        status, answer = server.call("/api/query", body)
        assert status == 200, answer
        assert sorted(s["tags"]["hostname"] for s in answer) == [
            samples.host_name(i) for i in range(3)
        ]
        reads = answer[0]["query"]["btts"]["reads"]
        assert any("rollup METRIC_HOURLY" in r for r in reads)
        assert any("1 series the rollup lacks, from METRIC" in r for r in reads)
        for s in answer:
            mine = [r for r in records if r["hostname"] == s["tags"]["hostname"]]
            for b in (t0, t0 + hour):
                vals = [
                    r["metrics"]["cpu/cpu1_usr"]
                    for r in mine
                    if b <= samples_ms(r["timestamp"]) < b + hour
                ]
                assert abs(s["dps"][str(b)] - sum(vals) / len(vals)) < 1e-9
    finally:
        server.stop()


def samples_ms(text: str) -> int:
    """Epoch ms of an ISO time as the samples write it."""
    return int(dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
