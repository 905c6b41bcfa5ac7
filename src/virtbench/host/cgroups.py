"""Cgroups for instances, on cgroup v1 (one hierarchy per controller) or v2 (unified).

virtbench's instance cgroups live under one parent in each hierarchy and are named after
the instance (`vb-<run-id>-<n>`), so the same relative path works for the native driver
(which creates them) and for OCI runtimes (given as `cgroupsPath`). The parent is
`virtbench/` at the root, except where systemd owns a unified tree: there it is a subtree
systemd delegates to virtbench, as container engines have theirs (`vb.slice/
virtbench.service`, a transient service with `Delegate=yes` whose one process, a holder,
sits in the leaf `holder/`), so that virtbench never writes into cgroups systemd owns.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from virtbench.host import proc, systemd

PARENT = "virtbench"
# where systemd owns the tree: the delegated unit, its cgroup, and its holder's leaf
DELEGATED_UNIT = "virtbench.service"
DELEGATED_SLICE = "vb.slice"
DELEGATED = f"{DELEGATED_SLICE}/{DELEGATED_UNIT}"
HOLDER = "holder"
# v1 controllers the native driver puts its processes in (those that exist are used).
V1_CONTROLLERS = ("memory", "cpuset", "cpu", "cpuacct", "pids", "blkio", "freezer")


@dataclass(frozen=True)
class Layout:
    """Mounted hierarchies: controller name -> mount point (v1), or the unified root (v2)."""

    version: int
    v1: dict[str, Path]
    unified: Path | None
    parent: str = PARENT  # virtbench's parent cgroup, relative to each hierarchy's root

    @property
    def delegated(self) -> bool:
        """Whether the parent is a subtree systemd delegates (a unit virtbench starts)."""
        return self.parent == DELEGATED

    @classmethod
    def detect(
        cls, mounts_file: Path = Path("/proc/self/mounts"), systemd_init: bool | None = None
    ) -> Layout:
        """The mounted hierarchies, and where virtbench's parent is in them (`systemd_init`:
        whether systemd is the init; None: as this host says)."""
        found = cls._mounted(mounts_file)
        if systemd_init is None:
            systemd_init = systemd.booted()
        if found.version == 2 and systemd_init:
            return cls(2, {}, found.unified, DELEGATED)
        return found

    @classmethod
    def _mounted(cls, mounts_file: Path) -> Layout:
        v1: dict[str, Path] = {}
        unified = None
        for line in mounts_file.read_text().splitlines():
            parts = line.split()
            if len(parts) < 4:
                continue
            mnt, fstype, opts = Path(parts[1]), parts[2], parts[3].split(",")
            if fstype == "cgroup2":
                unified = mnt
            elif fstype == "cgroup":
                for opt in opts:
                    if (
                        opt in V1_CONTROLLERS
                        or opt in ("hugetlb", "devices", "net_cls", "perf_event")
                        or opt.startswith("name=")
                    ):
                        v1.setdefault(opt, mnt)
        if v1.get("memory"):
            return cls(1, v1, unified)
        if unified is not None:
            return cls(2, {}, unified)
        return cls(0, {}, None)

    @property
    def hybrid_without_hugetlb(self) -> bool:
        """crun refuses a v1 layout without the hugetlb controller mounted."""
        return self.version == 1 and "hugetlb" not in self.v1

    def roots(self) -> list[Path]:
        """Every hierarchy root that may hold virtbench cgroups (each listed once)."""
        seen: list[Path] = []
        for p in [*self.v1.values(), *([self.unified] if self.unified else [])]:
            if p not in seen:
                seen.append(p)
        return seen

    def children(self) -> list[Path]:
        """Every cgroup directly under virtbench's parents, in each hierarchy (an
        instance's, one per hierarchy it is in)."""
        found = []
        for root in self.roots():
            base = root / self.parent
            if base.is_dir():
                found += [d for d in base.iterdir() if d.is_dir() and d.name != HOLDER]
        return found

    def of_run(self, run_id: str) -> list[Path]:
        """Every instance cgroup of run `run_id`: virtbench's own, and the slices an
        engine placed instances in through systemd (host/systemd.py)."""
        prefix = f"vb-{run_id}-"
        own = [d for d in self.children() if d.name.startswith(prefix)]
        run_slice = systemd.slice_path(systemd.run_slice(run_id))
        placed = [
            d
            for root in self.roots()
            if (root / run_slice).is_dir()
            for d in (root / run_slice).iterdir()
            if d.is_dir() and d.name.startswith(prefix)
        ]
        return own + placed

    def dirs(self, name: str) -> list[Path]:
        """Every directory the cgroup `virtbench/<name>` has (one per hierarchy)."""
        return [root / self.parent / name for root in self.roots()]

    @property
    def memory_limit_file(self) -> str:
        """The file that holds a cgroup's memory limit: v1's limit_in_bytes, v2's max."""
        return "memory.limit_in_bytes" if self.version == 1 else "memory.max"

    def memory_dir(self, name: str) -> Path:
        return self.controller_dir("memory", name)

    def controller_dir(self, controller: str, name: str) -> Path:
        """The instance's cgroup for `controller` (v1), or its one cgroup (v2): virtbench's
        own under its parent, or the instance's slice where an engine placed it through
        systemd (host/systemd.py)."""
        if self.version == 1:
            root = self.v1[controller]
        else:
            assert self.unified is not None
            root = self.unified
        own = root / self.parent / name
        if own.is_dir():
            return own
        placed = root / systemd.slice_path(systemd.slice_name(name))
        return placed if placed.is_dir() else own


def _write(path: Path, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


def _ensure_cpuset_parent(parent: Path) -> None:
    """v1 cpuset children start empty; copy cpus/mems down from the root once."""
    for f in ("cpuset.cpus", "cpuset.mems"):
        p = parent / f
        if p.exists() and not p.read_text().strip():
            _write(p, (parent.parent / f).read_text().strip())


def ensure_parents(layout: Layout) -> None:
    """The `virtbench` parent cgroup in every hierarchy, cpuset's with the root's CPUs
    and memory nodes. A run makes them before any instance (they go once the last run
    ends: cleanup.remove_empty_parents): runtimes that create their cgroup path
    themselves find a usable parent (runsc cannot write cpuset.cpus below an empty one:
    docker:runsc nests two levels below it)."""
    if layout.version == 1:
        for ctrl, root in layout.v1.items():
            parent = root / layout.parent
            parent.mkdir(exist_ok=True)
            if ctrl == "cpuset":
                _ensure_cpuset_parent(parent)
                # children (an engine's, and theirs) start with its CPUs and nodes, as
                # LXC sets it for the parents it makes
                _write(parent / "cgroup.clone_children", "1")
    elif layout.version == 2 and layout.unified is not None:
        _v2_parent(layout)


CONTROLLERS = "+memory +cpuset +cpu +pids"


def _v2_parent(layout: Layout) -> Path:
    """virtbench's parent in the unified tree, made if it is not there (delegated: the
    unit systemd made it for, started by host/delegation.py), its children given the
    controllers instances are limited by."""
    assert layout.unified is not None
    parent = layout.unified / layout.parent
    if not layout.delegated:
        parent.mkdir(exist_ok=True)
    with contextlib.suppress(OSError):
        _write(parent / "cgroup.subtree_control", CONTROLLERS)
    return parent


def rmdir_once_released(cgroup: Path, wait_s: float = 3.0) -> bool:
    """Remove an empty cgroup directory; whether it was removed. One with no child left
    but busy (EBUSY: a child just removed is still dying in the kernel, as a killed
    nspawn machine's are) is tried again for up to `wait_s`; one with a child is not
    empty and stays (a dead run's cgroup is a leftover `scan` lists)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            cgroup.rmdir()
            return True
        except FileNotFoundError:
            return False
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                return False
            with contextlib.suppress(OSError):
                if any(p.is_dir() for p in cgroup.iterdir()):
                    return False
            time.sleep(0.05)


def create(
    layout: Layout,
    name: str,
    memory_bytes: int | None,
    cpus: str | None,
    pids_limit: int | None = None,
) -> list[Path]:
    """Create `<parent>/<name>` with the given limits; return the directories made."""
    made: list[Path] = []
    if layout.version == 1:
        for ctrl in V1_CONTROLLERS:
            root = layout.v1.get(ctrl)
            if root is None or root / layout.parent / name in made:
                continue
            parent = root / layout.parent
            parent.mkdir(exist_ok=True)
            d = parent / name
            d.mkdir(exist_ok=True)
            made.append(d)
            if ctrl == "cpuset":
                _ensure_cpuset_parent(parent)
                _write(d / "cpuset.mems", (parent / "cpuset.mems").read_text().strip())
                _write(d / "cpuset.cpus", cpus or (parent / "cpuset.cpus").read_text().strip())
            if ctrl == "memory" and memory_bytes:
                _write(d / layout.memory_limit_file, str(memory_bytes))
            if ctrl == "pids" and pids_limit:
                _write(d / "pids.max", str(pids_limit))
    elif layout.version == 2 and layout.unified is not None:
        d = _v2_parent(layout) / name
        d.mkdir(exist_ok=True)
        made.append(d)
        if memory_bytes:
            _write(d / layout.memory_limit_file, str(memory_bytes))
        if cpus:
            _write(d / "cpuset.cpus", cpus)
        if pids_limit:
            _write(d / "pids.max", str(pids_limit))
    return made


def procs(layout: Layout, name: str) -> list[int]:
    """Host pids of every process in the instance's cgroup and the cgroups below it
    (engines such as docker or lxc nest their own cgroups under the one we give them)."""
    found: list[int] = []
    for dirpath, _dirs, _files in os.walk(layout.memory_dir(name)):
        try:
            text = (Path(dirpath) / "cgroup.procs").read_text()
        except OSError:
            continue
        found += [int(x) for x in text.split()]
    return found


def _member(path: Path, pid: int) -> bool:
    """Whether `pid` is (still) in the cgroup `path`, from the process's own short
    /proc/PID/cgroup (re-reading the cgroup's whole list for each of its pids would be
    quadratic in a cgroup of thousands)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return False
    where = str(path)
    return any(p != "/" and where.endswith(p) for p in (ln.split(":", 2)[-1] for ln in lines))


def kill_and_remove(path: Path, timeout: float = 5.0) -> bool:
    """SIGKILL every process in `path` (and below), then rmdir bottom-up. True if gone."""
    try:
        with os.scandir(path) as it:
            children = [Path(e.path) for e in it if e.is_dir(follow_symlinks=False)]
    except FileNotFoundError:  # gone already (e.g. the runtime's own delete removed it)
        return True
    for sub in children:
        kill_and_remove(sub, timeout)
    deadline = time.monotonic() + timeout
    pause = 0.001  # a killed task leaves in about a millisecond: look again soon, then less
    while True:
        try:
            pids = [int(x) for x in (path / "cgroup.procs").read_text().split()]
        except OSError:
            pids = []
        for pid in pids:  # through a pidfd, only while the pid is still in this cgroup
            proc.signal_pid(pid, signal.SIGKILL, lambda p: _member(path, p))
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
