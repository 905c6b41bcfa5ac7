"""The artifact rootfs as a tar stream, for the drivers that import it as an image of their
engine's (docker, podman, lxd)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path


def tar_of(root: Path) -> bytes:
    """The rootfs as an uncompressed tar stream owned by root, for an engine's import."""

    def root_owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(root, arcname=".", filter=root_owned)
    return buf.getvalue()
