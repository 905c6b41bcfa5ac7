"""What an LXD run is made of, as data (pure, for tests): the image's tarballs, an
instance's `raw.lxc` lines and its `limits.cpu`. The `lxd` driver (lxc/lxd.py) applies them.
"""

from __future__ import annotations

import io
import tarfile
import time
from pathlib import Path

from virtbench.host import cgroups
from virtbench.runtimes.base import Instance
from virtbench.runtimes.lxc.lxc import instance_lines
from virtbench.runtimes.tarball import tar_of


def image_tarballs(rootfs: Path, description: str) -> tuple[bytes, bytes]:
    """(metadata tarball, rootfs tarball) for `lxc image import` (split image). The
    description (with the run id) makes the fingerprint unique to the run."""
    meta = (
        "architecture: x86_64\n"
        f"creation_date: {int(time.time())}\n"
        "properties:\n"
        f"  description: {description}\n"
        "  os: virtbench\n"
    ).encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("metadata.yaml")
        info.size = len(meta)
        info.mtime = int(time.time())
        tar.addfile(info, io.BytesIO(meta))
    return buf.getvalue(), tar_of(rootfs)


def raw_lxc(
    inst: Instance,
    network: str,
    netns: Path | None,
    cgroup_version: int = 1,
    parent: str = cgroups.PARENT,
) -> str:
    """The `raw.lxc` lines of one instance (pure, for tests). A cpuset is also set here,
    so the init starts pinned: LXD applies `limits.cpu` only after the start (its CPU
    balancer), and a loaded host showed a sleeper still on every CPU when it was ready."""
    lines = instance_lines(inst, parent)
    if inst.spec.cpus:
        key = "lxc.cgroup" if cgroup_version == 1 else "lxc.cgroup2"
        lines.append(f"{key}.cpuset.cpus = {inst.spec.cpus}")
    if network in ("host", "bridge"):
        assert netns is not None
        lines += [
            f"lxc.namespace.share.net = {netns}",
            # sysfs of a network namespace the container's user namespace does not own
            # cannot be mounted: keep /proc only
            "lxc.mount.auto =",
            "lxc.mount.auto = proc:rw",
        ]
    return "\n".join(lines)


def limits_cpu(cpus: str) -> str:
    """A cpuset (`1`, `0-1`, `0,2`) as LXD's `limits.cpu`, where a bare number is a count."""
    return f"{cpus}-{cpus}" if cpus.isdigit() else cpus
