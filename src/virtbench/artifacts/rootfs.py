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
from typing import Any

from virtbench.errors import VirtbenchError
from virtbench.host import proc

LAYOUT_VERSION = "1"
# virtbench's own static programs (guest/) in /bin of every rootfs, besides the workloads'
# (programs()): what the run itself starts
OWN_PROGRAMS = (
    "vb-ready",  # signals ready, then execs a command: scalability's servers, the attackers
    "vb-cgexec",  # native's launcher
    "vb-attack",  # the isolation experiment's attackers (workloads/attackers.py)
    "vb-init",  # PID 1 of Linux guests (VM runtimes), in their initramfs
    "vb-agent",  # what vb-init starts there to run the host's commands (exec into VMs)
    "vb-touch",  # asks a restored beat instance to touch its dirtied memory (snapshot)
)
KERNEL = "vb-minikernel"  # the minimal guest kernel for VM runtimes, at /boot in the rootfs
# the programs that also have a WASI build (guest/Makefile's WASM_PROGS), at
# /<WASM_DIR>/<name>.wasm: no sockets, no signals, no fork or exec in WASI preview 1
WASM_PROGRAMS = ("vb-hello", "vb-sleep", "vb-ready", "vb-stream")
WASM_DIR = "wasm"
# usr, root, var: nspawn wants them, and makes root and var even with --read-only (in the
# shared artifact); data: where an instance's data directory is mounted
EMPTY_DIRS = ("proc", "sys", "dev", "tmp", "run/vb", "etc", "usr", "root", "var", "data")


@dataclass(frozen=True)
class Artifact:
    """A built artifact; `disk_bytes` is what du reports (allocated blocks, not sparse size)."""

    name: str
    kind: str
    digest: str
    path: Path
    disk_bytes: int
    apparent_bytes: int

    def to_dict(self) -> dict[str, Any]:
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


def _digest(files: dict[str, tuple[bytes, int]]) -> str:
    h = hashlib.sha256(f"layout {LAYOUT_VERSION}\n".encode())
    for rel in sorted(files):
        content, mode = files[rel]
        h.update(f"{rel}\0{mode & 0o777:o}\0".encode())
        h.update(content)
    for d in EMPTY_DIRS:
        h.update(f"dir {d}\n".encode())
    return h.hexdigest()


def library_closure(binary: Path) -> list[Path]:
    """The shared libraries `binary` loads (ldd), the dynamic loader included, as the
    paths the loader looks them up by."""
    res = proc.run(["ldd", str(binary)], check=False, timeout=30)
    if res.returncode != 0 or "not a dynamic executable" in res.stdout + res.stderr:
        return []
    found = []
    for line in res.stdout.splitlines():
        parts = line.split()
        if "=>" in parts and len(parts) > parts.index("=>") + 1:
            target = parts[parts.index("=>") + 1]
            if target.startswith("/"):
                found.append(Path(target))
        elif parts and parts[0].startswith("/"):  # the loader itself
            found.append(Path(parts[0]))
    missing = [line.strip() for line in res.stdout.splitlines() if "not found" in line]
    if missing:
        raise VirtbenchError(f"{binary}: libraries not found: {'; '.join(missing)}")
    return found


def host_files(
    binaries: list[str], renamed: dict[str, str] | None = None
) -> dict[str, tuple[bytes, int]]:
    """Host binaries and every library they load, at the same paths (symlinks resolved
    to their content), for a rootfs; `renamed` maps a binary to another path in it."""
    renamed = renamed or {}
    out: dict[str, tuple[bytes, int]] = {}
    for b in binaries:
        path = Path(b)
        if not path.is_file():
            raise VirtbenchError(f"{b} not found on the host (install its Debian package)")
        for p in [path, *library_closure(path)]:
            real = p.resolve()
            dest = renamed.get(str(p), str(p))
            out[dest.lstrip("/")] = (real.read_bytes(), real.stat().st_mode)
    return out


def host_tree(directory: str, skip: tuple[str, ...] = ()) -> dict[str, tuple[bytes, int]]:
    """Every file under a host directory (symlinks resolved), at the same paths, but
    those under a directory named one of `skip`."""
    root = Path(directory)
    if not root.is_dir():
        raise VirtbenchError(f"{directory} not found on the host (install its Debian package)")
    out = {}
    for p in sorted(root.rglob("*")):
        if skip and set(p.relative_to(root).parts[:-1]) & set(skip):
            continue
        if p.is_file():
            real = p.resolve()
            out[str(p).lstrip("/")] = (real.read_bytes(), real.stat().st_mode)
    return out


def accounts(users: list[str]) -> dict[str, tuple[bytes, int]]:
    """/etc/passwd and /etc/group: root, nobody, and these host users with their host ids
    (a server that refuses root, e.g. postgres, runs as the same uid natively and in every
    instance)."""
    import grp
    import pwd

    passwd = ["root:x:0:0:root:/root:/bin/sh", "nobody:x:65534:65534:nobody:/:/bin/false"]
    group = ["root:x:0:", "nogroup:x:65534:"]
    for user in users:
        try:
            pw = pwd.getpwnam(user)
        except KeyError:
            raise VirtbenchError(f"host user {user!r} not found (make setup installs it)") from None
        passwd.append(f"{user}:x:{pw.pw_uid}:{pw.pw_gid}:{user}:/data:/bin/false")
        group.append(f"{grp.getgrgid(pw.pw_gid).gr_name}:x:{pw.pw_gid}:")
    return {
        "etc/passwd": ("\n".join(passwd).encode() + b"\n", 0o644),
        "etc/group": ("\n".join(group).encode() + b"\n", 0o644),
    }


def programs() -> tuple[str, ...]:
    """The static programs every rootfs holds in /bin: the run's own, each workload's
    (`needs.static_programs`) and the clients of the artifact run on the host (a serving
    workload's client under /bin/vb-)."""
    from virtbench import workloads

    found = list(OWN_PROGRAMS)
    for wl in workloads.every():
        clients = wl.serves.clients if wl.serves is not None else ()
        found += wl.needs.static_programs
        found += [c.removeprefix("/bin/") for c in clients if c.startswith("/bin/vb-")]
    return tuple(dict.fromkeys(found))  # each once


def build_guest_programs(guest_src: Path, out: Path) -> dict[str, Path]:
    """Compile guest/ with its Makefile into `out`; return program name -> path."""
    if not (guest_src / "Makefile").exists():
        raise VirtbenchError(f"guest sources not found at {guest_src} (set VIRTBENCH_GUEST_DIR)")
    if shutil.which("musl-gcc") is None:
        raise VirtbenchError("musl-gcc not found: apt-get install musl-tools (or make setup)")
    if shutil.which("clang-14") is None and shutil.which("clang") is None:  # the WASI builds
        raise VirtbenchError(
            "clang not found: apt-get install clang-14 lld-14 wasi-libc "
            "libclang-rt-14-dev-wasm32 (Debian 13: clang lld libclang-rt-dev-wasm32), or "
            "make setup"
        )
    proc.run(["make", "-s", "-C", str(guest_src), f"OUT={out}"], timeout=300, what="make guest")
    found = {p: out / p for p in (*programs(), KERNEL)}
    return found | {f"{WASM_DIR}/{p}.wasm": out / WASM_DIR / f"{p}.wasm" for p in WASM_PROGRAMS}


def build_minimal_rootfs(guest_src: Path, cache: Path) -> Artifact:
    """Build (or reuse) the minimal rootfs; returns the cached artifact."""
    programs = build_guest_programs(guest_src, cache / "guest-build")
    return build_rootfs(programs, cache, "rootfs-minimal", {})


def _place(program: str) -> str:
    """Where a built program goes in the rootfs: the kernel in boot/, a WASI module where
    its name says (wasm/), the rest in bin/."""
    if "/" in program:
        return program
    return ("boot/" if program == KERNEL else "bin/") + program


def host_mtimes(directory: str) -> dict[str, int]:
    """The modification time (ns) of every file under a host directory, at its path in a
    rootfs: a copied `.pyc` is valid only beside a source of the mtime it records."""
    return {
        str(p).lstrip("/"): p.stat().st_mtime_ns for p in Path(directory).rglob("*") if p.is_file()
    }


def build_rootfs(
    programs: dict[str, Path],
    cache: Path,
    name: str,
    extra: dict[str, tuple[bytes, int]],
    mtimes: dict[str, int] | None = None,
) -> Artifact:
    """Build (or reuse) a rootfs: the built guest `programs` in /bin plus `extra` (path in
    the rootfs -> (content, mode)), e.g. host servers with their libraries and config;
    those in `mtimes` (path -> ns) keep the modification time they had on the host."""
    files = {_place(n): (p.read_bytes(), p.stat().st_mode) for n, p in programs.items()}
    files.update(extra)
    digest = _digest(files)
    final = cache / "artifacts" / f"{name}-{digest[:16]}"
    if not final.exists():
        tmp = final.with_name(final.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        for d in EMPTY_DIRS:
            (tmp / d).mkdir(parents=True, exist_ok=True)
        for rel, (content, mode) in files.items():
            dest = tmp / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(content)
            dest.chmod(mode & 0o777)
            if mtimes and rel in mtimes:
                os.utime(dest, ns=(mtimes[rel], mtimes[rel]))
        for p in tmp.rglob("*"):  # unprivileged containers' root must read every file
            if p.is_dir():
                p.chmod(0o755)
        (tmp / "etc" / "virtbench-artifact").write_text(f"{name} {digest}\n")
        os.replace(tmp, final)
    os.utime(final)  # used now: the cache keeps the most recently used (artifacts/cache.py)
    disk, apparent = disk_usage(final)
    return Artifact(name, "rootfs", digest, final, disk, apparent)


def build_servers_rootfs(guest_src: Path, cache: Path, workload_names: list[str]) -> Artifact:
    """The minimal rootfs plus the servers of these workloads (the same Debian binaries
    in every runtime), their libraries, config and data files."""
    from virtbench import workloads

    build = cache / "guest-build"
    programs = build_guest_programs(guest_src, build)  # dynamic ones are built there too
    binaries: list[str] = []
    renamed: dict[str, str] = {}  # our dynamically linked programs go to /bin
    extra: dict[str, tuple[bytes, int]] = {}
    mtimes: dict[str, int] = {}
    users: list[str] = []
    for name in sorted(set(workload_names)):
        needs = workloads.get(name).needs
        binaries += [b for b in needs.host_binaries if b not in binaries]
        users += [u for u in needs.users if u not in users]
        for d in needs.host_dirs:
            extra.update(host_tree(d, needs.skip))
            mtimes.update(host_mtimes(d))
        for prog in needs.guest_programs:
            built = str(build / prog)
            binaries.append(built)
            renamed[built] = f"/bin/{prog}"
        for rel, text in needs.file_texts().items():
            extra[rel] = (text.encode() if isinstance(text, str) else text, 0o644)
    extra.update(host_files(binaries, renamed))
    extra.update(accounts(users))
    return build_rootfs(programs, cache, "rootfs-servers", extra, mtimes)
