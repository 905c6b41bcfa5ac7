"""Host processes an engine keeps for one instance outside its cgroup.

Engines put a supervisor between themselves and each container -- containerd-shim for
Docker, conmon for Podman -- and that process (with everything under it) is part of
what the instance costs. Given the container's init pid, walk up to the supervisor and
take it with all of its descendants.
"""

from __future__ import annotations

from collections.abc import Callable

import psutil


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
