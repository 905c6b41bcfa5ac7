"""Kernel samepage merging (KSM) for a run that asks for it (density's `sharing`): on,
and scanning fast enough to settle within a pile-up, for the run only, as an operator
runs VM-class sandboxes with it.

What was there is written to the run's state directory first (`ksm.json`, as a sysctl
profile's), put back at the run's end, and by `virtbench clean` after a crash; a setting
someone changed since is left as it is, and said. Where KSM was off, putting `run` back
unmerges every page it merged first (`run = 2`, then `0`): pages of the host's other
processes stay merged otherwise.

How far sharing got is read from its counters (`pages_sharing`: pages that share
another's frame, the memory saved; `full_scans`), and `settle` waits until a full scan
no longer adds to it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from virtbench.errors import VirtbenchError
from virtbench.host import sysctl

ROOT = Path("/sys/kernel/mm/ksm")
FILE = "ksm.json"
# on, scanning 4000 pages (16 MiB) every 20 ms: a few GiB of guests in a few seconds a scan
SETTINGS = {"pages_to_scan": "4000", "sleep_millisecs": "20", "run": "1"}
PAGE = 4096


def available(root: Path = ROOT) -> str | None:
    """Why this kernel cannot share pages (None: it can)."""
    if not (root / "run").is_file():
        return f"this kernel has no KSM ({root} is missing: CONFIG_KSM)"
    return None


def put_back(key: str, before: str, root: Path) -> None:
    """A setting back as it was; KSM off again unmerges what it merged first."""
    if key == "run" and before == "0":
        sysctl.write(key, "2", root)  # returns once every merged page is unmerged
    sysctl.write(key, before, root)


class Ksm(sysctl.HostProfile):
    """KSM on for a run (`apply`), and back as it was (`restore`)."""

    put_back = staticmethod(put_back)  # KSM's own way back

    def __init__(self, state_dir: Path, root: Path = ROOT) -> None:
        super().__init__(dict(SETTINGS), state_dir, root, FILE)


@dataclass(frozen=True)
class Counters:
    """KSM's counters: pages that share another's frame, full scans done, and the pages
    it tracks at all (shared, unshared, volatile: 0 while no process has memory it may
    merge, and then no scan ever completes)."""

    pages_sharing: int
    full_scans: int
    tracked: int = 0

    @property
    def saved_mib(self) -> float:
        return self.pages_sharing * PAGE / 2**20


def counters(root: Path = ROOT) -> Counters:
    try:
        read = {f: int((root / f).read_text()) for f in COUNTERS}
    except (OSError, ValueError) as exc:
        raise VirtbenchError(f"KSM's counters in {root} cannot be read ({exc})") from None
    tracked = read["pages_shared"] + read["pages_unshared"] + read["pages_volatile"]
    return Counters(read["pages_sharing"], read["full_scans"], tracked)


COUNTERS = ("pages_sharing", "full_scans", "pages_shared", "pages_unshared", "pages_volatile")
NOTHING_S = 5.0  # tracking nothing this long after it is on: nothing to merge


def settle(
    read: Callable[[], Counters], timeout: float, poll: float = 0.5
) -> tuple[float, Counters, bool]:
    """Wait until a whole scan adds nothing to what is shared (two full scans after the
    last growth), or KSM tracks no page `NOTHING_S` after it began (no process has
    memory it may merge: no scan ever completes), or `timeout`; (seconds waited, counters
    then, whether it settled)."""
    t0 = time.monotonic()
    last = read()
    grew_at_scan = last.full_scans
    while time.monotonic() - t0 < timeout:
        time.sleep(poll)
        now = read()
        if now.pages_sharing > last.pages_sharing:
            grew_at_scan = now.full_scans
        elif now.full_scans >= grew_at_scan + 2:
            return time.monotonic() - t0, now, True
        if not now.tracked and not now.pages_sharing and time.monotonic() - t0 >= NOTHING_S:
            return time.monotonic() - t0, now, True
        last = now
    return time.monotonic() - t0, last, False
