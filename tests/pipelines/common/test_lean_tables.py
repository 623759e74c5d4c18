"""Which tables' rows leave the build step lean (pipelines/common/graph.py): only a local batch
run's, and never a table whose cells a later step reads (collapsed, rolled up, compared by a
stream's check, folded into the index from rows) or a job whose aggregate split drops the
entries."""

from __future__ import annotations

import types

import pytest

from pipelines.common.graph import _lean_tables
from pipelines.common.jobspec import builtin_job

METRICS = ("METRIC", "CURRENT_METRIC")


def _config(dataset: str = "server_metrics", **changed) -> types.SimpleNamespace:
    job = builtin_job(dataset, "test")
    settings = {
        "job": job,
        "tables": job.decls,
        "indexed": tuple(job.tables),
        "streaming": False,
        "hourly_rollup": False,
        "validate_only": False,
        "remote": False,
        "collapse_latest": False,
    }
    return types.SimpleNamespace(**{**settings, **changed})


def test_a_local_batch_runs_rows_are_lean_where_the_build_step_folds_the_index():
    assert _lean_tables(_config(), folded=True) == METRICS
    assert _lean_tables(_config("market_data"), folded=True) == ("QUOTE", "TRADE")
    assert _lean_tables(_config(indexed=()), folded=False) == METRICS  # no index at all


@pytest.mark.parametrize(
    "changed",
    [
        {"streaming": True},
        {"hourly_rollup": True},
        {"validate_only": True},
        {"remote": True},
        {"collapse_latest": True},  # both metrics tables keep one version: collapsed
    ],
)
def test_rows_whose_cells_a_later_step_reads_stay_whole(changed):
    assert _lean_tables(_config(**changed), folded=True) == ()


def test_rows_the_index_folds_by_a_step_of_its_own_stay_whole():
    assert _lean_tables(_config(indexed=("METRIC",)), folded=False) == ("CURRENT_METRIC",)


def test_a_job_writing_aggregate_tables_keeps_every_row_whole():
    assert _lean_tables(_config("sales"), folded=True) == ()
