"""The HTML report in a real headless Chromium (Debian's chromium and chromium-driver,
driven by Selenium): it opens with no console errors, renders every plot, and fetches
nothing. A full-page screenshot is left for a person to look at
(VIRTBENCH_SCREENSHOT=path keeps it; otherwise it goes to the test's tmp_path).

Chromium is told to reach nothing: every host name resolves to nothing, every request
goes to a dead proxy on loopback, and its background services are off."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from tests.conftest import need
from tests.fakerun import fake_run
from typer.testing import CliRunner

from virtbench.cli import app
from virtbench.store import Store

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
NO_NETWORK = [
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost",
    "--proxy-server=127.0.0.1:9",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--no-pings",
    "--no-first-run",
    "--metrics-recording-only",
]


@pytest.fixture
def browser():
    missing = "chromium and chromedriver not on PATH (apt-get install chromium chromium-driver)"
    need(bool(CHROMIUM and CHROMEDRIVER), missing)
    os.environ.setdefault("SE_AVOID_STATS", "true")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1300,900", *NO_NETWORK):  # fmt: skip
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()


def problems(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


def requests(driver) -> list[str]:
    import json

    urls = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg.get("method") == "Network.requestWillBeSent":
            urls.append(msg["params"]["request"]["url"])
    return urls


def test_report_opens_in_headless_chromium_without_console_errors(browser, tmp_path):
    # the check can fail: a page that logs an error is caught
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><title>x</title><script>console.error('boom')</script>")
    browser.get(bad.as_uri())
    assert any("boom" in e["message"] for e in problems(browser))

    store = Store(tmp_path / "results")
    everything = ("boot", "density", "throughput", "scalability", "isolation")
    fake_run(store, "aaaaa1", {"native": 1.0, "crun": 1.05, "runsc": 1.6}, everything)
    page = tmp_path / "report.html"
    res = CliRunner().invoke(app, ["report", "aaaaa1", "-o", str(page),
                                   "--results", str(tmp_path / "results")])  # fmt: skip
    assert res.exit_code == 0, res.output
    browser.get_log("performance")  # forget the bad page's requests
    browser.get(page.as_uri())
    assert browser.title.startswith("virtbench report: aaaaa1")
    assert problems(browser) == []
    fetched = requests(browser)
    assert fetched and all(u.startswith(("file:", "data:")) for u in fetched), fetched
    widths = browser.execute_script(
        "return [...document.querySelectorAll('figure svg')]"
        ".map(e => e.getBoundingClientRect().width)"
    )
    assert len(widths) == 11 and all(w > 300 for w in widths), widths
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1300, min(int(height) + 100, 16000))
    shot = Path(os.environ.get("VIRTBENCH_SCREENSHOT", tmp_path / "report.png"))
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 50_000
