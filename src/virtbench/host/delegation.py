"""The cgroup subtree systemd delegates to virtbench, where systemd is the init (cgroup v2):
a transient service, `vb.slice/virtbench.service`, started with the first run (its one
process, `sleep`, in a leaf of its own: a cgroup that gives its children controllers can
hold no process) and stopped after the last; systemd then removes its cgroup."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from virtbench.errors import VirtbenchError
from virtbench.host import cgroups, proc, systemd


def ensure_parents(layout: cgroups.Layout) -> None:
    """virtbench's parent cgroups, as cgroups.ensure_parents makes them, the delegated
    unit started first where systemd owns the tree."""
    if layout.delegated and layout.unified is not None:
        delegate(layout.unified / layout.parent)
    cgroups.ensure_parents(layout)


DELEGATE_SUBGROUP_FROM = 254  # systemd puts a unit's process in a subgroup it names


def delegate(parent: Path) -> None:
    """Where systemd owns the tree: the transient unit whose cgroup `parent` systemd
    delegates to virtbench, started if it is not running (a concurrent run may have just
    started it), its process in a leaf of its own (`holder`), as a cgroup that gives its
    children controllers can hold no process itself. The unit's process in the holder is
    what says it runs: a directory a stopped unit left is not a delegated parent (and one
    left empty is removed first, so that systemd makes it afresh)."""
    holder = parent / cgroups.HOLDER
    if _populated(holder):
        return
    if not systemd.active(cgroups.DELEGATED_UNIT):
        for d in (holder, parent):  # what a stopped unit left, where nothing is in it
            if d.is_dir():
                cgroups.rmdir_once_released(d)
        _start_delegated()
    _hold(parent, holder)


def _start_delegated() -> None:
    """Start the delegated unit: its process straight into the holder where systemd can
    put it there (DelegateSubgroup=, systemd 254), else into the unit's cgroup (`_hold`
    moves it). A unit of the name still stopping is waited for."""
    subgroup = systemd.version() >= DELEGATE_SUBGROUP_FROM
    argv = [
        "systemd-run",
        "--quiet",
        "--collect",
        f"--unit={cgroups.DELEGATED_UNIT}",
        f"--slice={cgroups.DELEGATED_SLICE}",
        "--property=Delegate=yes",
        *([f"--property=DelegateSubgroup={cgroups.HOLDER}"] if subgroup else []),
        "sleep",
        "infinity",
    ]
    deadline = time.monotonic() + 30
    while True:
        res = proc.run(argv, check=False, timeout=60)
        if res.returncode == 0 or systemd.active(cgroups.DELEGATED_UNIT):
            return
        if time.monotonic() > deadline:
            raise VirtbenchError(
                f"cannot start the unit systemd delegates virtbench's cgroups to "
                f"({cgroups.DELEGATED_UNIT}): {res.brief()}"
            )
        time.sleep(0.5)


def _hold(parent: Path, holder: Path, timeout: float = 30) -> None:
    """The unit's process in `holder`: it reaches its cgroup only after systemd says the
    unit started (an executor attaches it), so it is waited for, then moved there."""
    deadline = time.monotonic() + timeout
    while not _populated(holder):
        with contextlib.suppress(FileNotFoundError):
            pids = (parent / "cgroup.procs").read_text().split()
            if pids:
                holder.mkdir(exist_ok=True)
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    (holder / "cgroup.procs").write_text(pid)
        if _populated(holder):
            return
        if time.monotonic() > deadline or not systemd.active(cgroups.DELEGATED_UNIT):
            raise VirtbenchError(
                f"the unit systemd delegates virtbench's cgroups to ({cgroups.DELEGATED_UNIT}) has "
                f"no process in {parent}: it failed to start there (`journalctl -u "
                f"{cgroups.DELEGATED_UNIT}` says why; `virtbench clean` removes what a dead run "
                "left in it)"
            )
        time.sleep(0.05)


def _populated(cgroup: Path) -> bool:
    """Whether a process is in `cgroup` (False where it is not there)."""
    try:
        return bool((cgroup / "cgroup.procs").read_text().split())
    except OSError:
        return False


def release(layout: cgroups.Layout) -> bool:
    """Stop the delegated unit once no instance cgroup is left in it; whether its cgroup
    is gone now. systemd removes the cgroup of a unit it stops, but not one whose child
    was still dying in the kernel then (a killed run's, just removed): the unit is gone,
    its directory left, and removed here."""
    assert layout.unified is not None
    parent = layout.unified / layout.parent
    if not parent.is_dir() or layout.children():
        return False
    try:
        systemd.stop(cgroups.DELEGATED_UNIT)
    except VirtbenchError:  # still there: the next run's end tries again
        return False
    for d in (parent / cgroups.HOLDER, parent):
        if d.is_dir():
            cgroups.rmdir_once_released(d)
    return not parent.exists()
