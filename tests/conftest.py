"""Shared test settings. Under VIRTBENCH_STRICT=1 (set by `make test`, which installs
everything), a missing runtime or missing root is a failure, not a skip."""

from __future__ import annotations

import os

import pytest

STRICT = os.environ.get("VIRTBENCH_STRICT") == "1"
# The suite checks density's mechanics, not its memory figures (bench/memory_vs_hand.py
# does): a pile-up does not wait for the host's memory to hold still (one real run waits
# 2 s, tests/integration/test_cli_runs.py), where a run waits 15 s.
os.environ.setdefault("VIRTBENCH_MEMORY_SETTLE_S", "0")
# pytest-xdist's workers are started with COLUMNS=80 and LINES=24, which would fix the
# width of the CLI's console when it is made; the tests give the terminal they mean
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)


def need(condition: bool, reason: str) -> None:
    """Skip when `condition` is false, or fail under VIRTBENCH_STRICT."""
    if condition:
        return
    if STRICT:
        pytest.fail(f"{reason} (VIRTBENCH_STRICT=1: set-up should have provided it)")
    pytest.skip(reason)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Each test phase of a tenth of a second or more, as a line of $VB_DURATIONS (set by
    scripts/test.sh, read by scripts/phases and .ci/run): written as it ends, so a run
    stopped midway still says where its time went. (Under pytest-xdist, by the process
    that collects the workers' reports.)"""
    path = os.environ.get("VB_DURATIONS")
    if not path or os.environ.get("PYTEST_XDIST_WORKER") or report.duration < 0.1:
        return
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(f"{report.duration:.2f}\t{report.nodeid}\t{report.when}\n")
