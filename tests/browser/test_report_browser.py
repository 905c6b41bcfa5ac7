"""The HTML report in a real headless Chromium (Debian's chromium and chromium-driver,
driven by Selenium): it opens with no console errors, renders every plot, and fetches
nothing. A full-page screenshot is left for a person to look at
(VIRTBENCH_SCREENSHOT=path keeps it; otherwise it goes to the test's tmp_path).

Chromium is told to reach nothing: every host name resolves to nothing, every request
goes to a dead proxy on loopback, and its background services are off."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.browser.chrome import LAYOUT, problems, requests
from tests.fakerun import fake_run
from typer.testing import CliRunner

from virtbench.cli import app
from virtbench.store import Store


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
    res = CliRunner().invoke(
        app, ["report", "aaaaa1", "-o", str(page), "--results", str(tmp_path / "results")]
    )
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


def test_layout_check_sees_overflow_a_missing_image_and_spilled_text(browser, tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!DOCTYPE html><title>x</title><body style='margin:0'>"
        "<div style='width:3000px'>wide</div><figure><svg width='0' height='0'></svg>"
        "</figure><p style='width:40px;white-space:nowrap'>a long line of text</p></body>"
    )
    browser.set_window_size(390, 800)
    browser.get(bad.as_uri())
    found = browser.execute_script(LAYOUT)
    assert found["overflow"] > 0 and found["empty"] and found["spill"], found


@pytest.mark.parametrize("width", [1366, 390])
def test_report_fits_a_desktop_and_a_phone_with_nothing_outside_its_box(browser, tmp_path, width):
    """The report of a run of every experiment type, at 1366 and 390 pixels wide: no
    horizontal scroll, every plot drawn, no text outside its box, no answer table wider
    than its box, no plot text under 10 px, no console error."""
    store = Store(tmp_path / "results")
    everything = ("boot", "density", "throughput", "scalability", "isolation")
    fake_run(store, "wide01", {"native": 1.0, "crun": 1.3, "runsc": 2.0}, everything)
    page = tmp_path / "report.html"
    res = CliRunner().invoke(
        app, ["report", "wide01", "-o", str(page), "--results", str(tmp_path / "results")]
    )
    assert res.exit_code == 0, res.output
    browser.set_window_size(width, 900)
    browser.get(page.as_uri())
    found = browser.execute_script(LAYOUT)
    assert found["overflow"] <= 0 and not found["empty"] and not found["spill"], found
    assert not found["answers"], found["answers"]  # every answer's ratio in sight
    assert not found["small"], found["small"][:10]  # plot text of 10 px or more
    assert problems(browser) == []
    # the first screen answers: the first question, its sentence, its table
    first = browser.execute_script(
        "const a = document.querySelector('.answer'); const r = a.getBoundingClientRect();"
        "return [r.top, a.textContent];"
    )
    assert first[0] < 900 and "Fastest to start" in first[1] and "faster than" in first[1]
    shot = os.environ.get("VIRTBENCH_SCREENSHOT_DIR")
    if shot:  # the first screen, for a person to look at
        browser.save_screenshot(str(Path(shot) / f"report-{width}.png"))
