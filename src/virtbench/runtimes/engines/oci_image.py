"""An image made from the artifact rootfs for containerd to import (no registry): one
layer, the rootfs's tar, in an OCI image layout (image-spec 1.0: `oci-layout`,
`index.json`, the manifest, config and layer as blobs), the whole layout itself a tar, as
`ctr images import` reads it. The name goes in the index's annotation containerd reads.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Sequence

MEDIA = "application/vnd.oci.image"
NAME_ANNOTATION = "io.containerd.image.name"
REF_ANNOTATION = "org.opencontainers.image.ref.name"


def _blob(data: bytes, media: str) -> tuple[dict[str, object], str]:
    """(descriptor, digest) of `data`."""
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    return {"mediaType": media, "digest": digest, "size": len(data)}, digest


def layout_tar(
    layer: bytes, name: str, cmd: Sequence[str], labels: dict[str, str] | None = None
) -> bytes:
    """An OCI image layout, as a tar, of one uncompressed `layer` named `name`
    ("vb-abc123-rootfs:1f2e..."), its command `cmd`, its config's `labels`."""
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "Cmd": list(cmd),
            "Env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],
            "Labels": dict(labels or {}),
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    config_desc, _ = _blob(config_bytes, f"{MEDIA}.config.v1+json")
    layer_desc, _ = _blob(layer, f"{MEDIA}.layer.v1.tar")
    manifest = {"schemaVersion": 2, "config": config_desc, "layers": [layer_desc]}
    manifest_bytes = json.dumps(manifest, sort_keys=True).encode()
    manifest_desc, _ = _blob(manifest_bytes, f"{MEDIA}.manifest.v1+json")
    tag = name.rpartition(":")[2]
    manifest_desc["annotations"] = {NAME_ANNOTATION: name, REF_ANNOTATION: tag}
    index = {"schemaVersion": 2, "manifests": [manifest_desc]}
    files = {
        "oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
        "index.json": json.dumps(index, sort_keys=True).encode(),
    }
    for data in (config_bytes, layer, manifest_bytes):
        files["blobs/sha256/" + hashlib.sha256(data).hexdigest()] = data
    return _tar(files)


def _tar(files: dict[str, bytes]) -> bytes:
    """Files (path -> content) as a tar, owned by root."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, data in files.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()
