"""Host processes an engine keeps for one instance outside its cgroup.

Engines put a supervisor between themselves and each container -- containerd-shim for
Docker, conmon for Podman -- and that process (with everything under it) is part of
what the instance costs. Given the container's init pid, walk up to the supervisor and
take it with all of its descendants.
"""

from __future__ import annotations

import functools
import signal
from collections.abc import Callable

import psutil

from virtbench.host import proc


def supervisor_tree(pid: int | None, is_supervisor: Callable[[str], bool]) -> list[int]:
    """The first ancestor of `pid` whose name satisfies `is_supervisor`, plus all of its
    descendants; [] if there is none (or the process is gone)."""
    if not pid:
        return []
    try:
        p: psutil.Process | None = psutil.Process(pid)
        while p is not None and p.pid > 1:
            if is_supervisor(p.name()):
                return [p.pid, *(c.pid for c in p.children(recursive=True))]
            p = p.parent()
    except psutil.Error:
        return []
    return []


def find_by_cmdline(prefix: str, *needles: str) -> list[psutil.Process]:
    """Processes whose name starts with `prefix` and whose command line contains one of
    `needles` as an argument (one pass over the process table, however many)."""
    wanted = set(needles)
    found = []
    for p in psutil.process_iter(["name", "cmdline"]):
        name = p.info["name"] or ""
        if name.startswith(prefix) and wanted.intersection(p.info["cmdline"] or []):
            found.append(p)
    return found


def snapshot(pids: list[int]) -> list[psutil.Process]:
    """Process handles that remember each process's start time (safe against pid reuse)."""
    out = []
    for pid in pids:
        try:
            out.append(psutil.Process(pid))
        except psutil.Error:
            continue
    return out


def any_alive(procs: list[psutil.Process]) -> bool:
    """Whether one of these processes still runs (a zombie has ended)."""
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                return True
        except psutil.Error:
            continue
    return False


def _running(p: psutil.Process, pid: int) -> bool:
    """Whether `p` (the process `pid` was, when seen) is still running: the same one."""
    del pid
    return p.is_running()


def end(procs: list[psutil.Process], timeout: float = 5.0) -> None:
    """Wait for these processes to exit; SIGKILL the ones still there after `timeout`.
    psutil checks each handle's start time, so a reused pid is never signalled."""
    _gone, alive = psutil.wait_procs(procs, timeout=timeout)
    for p in alive:  # through a pidfd, only while it is the process the handle saw
        proc.signal_pid(p.pid, signal.SIGKILL, functools.partial(_running, p))
    psutil.wait_procs(alive, timeout=5)
