"""The minimal rootfs: virtbench's static guest programs and the directories mounts need.

Built once from guest/ (make, musl-gcc) and cached under `<cache>/artifacts/<name>-<digest>`
where the digest covers every file's path, mode and content. A rootfs never changes
once built, so instances mount it read-only and share its page cache.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from virtbench import proc
from virtbench.errors import VirtbenchError

LAYOUT_VERSION = "1"
PROGRAMS = ("vb-hello", "vb-sleep", "vb-ready", "vb-cgexec")
EMPTY_DIRS = ("proc", "sys", "dev", "tmp", "run/vb", "etc", "usr")  # usr: nspawn wants it


@dataclass(frozen=True)
class Artifact:
    """A built artifact; `disk_bytes` is what du reports (allocated blocks, not sparse size)."""

    name: str
    kind: str
    digest: str
    path: Path
    disk_bytes: int
    apparent_bytes: int

    def to_dict(self) -> dict:
        d = asdict(self)
        d["path"] = str(self.path)
        return d


def disk_usage(root: Path) -> tuple[int, int]:
    """(allocated bytes as du counts them, apparent bytes) of a tree; hard links once."""
    seen: set[tuple[int, int]] = set()
    disk = apparent = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for n in [*dirnames, *filenames, None]:
            p = dirpath if n is None else os.path.join(dirpath, n)
            st = os.lstat(p)
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            disk += st.st_blocks * 512
            apparent += st.st_size
    return disk, apparent


def _digest(files: dict[str, Path]) -> str:
    h = hashlib.sha256(f"layout {LAYOUT_VERSION}\n".encode())
    for rel in sorted(files):
        h.update(f"{rel}\0{files[rel].stat().st_mode & 0o777:o}\0".encode())
        h.update(files[rel].read_bytes())
    for d in EMPTY_DIRS:
        h.update(f"dir {d}\n".encode())
    return h.hexdigest()


def build_guest_programs(guest_src: Path, out: Path) -> dict[str, Path]:
    """Compile guest/ with its Makefile into `out`; return program name -> path."""
    if not (guest_src / "Makefile").exists():
        raise VirtbenchError(f"guest sources not found at {guest_src} (set VIRTBENCH_GUEST_DIR)")
    if shutil.which("musl-gcc") is None:
        raise VirtbenchError("musl-gcc not found: apt-get install musl-tools (or make setup)")
    proc.run(["make", "-s", "-C", str(guest_src), f"OUT={out}"], timeout=300, what="make guest")
    return {p: out / p for p in PROGRAMS}


def build_minimal_rootfs(guest_src: Path, cache: Path) -> Artifact:
    """Build (or reuse) the minimal rootfs; returns the cached artifact."""
    build = cache / "guest-build"
    programs = build_guest_programs(guest_src, build)
    files = {f"bin/{n}": p for n, p in programs.items()}
    digest = _digest(files)
    name = "rootfs-minimal"
    final = cache / "artifacts" / f"{name}-{digest[:16]}"
    if not final.exists():
        tmp = final.with_name(final.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        for d in EMPTY_DIRS:
            (tmp / d).mkdir(parents=True, exist_ok=True)
        (tmp / "bin").mkdir(exist_ok=True)
        for rel, src in files.items():
            shutil.copy2(src, tmp / rel)
        (tmp / "etc" / "virtbench-artifact").write_text(f"{name} {digest}\n")
        os.replace(tmp, final)
    disk, apparent = disk_usage(final)
    return Artifact(name, "rootfs", digest, final, disk, apparent)
