"""Memory figures: PSS over an instance's host processes, host MemAvailable, cache drop.

PSS (proportional set size) splits shared pages among the processes sharing them, so
summing it over every host process an instance owns (VMM, shim, sandbox, the workload)
does not double-count shared libraries. It comes from /proc/<pid>/smaps_rollup.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path

EXEC_WAIT_S = 0.2  # how long a process in the middle of an exec is waited for


def pss_bytes(pid: int) -> int | None:
    """PSS of one process, or None if it is gone. While a process is in the middle of an
    exec, the kernel answers ESRCH though it exists: it is read again once the exec is
    done (within EXEC_WAIT_S), never counted as 0."""
    deadline = time.monotonic() + EXEC_WAIT_S
    while True:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
                for line in fh:
                    if line.startswith(b"Pss:"):
                        return int(line.split()[1]) * 1024
            return None  # no memory left to read: it is exiting, or a zombie
        except (FileNotFoundError, PermissionError):
            return None
        except ProcessLookupError:
            if not os.path.exists(f"/proc/{pid}") or time.monotonic() > deadline:
                return None
            time.sleep(0.001)


MERGE_SLACK_KIB = 2048  # the kernel may merge a neighbouring anonymous mapping into it


def pss_of_mappings(pid: int, size_kib: int) -> int | None:
    """PSS (bytes) of the process's mappings of `size_kib` KiB -- a VMM's guest RAM, which
    it maps in one piece of the guest's memory size (Firecracker's comes merged with a
    small neighbour: up to MERGE_SLACK_KIB more is accepted); None if the process is gone
    or has no such mapping."""
    total, found, size = 0, False, None
    try:
        with open(f"/proc/{pid}/smaps", "rb") as fh:
            for line in fh:
                if line.startswith(b"Size:"):
                    size = int(line.split()[1])
                elif (
                    line.startswith(b"Pss:")
                    and size is not None
                    and (size_kib <= size <= size_kib + MERGE_SLACK_KIB)
                ):
                    total += int(line.split()[1]) * 1024
                    found = True
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return total if found else None


def pss_total(pids: Iterable[int]) -> int | None:
    """PSS summed over `pids`; processes that vanished count as 0, and when none of them
    could be read the sum is None (unknown), not 0."""
    read = [p for p in (pss_bytes(pid) for pid in pids) if p is not None]
    return sum(read) if read else None


def meminfo(path: Path = Path("/proc/meminfo")) -> dict[str, int]:
    """/proc/meminfo as bytes."""
    out = {}
    for line in path.read_text().splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        if fields:
            out[key] = int(fields[0]) * (1024 if len(fields) > 1 else 1)
    return out


def mem_available() -> int:
    return meminfo()["MemAvailable"]


def drop_caches() -> bool:
    """sync, then drop page cache, dentries and inodes (root only). False if not allowed."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3")
    except OSError:
        return False
    return True


SETTLE_STEP_S = 0.5  # readings this far apart
SETTLE_MIB = 2.0  # settled: memory in use moved less than this over the window (the
# kernel's own frees come in steps of 5-16 MiB here)


def pcp_free(path: Path = Path("/proc/zoneinfo")) -> int:
    """Free pages waiting on the per-CPU free lists (bytes), which MemFree and MemAvailable
    leave out: the sum of every zone's per-CPU `count:`. The kernel lets these lists grow
    to tens of MiB per CPU and drains them on its own schedule (here they held 95-125 MiB
    and moved by 30 MiB within 5 s on an idle host), so a figure that does not count them
    as free moves by that much between two readings."""
    pages = 0
    try:
        with open(path, "rb") as fh:
            for line in fh:
                if line.lstrip().startswith(b"count:"):
                    pages += int(line.split()[1])
    except (FileNotFoundError, PermissionError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def in_use(info: dict[str, int] | None = None, pcp: int | None = None) -> int:
    """Host memory in use (bytes): MemTotal - MemAvailable, less the free pages on the
    per-CPU lists (`pcp_free`)."""
    info = info or meminfo()
    return info["MemTotal"] - info["MemAvailable"] - (pcp_free() if pcp is None else pcp)


def held() -> int:
    """Memory neither free nor page cache (bytes): MemTotal - MemFree - Buffers - Cached,
    less the free pages on the per-CPU lists. Files written meanwhile (a log, the results
    database) move free memory into the page cache and leave this alone; MemAvailable
    counts only part of a small page cache as available, so `in_use` would creep with
    them."""
    info = meminfo()
    cached = info.get("Buffers", 0) + info.get("Cached", 0)
    return info["MemTotal"] - info["MemFree"] - cached - pcp_free()


def settle(
    window_s: float = 15.0, timeout_s: float = 60.0, drop: bool = True
) -> tuple[float, bool]:
    """Drop caches once (unless not `drop`), then read the memory held (`held`: not free,
    not page cache) every SETTLE_STEP_S until the readings of the last `window_s` lie
    within SETTLE_MIB of each other; (seconds waited, settled before `timeout_s`).
    Caches are not dropped again: a sync and a drop every half second would load the
    host. Measured here after a pile-up of 100 crun containers was removed: memory in
    use held still for 11 s, then fell by 60 MiB over the next 6 s, in steps of 5-16 MiB
    with quiet half-seconds between them; a shorter window let a by-hand reading catch
    such a fall (crun's host cost read -0.2 MiB per instance)."""
    t0 = time.monotonic()
    readings: list[tuple[float, int]] = []
    if drop:
        drop_caches()
    while True:
        now = time.monotonic()
        readings = [r for r in readings if now - r[0] <= window_s] + [(now, held())]
        waited = now - t0
        values = [v for _, v in readings]
        if waited >= window_s and max(values) - min(values) < SETTLE_MIB * 2**20:
            return waited, True
        if waited >= timeout_s:
            return waited, False
        time.sleep(SETTLE_STEP_S)
