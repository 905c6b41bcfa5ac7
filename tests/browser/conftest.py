"""The browser the browser tests share (tests/browser/chrome.py)."""

from __future__ import annotations

import os

import pytest
from tests.browser.chrome import CHROMEDRIVER, CHROMIUM, NO_NETWORK
from tests.conftest import need


@pytest.fixture
def browser():
    missing = "chromium and chromedriver not on PATH (apt-get install chromium chromium-driver)"
    need(bool(CHROMIUM and CHROMEDRIVER), missing)
    os.environ.setdefault("SE_AVOID_STATS", "true")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1300,900",
        *NO_NETWORK,
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()
