"""Cgroups for instances, on cgroup v1 (one hierarchy per controller) or v2 (unified).

virtbench's instance cgroups live under a `virtbench/` parent in each hierarchy and are
named after the instance (`vb-<run-id>-<n>`), so the same relative path works for the
native driver (which creates them) and for OCI runtimes (given as `cgroupsPath`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from virtbench.host import proc

PARENT = "virtbench"
# v1 controllers the native driver puts its processes in (those that exist are used).
V1_CONTROLLERS = ("memory", "cpuset", "cpu", "cpuacct", "pids", "blkio", "freezer")


@dataclass(frozen=True)
class Layout:
    """Mounted hierarchies: controller name -> mount point (v1), or the unified root (v2)."""

    version: int
    v1: dict[str, Path]
    unified: Path | None

    @classmethod
    def detect(cls, mounts_file: Path = Path("/proc/self/mounts")) -> Layout:
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

    def dirs(self, name: str) -> list[Path]:
        """Every directory the cgroup `virtbench/<name>` has (one per hierarchy)."""
        return [root / PARENT / name for root in self.roots()]

    def memory_dir(self, name: str) -> Path:
        return self.controller_dir("memory", name)

    def controller_dir(self, controller: str, name: str) -> Path:
        """The instance's cgroup for `controller` (v1), or its one cgroup (v2)."""
        if self.version == 1:
            return self.v1[controller] / PARENT / name
        assert self.unified is not None
        return self.unified / PARENT / name


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
            parent = root / PARENT
            parent.mkdir(exist_ok=True)
            if ctrl == "cpuset":
                _ensure_cpuset_parent(parent)
                # children (an engine's, and theirs) start with its CPUs and nodes, as
                # LXC sets it for the parents it makes
                _write(parent / "cgroup.clone_children", "1")
    elif layout.version == 2 and layout.unified is not None:
        parent = layout.unified / PARENT
        parent.mkdir(exist_ok=True)
        with contextlib.suppress(OSError):
            _write(parent / "cgroup.subtree_control", "+memory +cpuset +cpu +pids")


def create(
    layout: Layout,
    name: str,
    memory_bytes: int | None,
    cpus: str | None,
    pids_limit: int | None = None,
) -> list[Path]:
    """Create `virtbench/<name>` with the given limits; return the directories made."""
    made: list[Path] = []
    if layout.version == 1:
        for ctrl in V1_CONTROLLERS:
            root = layout.v1.get(ctrl)
            if root is None or root / PARENT / name in made:
                continue
            parent = root / PARENT
            parent.mkdir(exist_ok=True)
            d = parent / name
            d.mkdir(exist_ok=True)
            made.append(d)
            if ctrl == "cpuset":
                _ensure_cpuset_parent(parent)
                _write(d / "cpuset.mems", (parent / "cpuset.mems").read_text().strip())
                _write(d / "cpuset.cpus", cpus or (parent / "cpuset.cpus").read_text().strip())
            if ctrl == "memory" and memory_bytes:
                _write(d / "memory.limit_in_bytes", str(memory_bytes))
            if ctrl == "pids" and pids_limit:
                _write(d / "pids.max", str(pids_limit))
    elif layout.version == 2 and layout.unified is not None:
        parent = layout.unified / PARENT
        parent.mkdir(exist_ok=True)
        with contextlib.suppress(OSError):
            _write(parent / "cgroup.subtree_control", "+memory +cpuset +cpu +pids")
        d = parent / name
        d.mkdir(exist_ok=True)
        made.append(d)
        if memory_bytes:
            _write(d / "memory.max", str(memory_bytes))
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


def tasks(layout: Layout, name: str) -> tuple[int | None, int]:
    """(peak number of host tasks, threads included, in the instance's pids cgroup (None
    where the kernel keeps no peak); how many forks a pids.max in it or below refused)."""
    if layout.version == 1 and "pids" not in layout.v1:
        return None, 0
    d = layout.controller_dir("pids", name)
    try:
        peak: int | None = int((d / "pids.peak").read_text())
    except (OSError, ValueError):
        peak = None
    refused = 0  # counted where the limit is: ours, or an engine's cgroup below it
    for dirpath, _dirs, _files in os.walk(d):
        with contextlib.suppress(OSError, ValueError):
            for line in (Path(dirpath) / "pids.events").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "max":
                    refused += int(value)
    return peak, refused


def ran_and_emptied(layout: Layout, name: str) -> bool:
    """True once a process has run in the cgroup and none is left: the exit of an init
    whose runtime reports it late or not at all (LXD). The CPU time charged tells "not
    started yet" (empty, nothing charged) from "already exited" (empty, time charged)."""
    if layout.version == 1:
        if "cpuacct" in layout.v1:
            d = layout.v1["cpuacct"] / PARENT / name
            usage_file = d / "cpuacct.usage"
        else:
            d = layout.v1["memory"] / PARENT / name
            usage_file = d / "memory.max_usage_in_bytes"
        parse = int
    else:
        assert layout.unified is not None
        d = layout.unified / PARENT / name
        usage_file = d / "cpu.stat"

        def parse(text: str) -> int:
            return int(text.split("usage_usec", 1)[1].split()[0])

    try:
        procs = (d / "cgroup.procs").read_text().split()
        used = parse(usage_file.read_text())
    except (OSError, ValueError, IndexError):
        return False
    return not procs and used > 0


def memory_bytes(layout: Layout, name: str) -> int | None:
    """Memory charged to the cgroup (v1 usage_in_bytes, v2 memory.current)."""
    d = layout.memory_dir(name)
    f = d / ("memory.usage_in_bytes" if layout.version == 1 else "memory.current")
    try:
        return int(f.read_text())
    except (OSError, ValueError):
        return None


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
