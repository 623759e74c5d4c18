"""The chart page of ``btts serve`` in headless Chromium (Debian's ``chromium`` and
``chromium-driver``, installed by ``make browser``, which ``make test`` runs): it loads ``/``,
draws a chart of data landed by the real pipelines, and the drawn lines, read back through the
chart's scale, are the ``/api/query`` answer; no console errors. The screenshot goes to
docs/serve-page.png for docs/dashboards.md."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from urllib.parse import urlencode

import pytest

from btts.samples import data as samples
from tests.support import REPO, serving
from tests.support.serving import HOUR, T0

CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1024,720",
)

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the test extra")


@pytest.fixture
def browser():
    if not (Path(CHROMIUM).exists() and Path(DRIVER).exists()):
        pytest.skip(
            "headless Chromium is not installed: run `make browser` "
            "(apt-get install chromium chromium-driver)"
        )
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="btts-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def drawn_series(driver) -> dict[str, list[tuple[float, float]]]:
    """Each polyline's points, turned back into (time ms, value) by the chart's own scale."""
    scale = driver.execute_script(
        "return Object.assign({}, document.getElementById('chart').dataset)"
    )
    x0, x1, y0, y1 = (float(scale[k]) for k in ("x0", "x1", "y0", "y1"))
    left, right, top, bottom = (float(scale[k]) for k in ("left", "right", "top", "bottom"))
    out = {}
    lines = driver.execute_script(
        "return [...document.querySelectorAll('polyline.series')]"
        ".map(p => [p.dataset.label, p.getAttribute('points')])"
    )
    for label, points in lines:
        pairs = [tuple(map(float, p.split(","))) for p in points.split()]
        out[label] = [
            (
                x0 + (px - left) / (right - left) * (x1 - x0),
                y0 + (bottom - py) / (bottom - top) * (y1 - y0),
            )
            for px, py in pairs
        ]
    return out, (x1 - x0) / (right - left), (y1 - y0) / (bottom - top)


def test_the_page_draws_what_the_api_answers(bigtable_emulator, tmp_path, browser):
    data = serving.land(serving.new_target(), tmp_path)
    server = serving.Server(data.target)
    try:
        metric = "server_metrics.metrics.CPU/CPU1_USR"
        params = {
            "metric": metric,
            "tag:hostname": "*",
            "aggregator": "sum",
            "downsample": "5m-avg",
            "start": str(T0 - HOUR // 2),
            "end": str(T0 + 2 * HOUR),
        }
        browser.get(f"{server.url}/?{urlencode(params)}")
        from selenium.webdriver.support.ui import WebDriverWait

        WebDriverWait(browser, 30).until(
            lambda d: d.find_element("tag name", "body").get_attribute("data-drawn")
        )
        assert browser.find_element("tag name", "body").get_attribute("data-drawn") == "yes", (
            browser.find_element("id", "status").text
        )
        query = {
            "metric": metric,
            "aggregator": "sum",
            "tags": {"hostname": "*"},
            "downsample": "5m-avg",
        }
        body = {
            "start": T0 - HOUR // 2,
            "end": T0 + 2 * HOUR,
            "queries": [query],
            "msResolution": True,
        }
        status, answer = server.call("/api/query", body)
        assert status == 200 and len(answer) == 3
        drawn, per_px_x, per_px_y = drawn_series(browser)
        hosts = sorted(s["tags"]["hostname"] for s in answer)
        assert hosts == [samples.host_name(i) for i in range(3)]
        assert sorted(drawn) == sorted(f"{metric}{{hostname={h}}}" for h in hosts)
        for s in answer:
            line = drawn[f"{metric}{{hostname={s['tags']['hostname']}}}"]
            want = sorted((int(t), v) for t, v in s["dps"].items())
            assert len(line) == len(want)
            for (t, v), (dt, dv) in zip(want, line, strict=True):
                assert abs(t - dt) <= per_px_x and abs(v - dv) <= per_px_y * 0.01
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, errors
        browser.save_screenshot(str(REPO / "docs" / "serve-page.png"))
    finally:
        server.stop()


def test_the_page_draws_a_series_from_1700_to_today(bigtable_emulator, tmp_path, browser):
    from selenium.webdriver.support.ui import WebDriverWait

    target = serving.new_target()
    schema = serving.land_levels(target, tmp_path)
    server = serving.Server(target, "--schema", str(schema))
    try:
        params = {
            "metric": "old_levels.level",
            "aggregator": "sum",
            "start": str(serving.year_ms(1700)),
        }
        browser.get(f"{server.url}/?{urlencode(params)}")
        WebDriverWait(browser, 30).until(
            lambda d: d.find_element("tag name", "body").get_attribute("data-drawn")
        )
        assert browser.find_element("tag name", "body").get_attribute("data-drawn") == "yes", (
            browser.find_element("id", "status").text
        )
        drawn, per_px_x, per_px_y = drawn_series(browser)
        (line,) = drawn.values()
        want = [(serving.year_ms(y), serving.level_of(y)) for y in serving.LEVEL_YEARS]
        assert len(line) == len(want)
        for (t, v), (dt, dv) in zip(want, line, strict=True):
            assert abs(t - dt) <= per_px_x and abs(v - dv) <= per_px_y * 0.01
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, errors
    finally:
        server.stop()
