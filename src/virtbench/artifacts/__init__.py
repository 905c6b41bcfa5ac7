"""Artifacts: workloads packaged for a runtime family, built locally and cached by content."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from virtbench.artifacts.rootfs import Artifact, build_minimal_rootfs, build_servers_rootfs

__all__ = ["Artifact", "build_for", "build_minimal_rootfs", "build_servers_rootfs"]


def build_for(experiments: list[Any], guest_src: Path, cache: Path) -> Artifact:
    """The rootfs a spec's experiments need: with servers if any experiment serves."""
    serving = [w for e in experiments if e.type == "throughput" for w in e.workloads]
    if serving:
        return build_servers_rootfs(guest_src, cache, serving)
    return build_minimal_rootfs(guest_src, cache)
