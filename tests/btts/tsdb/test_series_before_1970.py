"""``btts serve`` over a series that starts in 1700: the requests Grafana sends for it (start
and end in epoch milliseconds, negative before 1970) are answered from the emulator with
every point back to the field's earliest time."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.support import serving
from tests.support.serving import LEVEL_YEARS, land_levels, level_of, year_ms


@pytest.fixture(scope="module")
def server(bigtable_emulator, tmp_path_factory):
    target = serving.new_target()
    schema = land_levels(target, tmp_path_factory.mktemp("early"))
    srv = serving.Server(target, "--schema", str(schema))
    yield srv
    srv.stop()


def test_grafana_charts_a_series_from_1700_to_today(server):
    now = int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)
    q = serving.grafana_query("old_levels.level", "sum")
    status, answer = server.call("/api/query", serving.grafana_body([q], year_ms(1700), now))
    assert status == 200, answer
    (series,) = answer
    assert {int(t): v for t, v in series["dps"].items()} == {
        year_ms(y): level_of(y) for y in LEVEL_YEARS
    }
    # a window before 1970 only, in seconds (Grafana without msResolution), end included
    body = serving.grafana_body([q], year_ms(1850), year_ms(1860), ms_resolution=False)
    (series,) = server.call("/api/query", body)[1]
    assert {int(t) * 1000 for t in series["dps"]} == {year_ms(y) for y in range(1850, 1861)}


def test_relative_and_absolute_starts_before_1970(server):
    q = serving.grafana_query("old_levels.level", "sum", "0all-count")
    for start in ("400y-ago", "1700/01/01", str(year_ms(1700)), f"{year_ms(1700) // 1000}"):
        status, answer = server.call("/api/query", serving.grafana_body([q], start, None))
        assert status == 200, (start, answer)
        assert list(answer[0]["dps"].values()) == [len(LEVEL_YEARS)], start
