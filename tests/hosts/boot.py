"""Booting a guest host with one job, and reading back what the job left.

Each boot gets a copy-on-write layer over the cached image (the image is never written),
and a job disk: the checkout under test (the files git lists: tracked, and untracked
ones it does not ignore) as `/job/src`, and the job's script as `/job/run.sh`. The guest's
unit (guest-files/.../vb-job) runs the script once systemd has started the machine's
services, writes `/job/out/` (its log, exit status, the boot's journal, whatever the script
keeps) and powers off. QEMU runs under KVM where this host's KVM boots Linux guests, and
under TCG (emulation: every time it measures is emulated) where it does not. The guest has
no network: its set-up is offline (the image's wheels and packages).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.hosts.image import ROOT, Image

from virtbench.host.facts import kvm_kind

MEMORY_MIB = 8192
CPUS = 2
# Under TCG, `-cpu max` offers AVX2, whose emulation in Debian 12's QEMU crashes numpy
# (a segfault in `unique`); this model is x86-64-v2 with AMD's SVM, so the guest has a
# KVM of its own (kvm_amd) for the code paths of a host whose KVM boots Linux guests.
TCG_CPU = "qemu64,+svm,+ssse3,+sse4.1,+sse4.2,+popcnt,+cx16,+lahf_lm"
# Debian's kernels under TCG: without the TSC's rate given, early boot can hang
TCG_APPEND = "tsc_early_khz=2600000"


@dataclass(frozen=True)
class Boot:
    """What one boot of a guest host did."""

    accel: str  # kvm or tcg
    boot_s: float | None  # from QEMU's start to the job's first line (None: never got there)
    total_s: float
    out: Path  # the job's /job/out, read back
    console: Path  # the serial console's log

    @property
    def rc(self) -> int | None:
        f = self.out / "rc"
        return int(f.read_text()) if f.is_file() else None

    def log(self) -> str:
        f = self.out / "job.log"
        return f.read_text(errors="replace") if f.is_file() else ""

    def tail(self, lines: int = 40) -> str:
        """The job's last lines, or the console's where the job left none."""
        text = self.log() or self.console.read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])


def accel() -> str:
    """kvm where this host's KVM boots a Linux guest, else tcg."""
    return "kvm" if kvm_kind() in ("hardware", "nested") else "tcg"


def _source_files() -> list[str]:
    res = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    return [f for f in res.stdout.decode().split("\0") if f and (ROOT / f).is_file()]


def job_disk(work: Path, script: str, carried: Mapping[str, Path] | None = None) -> Path:
    """The job disk: the checkout as git lists it, the job's script, and the directories
    of this host's the job takes (`carried`: its path under /job -> the directory here,
    such as the guest programs built here as `guest-build`)."""
    tree = work / "job"
    for rel in _source_files():
        dst = tree / "src" / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dst)
    for where, directory in (carried or {}).items():  # times kept: programs newer than sources
        shutil.copytree(directory, tree / where, symlinks=True)
    (tree / "run.sh").write_text(script)
    disk = work / "job.raw"
    subprocess.run(
        ["mkfs.ext4", "-q", "-L", "job", "-d", str(tree), str(disk), "8G"],
        check=True,
        capture_output=True,
    )
    return disk


def qemu_argv(img: Image, layer: Path, job: Path, console: Path, how: str) -> list[str]:
    append = "root=/dev/vda rw console=ttyS0 systemd.show_status=1"
    machine = ["-accel", "kvm", "-cpu", "host"]
    if how == "tcg":
        machine = ["-accel", "tcg,thread=multi", "-cpu", TCG_CPU]
        append += " " + TCG_APPEND
    return [
        "qemu-system-x86_64",
        "-machine",
        "q35",
        *machine,
        "-smp",
        str(CPUS),
        "-m",
        str(MEMORY_MIB),
        "-kernel",
        str(img.kernel),
        "-initrd",
        str(img.initrd),
        "-append",
        append,
        "-drive",
        f"file={layer},if=virtio,format=qcow2",
        "-drive",
        f"file={job},if=virtio,format=raw",
        "-nic",
        "none",
        "-display",
        "none",
        "-monitor",
        "none",
        "-serial",
        f"file:{console}",
        "-no-reboot",
    ]


def boot(
    img: Image, script: str, work: Path, timeout: float, carried: Mapping[str, Path] | None = None
) -> Boot:
    """Boot `img` once with `script` as its job (and `carried` on its disk: job_disk);
    the job's output read back into `work/out`. QEMU is ended (its process group) if the
    job outlives `timeout`."""
    work.mkdir(parents=True, exist_ok=True)
    with open(img.path.with_name(img.path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)  # no new image of the release prunes this one
        return _boot(img, script, work, timeout, carried)


def _boot(
    img: Image, script: str, work: Path, timeout: float, carried: Mapping[str, Path] | None
) -> Boot:
    layer, console = work / "layer.qcow2", work / "console.log"
    subprocess.run(
        ["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", str(img.disk), str(layer)],
        check=True,
        capture_output=True,
    )
    job = job_disk(work, script, carried)
    how = accel()
    t0 = time.monotonic()
    with open(work / "qemu.log", "w") as qemu_log:  # the child holds its own copy
        vm = subprocess.Popen(
            qemu_argv(img, layer, job, console, how),
            stdin=subprocess.DEVNULL,
            stdout=qemu_log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    booted = None
    try:
        while vm.poll() is None:
            if booted is None and "vb-job: started" in _read(console):
                booted = time.monotonic() - t0
            if time.monotonic() - t0 > timeout:
                break
            time.sleep(1)
    finally:
        if vm.poll() is None:
            os.killpg(vm.pid, signal.SIGKILL)
        vm.wait()
    total = time.monotonic() - t0
    out = work / "out"
    subprocess.run(
        ["debugfs", "-R", f"rdump /out {work}", str(job)],
        check=True,
        capture_output=True,
    )
    layer.unlink()
    job.unlink()
    return Boot(how, booted, total, out, console)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
