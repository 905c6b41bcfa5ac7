"""Memory figures: PSS over an instance's host processes, host MemAvailable, cache drop.

PSS (proportional set size) splits shared pages among the processes sharing them, so
summing it over every host process an instance owns (VMM, shim, sandbox, the workload)
does not double-count shared libraries. It comes from /proc/<pid>/smaps_rollup.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def pss_bytes(pid: int) -> int | None:
    """PSS of one process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
            for line in fh:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return None


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


def pss_total(pids: Iterable[int]) -> int:
    """PSS summed over `pids` (processes that vanished count as 0)."""
    return sum(p for p in (pss_bytes(pid) for pid in pids) if p)


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
