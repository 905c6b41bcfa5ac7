"""Artifacts: workloads packaged for a runtime family, built locally and cached by content."""

from virtbench.artifacts.rootfs import Artifact, build_minimal_rootfs

__all__ = ["Artifact", "build_minimal_rootfs"]
