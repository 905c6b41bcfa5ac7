"""Linux guests for VM runtimes: a Debian kernel and an initramfs made from a rootfs.

Kernel: by default Debian's `linux-image-cloud-amd64` (its versioned package), fetched
with `apt-get download` from the host's Debian mirror and unpacked (never installed)
under `<cache>/kernels/<package>/`: `/boot/vmlinuz-*` and the modules the guest loads.

Initramfs: a newc cpio written here (no root-owned staging tree, device nodes without
mknod) of the artifact rootfs, its static `/bin/vb-init` as `/init`, `/dev/console`, and
the virtio modules (with their dependencies) under `/lib/modules/vb/`, their load order in
`/lib/modules/vb/order`. It is cached by content in the cache's `initramfs/` directory.
vb-init (guest/vb-init.c) reads everything else from the kernel command line.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from virtbench.errors import VirtbenchError
from virtbench.host import proc

META_PACKAGE = "linux-image-cloud-amd64"
# what the guest needs to reach its NIC and disk on microvm (virtio-mmio) and q35 (PCI),
# and its exec agent's channel (virtio-serial)
GUEST_MODULES = (
    "virtio_mmio",
    "virtio_pci",
    "virtio_net",
    "virtio_blk",
    "virtio_console",
    "vmw_vsock_virtio_transport",
)
MODULE_DIR = "lib/modules/vb"


@dataclass(frozen=True)
class Kernel:
    release: str  # e.g. 6.1.0-56-cloud-amd64
    image: Path  # the bzImage
    modules: Path  # lib/modules/<release>


def debian_kernel(cache: Path, meta: str = META_PACKAGE) -> Kernel:
    """The kernel of Debian's `meta` package, fetched and unpacked once into the cache."""
    base = cache / "kernels"
    found = _unpacked(base)
    if found is not None:
        return found
    depends = proc.run(["apt-cache", "depends", meta], timeout=60, what="apt-cache depends").stdout
    m = re.search(r"Depends: (linux-image-\S+)", depends)
    if m is None:
        raise VirtbenchError(
            f"{meta}: no linux-image package found by apt-cache depends "
            "(apt-get update, or give the guest's kernel = /path)"
        )
    package = m.group(1)
    tmp = base / f".{package}.tmp{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        proc.run(
            ["apt-get", "download", "-q", "-o", "APT::Sandbox::User=root", package],
            timeout=600,
            cwd=tmp,
            what=f"apt-get download {package}",
        )
        deb = next(tmp.glob("*.deb"))
        proc.run(["dpkg-deb", "-x", str(deb), str(tmp / "root")], timeout=300, what="dpkg-deb")
        deb.unlink()
        os.replace(tmp / "root", base / package)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    found = _unpacked(base)
    if found is None:
        raise VirtbenchError(f"{package}: no /boot/vmlinuz-* in the package")
    return found


def _unpacked(base: Path) -> Kernel | None:
    for image in sorted(base.glob("linux-image-*/boot/vmlinuz-*")):
        release = image.name.removeprefix("vmlinuz-")
        return Kernel(release, image, image.parents[1] / "lib" / "modules" / release)
    return None


# the bzImage payload's first bytes -> the command that decompresses it to stdout
DECOMPRESSORS = {
    b"\x1f\x8b": ["gzip", "-dc"],
    b"\xfd7zXZ\x00": ["xz", "-dc"],
    b"\x5d\x00\x00": ["xz", "-dc", "--format=lzma"],
    b"BZh": ["bzip2", "-dc"],
    b"\x02\x21\x4c\x18": ["lz4", "-dc"],  # the kernel's legacy lz4 frame
    b"\x28\xb5\x2f\xfd": ["zstd", "-dc"],
}


def elf_kernel(image: Path, out_dir: Path) -> Path:
    """`image` as an uncompressed ELF vmlinux (Firecracker and Cloud Hypervisor load
    only ELF kernels): itself if it is one, else its bzImage payload decompressed once
    into `out_dir`. The payload is found from the boot protocol's setup header
    (payload_offset, payload_length); its last 4 bytes are the uncompressed size."""
    with open(image, "rb") as fh:
        head = fh.read(0x250)
    if head[:4] == b"\x7fELF":
        return image
    if len(head) < 0x250 or head[0x202:0x206] != b"HdrS":
        raise VirtbenchError(f"{image}: neither an ELF kernel nor a bzImage")
    st = image.stat()
    key = hashlib.sha256(f"{image.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode())
    out = out_dir / f"vmlinux-{image.name}-{key.hexdigest()[:12]}"
    if out.exists():
        return out
    data = image.read_bytes()
    offset, length = struct.unpack_from("<II", data, 0x248)
    start = ((data[0x1F1] or 4) + 1) * 512 + offset
    payload = data[start : start + length]
    size = struct.unpack("<I", payload[-4:])[0]
    argv = next((a for magic, a in DECOMPRESSORS.items() if payload.startswith(magic)), None)
    if argv is None:
        raise VirtbenchError(
            f"{image}: unknown compression of the kernel payload (first bytes {payload[:6].hex()})"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    packed, tmp = (out.with_name(f"{out.name}.{x}{os.getpid()}") for x in ("in", "tmp"))
    try:
        packed.write_bytes(payload[:-4])
        r = proc.run([*argv, str(packed)], timeout=120, check=False, stdout_path=tmp)
        with open(tmp, "rb") as fh:
            magic = fh.read(4)
        if r.returncode != 0 or tmp.stat().st_size != size or magic != b"\x7fELF":
            why = r.brief() if r.returncode else f"{tmp.stat().st_size} bytes, not {size}"
            raise VirtbenchError(f"{image}: {argv[0]} could not unpack the kernel: {why}")
        os.replace(tmp, out)
    finally:
        packed.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
    return out


def module_order(modules: Path, wanted: tuple[str, ...]) -> list[Path]:
    """The .ko files of `wanted` and their dependencies (from each module's `depends=`
    modinfo), dependencies first. Built-in modules are skipped."""
    files = {p.name.removesuffix(".ko").replace("-", "_"): p for p in modules.rglob("*.ko")}
    order: list[Path] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        name = name.replace("-", "_")
        if name in seen or name not in files:
            return  # built in, or already placed
        seen.add(name)
        m = re.search(rb"\x00depends=([\w,-]*)\x00", files[name].read_bytes())
        for dep in m.group(1).decode().split(",") if m and m.group(1) else []:
            visit(dep)
        order.append(files[name])

    for name in wanted:
        visit(name)
    return order


class Entry(NamedTuple):
    """One file of an initramfs: its path, mode, content (a symlink's target), device
    numbers and modification time (s: the kernel sets it, and a `.pyc` is valid only
    beside a source of the mtime it records)."""

    name: str
    mode: int
    data: bytes = b""
    rdev: tuple[int, int] = (0, 0)
    mtime: int = 0


def _entry(e: Entry, ino: int = 0) -> bytes:
    """One newc cpio entry (header, name, data, each padded to 4 bytes)."""
    name, data, rdev = e.name, e.data, e.rdev
    fields = [ino, e.mode, 0, 0, 1, e.mtime, len(data), 0, 0, rdev[0], rdev[1], len(name) + 1, 0]
    head = b"070701" + b"".join(b"%08X" % f for f in fields)
    out = head + name.encode() + b"\x00"
    out += b"\x00" * (-len(out) % 4) + data
    return out + b"\x00" * (-len(out) % 4)


def write_cpio(path: Path, entries: list[Entry]) -> None:
    """A newc cpio archive of `entries`, parents before children."""
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with open(tmp, "wb") as fh:
        for ino, e in enumerate(entries, start=1):
            fh.write(_entry(e, ino))
        fh.write(_entry(Entry("TRAILER!!!", 0)))
    os.replace(tmp, path)


def tree_entries(root: Path) -> list[Entry]:
    """Entries for every directory, file and symlink under `root`, as the guest sees them."""
    out: list[Entry] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for n in [*dirnames, *sorted(filenames)]:
            p = Path(dirpath) / n
            st = p.lstat()
            rel = str(p.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                out.append(Entry(rel, st.st_mode, os.readlink(p).encode()))
            elif stat.S_ISDIR(st.st_mode):
                out.append(Entry(rel, st.st_mode))
            elif stat.S_ISREG(st.st_mode):
                out.append(Entry(rel, st.st_mode, p.read_bytes(), mtime=int(st.st_mtime)))
    return out


def build_initramfs(rootfs: Path, kernel: Kernel, out_dir: Path) -> Path:
    """The initramfs of `rootfs` for `kernel`, made once per content and kept in `out_dir`."""
    init = rootfs / "bin" / "vb-init"
    if not init.is_file():
        raise VirtbenchError(f"no /bin/vb-init in {rootfs} (rebuild the artifact: make setup)")
    modules = module_order(kernel.modules, GUEST_MODULES)
    digest = hashlib.sha256()
    parts: list[str | bytes] = [rootfs.name, kernel.release, init.read_bytes(), *map(str, modules)]
    for part in parts:
        digest.update(part if isinstance(part, bytes) else part.encode())
    path = out_dir / f"initramfs-{rootfs.name}-{digest.hexdigest()[:16]}.cpio"
    order = "".join(f"/{MODULE_DIR}/{m.name}\n" for m in modules).encode()
    if path.exists():
        return path
    entries = [e for e in tree_entries(rootfs) if e.name not in ("init", "dev/console")]
    dirs = {e.name for e in entries}
    for d in ("lib", "lib/modules", MODULE_DIR, "dev"):
        if d not in dirs:
            entries.append(Entry(d, stat.S_IFDIR | 0o755))
    entries.append(Entry("dev/console", stat.S_IFCHR | 0o600, rdev=(5, 1)))
    entries.append(Entry("init", stat.S_IFREG | 0o755, init.read_bytes()))
    entries.append(Entry(f"{MODULE_DIR}/order", stat.S_IFREG | 0o644, order))
    entries += [
        Entry(f"{MODULE_DIR}/{m.name}", stat.S_IFREG | 0o644, m.read_bytes()) for m in modules
    ]
    entries.sort(key=lambda e: e.name.count("/"))  # parents first
    out_dir.mkdir(parents=True, exist_ok=True)
    write_cpio(path, entries)
    return path
