"""What an instance's cgroup files say (host/cgroups.py lays the cgroups out): its tasks
at their peak, whether it ran and emptied, the memory charged to it and its parts, and how
long its tasks waited for each resource (v2's pressure files)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from virtbench.host.cgroups import Layout


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
    if layout.version == 1 and "cpuacct" not in layout.v1:  # the peak memory instead
        d = layout.memory_dir(name)
        try:
            used: int | None = int((d / "memory.max_usage_in_bytes").read_text())
        except (OSError, ValueError):
            return False
    else:
        d = (
            layout.controller_dir("cpuacct", name)
            if layout.version == 1
            else layout.memory_dir(name)
        )
        used = cpu_ns(layout, name)
    try:
        procs = (d / "cgroup.procs").read_text().split()
    except OSError:
        return False
    return used is not None and not procs and used > 0


def cpu_ns(layout: Layout, name: str) -> int | None:
    """CPU time charged to the cgroup and those below it, in ns (v1 cpuacct.usage, v2
    cpu.stat's usage_usec); None where it cannot be read."""
    try:
        if layout.version == 1:
            if "cpuacct" not in layout.v1:
                return None
            return int((layout.controller_dir("cpuacct", name) / "cpuacct.usage").read_text())
        text = (layout.memory_dir(name) / "cpu.stat").read_text()
        return int(text.split("usage_usec", 1)[1].split()[0]) * 1000
    except (OSError, ValueError, IndexError):
        return None


def memory_bytes(layout: Layout, name: str) -> int | None:
    """Memory charged to the cgroup (v1 usage_in_bytes, v2 memory.current)."""
    d = layout.memory_dir(name)
    f = d / ("memory.usage_in_bytes" if layout.version == 1 else "memory.current")
    try:
        return int(f.read_text())
    except (OSError, ValueError):
        return None


# memory.stat's keys for the parts of a cgroup's memory, per version: anonymous memory,
# the page cache (shmem and tmpfs included) and, on v2, the kernel's (a kernel before 6.1
# has no `kernel` key: its parts are summed instead). v1's `total_` keys count the cgroup's
# children too (an engine's nested cgroups), and its kernel memory is kmem's own file.
V2_KERNEL_PARTS = ("kernel_stack", "pagetables", "percpu", "sock", "slab")


def memory_parts(layout: Layout, name: str) -> dict[str, int] | None:
    """The cgroup's memory by part, in bytes: "anon", "file" and "kernel" (the last left
    out where the kernel does not account it: v1 without kmem); None where memory.stat
    cannot be read."""
    d = layout.memory_dir(name)
    try:
        stat = dict(
            (k, int(v))
            for k, v in (ln.split() for ln in (d / "memory.stat").read_text().splitlines())
        )
    except (OSError, ValueError):
        return None
    if layout.version == 1:
        parts = {"anon": stat.get("total_rss"), "file": stat.get("total_cache")}
        with contextlib.suppress(OSError, ValueError):
            parts["kernel"] = int((d / "memory.kmem.usage_in_bytes").read_text())
    else:
        kernel = stat.get("kernel")
        if kernel is None and "slab" in stat:
            kernel = sum(stat.get(k, 0) for k in V2_KERNEL_PARTS)
        parts = {"anon": stat.get("anon"), "file": stat.get("file"), "kernel": kernel}
    return {k: v for k, v in parts.items() if v is not None} or None


PRESSURE = ("cpu", "memory", "io")  # v2's pressure files (PSI) a cgroup has


def stall_totals(layout: Layout, name: str) -> dict[str, int] | None:
    """How long some of the cgroup's tasks have waited, per resource, since it was made:
    the `some` line's total (microseconds) of v2's cpu.pressure, memory.pressure and
    io.pressure; None on v1 (no per-cgroup pressure) or where none can be read (a kernel
    without PSI)."""
    if layout.version != 2:
        return None
    d = layout.memory_dir(name)
    found = {}
    for res in PRESSURE:
        with contextlib.suppress(OSError, ValueError, IndexError):
            some = (d / f"{res}.pressure").read_text().splitlines()[0]
            found[res] = int(some.rsplit("total=", 1)[1])
    return found or None
