"""The site of `virtbench site` in a real headless Chromium, from file://: its index, a
testbed's leaderboards, an entry's trends and a run's report, at 1366 and 390 pixels wide:
no horizontal scroll, no text outside its box, no chart or image it could not draw, no
console error, nothing fetched from outside the site, and every link it follows lands on
a page of the site (VIRTBENCH_SCREENSHOT_DIR keeps a screenshot of each)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from tests.browser.chrome import LAYOUT, problems, requests
from tests.fakerun import ENVIRONMENT, fake_run

from virtbench import site
from virtbench.host import testbed
from virtbench.store import Store

LONG = "s9-a-study-with-a-rather-long-name-that-a-phone-has-to-wrap-somewhere-sensible"
EIGHT = ["native", "runc", "crun", "youki", "runsc", "docker", "podman", "qemu-tcg"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """Two testbeds: on the first, three runs of a long-named spec on eight runtimes (one
    emulated) and an entry of one runtime; on the second, two runs."""
    root = tmp_path_factory.mktemp("site")
    store = Store(root / "store")
    factors = {rt: 1.0 + 0.15 * i for i, rt in enumerate(EIGHT)}
    for i in range(3):
        fake_run(
            store,
            f"long{i}",
            factors,
            ("boot", "throughput"),
            n=6,
            seed=i,
            name=LONG,
            emulated=("qemu-tcg",),
        )
    fake_run(store, "one001", {"crun": 1.0}, n=6, seed=7, name="alone")
    for i in range(2):
        fake_run(store, f"other{i}", {"runc": 1.0, "crun": 1.2}, n=6, seed=9 + i)
        env = {**ENVIRONMENT, "cpu_model": "Other CPU", "runtimes": {}}
        store.set_environment(f"other{i}", env)
    site.build(store, root / "store", root / "out", jobs=2)
    return root / "out"


def _pages(out: Path) -> dict[str, Path]:
    tb = out / "tb" / testbed.testbed_id(ENVIRONMENT)
    [entry] = [p for p in tb.iterdir() if p.name.startswith("s9-")]
    return {
        "index": out / "index.html",
        "leaderboard": tb / "index.html",
        "trend": entry / "index.html",
        "run": out / "runs" / "long2.html",
    }


CHARTS = """
return [...document.querySelectorAll('svg.trend')].map(e => {
  const r = e.getBoundingClientRect(); return [r.width, r.height, r.right]; });
"""
NARROW = """
return [...document.querySelectorAll('td')].filter(td => {
  const words = td.textContent.trim().split(/\\s+/);
  const w = td.getBoundingClientRect().width;
  return words.length > 3 && td.checkVisibility() && w < 90;
}).map(td => td.textContent.trim().slice(0, 40));
"""
LINKS = "return [...document.querySelectorAll('a[href]')].map(a => a.href);"


@pytest.mark.parametrize("width", [1366, 390])
@pytest.mark.parametrize("page", ["index", "leaderboard", "trend", "run"])
def test_site_pages_fit_and_link_only_inside(browser, built, page, width):
    path = _pages(built)[page]
    browser.set_window_size(width, 900)
    browser.get_log("performance")  # forget the previous page's requests
    browser.get(path.as_uri())
    found = browser.execute_script(LAYOUT)
    assert found["overflow"] <= 0 and not found["empty"] and not found["spill"], found
    assert not found["answers"] and not found["small"], found
    # no table squeezed to a word a line: each cell with words has room for a few
    narrow = browser.execute_script(NARROW)
    assert not narrow, narrow
    assert problems(browser) == []
    fetched = requests(browser)
    assert fetched and all(u.startswith(("file:", "data:")) for u in fetched), fetched
    for w, h, right in browser.execute_script(CHARTS):
        assert w > 100 and h > 20 and right <= width, (w, h, right)
    links = browser.execute_script(LINKS)
    assert links
    for link in links:
        url = urlparse(link)
        target = Path(unquote(url.path))
        assert url.scheme == "file" and target.is_file(), link
        assert built.resolve() in target.resolve().parents, link
    shots = os.environ.get("VIRTBENCH_SCREENSHOT_DIR")
    if shots:
        browser.save_screenshot(str(Path(shots) / f"site-{page}-{width}.png"))


def test_the_trend_page_draws_every_runtime_and_marks_the_emulated_one(browser, built):
    browser.set_window_size(1366, 900)
    browser.get(_pages(built)["trend"].as_uri())
    text = browser.find_element("tag name", "body").text
    assert "qemu-tcg (emulated)" in text
    # boot's time to exit and throughput's figures, each per runtime: one chart each
    charts = browser.execute_script(CHARTS)
    assert len(charts) >= 2 * len(EIGHT), len(charts)
