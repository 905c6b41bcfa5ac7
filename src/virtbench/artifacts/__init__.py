"""Artifacts: workloads packaged for a runtime family, built locally and cached by content."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from virtbench.artifacts.rootfs import Artifact, build_minimal_rootfs, build_servers_rootfs

__all__ = ["Artifact", "build_for", "build_minimal_rootfs", "build_servers_rootfs"]


def build_for(experiments: list[Any], guest_src: Path, cache: Path) -> Artifact:
    """The rootfs a spec's experiments need: with servers if any experiment serves."""
    from virtbench import workloads

    needed = [
        w for e in experiments if hasattr(e, "workloads_needed") for w in e.workloads_needed()
    ]
    if any(workloads.get(w).needs.servers for w in needed):
        return build_servers_rootfs(guest_src, cache, needed)
    return build_minimal_rootfs(guest_src, cache)
