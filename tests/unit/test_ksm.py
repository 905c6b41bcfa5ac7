"""KSM for a run (host/ksm.py), on a KSM directory of the test's own: switched on with
what was there saved first, put back with what it merged unmerged, found and put back by
clean after a crash, and its settling told from its counters."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.host import ksm, sysctl


@pytest.fixture
def sysfs(tmp_path: Path) -> Path:
    """/sys/kernel/mm/ksm as a host with KSM off has it."""
    root = tmp_path / "ksm"
    root.mkdir()
    for name, value in {
        "run": "0",
        "pages_to_scan": "100",
        "sleep_millisecs": "20",
        "pages_sharing": "0",
        "full_scans": "0",
    }.items():
        (root / name).write_text(value + "\n")
    return root


def test_on_for_the_run_then_back_with_its_pages_unmerged(sysfs, tmp_path, monkeypatch):
    state = tmp_path / "state"
    state.mkdir()
    held = ksm.Ksm(state, sysfs)
    held.apply()
    assert sysctl.read("run", sysfs) == "1" and sysctl.read("pages_to_scan", sysfs) == "4000"
    assert (state / ksm.FILE).is_file()  # saved before the first change
    writes: list[tuple[str, str]] = []
    real = sysctl.write
    monkeypatch.setattr(sysctl, "write", lambda k, v, r: writes.append((k, v)) or real(k, v, r))
    assert held.restore() == []
    assert ("run", "2") in writes and writes.index(("run", "2")) < writes.index(("run", "0"))
    assert {k: sysctl.read(k, sysfs) for k in ksm.SETTINGS} == {
        "pages_to_scan": "100",
        "sleep_millisecs": "20",
        "run": "0",
    }
    assert not (state / ksm.FILE).exists()


def test_clean_finds_what_a_crashed_run_left_and_leaves_what_someone_changed(sysfs, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    ksm.Ksm(state, sysfs).apply()  # then the run is killed
    sysctl.write("sleep_millisecs", "200", sysfs)  # someone else's since
    problems: list[str] = []
    left = sysctl.leftovers(state, problems, sysfs, ksm.FILE)
    assert {k for k, _, _ in left} == {"run", "pages_to_scan"}
    assert problems and "sleep_millisecs is '200'" in problems[0]
    for key, before, wanted in left:
        assert sysctl.restore_one(key, before, wanted, sysfs, ksm.put_back) is None
    assert sysctl.read("run", sysfs) == "0" and sysctl.read("sleep_millisecs", sysfs) == "200"


def test_sharing_settles_when_two_full_scans_add_nothing():
    seq = iter(
        [(0, 0), (100, 1), (300, 2), (310, 3), (310, 4), (310, 5), (310, 6)]
    )  # grows until scan 3, then two scans add nothing
    said, counters, settled = ksm.settle(lambda: ksm.Counters(*next(seq)), 10, poll=0.001)
    assert settled and counters == ksm.Counters(310, 5) and said < 1
    stuck = ksm.settle(lambda: ksm.Counters(5, 0, tracked=9), 0.01, poll=0.001)
    assert not stuck[2]
    assert ksm.Counters(256, 0).saved_mib == 1.0


def test_a_kernel_without_ksm_says_so(tmp_path):
    assert "has no KSM" in (ksm.available(tmp_path / "none") or "")


def test_with_nothing_mergeable_no_scan_completes_and_that_is_settled(monkeypatch, sysfs):
    """KSM with no process that may merge tracks no page and never counts a full scan:
    settled once that has held NOTHING_S, not after the whole timeout."""
    monkeypatch.setattr(ksm, "NOTHING_S", 0.05)
    for name in ("pages_shared", "pages_unshared", "pages_volatile"):
        (sysfs / name).write_text("0\n")
    waited, counters, settled = ksm.settle(lambda: ksm.counters(sysfs), 60, poll=0.01)
    assert settled and waited < 5 and counters == ksm.Counters(0, 0, 0)
